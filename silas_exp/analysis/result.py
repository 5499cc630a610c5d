"""What an ablation found, as plain data: each variant's paired comparison per
metric, its verdict, the sensitivity of the gated metrics and, when two or more
variants ship, their ranking. ``analysis.ablation`` computes it;
``analysis.decision`` and the renderings read it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from silas_exp.metrics.names import display_name
from silas_exp.metrics.numbers import percent, signed
from silas_exp.metrics.registry import SuiteKind
from silas_exp.stats import MetricCall, Oriented, Outcome, Verdict

ERROR_METRIC, PASS_METRIC = "summary.error", "summary.pass"
REFERENCE = ("scorer=oracle", "scorer=random")  # the sanity bracket: ceiling and floor


@dataclass
class Comparison:
    variant: str
    metric: str
    mean: float
    sd: float
    delta: float
    ci_low: float
    ci_high: float
    p_perm: float
    p_wilcoxon: float
    p_adjusted: float
    dz: float
    n_cases: int
    n_repeats: int
    n_pairs: int  # (case, repeat) pairs the difference was computed on
    margin: float
    verdict: Verdict
    call: MetricCall | None = None  # gated metrics only
    n_needed: int | None = None
    sprt: str | None = None
    # the control on the same (case, repeat) pairs as ``mean``: control_mean + delta = mean
    control_mean: float = math.nan
    control_sd: float = math.nan
    confidence: float = math.nan  # of the CI (a sequential study: the look it stopped at)
    # the simulated replay as a control variate (silas_exp.stats.control_variate): the
    # effective sample multiplier it bought and the covariates used (none: no correction)
    multiplier: float = math.nan
    covariates: tuple[str, ...] = ()
    pool_cases: int | None = None  # the cases the study could draw (for ``n_needed``'s wording)


@dataclass
class VariantVerdict:
    variant: str
    outcome: Outcome
    reasons: list[str]
    n_needed: int | None = None
    n_repeats: int = 0


@dataclass
class Sensitivity:
    metric: str
    gap: float  # oracle − random, oriented (positive = oracle better)
    separation: float  # gap in per-case standard deviations
    sensitive: bool


@dataclass
class AblationResult:
    sweep_id: str
    command: str
    control: str
    control_reason: str
    suite_kind: SuiteKind
    metrics: list[str]
    gated: list[str]
    correction: str
    confidence: float
    control_summary: dict[str, tuple[float, float]]
    comparisons: list[Comparison] = field(default_factory=list)
    verdicts: dict[str, VariantVerdict] = field(default_factory=dict)
    sensitivity: dict[str, Sensitivity] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    min_cases: int = 6
    ranking: Ranking | None = None  # two or more ship: which is better (analysis.decision)
    # the cases a study could draw (a sequential study's pool, else the cases it ran):
    # a number of cases needed beyond it is said to be out of reach
    pool_cases: int | None = None
    # variant -> what the rule let through though it ships (analysis.let_through)
    warnings: dict[str, list[str]] = field(default_factory=dict)

    def table(self, metric: str) -> list[Comparison]:
        return [c for c in self.comparisons if c.metric == metric]

    def insensitive(self) -> list[str]:
        return [m for m in self.gated if m in self.sensitivity and not self.sensitivity[m].sensitive]


# -- several variants ship: which is better ------------------------------------------------
@dataclass(frozen=True)
class Ranked:
    variant: str
    better: Oriented  # variant − control, positive = better
    superior: bool  # the CI's worse-side bound is above zero: better than the control


@dataclass(frozen=True)
class Ranking:
    metric: str
    rows: list[Ranked]  # best first
    lead: Oriented  # first − second on paired cases, positive = the first is better
    confidence: float

    def sentence(self) -> str:
        first, second = self.rows[0].variant, self.rows[1].variant
        name, lead = display_name(self.metric), self.lead
        if lead.low > 0:
            return (f"{first} is better than {second} on {name}: {signed(lead.estimate)} "
                    f"[{signed(lead.low)}, {signed(lead.high)}]")
        return (f"{first} ranks first on {name}, but not beyond {second} "
                f"({signed(lead.estimate)} [{signed(lead.low)}, {signed(lead.high)}])")

    def markdown(self) -> list[str]:
        name = display_name(self.metric)
        lines = [f"## Ranking of the shipping variants on {name} (superiority)", "",
                 f"Non-inferiority says each may ship; this says which is better. "
                 f"{percent(self.confidence)} CIs, oriented so that positive is better.", "",
                 "| rank | variant | better than control by [CI] | superior to control |",
                 "|---|---|---|---|"]
        lines += [f"| {i} | {x.variant} | {signed(x.better.estimate)} [{signed(x.better.low)}, "
                  f"{signed(x.better.high)}] | {'yes' if x.superior else 'no'} |"
                  for i, x in enumerate(self.rows, 1)]
        return lines + ["", f"First against second, paired: {self.sentence()}."]
