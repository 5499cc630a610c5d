"""First contact: every problem of a command is found before its first job, all
at once, in our own words. Each command here runs the real CLI with tracking
on, and must exit 2 with one paragraph that names every problem, leaving no
job folder and no MLflow run behind."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.plugins.test_declared_once import silas

SHARES_090 = {"chronicle": 0.4, "memory": 0.3, "workspace": 0.2}


def paragraph(stderr: str) -> str:
    """The error paragraph (a numbered list of problems stays one paragraph):
    one ``error:`` line, nothing of a traceback or of Hydra's internals."""
    assert "Traceback" not in stderr and "hydra/_internal" not in stderr, stderr[-3000:]
    lines = stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("error: ")]
    assert len(starts) == 1, stderr[-3000:]
    block = []
    for line in lines[starts[0]:]:
        if not line.strip() or line.startswith("(run with --verbose"):
            break
        block.append(line)
    return "\n".join(block)


def _uploaders(sweep_dir: Path) -> list[Path]:
    """This test's background uploader processes (the sweep's own folder in
    their command line)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "silas_exp.tracking.background" in cmd and str(sweep_dir) in cmd:
            found.append(proc)
    return found


def nothing_started(tmp_path: Path, done) -> None:
    """No job ran, no job folder exists and MLflow holds no run (the store is
    looked at once the sweep's uploader, if one started, has exited)."""
    assert "[job " not in done.stdout and "Launching" not in done.stdout + done.stderr, \
        done.stdout[-2000:]
    sweep = tmp_path / "multirun"
    assert not [d for d in sweep.glob("*") if d.is_dir() and d.name.isdigit()] if sweep.exists() \
        else True
    deadline = time.monotonic() + 60
    while _uploaders(sweep) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _uploaders(sweep), "the uploader is still running after 60 s"
    store = tmp_path / "mlruns" / "mlflow.db"
    if store.exists():
        from mlflow.tracking import MlflowClient

        client = MlflowClient(f"sqlite:///{store}")
        ids = [e.experiment_id for e in client.search_experiments()]
        assert not client.search_runs(ids), "a run was written"


def copy_smoke(root: Path, calibration: bool = True, shares: dict | None = None) -> Path:
    """The smoke suite, without its calibration cases and/or with one case's
    zone shares replaced."""
    shutil.copytree(REPO / "suites" / "smoke", root)
    if not calibration:
        for case in (root / "cases").glob("cal-*.json"):
            case.unlink()
    if shares is not None:
        case = next(iter(sorted((root / "cases").glob("case-*.json"))))
        body = json.loads(case.read_text())
        body["input"].setdefault("config_overrides", {})["shares"] = shares
        case.write_text(json.dumps(body))
    return root


def run(tmp_path: Path, *args: str):
    return silas(tmp_path, None, *args)


def test_a_suite_without_calibration_cases_is_refused_before_job_0(tmp_path):
    suite = copy_smoke(tmp_path / "nocal", calibration=False)
    done = run(tmp_path, "-m", "scorer=weights", f"suite.path={suite}", "suite.name=nocal")
    assert done.returncode == 2, done.stderr[-3000:]
    text = paragraph(done.stderr)
    assert f"{suite}: no case of the suite is tagged 'calibration'" in text
    assert "scorer=weights" in text and "no job was started" in text
    nothing_started(tmp_path, done)


def test_bad_zone_shares_are_found_with_the_missing_calibration(tmp_path):
    """Under scorer=weights both problems are named: the calibration one does
    not hide the case's shares."""
    suite = copy_smoke(tmp_path / "s", calibration=False, shares=SHARES_090)
    done = run(tmp_path, "-m", "scorer=weights", f"suite.path={suite}", "suite.name=s")
    assert done.returncode == 2, done.stderr[-3000:]
    text = paragraph(done.stderr)
    assert "the sweep has 2 problems" in text
    assert "field 'config_overrides.shares'" in text and "sum to 0.90" in text
    assert "no case of the suite is tagged 'calibration'" in text
    nothing_started(tmp_path, done)


def test_bad_zone_shares_are_found_before_the_first_job(tmp_path):
    suite = copy_smoke(tmp_path / "s", shares=SHARES_090)
    done = run(tmp_path, "-m", "scorer=heuristic,weights", f"suite.path={suite}", "suite.name=s")
    assert done.returncode == 2, done.stderr[-3000:]
    text = paragraph(done.stderr)
    assert "case-000" in text and "field 'config_overrides.shares'" in text
    assert "sum to 0.90; they must sum to at most 0.80" in text
    nothing_started(tmp_path, done)


def test_a_single_run_names_the_suites_problem_and_what_it_needs(tmp_path):
    suite = copy_smoke(tmp_path / "s", calibration=False, shares=SHARES_090)
    done = run(tmp_path, "scorer=weights", f"suite.path={suite}", "suite.name=s")
    assert done.returncode == 2, done.stderr[-3000:]
    text = paragraph(done.stderr)
    assert "2 problems; nothing was run" in text and "sum to 0.90" in text
    assert "tagged 'calibration'" in text and "(this run: scorer=weights)" in text


def test_every_bad_value_is_named_at_once(tmp_path):
    done = run(tmp_path, "-m", "repeats=0", "scorer.weights.zone.chronicle=-0.5",
               "scorer.weights.age_decay=nan")
    assert done.returncode == 2, done.stderr[-3000:]
    text = paragraph(done.stderr)
    assert "repeats = 0: a sweep needs at least one repeat" in text
    assert "scorer.weights.zone.chronicle = -0.5: input should be greater than or equal to 0" in text
    assert "scorer.weights.age_decay = nan: input should be a finite number" in text
    nothing_started(tmp_path, done)


def test_every_model_without_a_price_is_named(tmp_path):
    done = run(tmp_path, "-m", "model.main_id=claude-nonexistent-9",
               "model.scorer_id=claude-nonexistent-9")
    assert done.returncode == 2, done.stderr[-3000:]
    text = paragraph(done.stderr)
    assert "model.scorer_id='claude-nonexistent-9' and model.main_id='claude-nonexistent-9'" \
        in text
    assert "add +llm.prices.claude-nonexistent-9=" in text
    nothing_started(tmp_path, done)


@pytest.mark.parametrize("override,says,not_hydras", [
    ("repeets=3", "repeets=3: there is no setting 'repeets' at the top of the config; "
                  "did you mean 'repeats'", "+repeets"),
    ("+budget.foo=1", "+budget.foo=1: there is no setting 'foo' under budget. The settings "
                      "there are: evict_to_pct,", "budget.foo=<valid value>"),
    ("+budget.totl=1", "there is no setting 'totl' under budget; did you mean 'total'?", "<valid"),
    ("budget.total=1000", "budget holds only the settings a command changes, so this one is added "
                          "with a +: write +budget.total=1000", "Could not override"),
    ("metrics.horizn=3", "there is no setting 'horizn' under metrics; did you mean 'horizon'?",
     "Could not override"),
    ("repeats=abc", "repeats = 'abc': input should be a valid integer or 'auto'", "repeats.int"),
])
def test_a_misspelt_key_gets_our_words(tmp_path, override, says, not_hydras):
    done = run(tmp_path, "-m", override)
    assert done.returncode == 2, done.stderr[-3000:]
    text = paragraph(done.stderr)
    assert says in text, text
    assert not_hydras not in text and "To append to your config" not in text, text
    nothing_started(tmp_path, done)


def test_every_misspelt_key_and_option_at_once(tmp_path):
    done = run(tmp_path, "-m", "scorer=weights,prmpt", "repeets=3", "scorer.l3=2")
    assert done.returncode == 2, done.stderr[-3000:]
    text = paragraph(done.stderr)
    assert "the command line has 3 problems" in text
    assert "'prmpt' is not an option of the config group 'scorer'; did you mean 'prompt'?" in text
    assert "did you mean 'repeats'" in text and "did you mean 'l2'?" in text
    nothing_started(tmp_path, done)
