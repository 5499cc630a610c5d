"""The pre-flight of a sweep: its wall and CPU time, this tree against a commit.

    python bench/bench_preflight.py [--against REV] [--pairs 5] [--quick]
                                    [-- scorer=weights,prompt,online ...]

The silas sweeper checks every distinct job of a sweep before the first one
starts (``silas_exp/run/preflight.py``: compose, validate, load the suites,
what each job needs of its suite); it runs before every sweep, so it must stay
cheap. Each run here is a process of its own that composes the sweep's
config as ``python -m silas_exp -m <overrides>`` does and times
``check_sweep`` alone, as the sweeper calls it, with cold caches (the suite is
loaded for the first time in the process, as in a real sweep). Default
command: the README sweep (``scorer=weights,prompt,online``).

``--against REV`` pairs this tree with commit REV (``git archive`` of it into
a temporary folder, run through ``PYTHONPATH``), alternating which goes first
in each pair. ``--quick``: one run of this tree (CI smoke). Writes
bench/results/preflight.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

from _procs import extract_commit  # bench/ helper
from _results import save  # bench/ helper

REPO = Path(__file__).resolve().parents[1]
README_SWEEP = ["scorer=weights,prompt,online"]


def measure(overrides: list[str]) -> dict:
    """One pre-flight in this process, of the code ``silas_exp`` resolves to."""
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    import silas_exp
    from silas_exp.run.preflight import check_sweep

    conf = Path(silas_exp.__file__).resolve().parents[1] / "conf"
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        loader = GlobalHydra.instance().hydra.config_loader  # type: ignore[union-attr]
        try:
            from hydra_plugins.silas_sweeper._compositions import SharedCompositions

            loader = SharedCompositions(loader)  # as the sweeper's check=distinct wraps it
        except ImportError:
            pass
        config = GlobalHydra.instance().hydra.compose_config(  # type: ignore[union-attr]
            "config", overrides, run_mode=RunMode.MULTIRUN, with_log_configuration=False)
        params = OmegaConf.to_container(config.hydra.sweeper.params, resolve=True)
        sweeper = SimpleNamespace(config=config, params=params,
                                  hydra_context=SimpleNamespace(config_loader=loader))
        wall, cpu = time.perf_counter(), time.process_time()
        jobs = check_sweep(sweeper, overrides)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"wall_s": wall, "cpu_s": cpu, "jobs": len(jobs),
            "code": str(Path(silas_exp.__file__).resolve().parent)}


def run_tree(tree: Path | None, overrides: list[str], workdir: Path) -> dict:
    """One pre-flight in a fresh process, of the code in ``tree`` (None: this one)."""
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "SILAS_EXP_ROOT": str(workdir),
           "PYTHONPATH": str(tree or REPO)}
    proc = subprocess.run([sys.executable, __file__, "--emit-result", "--", *overrides],
                          capture_output=True, text=True, env=env, cwd=workdir)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("BENCH-RESULT ")]
    if proc.returncode != 0 or not lines:
        sys.exit(f"the pre-flight on {tree or REPO} failed (exit {proc.returncode}): "
                 f"{proc.stderr[-2000:]}")
    result = json.loads(lines[-1].removeprefix("BENCH-RESULT "))
    if not Path(result["code"]).is_relative_to((tree or REPO).resolve()):
        sys.exit(f"the run meant for {tree or REPO} imported silas_exp from {result['code']}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="REV")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--emit-result", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("overrides", nargs="*", help="the sweep's overrides (after --)")
    ns = parser.parse_args()
    overrides = ns.overrides or README_SWEEP
    if ns.emit_result:
        print("BENCH-RESULT " + json.dumps(measure(overrides)))
        return
    with tempfile.TemporaryDirectory(prefix="bench_preflight_") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        if ns.quick or not ns.against:
            runs = [run_tree(None, overrides, work) for _ in range(1 if ns.quick else ns.pairs)]
            result = {"command": overrides, "runs": runs,
                      "median_wall_s": statistics.median(r["wall_s"] for r in runs),
                      "median_cpu_s": statistics.median(r["cpu_s"] for r in runs)}
            print(f"pre-flight of {' '.join(overrides)}: {result['median_cpu_s']:.3f} s CPU, "
                  f"{result['median_wall_s']:.3f} s wall (median of {len(runs)}), "
                  f"{runs[0]['jobs']} distinct jobs")
            save("preflight", result)
            return
        tree = Path(tmp) / "reference"
        commit = extract_commit(ns.against, tree)
        pairs = []
        for i in range(ns.pairs):
            order = ("reference", "this") if i % 2 == 0 else ("this", "reference")
            got = {side: run_tree(tree if side == "reference" else None, overrides, work)
                   for side in order}
            pairs.append({**{f"{s}_{k}": got[s][k] for s in got for k in ("wall_s", "cpu_s")},
                          "jobs": got["this"]["jobs"], "first": order[0]})
            print(f"pair {i + 1}: {ns.against} {got['reference']['cpu_s']:.3f} s CPU "
                  f"({got['reference']['wall_s']:.3f} s wall), this tree "
                  f"{got['this']['cpu_s']:.3f} s CPU ({got['this']['wall_s']:.3f} s wall)",
                  flush=True)
        result = {"command": overrides, "against": ns.against, "commit": commit, "pairs": pairs}
        for k in ("wall_s", "cpu_s"):
            result[f"median_this_over_reference_{k}"] = statistics.median(
                p[f"this_{k}"] / p[f"reference_{k}"] for p in pairs)
            result[f"median_this_{k}"] = statistics.median(p[f"this_{k}"] for p in pairs)
            result[f"median_reference_{k}"] = statistics.median(p[f"reference_{k}"] for p in pairs)
        print(json.dumps({k: v for k, v in result.items() if k.startswith("median")}))
        save("preflight_against", result)


if __name__ == "__main__":
    main()
