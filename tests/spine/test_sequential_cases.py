"""Sequential over cases: the default suite is a generated pool drawn in
seeded blocks; a sweep looks at the verdicts after blocks and stops a variant
once it is decided or the rest of the pool cannot decide it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from silas_exp.data.suites.blocks import block_of, block_order, n_blocks
from silas_exp.data.suites.loader import _check_case, load_suite
from silas_exp.data.suites.pool import POOLS, Pool, generate, make_while
from silas_exp.errors import ConfigError

from ..conftest import REPO


def test_blocks_partition_the_pool_in_an_order_the_seed_fixes():
    blocks = [block_of(100, b, 30, seed=4) for b in range(n_blocks(100, 30))]
    assert [len(b) for b in blocks] == [30, 30, 30, 10]
    assert sorted(i for b in blocks for i in b) == list(range(100))  # disjoint, all cases
    assert block_of(100, 0, 30, seed=4) == blocks[0]  # reproducible
    assert block_of(100, 0, 30, seed=5) != blocks[0]  # another seed, another order
    assert block_order(100, 4) != list(range(100))
    assert block_of(20, 0, 30, seed=4) == list(range(20))  # one block: the suite in its order
    assert block_of(20, 0, None, seed=4) == list(range(20))
    with pytest.raises(ConfigError, match="block=4"):
        block_of(100, 4, 30, seed=4)


def test_default_suite_is_a_pool_listed_without_generating_anything():
    loaded = load_suite(REPO / "suites" / "default")
    assert loaded.pool is not None and loaded.suite.version == POOLS["default"].version
    assert len(loaded.eval_cases) >= 300 and len(loaded.calibration_cases) == 8
    flavours = {cid.split("-")[2] for cid in loaded.eval_cases.ids}
    assert flavours == {"coding", "debugging", "research", "support", "chronicle"}


def test_a_pool_case_is_the_same_wherever_it_is_made_and_it_loads(tmp_path):
    recipe = POOLS["default"]
    a, b = Pool(recipe, tmp_path / "a"), Pool(recipe, tmp_path / "b")
    case_id = a.ids()[123]
    assert generate(a, case_id).read_bytes() == generate(b, case_id).read_bytes()
    loaded = load_suite(REPO / "suites" / "default")
    case = loaded.case(case_id)
    assert _check_case(loaded, case) == []  # the loader's own checks pass on a generated case
    assert case.case_id == case_id and case.expected.metric_thresholds


def test_later_cases_are_made_in_order_while_told_to_go_on(tmp_path):
    """What the launching process makes while the replay loop compiles: the
    missing cases, in the order given, until ``go_on`` says stop."""
    pool = Pool(POOLS["default"], tmp_path)
    ids = pool.ids()[:5]
    generate(pool, ids[1])
    answers = iter([True, True, True, False])
    assert make_while(pool, ids, lambda: next(answers)) == 2  # ids[0], ids[2] made; ids[1] was
    assert [pool.file(c).is_file() for c in ids] == [True, True, True, False, False]


@pytest.mark.parametrize("launcher", [[], ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]],
                         ids=["forked", "joblib"])
def test_sequential_sweep_stops_variants_after_blocks(cli, tmp_path, launcher):
    res = cli("-m", "scorer=weights,online", "cases_per_block=6", "suite.max_cases=18",
              "repeats=1", "tracking=none", *launcher)
    assert res.returncode == 0, res.stderr[-3000:]
    state = json.loads((tmp_path / "multirun" / "adaptive.json").read_text())
    assert state["unit"] == "block" and state["pool_cases"] == 18 and state["looks"] == [1, 2, 3]
    jobs = [json.loads(p.read_text()) for p in (tmp_path / "multirun").glob("*/result.json")]
    blocks = {(j["variant"], j["block"]) for j in jobs}
    assert ("scorer=heuristic", 0) in blocks and ("scorer=weights", 0) in blocks
    # every variant stopped by a look, and the control ran as long as any of them
    assert set(state["closed"]) == {"scorer=weights", "scorer=online"}
    last = max(c["round"] for c in state["closed"].values())
    assert max(b for v, b in blocks if v == "scorer=heuristic") == last - 1
    for variant, closed in state["closed"].items():
        assert max(b for v, b in blocks if v == variant) == closed["round"] - 1
    report = (tmp_path / "multirun" / "ablation.md").read_text()
    assert "sequential over cases: blocks of 6 cases" in report
    assert "stopped after block" in report and "confidence):" in report
    # re-read later from the folder, the sweep reads as the study decided it, look by look
    again = subprocess.run([sys.executable, "-m", "silas_exp.cli.main", "ablation",
                            str(tmp_path / "multirun"), "--out", str(tmp_path / "again")],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"})
    assert again.returncode == 0, again.stderr[-2000:]

    def rows(md: str) -> list[str]:  # the verdicts, every table row, the plan's notes
        return [line for line in md.splitlines() if line.startswith(("| scorer=", "- note:"))]
    assert rows((tmp_path / "again" / "ablation.md").read_text()) == rows(report)
    assert any("stopped after block" in line for line in rows(report))


def test_repeats_auto_with_blocks_is_refused_before_any_job(cli):
    res = cli("-m", "scorer=weights", "repeats=auto", "cases_per_block=6", "suite.max_cases=18",
              "tracking=none")
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
    assert "cases_per_block=null repeats=auto" in res.stderr
    assert "[job " not in res.stdout


def test_a_sequential_sweep_reads_back_from_mlflow_as_it_decided(cli, tmp_path):
    # the parent run keeps the plan (adaptive.json), so a re-analysis from MLflow alone
    # reads each variant at the look it stopped at, as the sweep's own report did
    res = cli("-m", "scorer=weights,online", "cases_per_block=6", "suite.max_cases=18",
              "repeats=1")
    assert res.returncode == 0, res.stderr[-3000:]
    sweep_id = json.loads((tmp_path / "multirun" / "sweep.json").read_text())["sweep_id"]
    again = subprocess.run([sys.executable, "-m", "silas_exp.cli.main", "ablation", sweep_id,
                            "--tracking-uri", f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}",
                            "--out", str(tmp_path / "again")], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300,
                           env={**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"})
    assert again.returncode == 0, again.stderr[-2000:]

    def rows(md: str) -> list[str]:
        return [line for line in md.splitlines() if line.startswith(("| scorer=", "- note:"))]
    report = (tmp_path / "multirun" / "ablation.md").read_text()
    assert any("stopped after block" in line for line in rows(report))
    assert rows((tmp_path / "again" / "ablation.md").read_text()) == rows(report)
