"""The worked example outside the package: ``examples/silas-plugin-example``
is built and installed (a real wheel, entry points and conf files) into a
folder of its own, then swept against the control with no edit to silas_exp."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, isolated_overrides

EXAMPLE = REPO / "examples" / "silas-plugin-example"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """pip install of the example into a target folder (no network, no build isolation)."""
    work = tmp_path_factory.mktemp("plugin")
    src = shutil.copytree(EXAMPLE, work / "src", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    target = work / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--no-build-isolation", "--no-index", "--target", str(target), str(src)],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (target / "silas_plugin_example" / "scorer.py").is_file()
    return target


def run(tmp: Path, site: Path | None, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    env["MLFLOW_DISABLE_TELEMETRY"] = "true"
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", "silas_exp", *args, *isolated_overrides(tmp)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=240)


def fake_install(site: Path, name: str, version: str, group: str, entry: str) -> Path:
    """An installed distribution with one entry point and no code (as pip leaves it)."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{entry}\n")
    return site


def jobs(sweep: Path) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for path in sorted(sweep.glob("*/result.json")):
        record = json.loads(path.read_text())
        out.setdefault(record["variant"], []).append(record)
    return out


def test_plugin_scorer_and_strategy_sweep_against_the_control(installed, tmp_path) -> None:
    done = run(tmp_path, installed, "-m", "scorer=heuristic,recency", "repeats=2", "tracking=none",
               "metrics.plugins=[example.evicted_share]")
    assert done.returncode == 0, done.stderr[-3000:]
    sweep = tmp_path / "multirun"
    found = jobs(sweep)
    assert set(found) == {"scorer=recency", "scorer=heuristic"}
    assert all(r["status"] == "finished" for rs in found.values() for r in rs)
    plugin = [r["metrics"]["ir.ndcg_at_10"] for r in found["scorer=recency"]]
    control = [r["metrics"]["ir.ndcg_at_10"] for r in found["scorer=heuristic"]]
    assert plugin != control  # the plug-in really scored
    report = (sweep / "ablation.md").read_text()
    assert "scorer=recency" in report and "scorer=heuristic" in report
    # the plug-in metric: in every job's metrics, per case, and in the report
    share = [r["metrics"]["example.evicted_share"] for rs in found.values() for r in rs]
    assert all(0.0 <= v <= 1.0 for v in share) and len(set(share)) > 1
    assert "example.evicted_share" in report
    assert any(word in done.stdout for word in ("scorer=recency: ship", "scorer=recency: do not ship",
                                                "scorer=recency: inconclusive"))

    done = run(tmp_path / "lru", installed, "-m", "eviction=two_tier,lru", "repeats=2", "tracking=none",
               "suite.max_cases=6")
    assert done.returncode == 0, done.stderr[-3000:]
    found = jobs(tmp_path / "lru" / "multirun")
    assert set(found) == {"eviction=lru", "eviction=two_tier"}
    lru = found["eviction=lru"][0]["metrics"]["context.retrieval_relevance"]
    assert lru != found["eviction=two_tier"][0]["metrics"]["context.retrieval_relevance"]


def test_plugin_options_are_listed_and_absent_without_the_package(installed, tmp_path) -> None:
    shown = run(tmp_path, installed, "--help")
    assert shown.returncode == 0 and "recency" in shown.stdout and "lru" in shown.stdout
    missing = run(tmp_path, None, "scorer=recency", "tracking=none")
    assert missing.returncode == 2
    assert "recency" in missing.stderr


def test_a_broken_plugin_names_its_entry_point(tmp_path) -> None:
    """An installed package whose entry point does not import: exit 2, and the
    message names the entry point, the package and the import error."""
    site = fake_install(tmp_path / "site", "broken-plugin", "0.3", "silas_exp.scorers",
                        "broken = no_such_module:KIND")
    done = run(tmp_path, site, "scorer.name=broken", "tracking=none")
    assert done.returncode == 2, done.stderr[-2000:]
    err = done.stderr
    assert "broken = no_such_module:KIND" in err and "broken-plugin 0.3" in err
    assert "ModuleNotFoundError" in err


def test_a_target_kind_from_a_conf_folder_of_ones_own(tmp_path) -> None:
    """``_target_`` names a kind that is importable but not installed as a
    plug-in; its option lives in a conf folder added with hydra.searchpath."""
    conf = tmp_path / "myconf" / "scorer"
    conf.mkdir(parents=True)
    (conf / "longest.yaml").write_text("_target_: tests.plugins.kinds.LONGEST\n")
    done = run(tmp_path, None, "-m", "scorer=heuristic,longest", "repeats=2", "tracking=none",
               "suite=smoke", f"hydra.searchpath=[file://{tmp_path / 'myconf'}]")
    assert done.returncode == 0, done.stderr[-3000:]
    found = jobs(tmp_path / "multirun")
    assert set(found) == {"scorer=longest", "scorer=heuristic"}
    assert all(r["status"] == "finished" for rs in found.values() for r in rs)


def test_a_broken_conf_package_is_left_out_with_a_warning(tmp_path) -> None:
    """A plug-in whose conf entry point names no importable package: runs go
    on, with a warning that names the entry point."""
    site = fake_install(tmp_path / "site", "broken-conf", "0.2", "silas_exp.conf",
                        "broken = no_such_pkg.conf")
    done = run(tmp_path, site, "suite=smoke", "tracking=none")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "broken = no_such_pkg.conf" in done.stderr and "broken-conf 0.2" in done.stderr
