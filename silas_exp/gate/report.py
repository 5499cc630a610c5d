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

**Checks under other seeds.** Under the baseline's own seeds (the default)
the check and the logged results share their random streams, so the logged
results are the control. Under other seeds (``--seeds-from N``, or a study
run with another seed) part of a job is drawn once from its seed (the weights
scorer's calibration) and moves every case of the job together; against the
logged results that shift cannot be told from a change, and no number of
cases bounds it. Such a check is decided against the baseline's
*configuration* run again under the check's own seeds (``control``): a
concurrent control, paired case by case with the same random streams, as a
study pairs its arms (silas_exp.analysis.baseline). The logged results still
give the flags, and the concurrent control against them is the A/A that says
how many flags the seeds alone give.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from silas_exp.analysis.ablation import AblationResult, ablation
from silas_exp.analysis.data import JobData, SweepData
from silas_exp.analysis.decision import margin_text
from silas_exp.analysis.let_through import check_warnings
from silas_exp.analysis.result import Comparison
from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.metrics.names import display_name
from silas_exp.metrics.numbers import interval, num, percent, rounded, signed
from silas_exp.schema.baseline import CHECK_MARK as NOTE_MARK
from silas_exp.stats import Outcome

CANDIDATE, LOGGED = "checked", "baseline side"  # the baseline's side under its own seeds
RERUN = "baseline configuration"  # the control under other seeds: the baseline's config rerun
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
    warnings: list[str] = field(default_factory=list)  # what "no regression" let through
    context: list[str] = field(default_factory=list)  # what each side ran, the looks

    @property
    def regressed(self) -> bool:
        """Anything but "no regression" fails the gate."""
        return self.outcome is not Outcome.SHIP

    @property
    def decision(self) -> str:
        return OUTCOMES[self.outcome]

    @property
    def tag(self) -> str:
        """The decision as the tag ``silas.regress`` holds it: the same words."""
        return self.decision.replace(" ", "_")

    def gated(self) -> list[Comparison]:
        """The checked side's comparison on each gated metric."""
        return [c for c in self.result.comparisons
                if c.variant == CANDIDATE and c.metric in self.result.gated]

    def figures(self) -> dict[str, float]:
        """Numbers for a check's own run: each gated metric's Δ, its CI and
        margin (as the report shows them), the cases and the flags."""
        out: dict[str, float] = {"regress.cases": float(self.cases),
                                 "regress.pairs": float(self.compared)}
        for c in self.gated():
            for what, value in (("delta", c.delta), ("ci_low", c.ci_low),
                                ("ci_high", c.ci_high), ("margin", c.margin)):
                if not math.isnan(value):
                    out[f"regress.{c.metric}.{what}"] = rounded(value)
        for kind, n in self.flag_counts().items():
            if kind != "latency" or self.latency_checked:
                out[f"regress.flags.{kind}"] = float(n)
        return out

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
        return "; ".join(self.result.verdicts[CANDIDATE].reasons) or \
            f"no gated metric decided on the {self.cases} paired cases"

    def headline(self, accepted: str | None = None) -> str:
        """One line for the top of the checked study's description."""
        what = self.decision.upper() if self.regressed else self.decision
        if self.regressed and accepted:
            what += f" (accepted: {accepted})"
        return (f"{NOTE_MARK} {what}** — {self.subject} against the baseline {self.baseline}, "
                f"{self.cases} cases × {self.compared // max(self.cases, 1)} repeat(s): "
                f"{self.reasons()}. Flags: {self.flag_line()} (report: `regress.md`)."
                + "".join(f"\nwarning: {w}" for w in self.warnings))

    def markdown(self, accepted: str | None = None) -> str:
        head = self.decision.upper() if self.regressed else self.decision
        if self.regressed and accepted:
            head += " (accepted)"
        lines = [f"## Regression check: {head}", "",
                 f"{self.subject} against the baseline {self.baseline}, on the {self.cases} cases "
                 f"it covers ({self.compared} case × repeat pairs).", "",
                 f"**Decision** (verdict rule: non-inferiority at the gated margins, "
                 f"{percent(self.result.confidence)} two-sided confidence): {self.decision} — "
                 f"{self.reasons()}.", ""]
        if accepted:
            lines += [f"**Accepted:** {accepted}", ""]
        lines += [f"**Warning:** {w}" for w in self.warnings] + ([""] if self.warnings else [])
        if self.context:
            lines += [f"- {line}" for line in self.context] + [""]
        against = ("baseline's configuration, same seeds" if self.result.control == RERUN
                   else "baseline")
        lines += [f"| gated metric | checked | {against} | Δ [CI] | margin | call |",
                  "|---|---|---|---|---|---|"]
        for c in self.gated():
            lines.append(f"| {display_name(c.metric)} (`{c.metric}`) | {num(c.mean)} | "
                         f"{num(c.control_mean)} | {interval(c.delta, c.ci_low, c.ci_high)} | "
                         f"{margin_text(c.margin)} | {c.call.value if c.call else ''} |")
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
            control: Sequence[JobData] = (), cases: set[str] | None = None) -> RegressionReport:
    """Check ``checked`` (one job per repeat, every block merged) against the
    ``baseline``'s jobs of the same repeats, on the cases the baseline covers.
    ``control``: the baseline's configuration run under the check's own seeds,
    when those are not the baseline's: the decision pairs with it, the flags
    with the logged results (module docstring). ``aa``: the baseline's
    configuration under other seeds (expected flag counts when the baseline
    has one repeat and there is no ``control``); ``latency``: flag latency
    (real models only); ``cases``: the cases the decision reads (default:
    those the baseline covers)."""
    against = RERUN if control else LOGGED
    s = (settings or AnalysisSettings()).model_copy(update={"control": against,
                                                            "use_baseline": False})
    covered = set().union(*[set(j.cases) for j in baseline]) if baseline else set()
    if cases is not None:
        covered = set(cases) if control else covered & set(cases)
    repeats = {j.repeat for j in baseline}
    now = [_as(j, CANDIDATE, covered) for j in checked if j.repeat in repeats]
    was = [_as(j, LOGGED, covered) for j in baseline]
    rerun = [_as(j, RERUN, covered) for j in control if j.repeat in repeats]
    data = SweepData("regress", "", [*now, *(rerun or was)])
    from silas_exp.analysis.ablation import suite_kind
    from silas_exp.metrics.registry import gated_for

    result = ablation(data, s, metrics=list(s.gate) if s.gate else gated_for(suite_kind(data)))
    by_repeat = {j.repeat: j for j in was}
    flags = [f for j in now for f in case_flags(j, by_repeat[j.repeat], latency)]
    flagged = sum(_shared(j, by_repeat[j.repeat]) for j in now)  # pairs the flags compare
    pairs, source = noise_pairs(was, rerun or [_as(j, "aa", covered) for j in aa])
    if rerun and len(was) == 1:
        source = "the baseline's configuration under the check's seeds against its logged results"
    rates = flag_rates(pairs, latency) if pairs else {}
    report = RegressionReport(subject, baseline_name, baseline_run_id, result,
                              result.verdicts[CANDIDATE].outcome, flags,
                              sum(len(j.cases) for j in now),
                              len({c for j in now for c in j.cases}),
                              {k: r * flagged for k, r in rates.items()},
                              source if pairs else "", latency)
    report.warnings = check_warnings(result, CANDIDATE, report.flag_counts()["pass"],
                                     report.expected.get("pass", math.nan))
    if rerun:
        report.notes.append(rerun_note(rerun, was, result.gated))
        return report
    have = {j.repeat: set(j.cases) for j in now}
    missing = sorted((c, j.repeat) for j in was for c in j.cases if c not in have.get(j.repeat, ()))
    if missing:
        report.notes.append(f"{len(missing)} (case, repeat) result(s) of the baseline have none "
                            "here to pair with: " + ", ".join(f"{c} r{r}" for c, r in missing[:5]))
    return report


