"""Regression check against the suite's baseline (§20.5), at the level a
change is made: a whole configuration (a study's variant, or a configuration
run for the check) on every case the baseline covers, paired by case and
repeat with the baseline's logged results.

Two readings, each for its own purpose:

* **Per-case flags** (§20.5): a case pass → fail, a judge score down by more
  than 0.1, a latency up by more than 50 %. Each count comes with the count
  expected when nothing changed, from the baseline's own repeats (repeat r
  against repeat r') or an A/A (the baseline's configuration run again under
  other seeds), scaled to the pairs compared: "7 pass → fail, ≈ 6 expected
  from noise". Latency of the simulated model is wall-clock noise: never
  flagged. Flags describe; they never set the exit code.
* **The decision**, by the verdict rule of the ablation (non-inferiority at
  the gated margins, silas_exp.analysis.ablation): no regression when the
  change is shown no worse than the baseline on every gated metric;
  regression when it is worse beyond a margin, or errors more; and when the
  evidence cannot tell (inconclusive), a regression is not ruled out. Only
  "no regression" passes the gate (§19.5: a change ships on evidence of no
  harm, never on the absence of evidence of harm).

**Checks under other seeds.** Paired with the baseline's own seeds (the
default) both arms share their random streams, and the CI over cases is the
whole uncertainty. Under other seeds (``--seeds-from N``, or a study run with
another seed) a job can also shift as a whole: what is drawn once per job
from its seed (the weights scorer's calibration) moves every case of the job
together, and a CI over cases cannot see that shift. The check then adds the
between-seed variance of a job-level shift, measured on runs that differ
only by seed (the A/A runs, or the baseline's own repeats), to the CI of
each gated difference (``seed_level``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
from scipy import stats as sps

from silas_exp.analysis.ablation import AblationResult, _decide, ablation
from silas_exp.analysis.data import JobData, SweepData
from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.metrics.registry import spec
from silas_exp.stats import MetricCall, Oriented, Outcome, cases_needed, metric_call

NOTE_MARK = "**Regression check:"  # first line of a checked run's description
CANDIDATE, LOGGED = "checked", "logged baseline"  # the two arms of the comparison
JUDGE_DROP, LATENCY_UP = 0.1, 0.5  # §20.5
KINDS = {"pass": "pass → fail", "judge": f"judge score −{JUDGE_DROP}",
         "latency": f"latency +{LATENCY_UP:.0%}"}
OUTCOMES = {Outcome.SHIP: "no regression", Outcome.DO_NOT_SHIP: "regression",
            Outcome.INCONCLUSIVE: "regression not ruled out"}


@dataclass(frozen=True)
class Flag:
    case_id: str
    repeat: int
    kind: str  # a key of KINDS
    text: str


def case_flags(now: JobData, was: JobData, latency: bool = True) -> list[Flag]:
    """§20.5's flags of ``now`` against ``was`` on the cases both ran."""
    flags = []
    for c in sorted(set(now.cases) & set(was.cases)):
        a, b = was.cases[c], now.cases[c]
        if was.status.get(c) == "pass" and now.status.get(c) in ("fail", "error", "timeout"):
            flags.append(Flag(c, now.repeat, "pass", f"pass → {now.status.get(c)}"))
        if "llm_judge_score" in a and "llm_judge_score" in b \
                and a["llm_judge_score"] - b["llm_judge_score"] > JUDGE_DROP:
            flags.append(Flag(c, now.repeat, "judge", f"judge score {a['llm_judge_score']:.2f} → "
                                                      f"{b['llm_judge_score']:.2f}"))
        if latency and a["latency_ms"] > 0 and b["latency_ms"] > (1 + LATENCY_UP) * a["latency_ms"]:
            flags.append(Flag(c, now.repeat, "latency", f"latency {a['latency_ms']:.0f} → "
                                                        f"{b['latency_ms']:.0f} ms"))
    return flags


def _shared(a: JobData, b: JobData) -> int:
    return len(set(a.cases) & set(b.cases))


