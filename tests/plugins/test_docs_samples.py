"""docs/plugins.md cannot drift from the product: every Python sample in it
runs and does what the text says (the scorer keeps its contract, the strategy
evicts and fills its statistics, the judge grades, the backend answers, the
metric computes), its TOML parses, and every message of its error table is
produced, as quoted, by the code that reports it."""

from __future__ import annotations

import asyncio
import re
import sys
import tomllib
import types
from types import SimpleNamespace

import pytest

from silas_exp.errors import ConfigError, unknown_option_message
from silas_exp.plugins import Kind
from tests.conftest import REPO
from tests.plugins.test_example_plugin import fake_install

DOC = REPO / "docs" / "plugins.md"


def blocks(lang: str) -> list[tuple[int, str]]:
    """(line, code) of every fenced block of ``lang`` in the doc."""
    text = DOC.read_text()
    return [(text[:m.start()].count("\n") + 2, m.group(1))
            for m in re.finditer(rf"```{lang}\n(.*?)```", text, re.S)]


def sample(needle: str, monkeypatch) -> types.ModuleType:
    """The Python sample holding ``needle``, run as a module of its own."""
    found = [(line, code) for line, code in blocks("python") if needle in code]
    assert len(found) == 1, needle
    line, code = found[0]
    module = types.ModuleType(f"plugins_doc_{line}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile("\n" * (line - 1) + code, str(DOC), "exec"), module.__dict__)  # noqa: S102
    assert isinstance(module.KIND, Kind)
    return module


def test_every_python_sample_is_one_of_the_checked_ones():
    checked = ("scorer_kind(", "strategy_kind(", "judge_kind(", "backend_kind(", "metric_kind(")
    for line, code in blocks("python"):
        assert any(c in code for c in checked), f"docs/plugins.md:{line} is not run by a test"
    for _, code in blocks("toml"):
        tomllib.loads(code)


def items():
    from silas_exp.context.window import LiveItem

    return [LiveItem(ctx_id=f"i{n}", zone="chronicle", kind="tool_result", full_tokens=100,
                     tokens=100, born=n, last_ref=n) for n in range(5)]


def test_the_scorer_sample_keeps_its_contract(monkeypatch):
    from silas_exp.scorers import Scorer
    from silas_exp.scorers.base import CheckedScorer

    doc = sample("scorer_kind(", monkeypatch)
    settings = doc.KIND.settings(name="my_scorer")
    assert settings.tau == 8.0
    scorer = CheckedScorer(doc.KIND.factory(settings, SimpleNamespace(seed=0)), doc.KIND)
    scores = scorer.score(items(), 6)  # raises when a score breaks the contract
    assert set(scores) == {f"i{n}" for n in range(5)} and scores["i4"] > scores["i0"]
    for method in ("score", "observe"):  # the protocol as the sample spells it
        import inspect

        assert list(inspect.signature(getattr(doc.MyScorer, method)).parameters) == \
            list(inspect.signature(getattr(Scorer, method)).parameters)


def smoke_case():
    from silas_exp.context.budget import TokenBudget
    from silas_exp.data.suites.loader import load_suite, session_case

    loaded = load_suite(REPO / "suites" / "smoke")
    return session_case(loaded, loaded.eval_cases[0], TokenBudget())


def test_the_strategy_sample_evicts_and_fills_its_statistics(monkeypatch):
    from silas_exp.context.replay import replay
    from silas_exp.context.stats import ReplayStats

    doc = sample("strategy_kind(", monkeypatch)
    sc, stats = smoke_case(), ReplayStats()
    granted = SimpleNamespace(budget=sc.budget, shares=sc.shares, stats=stats)
    strategy = doc.KIND.factory(doc.KIND.settings(name="lru"), granted)
    assert strategy.budget is sc.budget and strategy.stats is stats  # as the text says
    replay(sc.session, sc.truth, strategy.step, sc.budget, stats)
    assert stats.guard_triggers > 0 and stats.evictions
    assert doc.KIND.trait("evicts_per_turn") is True


def test_the_judge_sample_grades_every_criterion(monkeypatch):
    from silas_exp.probes.schema import ProbeSpec

    doc = sample("judge_kind(", monkeypatch)
    judge = doc.KIND.factory(doc.KIND.settings(kind="my_judge"),
                             SimpleNamespace(model_id="m", namespace="n"))
    probe = ProbeSpec(probe_id="p", type="recall", cut=0, question="which file?",
                      expected=["modified:src/app.py", "error:KeyError"], criteria=["accuracy_factual", "artifact_files_modified"])
    grade = judge.grade(probe, "It was src/app.py.")
    assert grade.scores == {"accuracy_factual": 2.5, "artifact_files_modified": 2.5}


def test_the_backend_sample_answers(monkeypatch):
    from silas_exp.llm import LLMRequest, LLMSettings, Message

    doc = sample("backend_kind(", monkeypatch)
    backend = doc.KIND.factory(LLMSettings(), SimpleNamespace(seed=0))
    request = LLMRequest(task="scorer", model="m", messages=(Message("user", "hello there"),))
    answers = asyncio.run(backend.abatch([request], namespace="n"))
    assert answers[0].text == "hello there" and answers[0].backend == "echo"
    assert doc.KIND.trait("cached") is True


def test_the_metric_sample_computes(monkeypatch):
    from silas_exp.context.stats import ReplayStats

    doc = sample("metric_kind(", monkeypatch)
    stats = ReplayStats()
    stats.evictions += [(1, "a"), (2, "b"), (3, "a")]
    compute = doc.KIND.factory(None, None)
    assert compute(stats, None, 20) == 2.0
    assert doc.KIND.trait("spec").key == doc.KIND.name == "my_pkg.metric"


def table_messages() -> list[str]:
    text = DOC.read_text().split("## 4. What the errors mean")[1]
    return [m.group(1) for m in re.finditer(r"^\| `(.+?)` \|", text, re.M)]


def says(message: str, quoted: str) -> None:
    """``quoted`` (… for what depends on the install) is how ``message`` reads."""
    first, *rest = quoted.split("…")
    assert message.startswith(first), (quoted, message)
    at = len(first)
    for part in rest:
        found = message.find(part, at)
        assert found >= 0, (quoted, message)
        at = found + len(part)


def test_the_error_table_quotes_what_is_printed(monkeypatch, tmp_path):
    from silas_exp.errors import pydantic_error_to_config_error
    from silas_exp.plugins import CapabilityError, Granted
    from silas_exp.scorers.base import SCORERS

    doc = sample("scorer_kind(", monkeypatch)
    target = f"{doc.__name__}.KIND"

    def error(make) -> str:
        with pytest.raises(ConfigError) as err:
            make()
        return str(err.value)

    def entry_point(entry: str):
        site = fake_install(tmp_path / entry.split()[0], "my-pkg", "0.1.0", "silas_exp.scorers",
                            entry)
        monkeypatch.syspath_prepend(str(site))
        return lambda: SCORERS.get(entry.split()[0])

    def out_of_range():
        try:
            SCORERS.validate({"_target_": target, "tau": -1})
        except ConfigError as exc:
            raise pydantic_error_to_config_error(exc) from None

    from silas_exp.cli.overrides import unknown_key_message

    SCORERS.names()  # the built-ins, loaded; what the messages below register is undone after
    monkeypatch.setattr(SCORERS, "_kinds", dict(SCORERS._kinds))
    produced = [
        unknown_key_message("scorer.tua", "8", "scorer", ["my_scorer"],
                            [("scorer", "tua", list(SCORERS.config_node(doc.KIND)))]),
        unknown_option_message("scorer", "my_scorre", [*SCORERS.names(), "my_scorer"]),
        error(lambda: SCORERS.get("my_scorre")),
        error(entry_point("my_scorer = my_pkg.scorer:KIND")),
        error(lambda: SCORERS.validate({"_target_": "tests.plugins.kinds.NOT_A_KIND"})),
        error(lambda: SCORERS.validate({"_target_": "tests.plugins.kinds.ASK"})),
        str(pytest.raises(CapabilityError, lambda: Granted(doc.KIND, "scorer", {}, {"llm": 1}).llm
                          ).value),
        "invalid config: " + error(out_of_range).partition("invalid config: ")[2],
        error(entry_point(f"other = {doc.__name__}:KIND")),
    ]
    quoted = table_messages()
    assert len(quoted) == len(produced)
    for message, cell in zip(produced, quoted, strict=True):
        says(message, cell)
