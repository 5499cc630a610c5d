"""Do two MLflow stores hold the same sweep, as MLflow reads it back? For a
change that must not alter what a sweep records (its speed, its order).

Each store's experiment (by name) is read with MLflow's client: its runs by
name, each run's params, tags, metrics (last value), artifact paths and
dataset inputs (name, digest, source, context). What differs between two
honest runs of the same sweep is left out: run ids, times, the sweep's id,
the code revision, the user, the config hash (it covers the suite's path,
which names the checkout) and wall-clock latencies. Metrics declared
``billing`` (how an answer was obtained: a cache hit or a call, which job
calibrated first) are printed apart and do not count, as in
``compare_sweeps.py``. Exit 0 when both agree, 1 when they differ (each
difference printed).

``--contents``: also each artifact's bytes (a digest) and the order in which
each run lists its metrics and tags; for two stores logged from the same sweep
folder (``silas-exp upload`` of one folder into two stores), where the files are
the same.

    python scripts/compare_stores.py sqlite:///A/mlruns/mlflow.db sqlite:///B/mlruns/mlflow.db [--experiment silas-default] [--contents]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from silas_exp.metrics.registry import find_spec  # noqa: E402

# values that name this run, this machine or this moment, not what the sweep found
VOLATILE_TAGS = re.compile(r"^(mlflow\.source\.|mlflow\.user$|mlflow\.parentRunId$|mlflow\.runName$|"
                           r"mlflow\.note\.content$|mlflow\.log-model\.history$|silas\.sweep_id$|"
                           r"silas\.git_revision$|silas\.config_hash$)")
WALL_CLOCK_METRICS = re.compile(r"latency_ms$")
STORE_NAMING_ARTIFACTS = ("sweep.json",)  # the manifest names its store and run ids: paths only


def _clean(value: str, ids: dict[str, str]) -> str:
    for raw, name in ids.items():
        value = value.replace(raw, name)
    return value


def _digest(client: object, run_id: str, path: str) -> str:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        local = client.download_artifacts(run_id, path, tmp)  # type: ignore[attr-defined]
        return hashlib.sha256(Path(local).read_bytes()).hexdigest()[:16]


def read(uri: str, experiment: str, contents: bool = False) -> dict:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        sys.exit(f"{uri}: no experiment {experiment!r}; give --experiment NAME")
    runs = client.search_runs([exp.experiment_id], max_results=10_000)
    sweeps = {s: "<sweep>" for r in runs if (s := r.data.tags.get("silas.sweep_id"))}
    ids = {**sweeps, **{r.info.run_id: f"<run {_clean(r.info.run_name, sweeps)}>" for r in runs}}
    out: dict = {}
    for r in runs:
        local = ids
        artifacts, stack = [], [""]
        while stack:
            for f in client.list_artifacts(r.info.run_id, stack.pop() or None):
                (stack.append(f.path) if f.is_dir else artifacts.append(f.path))
        key = _clean(r.info.run_name, sweeps)
        if r.data.tags.get("mlflow.parentRunId"):
            key = f"{ids.get(r.data.tags['mlflow.parentRunId'], '?')}/{key}"
        out[key] = {
            "status": r.info.status,
            "params": {k: _clean(v, local) for k, v in r.data.params.items()},
            "tags": {k: _clean(v, local) for k, v in r.data.tags.items() if not VOLATILE_TAGS.match(k)},
            "metrics": {k: v for k, v in r.data.metrics.items() if not WALL_CLOCK_METRICS.search(k)},
            "artifacts": sorted(_clean(a, local) for a in artifacts),
            "inputs": sorted(json.dumps({"name": d.dataset.name, "digest": d.dataset.digest,
                                         "source_type": d.dataset.source_type,
                                         "context": [(t.key, t.value) for t in d.tags]}, sort_keys=True)
                             for d in (r.inputs.dataset_inputs if r.inputs else [])),
        }
        if contents:
            out[key]["artifact_digests"] = {_clean(a, local): _digest(client, r.info.run_id, a)
                                            for a in artifacts if a not in STORE_NAMING_ARTIFACTS}
            out[key]["metric_order"] = list(out[key]["metrics"])
            out[key]["tag_order"] = list(out[key]["tags"])
    return out


def diff(a: object, b: object, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        found = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                found.append(f"{path}/{k}: only in {'B' if k not in a else 'A'}")
            else:
                found += diff(a[k], b[k], f"{path}/{k}")
        return found
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--experiment", default="silas-default")
    parser.add_argument("--contents", action="store_true",
                        help="also artifact bytes and metric/tag order (stores of one sweep folder)")
    ns = parser.parse_args()
    a, b = read(ns.a, ns.experiment, ns.contents), read(ns.b, ns.experiment, ns.contents)
    found, billing = [], []
    for line in diff(a, b):
        metric = re.search(r"/metrics/([^:]+):", line)
        spec = find_spec(metric.group(1)) if metric else None
        (billing if spec is not None and spec.billing else found).append(line)
    for line in billing:
        print("billing (not counted):", line)
    for line in found:
        print(line)
    n = sum(len(r["params"]) + len(r["tags"]) + len(r["metrics"]) + len(r["artifacts"]) + len(r["inputs"])
            for r in a.values())
    print(f"{len(a)} and {len(b)} runs, {n} values in A; " + ("IDENTICAL" if not found else
                                                               f"{len(found)} difference(s)"))
    raise SystemExit(1 if found else 0)


if __name__ == "__main__":
    main()
