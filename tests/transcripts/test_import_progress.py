"""A long ``silas-exp import`` says how far it is: each file's size, the share
of the scrubbing done with its rate and the time left, each later step, and
the whole import's MB/s; a file over ``--max-mb`` is refused before it is read."""

from __future__ import annotations

import importlib.util
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from silas_exp.data.transcripts.progress import ImportProgress, check_size
from silas_exp.data.transcripts.suite import ImportSettings, write_suite
from silas_exp.errors import SuiteError
from tests.conftest import REPO
from tests.transcripts.sessions import coding_session


def silas_exp(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "silas_exp.cli", *args], capture_output=True,
                          text=True, timeout=timeout)


def _bench_generator():
    """bench/bench_import.py's session generator (the bench folder is no package)."""
    spec = importlib.util.spec_from_file_location("bench_import", REPO / "bench" / "bench_import.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.path.insert(0, str(REPO / "bench"))  # its own helper (_results)
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    finally:
        sys.path.remove(str(REPO / "bench"))
    return module.write_session


class Clock:
    """Time that moves one second each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_the_scrubbing_reports_share_rate_and_time_left():
    out = io.StringIO()
    progress = ImportProgress(out, every=2.0, clock=Clock())
    progress.total_mb = 3.0  # a large import: steps are named
    progress.step("s1: facts and ground truth")
    tick = progress.work("s1: scrubbing PII", total_chars=4 << 20)
    for _ in range(4):
        tick(1 << 20)
    lines = out.getvalue().splitlines()
    assert lines[0] == "import: s1: facts and ground truth"
    assert lines[1:] == ["import: s1: scrubbing PII: 50% done, 1.00 MB of text/s, ~2 s left",
                         "import: s1: scrubbing PII: 100% done, 1.00 MB of text/s, ~0 s left"]


def test_a_small_import_prints_only_its_rate(tmp_path):
    out = io.StringIO()
    progress = ImportProgress(out)
    progress.file(tmp_path / "s.jsonl", 0.01)
    write_suite([("test", "s.jsonl", coding_session("s1"))], tmp_path / "s",
                ImportSettings(opt_in="yes"), progress=progress)
    assert out.getvalue() == ""  # under a megabyte: no step, no progress line
    assert re.fullmatch(r"imported 0\.0 MB in \d+ s \(\d+\.\d\d MB/s\)", progress.finished())


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (3 << 20))
    with pytest.raises(SuiteError) as err:
        check_size(big, max_mb=2)
    msg = str(err.value)
    assert f"{big}: 3 MB is over the import's limit of 2 MB (--max-mb)" in msg
    assert "pass --max-mb 3 to import it whole" in msg and "Split the session" in msg
    done = silas_exp("import", str(big), "--opt-in", "--max-mb", "2", "--out", str(tmp_path / "o"))
    assert done.returncode == 2 and "over the import's limit of 2 MB" in done.stderr
    assert not (tmp_path / "o").exists()


def _import_shows_progress(tmp_path: Path, megabytes: float, timeout: float) -> str:
    session = tmp_path / "big.json"
    _bench_generator()(session, megabytes)
    done = silas_exp("import", str(session), "--format", "openai", "--opt-in", "--out",
                     str(tmp_path / "o"), timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    err = done.stderr
    assert re.search(r"^import: big\.json: [\d.,]+ MB; reading it$", err, re.M), err[-3000:]
    assert "import: big: scrubbing PII in " in err
    assert "import: big: facts and ground truth" in err and "import: writing 2 case(s)" in err
    assert re.search(r"^imported [\d.]+ MB in .+ \([\d.]+ MB/s\)$", done.stdout, re.M), done.stdout
    return err


def test_a_megabyte_import_names_its_steps(tmp_path):
    _import_shows_progress(tmp_path, 1.1, timeout=240)


@pytest.mark.slow  # ~3 min of CPU: the scrubbing of 50 MB
def test_a_fifty_megabyte_import_shows_progress_and_finishes(tmp_path):
    err = _import_shows_progress(tmp_path, 50.0, timeout=3600)
    shares = [int(s) for s in re.findall(r"scrubbing PII: (\d+)% done, [\d.]+ MB of text/s, "
                                         r"~.+ left", err)]
    assert len(shares) >= 3 and shares == sorted(shares), err[-3000:]
