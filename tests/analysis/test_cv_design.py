"""The twin's simulation (bench/bench_cv.py --quick's configuration) runs, and
would catch an interval too narrow for the sequential design: one read at 95 %
at every look, as if the looks spent nothing, is flagged where the twin's
interval is not."""

from __future__ import annotations

from silas_exp.stats.control_variate import corrected_interval
from silas_exp.stats.coverage import CV_CELLS, QUICK_STUDIES, cv_table
from silas_exp.stats.sequential import spending_confidences

LOOKS = [1, 2, 4, 8]
CONFS = spending_confidences(0.95, tuple(k / 8 for k in LOOKS))


def _interval_flags(rows) -> list[str]:
    return [f"{r['metric']} {r['disagree']} rho {r['rho']} {r['effect']}: {f}"
            for r in rows for f in r["flags"] if "cases" in f]  # coverage, not the design


def test_the_quick_simulation_passes_the_twins_interval_and_flags_a_too_narrow_one():
    rhos = (1.0, 0.7, -0.5)
    rows = cv_table(QUICK_STUDIES, LOOKS, CONFS, rhos=rhos)
    assert _interval_flags(rows) == []
    assert all(r["corrected"][0] > 0.5 for r in rows if r["disagree"] >= 0.25)

    def narrow(c, plain, confidence):  # every look at 95 %: no alpha spending
        return corrected_interval(c, plain, 0.95)

    bad = cv_table(QUICK_STUDIES, LOOKS, CONFS, cells=CV_CELLS[1:], rhos=rhos, interval=narrow)
    flagged = _interval_flags(bad)
    assert len({f.split(":")[0] for f in flagged}) >= 0.6 * len(bad)  # 40 studies a row
    assert any("at 40 cases" in f for f in flagged)
