"""Markdown renderings of analysis results."""

from __future__ import annotations

import math

from silas_exp.analysis.ablation import AblationResult
from silas_exp.metrics.names import display_name, higher_is_better


def _f(x: float, digits: int = 3) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _p(x: float) -> str:
    return "—" if math.isnan(x) else ("<0.001" if x < 0.001 else f"{x:.3f}")


def ablation_markdown(r: AblationResult, plots: list[str] | None = None) -> str:
    lines = [f"# Ablation report — sweep `{r.sweep_id}`", ""]
    if r.command:
        lines += ["Reproduce:", "", "```bash", r.command, "```", ""]
    lines += [f"Control: **{r.control}** ({r.control_reason}). Differences are variant − control "
              "on paired cases (same case, same repeat seed); 95% CIs from a cluster bootstrap "
              "over cases (repeats of a case are not independent), p from a sign-flip permutation "
              f"test on per-case mean differences, adjusted with "
              f"{'Holm (gate)' if r.correction == 'holm' else 'Benjamini–Hochberg (exploratory)'} "
              "across variants. *n needed*: cases for 80% power at the observed difference.", "",
              "## Verdicts", "", "| variant | may ship | why |", "|---|---|---|"]
    for variant, (ok, why) in sorted(r.ship.items()):
        lines.append(f"| {variant} | {'yes' if ok else '**no**'} | {why} |")
    lines.append("")
    lines.append(f"Gated metrics: {', '.join(display_name(m) for m in r.gated)}.")
    for metric in r.metrics:
        rows = r.table(metric)
        if not rows:
            continue
        direction = "higher is better" if higher_is_better(metric) else "lower is better"
        cm, cs = r.control_summary.get(metric, (math.nan, math.nan))
        lines += ["", f"## {display_name(metric)} ({direction})", "",
                  "| variant | mean ± sd (repeats) | Δ vs control [95% CI] | p | p adj | dz | "
                  "cases × repeats | n needed | verdict |",
                  "|---|---|---|---|---|---|---|---|---|",
                  f"| {r.control} (control) | {_f(cm)} ± {_f(cs)} | | | | | | | |"]
        for c in rows:
            sprt = f" (SPRT: {c.sprt})" if c.sprt else ""
            lines.append(
                f"| {c.variant} | {_f(c.mean)} ± {_f(c.sd)} | {c.delta:+.4f} [{c.ci_low:+.4f}, "
                f"{c.ci_high:+.4f}] | {_p(c.p_perm)} | {_p(c.p_adjusted)} | {_f(c.dz, 2)} | "
                f"{c.n_cases} × {c.n_repeats} | {c.n_needed if c.n_needed else '—'} | "
                f"{c.verdict.value}{sprt} |")
    if plots:
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots]
    return "\n".join(lines) + "\n"
