"""PNG plots of an ablation (matplotlib, Agg backend)."""

from __future__ import annotations

import math
from pathlib import Path

from silas_exp.analysis.data import SweepData
from silas_exp.analysis.result import AblationResult
from silas_exp.metrics.names import display_name
from silas_exp.metrics.registry import spec


def load_pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def delta_plot(r: AblationResult, metric: str, out: Path) -> Path | None:
    rows = r.table(metric)
    if not rows:
        return None
    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=(6, 0.6 * len(rows) + 1.5))
    ys = range(len(rows))
    lower = spec(metric).direction == "lower"
    for y, c in zip(ys, rows, strict=True):
        color = {"non-inferior": "tab:green", "worse beyond margin": "tab:red"}.get(
            c.call.value if c.call else "", "tab:gray")
        ax.errorbar(c.delta, y, xerr=[[c.delta - c.ci_low], [c.ci_high - c.delta]], fmt="o",
                    color=color, capsize=4)
    ax.axvline(0, color="black", lw=0.8)
    margin = rows[0].margin
    if margin == margin and margin > 0:  # not NaN: the non-inferiority boundary, worse side
        ax.axvline(margin if lower else -margin, color="tab:red", lw=0.8, ls="--",
                   label="margin (worse side)")
        ax.legend(loc="best", fontsize=7)
    ax.set_yticks(list(ys), [c.variant for c in rows])
    arrow = "← better" if lower else "→ better"
    ax.set_xlabel(f"Δ {display_name(metric)} vs {r.control} ({r.confidence:.0%} CI) {arrow}")
    fig.tight_layout()
    path = out / f"delta_{metric.replace('.', '_')}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _mean_ci(values: list[float]) -> tuple[float, float] | None:
    """Mean over repeats and the half-width of its 95% t interval (0 for one repeat)."""
    xs = [v for v in values if not math.isnan(v)]
    if not xs:
        return None
    mean = sum(xs) / len(xs)
    if len(xs) < 2:
        return mean, 0.0
    from scipy import stats

    sd = math.sqrt(sum((v - mean) ** 2 for v in xs) / (len(xs) - 1))
    return mean, float(stats.t.ppf(0.975, len(xs) - 1)) * sd / math.sqrt(len(xs))


def pareto_plot(data: SweepData, out: Path, x: str = "context.tokens_per_served_need",
                y: str = "context.retrieval_relevance") -> Path | None:
    """Quality against the gated token-efficiency metric, per variant: means over
    repeats with 95% CIs; the Pareto front by each metric's declared direction."""
    points = []
    for v in data.variants():
        px, py = _mean_ci(data.run_values(v, x)), _mean_ci(data.run_values(v, y))
        if px and py:
            points.append((v, px, py))
    if not points:
        return None
    sx = -1 if spec(x).direction == "lower" else 1  # oriented: larger is better
    sy = -1 if spec(y).direction == "lower" else 1

    def dominated(p) -> bool:
        return any(sx * q[1][0] >= sx * p[1][0] and sy * q[2][0] >= sy * p[2][0] and q != p
                   for q in points)

    front = [p for p in points if not dominated(p)]
    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for p in points:
        v, (mx, hx), (my, hy) = p
        ax.errorbar(mx, my, xerr=hx, yerr=hy, fmt="o", capsize=3,
                    color="tab:blue" if p in front else "tab:gray")
        ax.annotate(v, (mx, my), fontsize=8, xytext=(5, 5), textcoords="offset points",
                    annotation_clip=False)
    fr = sorted(front, key=lambda p: p[1][0])
    ax.plot([p[1][0] for p in fr], [p[2][0] for p in fr], color="tab:blue", lw=1,
            label="Pareto front")
    ax.margins(x=0.25, y=0.2)  # room for the labels inside the axes
    ax.set_xlabel(f"{display_name(x)} ({spec(x).arrow()}); mean over repeats, 95% CI")
    ax.set_ylabel(f"{display_name(y)} ({spec(y).arrow()})")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    path = out / "pareto_tokens_vs_quality.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def ablation_plots(r: AblationResult, data: SweepData, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [delta_plot(r, m, out) for m in r.gated] + [pareto_plot(data, out)]
    return [p for p in paths if p is not None]
