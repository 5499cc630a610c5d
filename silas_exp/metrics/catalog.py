"""The built-in metrics: every key silas_exp logs, declared once.

Margins are the largest loss that still counts as "no worse" in a
non-inferiority verdict (config ``analysis.margins.<key>`` overrides them):
two points of a [0, 1] share, a quarter point of a 0–5 rubric score, five per
cent of a token cost. They are defaults, chosen so that a variant the
§19.5 sanity bracket can tell apart from the control cannot hide under them.
"""

from __future__ import annotations

from silas_exp.metrics.spec import MetricSpec, register_metric

R, P = ("replay",), ("probe",)
BOTH = ("replay", "probe")
# the kind of a metric's values (its paired interval: silas_exp.stats.intervals)
SHARE = {"kind": "bounded", "bounds": (0.0, 1.0)}
SCORE = {"kind": "bounded", "bounds": (0.0, 5.0)}  # the rubric's 0-5
AMOUNT = {"kind": "amount"}
PASS_FAIL = {"kind": "pass_fail"}


def _m(key, direction, unit, meaning, **kw) -> None:
    register_metric(MetricSpec(key, direction, unit, meaning, **kw))


# -- context quality (§19.5), per replay case ---------------------------------
_m("context.retrieval_relevance", "higher", "share 0-1",
   "grade-weighted share of later needs served from the window", gate=R, margin=0.02,
   name="retrieval relevance", **SHARE)
_m("context.needed_served_rate", "higher", "share 0-1",
   "share of needed items (grade >= 1) present when needed", report=R, **SHARE)
_m("context.task_completion_rate", "higher", "share 0-1",
   "share of turns whose grade >= 2 needs were all served", **SHARE)
_m("context.mean_window_tokens", "lower", "tokens", "mean window usage over turns", **AMOUNT)
_m("context.tokens_per_served_need", "lower", "tokens",
   "window tokens held per need served (token efficiency)", gate=R, margin=0.05,
   margin_kind="relative", name="tokens per served need", **AMOUNT)
_m("context.completion_per_1k_tokens", "higher", "per 1k tokens",
   "task completion rate per 1000 window tokens", **AMOUNT)
_m("context.re_retrievals", "lower", "count", "evicted or masked items fetched back", report=R, **AMOUNT)
_m("context.re_retrieved_tokens", "lower", "tokens", "tokens paid again for re-retrievals", **AMOUNT)
_m("context.harmful_eviction_rate", "lower", "share 0-1",
   "share of evictions of items needed (grade >= 2) within the horizon", report=R, **SHARE)
_m("context.guard_trigger_rate", "none", "share of turns",
   "turns on which usage exceeded the eviction threshold (workload, not quality)")

# -- the scorer's ranking at Tier-2 calls (retrieval framework §3.1) ----------
for k in (5, 10, 20):
    _m(f"ir.ndcg_at_{k}", "higher", "0-1", f"nDCG@{k} of the keep-first ranking, graded 0-3",
       **({"gate": R, "margin": 0.03} if k == 10 else {}), **SHARE)
for k in (5, 10):
    _m(f"ir.mrr_at_{k}", "higher", "0-1", f"MRR@{k}: first item with grade >= 2", **SHARE)
    _m(f"ir.recall_at_{k}", "higher", "0-1",
       f"Recall@{k} of items with grade >= 2 (0 when none is relevant, as ranx)", **SHARE)

# -- exclusion prediction and keep-backs (§19.4-19.5) ---------------------------
_m("feedback.exclusion_auc", "higher", "AUC 0-1",
   "exclusion prediction: AUC of the scorer's relevance for the main model's keep-backs, on "
   "the control's flush proposals shared by every variant", report=R, margin=0.02,
   name="exclusion AUC", **SHARE)
_m("feedback.exclusion_rate", "lower", "share 0-1",
   "share of proposed candidates the main model kept back (fewer = better proposals)",
   report=R, margin=0.02, **SHARE)
_m("feedback.exclusion_rate.*", "lower", "share 0-1",
   "exclusion rate by zone or age bucket", per_case=False)
_m("feedback.reference_flushes", "none", "count",
   "flush proposals in the shared exclusion-prediction set")

# -- Tier-2 machinery counters -------------------------------------------------
_m("tier2.proposals", "none", "count", "Tier-2 eviction proposals made")
_m("tier2.scorer_calls", "none", "count", "scorer calls")
_m("tier2.scorer_failures", "lower", "count", "scorer calls that failed or timed out")
_m("tier2.fallbacks", "lower", "count", "Tier-2 calls resolved by aggressive heuristics")
_m("tier2.breaker_opens", "lower", "count", "circuit breaker openings")
_m("tier2.auto_resolved", "lower", "count", "proposals resolved 'auto' (main model too slow)")
_m("tier2.hard_ceiling_overrides", "lower", "count",
   "turns where keep-backs hit the scorer threshold ceiling")

# -- §20.2 case outcomes ---------------------------------------------------------
_m("summary.pass", "higher", "share 0-1",
   "case passed its expected mode (errors count as not passed, skipped cases not at all)",
   gate=BOTH, margin=0.05, name="pass rate", run_key="summary.pass_rate", **PASS_FAIL)
_m("summary.error", "lower", "share 0-1",
   "case ended in error or timeout; a variant with more errors than the control never ships",
   gate=BOTH, margin=0.0, name="error rate", run_key="summary.error_rate", **PASS_FAIL)
_m("summary.pass_rate", "higher", "share 0-1", "passed / judged cases of the run", per_case=False,
   name="pass rate")
_m("summary.error_rate", "lower", "share 0-1", "errored or timed-out cases / cases",
   per_case=False, name="error rate")
