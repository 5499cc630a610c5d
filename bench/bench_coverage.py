"""Coverage of the verdict's intervals, by simulation with known truth.

    python bench/bench_coverage.py [--studies 2000] [--first-look 20000] [--quick]

For each kind of gated metric (pass rate, relevance, probe score, tokens per
served need: silas_exp/stats/coverage.py has the models) × repeats (1, 3) ×
share of cases whose pair disagrees (0, 2, 6, 10 %, and dense) × effect
(none, or worse by the margin) × look of the default sequential plan (40,
80, 160, 320 cases at 99.92 %, 99.75 %, 98.96 %, 95.69 %): the coverage of
``stats.intervals.paired_interval``, the share of studies whose interval
misses the truth on the worse side (the side a wrong "ship" comes from)
against the look's one-sided level, the better side's, and zero-width
intervals. A cell is flagged when its worse-side misses are more than the
look's level allows (one-sided binomial test at 1 %).

Then the design end to end: a variant worse by the margin, looked at after
blocks 1, 2, 4, 8 of 40 cases; the share that ships (declared ≤ 2.5 %), for a
relative margin also fixed from the first look's control mean. And, for
reference, the expanded cluster bootstrap the verdict used before on the
first look's hardest cell. Writes bench/results/coverage.json.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _results import save  # bench/ helper
from scipy.stats import binom

from silas_exp.stats.bootstrap import cluster_bootstrap_ci
from silas_exp.stats.coverage import MODELS, coverage_cell, draw, ships_at_margin
from silas_exp.stats.sequential import spending_confidences

BLOCK, LOOKS = 40, [1, 2, 4, 8]
RARE = (0.0, 0.02, 0.06, 0.10)


def dense(kind: str) -> float:
    """"Every case disagrees" for a score or an amount; a pass/fail flips in a quarter."""
    return 0.25 if kind == "pass_fail" else 1.0


def bootstrap_reference(studies: int, confidence: float) -> dict:
    """The expanded cluster bootstrap on pass rate, 40 cases, 6 % of pairs
    flipping pass → fail (true Δ −0.06 against the margin 0.05)."""
    rng = np.random.default_rng(99)
    d = draw(MODELS[0], 40, 1, 0.06, "margin", studies, rng)
    ship = zero = 0
    for i in range(studies):
        ci = cluster_bootstrap_ci(d.diffs[i], confidence=confidence, seed=i, expanded=True)
        ship += ci.low > -0.05
        zero += ci.high == ci.low
    return {"studies": studies, "truth": d.truth, "called_non_inferior": ship / studies,
            "zero_width": zero / studies}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--studies", type=int, default=2000, help="studies per cell")
    parser.add_argument("--first-look", type=int, default=20000, help="studies per first-look cell")
    parser.add_argument("--e2e", type=int, default=4000, help="studies per end-to-end row")
    parser.add_argument("--quick", action="store_true",
                        help="a CI smoke run: 40 studies a cell, one repeat, 6 %% and dense")
    ns = parser.parse_args()
    repeat_grid, effects = (1, 3), ("none", "margin")
    if ns.quick:
        ns.studies, ns.first_look, ns.e2e = 40, 40, 40
        repeat_grid, effects = (1,), ("margin",)
    confs = spending_confidences(0.95, tuple(k / LOOKS[-1] for k in LOOKS))
    t0 = time.perf_counter()
    out: dict = {"studies": ns.studies, "first_look_studies": ns.first_look,
                 "confidences": confs, "cells": [], "end_to_end": []}
    flagged = zero = 0
    print(f"{'metric':24s} {'R':>1s} {'disagree':>8s} {'effect':>6s} | "
          + " | ".join(f"n={k * BLOCK:3d} cover  worse/α" for k in LOOKS))
    for model in MODELS:
        for repeats in repeat_grid:
            for share in ((0.06,) if ns.quick else RARE) + (dense(model.kind),):
                for effect in effects:
                    row = []
                    for i, (look, conf) in enumerate(zip(LOOKS, confs, strict=True)):
                        studies = ns.first_look if i == 0 else ns.studies
                        cell = coverage_cell(model, look * BLOCK, repeats, share, effect, conf,
                                             studies, seed=1000 * i + int(share * 100))
                        alpha = (1 - conf) / 2
                        misses = round(cell.worse_miss * studies)
                        p = float(binom.sf(misses - 1, studies, alpha)) if misses else 1.0
                        flag = p < 0.01
                        flagged += flag
                        zero += cell.zero_width
                        out["cells"].append({"metric": model.name, "repeats": repeats,
                                             "disagree": share, "effect": effect,
                                             "cases": look * BLOCK, "confidence": conf,
                                             "alpha": alpha, "coverage": cell.coverage,
                                             "worse_miss": cell.worse_miss,
                                             "better_miss": cell.better_miss,
                                             "zero_width": cell.zero_width, "studies": studies,
                                             "worse_beyond_alpha": flag})
                        row.append(f"{cell.coverage:.4f} {cell.worse_miss:.4f}/{alpha:.4f}"
                                   + ("!" if flag else " "))
                    print(f"{model.name:24s} {repeats} {share:8.2f} {effect:>6s} | "
                          + " | ".join(row), flush=True)
    print(f"\n{flagged} cell(s) whose worse-side misses exceed the look's level (binomial p < "
          f"0.01); {zero} zero-width interval(s)")
    print("\nEnd to end, worse by the margin (ship is the error; declared <= 0.025):")
    for model in MODELS:
        for share in (0.06, 0.10, dense(model.kind)):
            froms = ("fixed", "first_look") if model.kind == "amount" else ("fixed",)
            for margin_from in froms:
                shipped, worse_by = ships_at_margin(model, share, 1, BLOCK, LOOKS, confs, ns.e2e,
                                                    seed=7, margin_from=margin_from)
                out["end_to_end"].append({"metric": model.name, "disagree": share,
                                          "margin_from": margin_from, "ships": shipped,
                                          "worse_by_margins": worse_by, "studies": ns.e2e})
                print(f"  {model.name:24s} disagree {share:4.2f} worse by {worse_by:4.2f} margins"
                      f" (margin {margin_from}): ships {shipped:.4f}")
    out["bootstrap_reference"] = bootstrap_reference(max(ns.studies, 200), confs[0])
    ref = out["bootstrap_reference"]
    print(f"\nBefore (expanded cluster bootstrap), pass rate, 40 cases, 6 % flipping, first look: "
          f"called non-inferior {ref['called_non_inferior']:.4f}, zero-width {ref['zero_width']:.4f}")
    out["flagged_cells"], out["zero_width"] = flagged, zero
    out["seconds"] = time.perf_counter() - t0
    print(f"({out['seconds']:.0f} s)")
    save("coverage", out)


if __name__ == "__main__":
    main()
