"""What a job prints: its label, the line when it ends (with the sweep's
progress), the dry-run estimate, warnings, and an error in one paragraph
(``--verbose`` or ``HYDRA_FULL_ERROR=1`` adds the traceback)."""

from __future__ import annotations

import hashlib
import math
import os
import sys
import time
import traceback
from pathlib import Path

from silas_exp.config import ExperimentConfig
from silas_exp.metrics.names import COST_KEYS, SIMULATED, display_name
from silas_exp.metrics.numbers import num
from silas_exp.records import RESULT_FILE, SweepManifest
from silas_exp.run.failures import console_lines as failure_lines
from silas_exp.run.job import JobOutcome, JobSpec
from silas_exp.run.progress import progress_note


def verbose() -> bool:
    """``python -m silas_exp --verbose`` (or an exported HYDRA_FULL_ERROR=1)
    sets SILAS_EXP_VERBOSE=1 for the whole process tree (``silas_exp.exits``)."""
    return os.environ.get("SILAS_EXP_VERBOSE", os.environ.get("HYDRA_FULL_ERROR")) == "1"


def report(exc: BaseException, what: str) -> None:
    if verbose():
        traceback.print_exception(exc)
    print(f"error: {what}: {exc}", file=sys.stderr)
    if not verbose():
        print("(run with --verbose for the full traceback)", file=sys.stderr)


# set by the sweep callback in the launching process, inherited by its jobs:
# one value per invocation of a sweep (a resumed sweep reports afresh)
SWEEP_TOKEN_ENV = "SILAS_EXP_SWEEP_TOKEN"


def first_report(sweep_dir: Path, exc: BaseException) -> bool:
    """Whether no other job of this invocation of the sweep has reported the
    same error yet. Jobs running side by side (forked workers) that fail on the
    same bad input (a value every job shares) would each print the same
    paragraph; the first to fail claims the message (a file named by the
    invocation and the message's digest, created exclusively under the sweep
    folder's ``.reported/``) and only it prints. A different message prints."""
    token = os.environ.get(SWEEP_TOKEN_ENV)
    if not token:
        return True
    seen = sweep_dir / ".reported"
    name = f"{token}-{hashlib.sha256(str(exc).encode()).hexdigest()[:16]}"
    try:
        seen.mkdir(parents=True, exist_ok=True)
        os.close(os.open(seen / name, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    except OSError:  # a folder that cannot be written: print, as without it
        return True
    return True


def job_label(job: JobSpec, multirun: bool, job_num: int) -> str:
    block = f" b{job.block}" if job.block else ""
    return f"[job {job_num}] {job.variant}#r{job.repeat}{block}" if multirun else f"[run] {job.variant}"


def say(line: str) -> None:
    """One line on stdout in one write: the jobs of a sweep print from several
    worker processes into one pipe, and ``print`` writes the text and its
    newline apart, so two jobs' lines could run together."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def skipped(label: str, run_id: str) -> None:
    say(f"{label}: already finished as run {run_id}; skipped")


def spend(metrics: dict[str, float]) -> tuple[float, float, float]:
    """(calls, tokens, USD) a job's model calls came to: its own and those it
    made only to measure (``llm.overhead.*``), which a real run pays for too.
    A job is real or simulated as a whole: its cost is one or the other."""
    m = metrics
    return (m.get("llm.calls", 0.0) + m.get("llm.overhead.calls", 0.0),
            m.get("llm.input_tokens", 0.0) + m.get("llm.output_tokens", 0.0)
            + m.get("llm.overhead.tokens", 0.0),
            sum(m.get(k, 0.0) + m.get(k + SIMULATED, 0.0) for k in COST_KEYS))


def dry_run(label: str, cfg: ExperimentConfig, metrics: dict[str, float]) -> None:
    calls, tokens, usd = spend(metrics)
    measuring = metrics.get("llm.overhead.calls", 0.0)
    say(f"{label}: dry run: {calls:.0f} model calls"
        + (f" ({measuring:.0f} to measure: calibration, the control's reference replays)"
           if measuring else "")
        + f", {tokens:.0f} tokens, estimated ${usd:.4f} with {cfg.model.name} "
        "(simulated answers; nothing tracked)")


def job_done(label: str, cfg: ExperimentConfig, outcome: JobOutcome, seconds: float,
             manifest: SweepManifest | None, out_dir: Path) -> None:
    """The job's line (cases, pass rate, the optimised metric, time, sweep progress)."""
    value = outcome.metrics.get(cfg.metrics.optimize, math.nan)
    progress = ""
    if manifest is not None:
        note = progress_note(out_dir.parent, manifest.jobs_total, manifest.started_at, time.time())
        progress = f" [{note}]"
    say(f"{label}: {outcome.cases} cases, pass {outcome.run.summary.pass_rate:.0%}, "
        f"{display_name(cfg.metrics.optimize)} {num(value)} ({seconds:.1f}s){progress} -> {out_dir}")
    for line in failure_lines(label, outcome.failures, verbose()):  # why cases errored, by cause
        say(line)
    if outcome.metrics.get("probe.empty_summaries", 0) > 0:
        say(f"{label}: warning: some compressions produced an empty summary (probe.empty_summaries "
            f"{outcome.metrics['probe.empty_summaries']:.2f} per case), so they compressed like "
            "truncate: the dropped items show no fact a summary would keep")


def run_footer(out_dir: Path, outcome: JobOutcome, tracked: str | None) -> None:
    """A single run (not a sweep): where its results are."""
    print(f"results: {out_dir / RESULT_FILE} (per case: {outcome.results_path})")
    if tracked:
        print(tracked)
