"""The exit status of a run or a sweep that completed (README, "Exit codes").

* A study that completed exits 0 whatever its verdicts, unless the config
  asks for a gate: ``fail_on=[do_not_ship]`` (or ``[do_not_ship,inconclusive]``)
  exits 1 when a variant got one of those verdicts, for CI; ``warning`` in the
  list exits 1 when a variant ships with a warning line (what the rule lets
  through: worse within a margin, pass → fail beyond noise).
* A case that errored from code — an exception, or a scorer or strategy that
  broke its contract (``run/failures.py`` counts them per cause; a model call
  that failed for good after its retries is not one) — exits 1 by default,
  with the one-line cause last on the console: a crash in one's code never
  passes for a worse variant. ``case_errors=ignore`` exits 0 instead.
* Bad input exits 2 before any job (``silas_exp.errors``).

The entry point calls :func:`after_run` when a single run ends and the sweep
callback :func:`after_sweep` when a sweep ends, after everything else is
printed; each raises ``Reported`` (``silas_exp.exits``) with the exit code.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from silas_exp.config import ExperimentConfig
from silas_exp.errors import RegressionFound, RunError, SilasExpError
from silas_exp.exits import Reported
from silas_exp.records import SweepEnd
from silas_exp.run.failures import FAILURES_FILE

VERDICT_TAG = "silas.verdict."


class CaseErrors(RunError):
    """Cases errored from code: the run completed, but its numbers lack them (exit 1)."""


def case_errors(job_dirs: Iterable[Path]) -> list[tuple[str, dict[str, Any]]]:
    """(job folder name, cause record) of every cause of case errors from code,
    in job order (a model call that failed for good is counted in the job's
    ``llm.errors`` and ``summary.error_rate``, and is no crash)."""
    out = []
    for folder in job_dirs:
        path = folder / FAILURES_FILE
        if path.is_file():
            out += [(folder.name, record) for record in json.loads(path.read_text())
                    if record.get("code", True)]
    return out


def _case_error(found: list[tuple[str, dict[str, Any]]], jobs: str) -> CaseErrors:
    runs = sum(int(r["count"]) for _, r in found)
    causes = list(dict.fromkeys(r["cause"] for _, r in found))
    first = found[0][1]
    more = f" (and {len(causes) - 1} other cause(s), counted in the job folders' " \
           f"{FAILURES_FILE})" if len(causes) > 1 else ""
    return CaseErrors(f"{runs} case run(s){jobs} errored: {first['cause']} — first: "
                      f"{first['first']}" + (f": {first['detail']}" if first["detail"] else "")
                      + f"{more}. Fix the code named; case_errors=ignore exits 0 with them.")


def _stop(error: SilasExpError) -> None:
    sys.stdout.flush()
    print(f"error: {error}", file=sys.stderr, flush=True)
    raise Reported(error)


def after_run(out_dir: Path, cfg: ExperimentConfig) -> None:
    """A single run's exit status: 1 when a case errored (unless case_errors=ignore)."""
    found = case_errors([out_dir])
    if found and cfg.case_errors == "fail":
        _stop(_case_error(found, ""))


def verdicts(end: SweepEnd) -> dict[str, str]:
    """variant -> verdict of the sweep's ablation: from its statistics table (the
    variants' names), else from the parent run's tags (names made safe for tags)."""
    for table in end.tables.values():
        if "variant" in table and "verdict" in table:
            return {v: verdict for v, verdict in zip(table["variant"], table["verdict"],
                                                     strict=True) if verdict != "control"}
    return {tag[len(VERDICT_TAG):]: verdict for tag, verdict in sorted(end.tags.items())
            if tag.startswith(VERDICT_TAG)}


def warned(end: SweepEnd) -> set[str]:
    """Variants that ship with a warning (analysis.let_through): the statistics
    table's ``warnings`` column counts them."""
    for table in end.tables.values():
        if "variant" in table and "warnings" in table:
            return {v for v, n in zip(table["variant"], table["warnings"], strict=True) if n}
    return set()


def gate_failures(end: SweepEnd, fail_on: Iterable[str]) -> dict[str, str]:
    """variant -> verdict, for the verdicts ``fail_on`` names (``warning``: a
    variant that ships with a warning line)."""
    asked = set(fail_on)
    out = {v: verdict for v, verdict in verdicts(end).items() if verdict in asked}
    if "warning" in asked:
        out.update({v: "ship with a warning" for v in warned(end) if v not in out})
    return out


def after_sweep(sweep_dir: Path, cfg: ExperimentConfig | None, end: SweepEnd) -> None:
    """A completed sweep's exit status: case errors first (a crash is not a
    verdict), then the verdict gate ``fail_on``."""
    if cfg is None:
        return
    jobs = sorted((p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit()),
                  key=lambda p: int(p.name))
    found = case_errors(jobs)
    if found and cfg.case_errors == "fail":
        n = len({job for job, _ in found})
        _stop(_case_error(found, f" in {n} job(s)"))
    failing = gate_failures(end, cfg.fail_on)
    if failing:
        listed = ", ".join(f"{v}: {verdict}" for v, verdict in failing.items())
        _stop(RegressionFound(f"fail_on=[{','.join(cfg.fail_on)}]: {listed} (ablation.md has why). "
                              "The study completed; drop fail_on to exit 0 whatever the verdicts."))
