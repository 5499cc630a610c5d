"""The loop of a tuning sweep (experiment=tune: hydra_plugins/silas_tune), handed a way to
launch a batch of jobs: split the suite once, ask Optuna for trials, run each
trial's repeats on the training cases, tell Optuna their mean, then certify
the best on the held-out cases and record everything (``tune.json``).

A trial runs its whole training split (``cases_per_block=null``); a holdout
larger than ``cases_per_block`` is certified in blocks of cases, sequentially
(``silas_exp.tune.certify``), with the sweep's own loop of looks
(``silas_exp.study.loop.run_looks``).

Job folders are numbered by trial (trial t, repeat r: ``t × repeats + r``), so
a resumed study finds its jobs where it left them; certification jobs start
at ``CERT_BASE``, numbered in launch order.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from silas_exp.config import ExperimentConfig
from silas_exp.data.suites.blocks import n_blocks
from silas_exp.data.suites.memo import load_suite_cached
from silas_exp.errors import ConfigError, pydantic_error_to_config_error
from silas_exp.records import SweepManifest, read_manifest, update_manifest
from silas_exp.stats import Outcome
from silas_exp.study.looks import look_and_close
from silas_exp.study.loop import run_looks
from silas_exp.study.state import AdaptiveState
from silas_exp.tune import certify as cert
from silas_exp.tune import study as st
from silas_exp.tune.record import SPLIT_FILE, TrialScore, TuneRecord
from silas_exp.tune.space import Dimension, default_params, parse_space, trial_overrides
from silas_exp.tune.split import Split, split_cases
from silas_exp.variants import variant_name

log = logging.getLogger(__name__)
CERT_BASE = 1_000_000
# a batch of jobs -> the folders they wrote, in batch order
Launch = Callable[[list[list[str]], int], list[Path]]


class TuneSettings(BaseModel):
    """The config's ``tune`` node (conf/experiment/tune.yaml)."""

    model_config = ConfigDict(extra="forbid")
    n_trials: int = Field(default=12, ge=1)
    batch: int = Field(default=2, ge=1)  # trials asked and launched together
    top_k: int = Field(default=1, ge=1)  # trials certified on the holdout
    sampler: str = "tpe"
    n_startup_trials: int = Field(default=4, ge=0)
    # single objective: a trial whose first repeat is in the worst quarter of the
    # trials so far (after n_startup_trials) skips its other repeats
    prune: bool = True
    seed: int | None = None  # the sampler's; null: the experiment's seed
    objectives: list[str] | None = None  # null: [metrics.optimize]
    # scorer -> its search space (Hydra sweep syntax): the study searches its scorer's
    space: dict[str, dict[str, str]] = Field(default_factory=dict)
    # the sweeper's grid params: conf/config.yaml's ``repeat`` entry, nothing else
    params: dict[str, Any] = Field(default_factory=dict)


def settings_of(raw: dict[str, Any] | None, params: dict[str, Any]) -> TuneSettings:
    if raw is None:
        raise ConfigError("the tuning sweeper needs a `tune` node: run it with experiment=tune "
                          "(conf/experiment/tune.yaml)")
    try:
        return TuneSettings.model_validate({**raw, "params": params})
    except ValidationError as exc:
        raise pydantic_error_to_config_error(exc, data=raw, prefix="tune") from None


def record_split(sweep_dir: Path, split: Split) -> None:
    """split.json, written once; a resumed study must split the same way."""
    path = sweep_dir / SPLIT_FILE
    if path.is_file() and json.loads(path.read_text()) != split.as_json():
        raise ConfigError(f"{path}: this study split its cases differently; resume with the same "
                          "suite, suite.holdout and suite.split_seed")
    path.write_text(json.dumps(split.as_json(), indent=1))


