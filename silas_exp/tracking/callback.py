"""Hydra callback: runs in the launching process, whatever launcher runs jobs.

* on_run_start / on_multirun_start: create the tracking store and the suite's
  experiment once (several workers creating a fresh SQLite store at once break
  it), open the sweep's parent run, and write ``sweep.json`` for the jobs.
* on_multirun_end: print the per-variant summary, list failed jobs, close the
  parent run (FAILED if any job failed) and attach the summary to it.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from silas_exp.analysis.summary import failures, read_job_records, variant_table
from silas_exp.config import ExperimentConfig, validate
from silas_exp.errors import SilasExpError, SweepFailed, TrackingError
from silas_exp.exits import Reported
from silas_exp.progress import planned_jobs
from silas_exp.records import SweepManifest, read_manifest, write_manifest
from silas_exp.tracking import background
from silas_exp.tracking.jobs import (
    command_key,
    experiment_name,
    find_resumable_sweep,
    new_sweep_id,
    open_store,
    reopen_sweep,
)
from silas_exp.tracking.parent import apply_parent_summary
from silas_exp.tracking.payload import (
    code_revision,
    default_params,
    standard_tags,
    swept_keys,
    ui_link,
)
from silas_exp.tracking.preflight import preflight


def _experiment(config: DictConfig) -> ExperimentConfig | None:
    try:
        task = OmegaConf.masked_copy(config, [k for k in config if k != "hydra"])
        return validate(OmegaConf.to_container(task, resolve=True))  # type: ignore[arg-type]
    except (SilasExpError, Exception):
        return None  # the job itself reports the problem with a clear message


_UPLOADERS: dict[str, subprocess.Popen] = {}


def _write_ablation(sweep_dir: Path, records, cfg: ExperimentConfig | None) -> None:
    """Ablation of the finished jobs against the control, when the sweep has
    more than one variant: ablation.md + plots in the sweep folder (the
    uploader attaches them to the parent run)."""
    if len({r.variant for r in records if r.status == "finished"}) < 2:
        return
    from silas_exp.analysis.ablation import ablation
    from silas_exp.analysis.adaptive import AdaptiveState, adaptive_notes
    from silas_exp.analysis.data import load_sweep_dir
    from silas_exp.analysis.html import ablation_html
    from silas_exp.analysis.parent import parent_summary
    from silas_exp.analysis.plots import ablation_plots
    from silas_exp.analysis.report import OUTCOME_TEXT, ablation_markdown

    try:
        data = load_sweep_dir(sweep_dir, Path(cfg.suite.path) if cfg else None)
        settings = cfg.analysis if cfg else None
        adaptive = AdaptiveState.read(sweep_dir)
        if adaptive is not None and settings is not None:  # the confidence the looks used
            settings = settings.model_copy(update={"confidence": adaptive.confidence})
        result = ablation(data, settings)
        if adaptive is not None:
            result.notes += adaptive_notes(adaptive)
        plots = ablation_plots(result, data, sweep_dir / "ablation")
        md = ablation_markdown(result, [f"ablation/{p.name}" for p in plots])
        (sweep_dir / "ablation.md").write_text(md)
        (sweep_dir / "ablation.html").write_text(ablation_html(result, plots))
        parent_summary(result, data.swept_keys, data.added_control).write(sweep_dir)
        print(f"\nAblation vs {result.control} ({result.control_reason}):")
        for variant, vv in sorted(result.verdicts.items()):
            need = f" (≈ {vv.n_needed} cases to decide)" if vv.n_needed else ""
            print(f"  {variant}: {OUTCOME_TEXT[vv.outcome].strip('*')} — "
                  f"{'; '.join(vv.reasons)}{need}")
        for metric in result.insensitive():
            print(f"  note: {metric} cannot separate oracle from random on this suite "
                  "(insensitive here)")
        if result.sensitivity and {"scorer=oracle", "scorer=random"} <= set(data.variants()):
            print(f"  sensitivity of the gated metrics is in the report; keep it for later "
                  f"ablations on this suite:\n    silas-exp sensitivity {sweep_dir} "
                  f"--suite-dir {cfg.suite.path if cfg else '<suite folder>'}")
        print(f"  report: {sweep_dir / 'ablation.md'}")
    except SilasExpError as exc:
        print(f"(no ablation report: {exc})")


def dry_run_total(records, model_name: str) -> str:
    calls = sum(r.metrics.get("llm.calls", 0.0) for r in records)
    tokens = sum(r.metrics.get("llm.input_tokens", 0.0) + r.metrics.get("llm.output_tokens", 0.0)
                 for r in records)
    usd = sum(r.metrics.get("llm.cost_usd", 0.0) for r in records)
    return (f"\nDry run ({len(records)} jobs, model={model_name}): {calls:.0f} model calls, "
            f"{tokens:.0f} tokens, estimated ${usd:.2f}. Estimated from simulated answers: real "
            "answer lengths differ; cached answers would cost nothing.")


class TrackingCallback(Callback):
    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        cfg = _experiment(config)
        store = open_store(cfg) if cfg else None
        if store is not None:
            store.ensure_store()
            store.ensure_experiment(experiment_name(cfg))

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(str(config.hydra.sweep.dir))
        cli = list(config.hydra.overrides.task)
        params = OmegaConf.to_container(config.hydra.sweeper.get("params") or {}, resolve=False)
        cfg = _experiment(config)
        name = experiment_name(cfg) if cfg else "silas"
        command = "python -m silas_exp -m " + " ".join(shlex.quote(o) for o in cli)
        info = SweepManifest(sweep_id=new_sweep_id(), experiment_name=name,
                             swept_keys=swept_keys(cli, params), command=command,
                             started_at=time.time())
        info.jobs_total = planned_jobs(
            cli, OmegaConf.to_container(config.hydra.sweeper.get("params") or {}, resolve=True),
            str(config.hydra.sweeper.get("_target_", "")))
        if cfg is None or not cfg.tracking.enabled:
            write_manifest(sweep_dir, info)
            return
        info.default_params = default_params()  # composed once here, not in every job
        try:
            preflight(cfg.tracking.uri)
        except TrackingError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise Reported(exc) from None
        key = command_key(cli)
        info.tracking_uri, info.artifact_root = cfg.tracking.uri, cfg.tracking.artifact_root
        info.parent_tags = {
            "silas.sweep_id": info.sweep_id, "silas.kind": "sweep", "silas.command": command,
            "silas.command_key": key, "silas.swept_keys": ",".join(info.swept_keys),
            "silas.suite": cfg.suite.name, "silas.git_revision": code_revision(cfg.paths.root),
            "llm.backend": cfg.model.backend,
            "llm.simulated": str(cfg.model.backend == "simulated").lower(),
            **standard_tags(cfg.paths.root),
        }
        if cfg.tracking.background and not cfg.resume:
            info.background = True
            write_manifest(sweep_dir, info)
            # kept off the callback object: launchers pickle callbacks for their workers
            _UPLOADERS[str(sweep_dir)] = background.start(sweep_dir)
            return
        store = open_store(cfg)
        store.ensure_store()
        info.experiment_id = store.ensure_experiment(name)
        previous = find_resumable_sweep(store, info.experiment_id, key) if cfg.resume else None
        if previous is not None:
            info.sweep_id = previous.data.tags["silas.sweep_id"]
            info.parent_run_id = previous.info.run_id
            killed = reopen_sweep(store, previous)
            print(f"Resuming sweep {info.sweep_id} (parent run {info.parent_run_id}); "
                  f"{killed} interrupted job run(s) marked KILLED; finished jobs are skipped.")
        else:
            if cfg.resume:
                print("resume=true: no unfinished sweep with this command; starting a new one.")
            info.parent_run_id = store.start_run(info.experiment_id, f"sweep-{info.sweep_id}",
                                                 info.parent_tags, start_time=info.started_at)
        write_manifest(sweep_dir, info)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        # Hydra turns an exception raised here into a warning and exit code 0, so
        # this method catches its own: the uploader is always told the sweep is
        # over (no run left RUNNING) and a broken summary still fails the command.
        sweep_dir = Path(str(config.hydra.sweep.dir))
        uploader = _UPLOADERS.pop(str(sweep_dir), None)
        cfg = _experiment(config)
        records: list = []
        failed: list[str] = []
        broken: BaseException | None = None
        try:
            records = read_job_records(sweep_dir)
            failed = _summarise(sweep_dir, cfg, records)
        except Exception as exc:  # reported below and fails the command, never swallowed
            broken = exc
            print(f"error: end-of-sweep summary failed: {type(exc).__name__}: {exc}\n"
                  f"  every job result is kept in {sweep_dir}", file=sys.stderr)
        info = _close_tracking(sweep_dir, cfg, uploader, len(records), failed, broken)
        if cfg is not None and cfg.tracking.enabled and info and info.parent_run_id:
            ui = "" if cfg.tracking.uri.startswith(("http://", "https://")) \
                else f"\n  mlflow ui --backend-store-uri {cfg.tracking.uri}"
            print(f"\nMLflow: experiment {info.experiment_name!r}, parent run {info.parent_run_id}"
                  f"{ui}\n  {ui_link(cfg.tracking.uri, info.experiment_id)}")
        sys.stdout.flush()
        if failed or broken is not None:  # exit 1 (silas_exp.exits: Hydra lets it through)
            raise Reported(SweepFailed(f"{len(failed)} job(s) failed" if failed
                                       else "the end-of-sweep summary failed"))


def _summarise(sweep_dir: Path, cfg: ExperimentConfig | None, records) -> list[str]:
    """Print and write the end-of-sweep summary and ablation; return the failures."""
    info = read_manifest(sweep_dir)
    table = variant_table(records)
    failed = failures(records)
    print(f"\nSweep {info.sweep_id if info else ''}: {len(records)} job(s) in {sweep_dir}")
    print(table)
    if failed:
        print(f"\n{len(failed)} job(s) failed:")
        for line in failed:
            print("  -", line)
    (sweep_dir / "summary.md").write_text(table + "\n")
    if cfg is not None and cfg.llm.dry_run:
        print(dry_run_total(records, cfg.model.name))
    _write_ablation(sweep_dir, records, cfg)
    return failed


def _close_tracking(sweep_dir: Path, cfg: ExperimentConfig | None,
                    uploader: subprocess.Popen | None, jobs: int, failed: list[str],
                    broken: BaseException | None) -> SweepManifest | None:
    """End the sweep's parent run: through the background uploader, or directly."""
    info = read_manifest(sweep_dir)
    bad = len(failed) + (broken is not None)
    if uploader is not None:
        background.mark_done(sweep_dir, bad)
        try:
            code = uploader.wait(timeout=600)
        except subprocess.TimeoutExpired:
            uploader.kill()
            code = -1
        if code != 0:
            print(f"\ntracking failed (see {sweep_dir / background.LOG_FILE}); every result is "
                  f"kept in {sweep_dir}. Upload later: silas-exp upload {sweep_dir}",
                  file=sys.stderr)
        return read_manifest(sweep_dir)
    if cfg is not None and info and info.parent_run_id:
        store = open_store(cfg)
        for name in ("summary.md", "sweep.json", "ablation.md"):
            if (sweep_dir / name).is_file():
                store.log_artifact(info.parent_run_id, sweep_dir / name)
        if (sweep_dir / "ablation").is_dir():
            store.log_artifacts(info.parent_run_id, sweep_dir / "ablation", "ablation")
        store.log(info.parent_run_id, metrics={"sweep.jobs": jobs,
                                               "sweep.failed_jobs": len(failed)})
        apply_parent_summary(store, info.parent_run_id, sweep_dir)
        store.end_run(info.parent_run_id, "FAILED" if bad else "FINISHED")
    return info
