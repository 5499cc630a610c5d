"""Run-level probe results: the per-probe table and judge reliability."""

from __future__ import annotations

from collections import defaultdict
from statistics import fmean
from typing import Any

from silas_exp.probes.judge import JudgeSettings, load_human_labels
from silas_exp.probes.rubric import CRITERIA
from silas_exp.records import PROBE_TABLE  # noqa: F401  (the file the runner writes the rows to)
from silas_exp.stats.agreement import cohens_kappa


def run_probe_metrics(rows: list[dict[str, Any]], judge: JudgeSettings) -> dict[str, float]:
    """Judge variance per criterion (over judge repeats) and, with human labels,
    weighted Cohen's κ per dimension (``judge.low_agreement`` = 1 when any is
    under ``judge.kappa_floor``)."""
    graded = [r for r in rows if r.get("scores")]
    out: dict[str, float] = {"probe.graded": float(len(graded)),
                             "probe.judge_errors": float(len(rows) - len(graded))}
    var: dict[str, list[float]] = defaultdict(list)
    for r in graded:
        for cid, v in (r.get("judge_variance") or {}).items():
            var[cid].append(v)
    out.update({f"judge.variance.{cid}": fmean(v) for cid, v in var.items()})
    if judge.human_labels:
        labels = load_human_labels(judge.human_labels)
        pairs: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
        for r in graded:
            for cid, score in r["scores"].items():
                human = labels.get((r["probe_id"], cid))
                if human is not None:
                    a, b = pairs[CRITERIA[cid][0]]
                    a.append(int(round(score)))
                    b.append(int(round(human)))
        kappas = {dim: cohens_kappa(a, b, weights="quadratic", labels=list(range(6)))
                  for dim, (a, b) in pairs.items() if a}
        out.update({f"judge.kappa.{dim}": k for dim, k in kappas.items()})
        out["judge.labelled_scores"] = float(sum(len(a) for a, _ in pairs.values()))
        if kappas:
            out["judge.low_agreement"] = float(min(kappas.values()) < judge.kappa_floor)
    return out