class TuneLoop:
    def __init__(self, cfg: ExperimentConfig, s: TuneSettings, sweep_dir: Path,
                 arguments: Sequence[str], scorer: str, is_group: Callable[[str], bool],
                 choices: dict[str, str]) -> None:
        if cfg.repeats == "auto":
            raise ConfigError("repeats=auto: a tuning study runs a fixed number of repeats in "
                              "every trial; give repeats=N (the study's default is 3)")
        st.require_optuna()  # before anything is written
        self.cfg, self.s, self.sweep_dir, self.scorer = cfg, s, sweep_dir, scorer
        self.repeats = int(cfg.repeats)
        self.objectives = list(s.objectives or [cfg.metrics.optimize])
        self.dirs = st.directions(self.objectives)
        if scorer not in s.space:
            raise ConfigError(f"scorer={scorer} has no search space: declare tune.space.{scorer} "
                              f"(spaces given: {sorted(s.space)}); docs/tuning.md")
        self.space = dict(s.space[scorer])
        self.dims: list[Dimension] = parse_space(self.space, is_group, s.params, scorer)
        # what varies between the study's jobs (a list on the command line does not)
        self.swept = sorted({d.key for d in self.dims} | {"scorer", "suite.split", "repeat"})
        self.args = self._fixed(arguments, scorer)
        values = {**_flat(cfg.model_dump(mode="json")), **choices}
        self.reference_params = default_params(self.dims, values)

    def _fixed(self, arguments: Sequence[str], scorer: str) -> list[str]:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        keys = {d.key for d in self.dims}
        parser = OverridesParser.create()
        out = []
        for arg in arguments:
            key = arg.partition("=")[0].lstrip("+~")
            if key in keys:
                raise ConfigError(f"{arg}: {key} is searched by the study (tune.space.{scorer}); "
                                  "drop it from the command line or from the space")
            if parser.parse_override(arg).is_sweep_override():
                raise ConfigError(f"{arg}: a tuning study searches tune.space and "
                                  "tunes one scorer; put dimensions in the space, not the command")
            if key != "scorer":  # every job names its scorer itself
                out.append(arg)
        return out

    def _job(self, extra: Sequence[str], part: str, repeat: int, scorer: str | None = None
             ) -> list[str]:
        """A job's overrides; a trial runs its whole training split, never a block of it."""
        args = self.args if part == "holdout" else [
            "cases_per_block=null", *(a for a in self.args
                                      if a.partition("=")[0].lstrip("+~") != "cases_per_block")]
        return [f"scorer={scorer or self.scorer}", *extra, f"suite.split={part}",
                f"repeat={repeat}", *args]

    def run(self, launch: Launch) -> TuneRecord:
        cfg = self.cfg
        pool = load_suite_cached(cfg.suite.path).eval_cases[: cfg.suite.max_cases]
        split = split_cases(pool, cfg.suite.holdout, cfg.suite.split_seed)
        study = st.open_study(self.sweep_dir, self.dirs, self.s.sampler,
                              cfg.seed if self.s.seed is None else self.s.seed,
                              self.s.n_startup_trials, cfg.resume)
        record_split(self.sweep_dir, split)
        self._plan_manifest()
        if not study.trials and self.reference_params is not None:
            study.enqueue_trial(self.reference_params, user_attrs={"reference": True})
        self._search(study, launch)
        record = self._record(study, split)
        self._certify(study, record, launch)
        record.write(self.sweep_dir)
        return record

    def _plan_manifest(self) -> None:
        def plan(info: SweepManifest) -> None:
            info.swept_keys = list(self.swept)
            info.jobs_total = self.repeats * (self.s.n_trials + self.s.top_k + 2)  # none pruned

        update_manifest(self.sweep_dir, plan)

    def _search(self, study, launch: Launch) -> None:
        optuna = st.require_optuna()
        searched = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
        left = self.s.n_trials - len(study.get_trials(deepcopy=False, states=searched))
        while left > 0:
            trials = [study.ask(_distributions(self.dims)) for _ in range(min(self.s.batch, left))]
            left -= len(trials)
            self._batch(study, trials, launch)

    def _batch(self, study, trials: list, launch: Launch) -> None:
        """Run a batch of trials: with pruning, the first repeat of each, then
        the other repeats of those not pruned. The batch's jobs take the folder
        numbers of its trials (``trial × repeats`` onwards), in launch order."""
        optuna = st.require_optuna()
        R, numbers = self.repeats, [t.number for t in trials]
        overrides = [trial_overrides(self.dims, t.params) for t in trials]
        if numbers != list(range(numbers[0], numbers[0] + len(numbers))):  # not one block
            for trial, o in zip(trials, overrides, strict=True):
                jobs = [self._job(o, "train", r) for r in range(R)]
                self._tell(study, trial, o, launch(jobs, trial.number * R))
            return
        start, prune = numbers[0] * R, st.prunes(study) and R > 1 and self.s.prune
        first = launch([self._job(o, "train", 0) for o in overrides], start) if prune else []
        alive = []
        for i, trial in enumerate(trials):
            if prune:
                value = st.trial_values(first[i:i + 1], self.objectives)
                if value is not None:
                    trial.report(value[0], step=0)
                    if trial.should_prune():
                        trial.set_user_attr("jobs", [first[i].name])
                        study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                        log.info(f"Trial {trial.number} pruned after its first repeat "
                                 f"({_fmt(self.objectives, value)}): {overrides[i]}")
                        continue
            alive.append(i)
        todo = range(1, R) if prune else range(R)
        rest = launch([self._job(overrides[i], "train", r) for i in alive for r in todo],
                      start + len(first)) if alive else []
        n = len(todo)
        for k, i in enumerate(alive):
            folders = ([first[i]] if prune else []) + rest[k * n:(k + 1) * n]
            self._tell(study, trials[i], overrides[i], folders)

    def _tell(self, study, trial, overrides: list[str], folders: list[Path]) -> None:
        optuna = st.require_optuna()
        values = st.trial_values(folders, self.objectives)
        trial.set_user_attr("jobs", [f.name for f in folders])
        if values is None:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            log.warning(f"Trial {trial.number} failed (a job failed): {overrides}")
            return
        study.tell(trial, values)
        log.info(f"Trial {trial.number}: {_fmt(self.objectives, values)} {overrides}")

    def _record(self, study, split: Split) -> TuneRecord:
        optuna = st.require_optuna()
        done = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
        failed = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.FAIL,))
        pruned = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.PRUNED,))
        ref = next((t for t in done if t.user_attrs.get("reference")), None)
        best = st.ranked(study, self.s.top_k, [ref.number] if ref else []) if done else []
        return TuneRecord(
            study=st.STUDY_NAME, scorer=self.scorer, objectives=self.objectives,
            directions=self.dirs, space=self.space, n_trials=len(done),
            n_failed=len(failed), n_pruned=len(pruned), repeats=self.repeats, train_cases=len(split.train),
            holdout_cases=len(split.holdout), split_seed=split.seed, sampler=self.s.sampler,
            reference=_score(ref, self.objectives, True) if ref else None,
            best=[_score(t, self.objectives, False) for t in best])

    def _certify(self, study, record: TuneRecord, launch: Launch) -> None:
        if not record.best:
            log.warning("No trial completed: nothing to certify")
            return
        control = self.cfg.analysis.controls.get("scorer", "heuristic")
        # the control, the untuned scorer (reference), then the candidates, best first
        arms: list[tuple[list[str], str | None]] = [([], control), ([], None)]
        arms += [(trial_overrides(self.dims, best.params), None) for best in record.best]
        names = [variant_name(self._job(extra, "holdout", 0, scorer), self.swept, self.scorer)
                 for extra, scorer in arms]
        for best, name in zip(record.best, names[2:], strict=True):
            best.variant = name
        variants = dict(zip(names, arms, strict=True))  # tuning the control: it is its reference
        folders, sequential = self._holdout_rounds(variants, names[0], names[1], record, launch)
        info = read_manifest(self.sweep_dir)
        data = cert.load_jobs(info.sweep_id if info else self.sweep_dir.name,
                              info.command if info else "", folders, self.swept)
        ref_train = record.reference.train if record.reference else {}
        gains = {b.variant: {m: b.train[m] - ref_train[m] for m in ref_train}
                 for b in record.best}
        candidates = {b.variant: b.number for b in record.best}
        if names[0] not in data.variants():
            log.warning("Certification jobs failed: no verdict")
            return
        certification, result = cert.certify(data, candidates, names[0], names[1],
                                             self.cfg.analysis, self.objectives, gains,
                                             sequential)
        record.certification = certification
        from silas_exp.tune.report import certification_files

        certification_files(self.sweep_dir, record, result, data)

    def _holdout_rounds(self, variants: dict[str, tuple[list[str], str | None]], control: str,
                        reference: str, record: TuneRecord, launch: Launch
                        ) -> tuple[list[Path], AdaptiveState | None]:
        """Run the certification jobs: every arm on the whole holdout, or, when it
        holds more than ``cases_per_block`` cases, block by block with a look
        after blocks 1, 2, 4, … (the control and the untuned reference run
        while any candidate does); return the jobs' folders, and the looks' state
        when in blocks."""
        cfg, holdout, size = self.cfg, record.holdout_cases, self.cfg.cases_per_block
        blocks = n_blocks(holdout, size)
        settings = cert.certification_settings(cfg.analysis, len(record.best), control)
        state = AdaptiveState.plan_blocks(settings, blocks, min(size or holdout, holdout),
                                          holdout, cfg.seed)
        state.control = control
        folders: list[Path] = []

        def jobs(b: int, open_arms: list) -> list[list[str]]:
            block = [f"block={b}"] if blocks > 1 else []
            return [self._job([*extra, *block], "holdout", r, scorer)
                    for extra, scorer in open_arms for r in range(self.repeats)]

        def run(batch: list[list[str]], index: int) -> list[Path]:
            got = launch(batch, CERT_BASE + index)
            folders.extend(got)
            return got

        def look(at: int) -> None:
            if blocks == 1:
                return  # one look on the whole holdout: the verdicts are the certification's
            data = cert.load_jobs(self.sweep_dir.name, "", folders, self.swept)
            look_and_close(data, settings, state, at)
            state.closed.pop(reference, None)  # a reference, not a candidate: it follows
            state.write(self.sweep_dir)
            for v, why in state.closed.items():
                if why["round"] == at:
                    log.info(f"Certification: {v} stops after block {at}: {Outcome(why['outcome']).words} — "
                             f"{why['why']}")

        if blocks > 1:
            log.info(f"Certification in blocks: {holdout} held-out cases in {blocks} blocks of "
                     f"{size} (order fixed by seed={cfg.seed}), looks after blocks {state.looks}")
        run_looks(state, variants, jobs, run, look, follow=[reference])
        return folders, state if blocks > 1 else None


def _distributions(dims: list[Dimension]) -> dict[str, Any]:
    return {d.key: d.distribution for d in dims}


def _score(trial, objectives: list[str], reference: bool) -> TrialScore:
    return TrialScore(number=trial.number, params=dict(trial.params),
                      train=dict(zip(objectives, trial.values, strict=True)), reference=reference)


def _fmt(objectives: list[str], values: list[float]) -> str:
    return ", ".join(f"{k}={v:.4f}" for k, v in zip(objectives, values, strict=True))


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(data, dict):
        return {prefix: data}
    out: dict[str, Any] = {}
    for key, value in data.items():
        out.update(_flat(value, f"{prefix}.{key}" if prefix else str(key)))
    return out
