"""Every comparative figure on the same cases: a variant that a sequential
study stopped after its first blocks is shown beside the control's mean on
those blocks only, never beside the control's mean over blocks it did not run
(in the report's tables, the data table, the console table and the Pareto plot)."""

from __future__ import annotations

import numpy as np
import pytest

from silas_exp.analysis.ablation import ablation
from silas_exp.analysis.columns import data_table
from silas_exp.analysis.data import SweepData
from silas_exp.analysis.report import ablation_markdown, paired_table
from silas_exp.metrics.numbers import num

from .test_ablation_rules import N_REPEATS, _job

METRIC = "context.retrieval_relevance"
EARLY, LATE = 12, 12  # the control ran both blocks, the stopped variant the early one


def _stopped_sweep() -> tuple[SweepData, float, float]:
    """The control's early cases score 0.6, its late ones 0.9; the variant ran
    only the early cases, 0.01 above the control on each."""
    control = [0.6] * EARLY + [0.9] * LATE
    variant = [0.61] * EARLY
    jobs = [_job("scorer=heuristic", r, control) for r in range(N_REPEATS)]
    jobs += [_job("scorer=online", r, variant) for r in range(N_REPEATS)]
    data = SweepData("stopped", "", jobs)
    early = data.case_values("scorer=heuristic", METRIC)[:EARLY]
    return data, float(np.nanmean(early)), float(np.nanmean(data.case_values("scorer=online",
                                                                              METRIC)))


def test_a_stopped_variant_is_compared_on_its_own_cases():
    data, control_early, variant_mean = _stopped_sweep()
    res = ablation(data)
    [c] = res.table(METRIC)
    assert c.n_cases == EARLY
    # the control's column: its mean on the variant's cases, not over all of its own
    assert c.control_mean == pytest.approx(control_early, abs=1e-9)
    assert res.control_summary[METRIC][0] > control_early + 0.1  # the unpaired mean differs
    assert c.mean == pytest.approx(variant_mean, abs=1e-9)
    assert c.mean - c.control_mean == pytest.approx(c.delta, abs=1e-9)
    assert 0.005 < c.delta < 0.015


def test_every_table_shows_the_paired_means():
    data, control_early, _ = _stopped_sweep()
    res = ablation(data)
    [c] = res.table(METRIC)
    table = data_table(res)
    [row] = [i for i, m in enumerate(table["metric"]) if m == METRIC]
    assert table["control_mean"][row] == pytest.approx(control_early, abs=1e-3)
    assert table["mean"][row] - table["control_mean"][row] == pytest.approx(c.delta, abs=2e-3)
    section = ablation_markdown(res).split("(`context.retrieval_relevance`)")[1].split("\n## ")[0]
    [md_row] = [line for line in section.splitlines() if line.startswith("| scorer=online |")]
    assert f"| {num(control_early)} ± " in md_row, md_row  # the control's column, same cases
    [console] = [line for line in paired_table(res).splitlines()
                 if line.startswith("| scorer=online | retrieval relevance")]
    assert f"| {num(control_early)} |" in console and f"{EARLY} × {N_REPEATS}" in console


def test_the_pareto_plot_places_variants_by_their_paired_difference(tmp_path, monkeypatch):
    from silas_exp.analysis import plots

    data, _, _ = _stopped_sweep()
    res = ablation(data)
    drawn = []
    real = plots.load_pyplot

    def spy():
        plt = real()
        original = plt.Axes.errorbar

        def errorbar(ax, x, y, *a, **kw):
            drawn.append((x, y))
            return original(ax, x, y, *a, **kw)

        monkeypatch.setattr(plt.Axes, "errorbar", errorbar)
        return plt

    monkeypatch.setattr(plots, "load_pyplot", spy)
    assert plots.pareto_plot(res, tmp_path) is not None
    [c] = res.table(METRIC)
    [(x, y)] = drawn
    assert y == pytest.approx(c.delta)  # the difference on shared cases, not a mean over others
    assert x == pytest.approx(res.table("context.tokens_per_served_need")[0].delta)


def test_the_data_table_names_its_spread_over_repeats_which_one_repeat_has_not():
    """With one repeat per case (the default) there is no spread over repeats: the
    field says what it is beside the ``repeats`` column; with more repeats it has one."""
    control, variant = [0.6, 0.7, 0.8] * 8, [0.62, 0.71, 0.83] * 8
    for repeats in (1, 3):
        jobs = [_job(v, r, q) for v, q in (("scorer=heuristic", control), ("scorer=online", variant))
                for r in range(repeats)]
        table = data_table(ablation(SweepData("s", "", jobs)))
        assert "sd" not in table and "control_sd" not in table
        assert set(table["repeats"]) == {repeats}
        spread = table["sd_over_repeats"] + table["control_sd_over_repeats"]
        assert all(v is None for v in spread) if repeats == 1 else all(v is not None for v in spread)