def rerun_note(rerun: Sequence[JobData], logged: Sequence[JobData], gated: Sequence[str]) -> str:
    """Why the decision pairs with a rerun of the baseline's configuration, and
    how far that rerun sits from the logged results (what the seeds alone do)."""
    by_repeat = {j.repeat: j for j in logged}
    shifts = []
    for metric in gated:
        d = [now.cases[c][metric] - was.cases[c][metric] for now in rerun
             if (was := by_repeat.get(now.repeat)) is not None
             for c in sorted(set(now.cases) & set(was.cases))
             if metric in now.cases[c] and metric in was.cases[c]]
        d = [x for x in d if not math.isnan(x)]
        if d:
            shifts.append(f"{display_name(metric)} {signed(float(np.mean(d)))}")
    return ("checked under other seeds than the baseline's, so decided against the baseline's "
            "configuration run under the same seeds (a concurrent control, paired case by case "
            "with the same random streams); the flags compare with the logged results. The "
            "baseline's configuration under these seeds against its logged results (the seeds' "
            "own shift, which a comparison with the logged results would have charged to the "
            "change): " + (", ".join(shifts) or "no gated metric in common"))


def accepted_text(reason: str, user: str) -> str:
    """What an accepted regression records: the reason, who and when."""
    return f"{reason} (by {user}, {datetime.now(UTC).isoformat(timespec='seconds')})"
