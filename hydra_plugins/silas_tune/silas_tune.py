"""A Hydra sweeper that runs a tuning study with Optuna 4 (ask and tell):
``python -m silas_exp -m experiment=tune``, which sets ``hydra.sweeper._target_``
to this class (conf/config.yaml's choice of the silas sweeper wins over an
experiment's override of the ``hydra/sweeper`` group, so the experiment swaps
the class and keeps the group's settings).

Each trial is the trial's config run for every repeat on the suite's
training cases (``suite.split=train``), launched through the configured
launcher; its value is the objectives' mean over its repeats. When the study
ends, the best ``top_k`` trials are certified against the control on the
held-out cases with the verdict rule. The loop is ``silas_exp.tune.driver``;
docs/tuning.md explains the design and why not Hydra's Optuna sweeper.
"""

# No ``from __future__ import annotations`` here: Hydra loads plugin modules
# outside sys.modules, and OmegaConf needs the dataclass's real types.
from pathlib import Path
from typing import Any, Dict, List, Optional  # noqa: UP035  (OmegaConf reads these types)

from hydra.core.plugins import Plugins
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf


class SilasTuneSweeper(Sweeper):
    """Takes the silas sweeper's settings (conf/experiment/tune.yaml swaps this
    class in for it); the study's own settings are the config's ``tune`` node."""

    def __init__(self, max_batch_size: Optional[int] = None,  # noqa: UP045
                 params: Optional[Dict[str, Any]] = None, check: str = "distinct") -> None:  # noqa: UP006, UP045
        self.params = dict(params or {})
        self.config: Optional[DictConfig] = None  # noqa: UP045

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction,
              config: DictConfig) -> None:
        self.config = config
        self.hydra_context = hydra_context
        self.launcher = Plugins.instance().instantiate_launcher(
            config=config, hydra_context=hydra_context, task_function=task_function)

    def _is_group(self, name: str) -> bool:
        repository: Any = getattr(self.hydra_context.config_loader, "repository", None)
        return bool(repository is not None and repository.group_exists(name.replace(".", "/")))

    def _launch(self, batch: List[List[str]], first: int) -> List[Path]:  # noqa: UP006
        self.validate_batch_is_legal(batch)
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        returns = self.launcher.launch(batch, initial_job_idx=first)
        folders = []
        for i, ret in enumerate(returns):
            out = OmegaConf.select(ret.hydra_cfg or {}, "hydra.runtime.output_dir")
            folders.append(Path(str(out)) if out else sweep_dir / str(first + i))
        return folders

    def sweep(self, arguments: List[str]) -> Any:  # noqa: UP006
        from silas_exp.errors import ConfigError, SuiteError
        from silas_exp.eviction.two_tier import ahead
        from silas_exp.exits import Reported
        from silas_exp.run.console import report

        ahead.start()  # a first run's compile of the replay loop, beside what follows
        try:
            return self._study(arguments)
        except (ConfigError, SuiteError) as exc:  # one paragraph and exit 2, as for a job
            report(exc, "bad input")
            raise Reported(exc) from None

    def _study(self, arguments: List[str]) -> Any:  # noqa: UP006
        from silas_exp.config import validate
        from silas_exp.run.preflight import check_tune
        from silas_exp.tune.driver import TuneLoop, settings_of

        cfg = self.config
        raw = OmegaConf.to_container(OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"]),
                                     resolve=True)
        experiment = validate(raw)  # a bad value fails here, once, with exit 2
        choices = dict(cfg.hydra.runtime.choices)
        loop = TuneLoop(experiment, settings_of(experiment.tune, self.params),
                        Path(str(cfg.hydra.sweep.dir)), arguments, choices.get("scorer", experiment.scorer.name), self._is_group,
                        {k: v for k, v in choices.items() if "/" not in k})
        # every end of the search space and the control's certification job, before any trial
        check_tune(cfg, self.hydra_context.config_loader,
                   lambda extra, part, scorer: loop._job(extra, part, 0, scorer), loop.dims,
                   experiment.analysis.controls.get("scorer", "heuristic"))
        return loop.run(self._launch)