def flag_rates(pairs: Sequence[tuple[JobData, JobData]], latency: bool) -> dict[str, float]:
    """Flags per compared case of each kind over ``(now, was)`` pairs that
    differ only by noise (an A/A, or two repeats of the baseline)."""
    n = sum(_shared(now, was) for now, was in pairs)
    counts = {k: 0 for k in KINDS}
    for now, was in pairs:
        for f in case_flags(now, was, latency):
            counts[f.kind] += 1
    return {k: (v / n if n else math.nan) for k, v in counts.items()}


def noise_pairs(baseline: Sequence[JobData], aa: Sequence[JobData] = ()
                ) -> tuple[list[tuple[JobData, JobData]], str]:
    """Pairs that differ only by noise, and where they come from: the
    baseline's own repeats when it has two or more, else the A/A's jobs
    against the baseline's of the same repeat."""
    if len(baseline) > 1:
        return ([(a, b) for a in baseline for b in baseline if a is not b],
                f"the baseline's own {len(baseline)} repeats, each against the others")
    by_repeat = {j.repeat: j for j in baseline}
    pairs = [(j, by_repeat[j.repeat]) for j in aa if j.repeat in by_repeat]
    return pairs, "an A/A: the baseline's configuration run again under other seeds"


@dataclass
class RegressionReport:
    subject: str  # what was checked ("`scorer=weights` of study abc", "configuration …")
    baseline: str  # the baseline it was checked against (name and run)
    baseline_run_id: str
    result: AblationResult
    outcome: Outcome
    flags: list[Flag]
    compared: int  # (case, repeat) pairs
    cases: int
    expected: dict[str, float] = field(default_factory=dict)  # kind -> count expected from noise
    expected_from: str = ""
    latency_checked: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def regressed(self) -> bool:
        """Anything but "no regression" fails the gate."""
        return self.outcome is not Outcome.SHIP

    @property
    def decision(self) -> str:
        return OUTCOMES[self.outcome]

    def flag_counts(self) -> dict[str, int]:
        return {k: sum(f.kind == k for f in self.flags) for k in KINDS}

    def flag_line(self) -> str:
        parts = []
        for kind, n in self.flag_counts().items():
            if kind == "latency" and not self.latency_checked:
                continue
            exp = self.expected.get(kind, math.nan)
            parts.append(f"{n} {KINDS[kind]}" + ("" if math.isnan(exp) else
                                                 f", ≈ {exp:.0f} expected from noise"))
        return "; ".join(parts)

    def reasons(self) -> str:
        return "; ".join(self.result.verdicts[CANDIDATE].reasons)

    def headline(self, accepted: str | None = None) -> str:
        """One line for the top of the checked study's description."""
        what = self.decision.upper() if self.regressed else self.decision
        if self.regressed and accepted:
            what += f" (accepted: {accepted})"
        return (f"{NOTE_MARK} {what}** — {self.subject} against the baseline {self.baseline}, "
                f"{self.cases} cases × {self.compared // max(self.cases, 1)} repeat(s): "
                f"{self.reasons()}. Flags: {self.flag_line()} (report: `regress.md`).")

    def markdown(self, accepted: str | None = None) -> str:
        head = self.decision.upper() if self.regressed else self.decision
        if self.regressed and accepted:
            head += " (accepted)"
        lines = [f"## Regression check: {head}", "",
                 f"{self.subject} against the baseline {self.baseline}, on the {self.cases} cases "
                 f"it covers ({self.compared} case × repeat pairs).", "",
                 f"**Decision** (verdict rule: non-inferiority at the gated margins, "
                 f"{self.result.confidence:.0%} two-sided confidence): {self.decision} — "
                 f"{self.reasons()}.", ""]
        if accepted:
            lines += [f"**Accepted:** {accepted}", ""]
        lines += ["| gated metric | Δ checked − baseline | CI | margin | call |",
                  "|---|---|---|---|---|"]
        for c in self.result.comparisons:
            if c.variant == CANDIDATE and c.metric in self.result.gated:
                lines.append(f"| {c.metric} | {c.delta:+.4f} | [{c.ci_low:+.4f}, {c.ci_high:+.4f}] "
                             f"| {c.margin:.3g} | {c.call.value if c.call else ''} |")
        lines += ["", "**Per-case flags (§20.5)**, each with the count expected when nothing "
                  f"changed ({self.expected_from or 'no A/A: not estimated'}):", ""]
        for kind, n in self.flag_counts().items():
            if kind == "latency" and not self.latency_checked:
                lines.append(f"- {KINDS[kind]}: not checked (the simulated model's latency is "
                             "wall-clock noise)")
                continue
            exp = self.expected.get(kind, math.nan)
            lines.append(f"- {KINDS[kind]}: {n}" + ("" if math.isnan(exp) else
                                                    f", ≈ {exp:.1f} expected from noise"))
        shown = [f for f in self.flags if f.kind != "latency" or self.latency_checked][:30]
        if shown:
            lines += ["", "| case | repeat | flag |", "|---|---|---|"]
            lines += [f"| {f.case_id} | {f.repeat} | {f.text} |" for f in shown]
            if len(self.flags) > len(shown):
                lines.append(f"| … | | {len(self.flags) - len(shown)} more |")
        lines += [""] + [f"- note: {n}" for n in self.notes]
        return "\n".join(lines).rstrip() + "\n"


