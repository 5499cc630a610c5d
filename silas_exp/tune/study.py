"""The Optuna study of a tuning sweep: its directions (from the metric
registry, never assumed), its storage in the sweep folder (``optuna.db``, so
``resume=true`` continues it), and a trial's value from its job records.

Optuna 4 is driven by ask-and-tell from silas_exp's own sweeper
(``hydra_plugins/silas_tune``); docs/tuning.md says why not Hydra's Optuna
sweeper (it pins optuna < 3, samples ``repeat`` and minimises by default).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from silas_exp.errors import ConfigError
from silas_exp.metrics.registry import find_spec
from silas_exp.records import RESULT_FILE, read_job_result

STUDY_DB = "optuna.db"
STUDY_NAME = "silas-tune"
SAMPLERS = ("tpe", "random")
OPTUNA_FIX = "pip install -e '.[optuna]' (optuna 4)"


def require_optuna():
    try:
        import optuna
    except ImportError:
        raise ConfigError(f"experiment=tune needs Optuna, which is not installed; "
                          f"{OPTUNA_FIX}") from None
    if int(optuna.__version__.split(".")[0]) < 4:
        raise ConfigError(f"experiment=tune needs optuna 4, this environment has "
                          f"{optuna.__version__} (hydra-optuna-sweeper pins optuna < 3: "
                          f"uninstall it); {OPTUNA_FIX}")
    return optuna


def directions(objectives: Sequence[str]) -> list[str]:
    """Optuna's direction of each objective, from the metric registry."""
    if not objectives:
        raise ConfigError("tune.objectives is empty; name a metric to optimise "
                          "(default: metrics.optimize)")
    out = []
    for key in objectives:
        spec = find_spec(key)
        if spec is None:
            raise ConfigError(f"tune.objectives: {key!r} is not a declared metric "
                              "(docs/metrics.md lists them)")
        if spec.direction == "none":
            raise ConfigError(f"tune.objectives: {key!r} has no direction (better "
                              "higher or lower), so it cannot be optimised; pick another metric")
        out.append("maximize" if spec.direction == "higher" else "minimize")
    return out


def storage_url(sweep_dir: Path) -> str:
    return f"sqlite:///{(sweep_dir / STUDY_DB).resolve()}"


def _sampler(optuna, name: str, seed: int, n_startup: int, done: int):
    if name not in SAMPLERS:
        raise ConfigError(f"tune.sampler={name!r} is not one of {SAMPLERS}")
    seed = seed + done  # a resumed study does not replay the suggestions it already made
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=n_startup,
                                      multivariate=True, constant_liar=True)


def open_study(sweep_dir: Path, dirs: list[str], sampler: str, seed: int, n_startup: int,
               resume: bool):
    """The study of ``sweep_dir``: new, or (``resume=true``) the one there, its
    interrupted trials failed and enqueued again with the same parameters (their
    jobs that finished are then skipped like any resumed job)."""
    optuna = require_optuna()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    exists = (sweep_dir / STUDY_DB).is_file()
    if exists and not resume:
        raise ConfigError(f"{sweep_dir / STUDY_DB}: this sweep folder already holds a study; "
                          "continue it with resume=true, or give another hydra.sweep.dir")
    sweep_dir.mkdir(parents=True, exist_ok=True)
    storage = storage_url(sweep_dir)
    done = 0
    if exists:
        old = optuna.load_study(study_name=STUDY_NAME, storage=storage)
        done = len(old.trials)
        have = [d.name.lower() for d in old.directions]
        if have != dirs:
            raise ConfigError(f"resume=true: the study in {sweep_dir} optimises {have}, this "
                              f"config {dirs}; resume with the same tune.objectives")
    # one objective: a trial in the worst quarter after its first repeat is hopeless
    # (Optuna prunes single-objective studies only)
    pruner = optuna.pruners.PercentilePruner(25.0, n_startup_trials=n_startup) \
        if len(dirs) == 1 else optuna.pruners.NopPruner()
    study = optuna.create_study(study_name=STUDY_NAME, storage=storage, directions=dirs,
                                sampler=_sampler(optuna, sampler, seed, n_startup, done),
                                pruner=pruner, load_if_exists=True)
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        study.enqueue_trial(t.params, user_attrs=dict(t.user_attrs))
        study.tell(t.number, state=optuna.trial.TrialState.FAIL)
    return study


def prunes(study) -> bool:
    optuna = require_optuna()
    return not isinstance(study.pruner, optuna.pruners.NopPruner)


def trial_values(folders: Sequence[Path], objectives: Sequence[str]) -> list[float] | None:
    """Each objective's mean over the trial's jobs (its repeats); None when a
    job failed or has no value (the trial fails, it never scores as 0)."""
    sums = [0.0] * len(objectives)
    for folder in folders:
        path = folder / RESULT_FILE
        if not path.is_file():
            return None
        result = read_job_result(path)
        if not result.finished:
            return None
        for i, key in enumerate(objectives):
            value = result.metrics.get(key, math.nan)
            if not math.isfinite(value):
                return None
            sums[i] += value
    return [s / len(folders) for s in sums] if folders else None


def ranked(study, k: int, exclude: Sequence[int] = ()) -> list:
    """The k trials to certify, best first, leaving out ``exclude`` (trial
    numbers): by the (first) objective, among the Pareto front when there are
    several objectives (the whole study when the front holds only excluded ones)."""
    optuna = require_optuna()
    complete = [t for t in study.get_trials(deepcopy=False,
                                            states=(optuna.trial.TrialState.COMPLETE,))
                if t.number not in exclude]
    front = [t for t in study.best_trials if t.number not in exclude] \
        if len(study.directions) > 1 else []
    sign = -1.0 if study.directions[0] == optuna.study.StudyDirection.MAXIMIZE else 1.0
    return sorted(front or complete, key=lambda t: (sign * t.values[0], t.number))[:k]
