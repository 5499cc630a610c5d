"""The on-disk calibration cache is keyed by what the fit depends on beyond the
config: an edited suite or other code never reads a stale calibration."""

from __future__ import annotations

import os
import shutil

from omegaconf import OmegaConf

from silas_exp.config import validate
from silas_exp.data.suites.loader import load_suite
from silas_exp.run import disk_cache
from silas_exp.run.job import _calibration_key, make_job
from silas_exp.scorers.base import calibration_spec

from ..conftest import REPO


def test_calibration_key_follows_the_suite_files_and_the_code(compose, tmp_path, monkeypatch):
    suites = tmp_path / "suites"
    shutil.copytree(REPO / "suites" / "default", suites / "default")
    cfg = validate(OmegaConf.to_container(compose("scorer=weights", f"paths.suites={suites}"),
                                          resolve=True))
    job, spec = make_job(cfg, "scorer=weights"), calibration_spec(cfg.scorer)

    def key() -> str:
        return _calibration_key(cfg, load_suite(cfg.suite.path), job, spec)

    first = key()
    assert key() == first  # deterministic while nothing changes
    case = next(p for p in sorted((suites / "default").rglob("*.json")) if p.name != "suite.json")
    stat = case.stat()
    os.utime(case, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # an edit
    edited = key()
    assert edited != first
    monkeypatch.setattr(disk_cache, "code_digest", lambda: "another version")
    assert key() not in (first, edited)
