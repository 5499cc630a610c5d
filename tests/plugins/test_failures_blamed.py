"""A scorer that raises, returns NaN or returns 1.5 is named on the console
(kind, source, exception or contract, file and line, first case and item,
count) and in the sweep's ablation.md; --verbose prints the first traceback;
fail_fast names the scorer and the case."""

from __future__ import annotations

import math

import pytest

from tests.plugins.test_declared_once import KEYWORD, silas
from tests.plugins.test_example_plugin import fake_install

SOURCE = "scorer 'keyword' (entry point of keyword-plugin 0.1)"


@pytest.fixture
def site(tmp_path):
    return fake_install(tmp_path / "site", "keyword-plugin", "0.1", "silas_exp.scorers", KEYWORD)


@pytest.mark.parametrize("broken,says", [
    ("raise", "raised ValueError at plugins/kinds.py:"),
    ("nan_score", "broke its contract (a finite relevance in [0, 1] for every item asked about)"),
    ("over_one", "broke its contract (a finite relevance in [0, 1] for every item asked about)"),
])
def test_a_broken_scorer_is_named_on_the_console(tmp_path, site, broken, says):
    done = silas(tmp_path, site, "scorer=keyword", f"scorer.broken={broken}", "tracking=none",
                 "suite=smoke")
    assert done.returncode == 1, done.stderr[-2000:]  # a crash never passes for a worse variant
    line = next(x for x in done.stdout.splitlines() if "errored:" in x)
    assert "2 case(s) errored: " + SOURCE + " " + says in line
    assert "first: case case-000-coding-heavy, turn " in line
    value = {"raise": "cannot score item ", "nan_score": "scored nan", "over_one": "scored 1.5"}
    assert value[broken] in line
    assert "run with --verbose for the first traceback" in done.stdout
    last = done.stderr.strip().splitlines()[-1]  # the one-line cause, last on the console
    assert last.startswith("error: 2 case run(s) errored: " + SOURCE + " " + says), last
    assert value[broken] in last and "case_errors=ignore" in last


def test_case_errors_ignore_exits_0(tmp_path, site):
    done = silas(tmp_path, site, "scorer=keyword", "scorer.broken=raise", "case_errors=ignore",
                 "tracking=none", "suite=smoke")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "2 case(s) errored: " in done.stdout


def test_verbose_prints_the_first_traceback(tmp_path, site):
    done = silas(tmp_path, site, "--verbose", "scorer=keyword", "scorer.broken=raise",
                 "tracking=none", "suite=smoke")
    assert "Traceback (most recent call last)" in done.stdout
    assert 'raise ValueError(f"cannot score item {it.ctx_id}")' in done.stdout


def test_fail_fast_names_the_scorer_and_the_case(tmp_path, site):
    done = silas(tmp_path, site, "scorer=keyword", "scorer.broken=raise", "fail_fast=true",
                 "tracking=none", "suite=smoke")
    assert done.returncode == 1
    assert f"run failed: {SOURCE} raised ValueError" in done.stderr
    assert "(case case-000-coding-heavy, turn" in done.stderr


def test_the_sweep_report_counts_errors_per_cause(tmp_path, site):
    done = silas(tmp_path, site, "-m", "scorer=heuristic,keyword", "scorer.broken=over_one",
                 "repeats=2", "tracking=none", "suite=smoke")
    assert done.returncode == 1, done.stderr[-2000:]  # the sweep completed, its cases errored
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: 4 case run(s) in 2 job(s) errored: " + SOURCE), last
    report = (tmp_path / "multirun" / "ablation.md").read_text()
    section = report.split("## Case errors by cause")[1]
    row = next(x for x in section.splitlines() if x.startswith("| scorer.broken=over_one,"))
    assert "| 4 | " + SOURCE + " broke its contract" in row and "scored 1.5" in row


def _items():
    from silas_exp.context.window import LiveItem

    return [LiveItem(ctx_id=f"i{n}", zone="chronicle", kind="tool_result", full_tokens=10 + n,
                     tokens=10 + n, born=0, last_ref=0) for n in range(3)]


def _line_of(text: str) -> int:
    from tests.plugins import kinds

    lines = open(kinds.__file__).read().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


@pytest.mark.parametrize("broken", ["nan_score", "over_one"])
def test_a_broken_contract_names_the_line_that_produced_the_value(broken):
    from silas_exp.errors import PluginFailure
    from silas_exp.scorers.base import CheckedScorer
    from tests.plugins.kinds import KEYWORD as kind
    from tests.plugins.kinds import KeywordScorer

    scorer = CheckedScorer(KeywordScorer(kind.settings(name="keyword", broken=broken)), kind)
    with pytest.raises(PluginFailure) as failure:
        scorer.score(_items(), 3)
    line = _line_of("out[items[-1].ctx_id] = math.nan if")
    assert failure.value.cause.endswith(f"at plugins/kinds.py:{line}"), failure.value.cause


def test_a_value_the_trace_cannot_find_again_says_so():
    import itertools

    from silas_exp.errors import PluginFailure
    from silas_exp.scorers.base import CheckedScorer
    from tests.plugins.kinds import KEYWORD as kind

    calls = itertools.count()

    class Flaky:  # NaN on its first call only: a second, traced call does not give it again
        name, model_id = "flaky", "flaky"

        def score(self, items, turn):
            bad = next(calls) == 0
            return {it.ctx_id: (math.nan if bad else 0.5) for it in items}

    with pytest.raises(PluginFailure) as failure:
        CheckedScorer(Flaky(), kind).score(_items(), 3)
    assert "the line that produced the value could not be traced" in failure.value.cause
