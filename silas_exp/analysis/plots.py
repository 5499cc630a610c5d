"""PNG plots of an ablation (matplotlib, Agg backend)."""

from __future__ import annotations

import math
from pathlib import Path

from silas_exp.analysis.ablation import AblationResult
from silas_exp.analysis.data import SweepData
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


def pareto_plot(data: SweepData, out: Path, x: str = "context.mean_window_tokens",
                y: str = "context.retrieval_relevance") -> Path:
    plt = load_pyplot()
    points = []
    for v in data.variants():
        xs = [j for j in data.run_values(v, x) if not math.isnan(j)]
        ys = [j for j in data.run_values(v, y) if not math.isnan(j)]
        if xs and ys:
            points.append((v, sum(xs) / len(xs), sum(ys) / len(ys)))
    front = [p for p in points if not any(q[1] <= p[1] and q[2] >= p[2] and q != p for q in points)]
    fig, ax = plt.subplots(figsize=(6, 4))
    for v, px, py in points:
        ax.scatter(px, py, color="tab:blue" if (v, px, py) in front else "tab:gray")
        ax.annotate(v, (px, py), fontsize=8, xytext=(4, 4), textcoords="offset points")
    fr = sorted(front, key=lambda p: p[1])
    ax.plot([p[1] for p in fr], [p[2] for p in fr], color="tab:blue", lw=1, label="Pareto front")
    ax.set_xlabel(f"{display_name(x)} (cost)")
    ax.set_ylabel(display_name(y))
    ax.legend(loc="lower right")
    fig.tight_layout()
    path = out / "pareto_tokens_vs_quality.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def ablation_plots(r: AblationResult, data: SweepData, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [delta_plot(r, m, out) for m in r.gated]
    return [p for p in paths if p is not None] + [pareto_plot(data, out)]