_m("summary.skipped", "none", "count", "cases skipped (no applicable metric, awaiting a human "
   "label)", per_case=False)
_m("summary.cases", "none", "count", "cases run", per_case=False)
_m("summary.cases_completed", "none", "count", "cases that ran without error", per_case=False)
_m("summary.mean_latency_ms", "lower", "ms", "mean case latency", per_case=False)
_m("summary.p95_latency_ms", "lower", "ms", "95th percentile case latency", per_case=False)
_m("summary.total_token_cost", "lower", "tokens", "LLM tokens of the run", per_case=False)
_m("latency_ms", "lower", "ms", "a case's wall time (BenchmarkResult.latency_ms)", **AMOUNT)
_m("token_cost", "lower", "tokens", "a case's LLM tokens (BenchmarkResult.token_cost)", **AMOUNT)
_m("llm_judge_score", "higher", "0-1", "a case's judge score (BenchmarkResult.llm_judge_score)", **SHARE)

# -- compression probes and the judge (seed 004) ------------------------------
_m("probe.overall", "higher", "score 0-5", "unweighted mean of the six rubric dimensions",
   gate=P, margin=0.25, name="probe score", **SCORE)
for dim in ("accuracy", "context_awareness", "artifact_trail", "completeness", "continuity",
            "instruction_following"):
    _m(f"probe.dim.{dim}", "higher", "score 0-5", f"rubric dimension {dim.replace('_', ' ')}",
       report=P, margin=0.25, **SCORE)
_m("probe.type.*", "higher", "score 0-5", "overall score of one probe type", **SCORE)
_m("probe.compression_ratio", "higher", "ratio", "tokens before / after compression", report=P, **AMOUNT)
_m("probe.tokens_before", "none", "tokens", "window tokens before a compression")
_m("probe.tokens_after", "none", "tokens",
   "window tokens after a compression (read it with the probe scores, not alone)")
_m("probe.errors", "lower", "count", "probes that could not be answered")
_m("probe.empty_summaries", "lower", "count",
   "compression events whose summary came out empty (the strategy compressed like truncate)")
_m("probe.graded", "none", "count", "probes graded by the judge", per_case=False)
_m("probe.judge_errors", "lower", "count", "probes the judge could not grade", per_case=False)
_m("judge.variance", "lower", "score^2", "variance of the judge's scores over its repeats")
_m("judge.variance.*", "lower", "score^2", "judge variance of one criterion", per_case=False)
_m("judge.kappa.*", "higher", "kappa", "weighted Cohen's kappa with human labels",
   per_case=False)
_m("judge.labelled_scores", "none", "count", "scores with a human label", per_case=False)
_m("judge.low_agreement", "lower", "flag", "1 when a dimension's kappa is under the floor",
   per_case=False)

# -- model calls and spend --------------------------------------------------------
# decided by which call reaches the API or the response cache first (MetricSpec.billing);
# tokens in and out and failed calls are the answers' own
BILLING = ("calls", "cache_hits", "retries", "cache_read_tokens", "cache_write_tokens", "cost_usd")
for name, meaning in (("calls", "model calls"), ("errors", "failed model calls"),
                      ("retries", "retried model calls"), ("cache_hits", "answers from cache"),
                      ("input_tokens", "input tokens"), ("output_tokens", "output tokens"),
                      ("cache_read_tokens", "prompt-cache read tokens"),
                      ("cache_write_tokens", "prompt-cache write tokens"),
                      ("cost_usd", "spend in USD")):
    _m(f"llm.{name}", "none" if name in ("calls", "cache_hits") else "lower",
       "usd" if name == "cost_usd" else ("tokens" if "tokens" in name else "count"), meaning,
       billing=name in BILLING, **({"name": "LLM spend"} if name == "cost_usd" else {}))
_m("llm.cost_usd_simulated", "lower", "usd (simulated)",
   "what a simulated run's calls would have cost at the named models' prices; nothing was spent "
   "(real spend is llm.cost_usd, never mixed with it)", name="LLM cost, simulated")
_m("llm.calls.*", "none", "count", "model calls of one task", per_case=False)
_m("llm.errors.*", "lower", "count", "failed model calls by reason", per_case=False)
for name, unit, meaning in (("calls", "count", "model calls"), ("retries", "count", "retries"),
                            ("errors", "count", "failed model calls"),
                            ("cost_usd", "usd", "spend in USD"),
                            ("tokens", "tokens", "input and output tokens")):
    _m(f"llm.overhead.{name}", "none", unit,
       f"{meaning} made only to measure (calibration and the control's reference replays), by "
       "whichever job of the process made them first; not part of the variant's llm.*",
       per_case=False, billing=True)
_m("llm.overhead.cost_usd_simulated", "none", "usd (simulated)",
   "llm.overhead.cost_usd of a simulated run: what those calls would have cost; nothing was spent",
   per_case=False, billing=True)

# -- calibration ------------------------------------------------------------------
_m("calibration.candidates", "none", "count", "feedback candidates the calibration fit used",
   per_case=False)
_m("calibration.guidance_lines", "none", "count", "guidance lines of a calibrated prompt",
   per_case=False)

# -- context-assembly fixture benchmark (silas-exp fixtures) ------------------------
for name, direction, meaning in (
        ("zone_precision", "higher", "share of routed zones that were expected"),
        ("zone_recall", "higher", "share of expected zones that were routed"),
        ("guard_accuracy", "higher", "share of fixtures whose budget guard fired as expected"),
        ("guard_trigger_rate", "none", "share of fixtures on which the guard fired"),
        ("routing_coverage", "higher", "share of fixtures routed to a profile"),
        ("routing_accuracy", "higher", "share of routed fixtures on the expected profile")):
    _m(f"fixtures.{name}", direction, "share 0-1", meaning, per_case=False)
