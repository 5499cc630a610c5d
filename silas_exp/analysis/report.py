"""Markdown renderings of analysis results."""

from __future__ import annotations

from silas_exp.analysis.columns import cells, headers
from silas_exp.analysis.decision import (
    control_note,
    decision_sentence,
    margin_text,
    needed_cell,
)
from silas_exp.analysis.result import ERROR_METRIC, AblationResult
from silas_exp.metrics.names import display_name, labelled, named
from silas_exp.metrics.numbers import interval, num, percent, signed
from silas_exp.metrics.registry import spec
from silas_exp.stats import Outcome


def outcome_text(o: Outcome) -> str:
    """An outcome in the verdict table: a decided one in bold."""
    return o.words if o is Outcome.INCONCLUSIVE else f"**{o.words}**"


def verdict_rule(r: AblationResult) -> str:
    level = (1 - r.confidence) / 2
    return (f"**Verdict rule (non-inferiority).** A variant *ships* only when, for every gated "
            f"metric, the worse-side bound of the {percent(r.confidence)} CI of its "
            "paired difference with the control lies within the metric's margin (a one-sided "
            f"test at {percent(level)} per metric; all must pass, so no multiplicity penalty), it has "
            "no more errored cases than the control, and it passes at least one case. It is "
            "*not shipped* when a gated metric is worse beyond its margin with that confidence, "
            "or it errors more. Otherwise it is *inconclusive*: \"not significantly worse\" is "
            "not evidence of \"no worse\".")


def gated_deltas(r: AblationResult, variant: str) -> str:
    """A variant's gated differences with their CIs and worse-side margins
    (errors are counted, not estimated: the "why" column says when they stop it)."""
    return "; ".join(
        f"{display_name(c.metric)} {interval(c.delta, c.ci_low, c.ci_high)} "
        f"(margin: {margin_text(c.margin)})"
        for c in r.comparisons
        if c.variant == variant and c.metric in r.gated and c.metric != ERROR_METRIC)


def verdict_lines(r: AblationResult) -> list[str]:
    """The verdict table: the same in ablation.md and the parent run's description."""
    lines = ["| variant | verdict | gated Δ vs control [CI] (margin) | why | to decide |",
             "|---|---|---|---|---|"]
    for v, vv in sorted(r.verdicts.items()):
        need = needed_cell(vv.n_needed, r.pool_cases, vv.n_repeats)
        lines.append(f"| {v} | {outcome_text(vv.outcome)} | {gated_deltas(r, v)} | "
                     f"{'; '.join(vv.reasons)} | {need} |")
    return lines


CONSOLE_EXTRA = ("feedback.exclusion_auc", "probe.overall")  # shown beside the gated metrics


def paired_table(r: AblationResult) -> str:
    """Each variant against the control on that variant's own cases and
    repeats, per gated metric (and the exclusion AUC, the probe score): both
    means, Δ and its CI. A variant a sequential study stopped early is compared
    on its own blocks, never with the control's mean over blocks it did not run."""
    metrics = [m for m in r.metrics if (m in r.gated and m != ERROR_METRIC) or m in CONSOLE_EXTRA]
    lines = [f"| variant | metric | variant mean | {r.control} (control) on the same cases | "
             "Δ vs control [CI] | cases × repeats |", "|---|---|---|---|---|---|"]
    for variant in sorted(r.verdicts):
        for metric in metrics:
            for c in (c for c in r.table(metric) if c.variant == variant):
                lines.append(f"| {variant} | {labelled(metric)} | {num(c.mean)} | "
                             f"{num(c.control_mean)} | {interval(c.delta, c.ci_low, c.ci_high)} | "
                             f"{c.n_cases} × {c.n_repeats} |")
    return "\n".join(lines)


def decision_lines(r: AblationResult) -> list[str]:
    """The decision first (one sentence), then what must be read beside it."""
    lines = [f"**{decision_sentence(r, r.ranking)}**"]
    if r.notes and r.notes[0] == control_note(r):
        lines += ["", f"**Note:** {r.notes[0]}"]
    return lines


def ablation_markdown(r: AblationResult, plots: list[str] | None = None) -> str:
    lines = [f"# Ablation report — sweep `{r.sweep_id}`", "", *decision_lines(r), ""]
    if r.command:
        lines += ["Reproduce:", "", "```bash", r.command, "```", ""]
    lines += [f"Control: **{r.control}** — {r.control_reason}.", "", verdict_rule(r), "",
              "## Verdicts", "", *verdict_lines(r), "",
              *[f"- **warning** ({v} ships, but): {w}" for v, ws in sorted(r.warnings.items())
                for w in ws], *([""] if r.warnings else []),
              "Gated metrics (" + r.suite_kind + " suite): "
              + ", ".join(f"{display_name(m)} ({spec(m).arrow()})" for m in r.gated) + "."]
    if r.ranking is not None:
        lines += ["", *r.ranking.markdown()]
    insensitive = r.insensitive()
    if insensitive:
        lines += ["", "**Insensitive here:** " + ", ".join(map(display_name, insensitive))
                  + " cannot separate the oracle scorer from the random one on this suite; a "
                  "verdict on them says little."]
    lines += [f"- note: {n}" for n in r.notes]
    lines += ["", "Differences are variant − control on paired cases (same case, same repeat seed; "
              "pairs where either side errored are left out, errors are gated by count). Both means "
              "of a row are on those same pairs: the variant's own cases, which may be fewer than "
              "the control ran (a sequential study stops a variant early). "
              f"p: sign-flip permutation test on per-case mean differences, adjusted with "
              f"{'Holm' if r.correction == 'holm' else 'Benjamini–Hochberg'} across variants; "
              "p Wilcoxon: signed-rank test on the same differences, unadjusted; dz: mean / sd of "
              "per-case differences. They describe; the verdict rule above decides."]
    for metric in r.metrics:
        rows = r.table(metric)
        if not rows:
            continue
        ms = spec(metric)
        gate = " — gated" if metric in r.gated else ""
        lines += ["", f"## {named(metric)}: {ms.arrow()}, {ms.unit}{gate}", "",
                  f"{ms.meaning}.", "",
                  "| " + " | ".join(headers()) + " |", "|" + "---|" * len(headers())]
        lines += ["| " + " | ".join(cells(c)) + " |" for c in rows]
    if r.sensitivity:
        lines += ["", "## Sensitivity (oracle vs random on this suite)", "",
                  "| metric | oracle − random (better side) | per-case SDs | sensitive |",
                  "|---|---|---|---|"]
        lines += [f"| {display_name(m)} | {signed(s.gap)} | {num(s.separation)} | "
                  f"{'yes' if s.sensitive else '**no — insensitive here**'} |"
                  for m, s in r.sensitivity.items()]
    if plots:
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots]
    return "\n".join(lines) + "\n"