def _as(job: JobData, variant: str, cases: set[str]) -> JobData:
    keep = [c for c in job.cases if c in cases]
    return JobData(variant, job.repeat, dict(job.metrics), {c: job.cases[c] for c in keep},
                   {c: job.outputs.get(c, "") for c in keep}, job.run_id,
                   {c: job.status[c] for c in keep if c in job.status})


def regress(checked: Sequence[JobData], baseline: Sequence[JobData], *, subject: str,
            baseline_name: str, baseline_run_id: str, settings: AnalysisSettings | None = None,
            aa: Sequence[JobData] = (), latency: bool = False,
            other_seeds: bool = False) -> RegressionReport:
    """Check ``checked`` (one job per repeat, every block merged) against the
    ``baseline``'s jobs of the same repeats, on the cases the baseline covers.
    ``aa``: the baseline's configuration run again under other seeds (expected
    flag counts when the baseline has one repeat); ``latency``: flag latency
    (real models only)."""
    s = (settings or AnalysisSettings()).model_copy(update={"control": LOGGED,
                                                            "use_baseline": False})
    covered = set().union(*[set(j.cases) for j in baseline]) if baseline else set()
    repeats = {j.repeat for j in baseline}
    now = [_as(j, CANDIDATE, covered) for j in checked if j.repeat in repeats]
    was = [_as(j, LOGGED, covered) for j in baseline]
    data = SweepData("regress", "", [*now, *was])
    from silas_exp.analysis.ablation import suite_kind
    from silas_exp.metrics.registry import gated_for

    result = ablation(data, s, metrics=list(s.gate) if s.gate else gated_for(suite_kind(data)))
    aa_cov = [_as(j, "aa", covered) for j in aa]
    seed_note = seed_level(result, data, was, aa_cov, len(now), s.min_cases) \
        if other_seeds else None
    by_repeat = {j.repeat: j for j in was}
    flags = [f for j in now for f in case_flags(j, by_repeat[j.repeat], latency)]
    compared = sum(_shared(j, by_repeat[j.repeat]) for j in now)
    pairs, source = noise_pairs(was, aa_cov)
    rates = flag_rates(pairs, latency) if pairs else {}
    report = RegressionReport(subject, baseline_name, baseline_run_id, result,
                              result.verdicts[CANDIDATE].outcome, flags, compared,
                              len({c for j in now for c in j.cases}),
                              {k: r * compared for k, r in rates.items()},
                              source if pairs else "", latency)
    if seed_note:
        report.notes.append(seed_note)
    have = {j.repeat: set(j.cases) for j in now}
    missing = sorted((c, j.repeat) for j in was for c in j.cases if c not in have.get(j.repeat, ()))
    if missing:
        report.notes.append(f"{len(missing)} (case, repeat) result(s) of the baseline have none "
                            "here to pair with: " + ", ".join(f"{c} r{r}" for c, r in missing[:5]))
    return report


