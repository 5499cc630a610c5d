"""The on-disk calibration cache is keyed by what the fit depends on beyond the
config: an edited suite or other code never reads a stale calibration."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from omegaconf import OmegaConf

from silas_exp.config import validate
from silas_exp.data.suites.loader import load_suite
from silas_exp.run import disk_cache
from silas_exp.run.calibration import _calibration_key
from silas_exp.run.job import make_job
from silas_exp.scorers.base import calibration_spec

from ..conftest import REPO


def test_calibration_key_follows_the_suite_files_and_the_code(compose, tmp_path, monkeypatch):
    suites = tmp_path / "suites"
    shutil.copytree(REPO / "suites" / "chronicle_keepback", suites / "chronicle_keepback")
    cfg = validate(OmegaConf.to_container(compose("scorer=weights", f"paths.suites={suites}",
                                                  "suite=chronicle_keepback"), resolve=True))
    job, spec = make_job(cfg, "scorer=weights"), calibration_spec(cfg.scorer)

    def key() -> str:
        return _calibration_key(cfg, load_suite(cfg.suite.path), job, spec)

    first = key()
    assert key() == first  # deterministic while nothing changes
    case = next(p for p in sorted((suites / "chronicle_keepback").rglob("*.json"))
                if p.name != "suite.json")
    stat = case.stat()
    os.utime(case, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # an edit
    edited = key()
    assert edited != first
    monkeypatch.setattr(disk_cache, "code_digest", lambda: "another version")
    assert key() not in (first, edited)


def test_workers_needing_one_entry_at_once_compute_it_once(tmp_path):
    """Two processes that miss the same entry at once: one computes it, the
    other waits for the lock and reads it (with a real model, a second
    computation would be paid twice)."""
    import os
    import time

    from silas_exp.records import write_json_atomic
    from silas_exp.run.disk_cache import exclusive

    entry, computed = tmp_path / "calibration" / "entry.json", tmp_path / "computed"

    def need_entry() -> None:
        with exclusive(entry):
            if not entry.is_file():
                with open(computed, "a") as fh:
                    fh.write(f"{os.getpid()}\n")
                time.sleep(0.5)  # the fit
                write_json_atomic(entry, {"weights": [1.0]})

    pids = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            try:
                need_entry()
            finally:
                os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    assert len(computed.read_text().splitlines()) == 1
    assert entry.is_file()


def test_a_variant_in_another_process_reads_the_controls_reference_from_disk(cli, tmp_path):
    """The control job keeps its flushes (the reference for exclusion AUC) in the
    disk cache; a variant in another process reads them instead of replaying
    the control, and scores the same."""
    sweep = cli("-m", "scorer=heuristic,weights", "repeats=1", "suite=smoke", "tracking=none",
                "hydra/launcher=basic")
    assert sweep.returncode == 0, sweep.stderr[-2000:]
    assert len(list((tmp_path / "cache" / "reference").glob("*.pkl"))) == 2  # smoke: 2 replay cases

    def single(cache: Path) -> dict:
        out = tmp_path / f"run-{cache.name}"
        run = cli("scorer=weights", "suite=smoke", "tracking=none", f"paths.suites={REPO / 'suites'}",
                  f"paths.cache={cache}", f"hydra.run.dir={out}", isolate=False)
        assert run.returncode == 0, run.stderr[-2000:]
        return json.loads((out / "result.json").read_text())["metrics"]

    records = [json.loads(p.read_text()) for p in (tmp_path / "multirun").glob("*/result.json")]
    weights = next(r["metrics"] for r in records if r["variant"] == "scorer=weights")
    warm = single(tmp_path / "cache")
    assert warm["llm.overhead.calls"] == 0  # neither the calibration nor the reference replayed
    cold = single(tmp_path / "cold")
    assert cold["llm.overhead.calls"] > 0
    for m in (warm, cold):
        assert m["feedback.exclusion_auc"] == weights["feedback.exclusion_auc"]


def test_a_job_reads_the_suite_signature_once_not_per_case(compose, tmp_path, monkeypatch):
    """The reference entries' key holds the suite's file signature (a stat of
    every file of the suite); a job reads it once, whatever its number of cases."""
    from silas_exp.run.job import run_job

    calls = []
    real = disk_cache.signature
    monkeypatch.setattr(disk_cache, "signature", lambda root: calls.append(root) or real(root))
    cfg = validate(OmegaConf.to_container(compose("suite=smoke", "tracking=none"), resolve=True))
    assert cfg.scorer.name == "heuristic"  # the control: it keeps every case's reference
    loaded = load_suite(cfg.suite.path)
    assert len(loaded.eval_cases) >= 2
    run_job(cfg, make_job(cfg, "scorer=heuristic"), tmp_path / "job", loaded=loaded)
    assert len(list((tmp_path / "cache" / "reference").glob("*.pkl"))) >= 2
    assert len(calls) == 1


def test_a_dry_run_never_hands_its_calibration_to_the_real_run(compose):
    """llm.dry_run=true answers a real model's calls with the simulated backend:
    its fit is of simulated keep-backs, so the real run (same model config)
    must not read it from the disk cache, and pays for its own."""
    def key(*overrides: str) -> str:
        cfg = validate(OmegaConf.to_container(compose("scorer=weights", *overrides),
                                              resolve=True))
        return _calibration_key(cfg, load_suite(cfg.suite.path), make_job(cfg, "w"),
                                calibration_spec(cfg.scorer))

    real = key("model=claude-haiku-4-5")
    assert key("model=claude-haiku-4-5", "llm.dry_run=true") != real
    assert key("model=claude-haiku-4-5", "llm.base_url=http://127.0.0.1:9") != real
    assert key("model=claude-haiku-4-5") == real
