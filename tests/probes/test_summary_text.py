"""Summaries work from item text when items carry no facts, and an empty
summary is counted, never silent."""

from __future__ import annotations

from silas_exp.context.budget import TokenBudget, ZoneShares
from silas_exp.context.stats import ReplayStats
from silas_exp.context.window import LiveItem, Window
from silas_exp.eviction.base import StrategyDeps
from silas_exp.eviction.compression import Summarise, SummarySettings, Truncate
from silas_exp.facts.extract import text_facts
from silas_exp.llm import LLMSettings, build_client
from silas_exp.probes.judge import JudgeSettings, build_judge
from silas_exp.probes.pipeline import run_probe_case
from silas_exp.probes.schema import ProbePlan, ProbeSpec
from silas_exp.schema.eviction import ContextZone
from silas_exp.schema.session import Session, SessionItem

TOOL_OUTPUT = ("$ pytest tests/test_http.py\n"
               "E   ValueError: retry budget exhausted after 3 attempts\n"
               "FAILED tests/test_http.py::test_retry - ValueError\n"
               "requests==2.31.0 installed")


def _window(texts: list[tuple[str, str]]) -> Window:
    w = Window()
    for i, (kind, text) in enumerate(texts):
        w.add(LiveItem(ctx_id=f"i{i}", zone=ContextZone.WORKSPACE, kind=kind, full_tokens=40,
                       tokens=40, born=i, last_ref=i, text=text))
    return w


def _deps() -> StrategyDeps:
    return StrategyDeps(budget=TokenBudget(total=10_000), shares=ZoneShares(chronicle=0.3, memory=0.2, workspace=0.3),
                        stats=ReplayStats(),
                        scope_id="s", llm=build_client(LLMSettings(), seed=0, cache_dir=None),
                        namespace="t", model_id="sim")


def test_text_rules_find_error_command_version_path_and_decision():
    facts = text_facts("tool_result", TOOL_OUTPUT)
    assert "command:pytest tests/test_http.py" in facts
    assert "error:ValueError: retry budget exhausted after 3 attempts" in facts
    assert "version:requests==2.31.0" in facts
    assert "examined:tests/test_http.py" in facts
    said = text_facts("agent_response", "Checked. I'll use httpx instead of requests for async.")
    assert said == ["decision:I'll use httpx instead of requests for async."]
    # nothing invented: plain prose and a timing are not facts
    assert text_facts("tool_result", "all good, took 2.5 s") == []
    assert text_facts("user_message", "I'll use httpx") == []


def test_summary_of_unannotated_items_is_not_truncate():
    items = [("tool_result", TOOL_OUTPUT), ("agent_response", "I'll use httpx instead of requests.")]
    items += [("user_message", f"recent message {i}") for i in range(8)]
    summarised, truncated = _window(items), _window(items)
    Summarise(SummarySettings(name="anchored", keep_recent_turns=6), _deps()).compress(summarised, 9)
    Truncate(SummarySettings(name="truncate", keep_recent_turns=6), _deps()).compress(truncated, 9)
    summary = next(it for it in summarised if it.kind == "summary")
    assert "retry budget exhausted" in summary.text and "httpx" in summary.text
    assert [it.ctx_id for it in truncated] == [it.ctx_id for it in summarised if it.kind != "summary"]


def test_empty_summary_is_counted_per_case():
    """Items that show no fact: the summary is empty, and the probe case counts it."""
    turns = 12
    session = Session(session_id="chat", scope_id="chat", profile="coding", turns=turns, items=[
        SessionItem(ctx_id=f"m{t}", turn=t, zone=ContextZone.CHRONICLE, kind="user_message",
                    text=f"just chatting about the weather, part {t}", tokens=20)
        for t in range(turns)])
    plan = ProbePlan(compressions=[10], probes=[ProbeSpec(
        probe_id="p", type="recall", cut=0, question="What was said?",
        expected=["decision:nothing was decided"])])
    deps = _deps()
    out = {}
    for style in ("anchored", "opaque"):
        strategy = Summarise(SummarySettings(name=style, style=style, keep_recent_turns=6), deps)
        judge = build_judge(JudgeSettings(), deps.llm, "sim", namespace="j")
        out[style] = run_probe_case(session, plan, strategy, deps.llm, judge, namespace=style,
                                    main_model="sim", max_subscription_tokens=1000).metrics
    assert out["anchored"]["probe.empty_summaries"] == 1.0
    assert out["opaque"]["probe.empty_summaries"] == 1.0
    with_facts = Session(session_id="work", scope_id="work", profile="coding", turns=turns, items=[
        SessionItem(ctx_id=f"m{t}", turn=t, zone=ContextZone.WORKSPACE, kind="tool_result",
                    text=TOOL_OUTPUT, tokens=60) for t in range(turns)])
    strategy = Summarise(SummarySettings(name="anchored", keep_recent_turns=6), deps)
    judge = build_judge(JudgeSettings(), deps.llm, "sim", namespace="j")
    metrics = run_probe_case(with_facts, plan, strategy, deps.llm, judge, namespace="w",
                             main_model="sim", max_subscription_tokens=1000).metrics
    assert metrics["probe.empty_summaries"] == 0.0