def shift_pairs(baseline: Sequence[JobData], aa: Sequence[JobData]
                 ) -> tuple[list[tuple[JobData, JobData]], int]:
    """Runs of the baseline's configuration that differ only by seed, as
    pairs, and the degrees of freedom of the between-seed variance they
    measure: each A/A job against the baseline's job of the same repeat (one
    each), else the baseline's repeats against each other (repeats − 1)."""
    by_repeat = {j.repeat: j for j in baseline}
    pairs = [(j, by_repeat[j.repeat]) for j in aa if j.repeat in by_repeat]
    if pairs:
        return pairs, len(pairs)
    pairs = [(a, b) for i, a in enumerate(baseline) for b in baseline[i + 1:]]
    return pairs, len(baseline) - 1


def job_shift(now: JobData, was: JobData, metric: str) -> tuple[float, float] | None:
    """A job's mean paired difference on ``metric`` over the cases both ran,
    and that mean's variance over cases (what a CI over cases sees)."""
    d = np.array([now.cases[c][metric] - was.cases[c][metric]
                  for c in sorted(set(now.cases) & set(was.cases))
                  if metric in now.cases[c] and metric in was.cases[c]], float)
    d = d[~np.isnan(d)]
    if len(d) < 2:
        return None
    return float(d.mean()), float(d.var(ddof=1) / len(d))


def seed_variance(pairs: Sequence[tuple[JobData, JobData]], metric: str) -> float:
    """The between-seed variance of a job-level shift on ``metric`` (method of
    moments): the mean squared job-level difference of runs that differ only
    by seed, less the part the cases' own noise explains; never negative.
    NaN when no pair has the metric."""
    shifts = [s for a, b in pairs if (s := job_shift(a, b, metric))]
    if not shifts:
        return math.nan
    return max(0.0, float(np.mean([m * m for m, _ in shifts]) - np.mean([v for _, v in shifts])))


def seed_level(result: AblationResult, data: SweepData, baseline: Sequence[JobData],
               aa: Sequence[JobData], n_checked: int, min_cases: int) -> str:
    """Widen every gated CI of the checked arm by the between-seed variance of
    a job-level shift, and decide again. The CI over cases keeps its
    half-widths h; the seed part adds t·sqrt(v / n_checked) in quadrature,
    t from Student's t with the pairs' degrees of freedom (few runs measure
    v, so its quantile is wide). Without runs that differ only by seed, the
    shift is unknown: the gated metrics stay undecided. Returns the note."""
    pairs, df = shift_pairs(baseline, aa)
    t = float(sps.t.ppf(0.5 + result.confidence / 2, df)) if df > 0 else math.nan
    parts = []
    for c in result.comparisons:
        if c.variant != CANDIDATE or c.metric not in result.gated or c.call is None:
            continue
        v = seed_variance(pairs, c.metric) if df > 0 else math.nan
        extra = t * math.sqrt(v / max(n_checked, 1)) if not math.isnan(v) else math.inf
        c.ci_low = c.delta - math.hypot(c.delta - c.ci_low, extra)
        c.ci_high = c.delta + math.hypot(c.ci_high - c.delta, extra)
        d = Oriented.of(c.delta, c.ci_low, c.ci_high, spec(c.metric).direction)
        c.call = metric_call(d, c.margin) if c.n_cases >= min_cases and math.isfinite(extra) \
            else MetricCall.UNDECIDED
        c.n_needed = None
        if c.call is MetricCall.UNDECIDED and math.isfinite(extra):
            c.n_needed = cases_needed(d, c.margin, c.n_cases)
        parts.append(f"{c.metric} ±{extra:.3g}" if math.isfinite(extra) else c.metric)
    result.verdicts[CANDIDATE] = _decide(data, result, CANDIDATE, LOGGED)
    if df <= 0:
        return ("checked under other seeds than the baseline's, with no A/A and one baseline "
                "repeat: a job-level shift from the seed cannot be measured, so no gated metric "
                "is decided (" + ", ".join(parts) + ")")
    return (f"checked under other seeds than the baseline's: each gated CI also carries the "
            f"between-seed variance of a job-level shift, from {len(pairs)} pair(s) of runs "
            f"that differ only by seed (t with {df} df, in quadrature with the CI over cases): "
            + ", ".join(parts))


def accepted_text(reason: str, user: str) -> str:
    """What an accepted regression records: the reason, who and when."""
    return f"{reason} (by {user}, {datetime.now(UTC).isoformat(timespec='seconds')})"
