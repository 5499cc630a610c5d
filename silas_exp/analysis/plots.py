"""PNG plots of an ablation (matplotlib, Agg backend)."""

from __future__ import annotations

from pathlib import Path

from silas_exp.analysis.decision import margin_text
from silas_exp.analysis.result import AblationResult, Comparison
from silas_exp.metrics.names import display_name
from silas_exp.metrics.numbers import interval, percent, signed
from silas_exp.metrics.registry import spec


def load_pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def ci_label(rows: list[Comparison]) -> str:
    """"95% CI", or the levels of each variant's own look: "CI at 95.69–99.75%"."""
    levels = sorted({c.confidence for c in rows})
    if len(levels) == 1:
        return f"{percent(levels[0])} CI"
    return f"CI at {percent(levels[0])}–{percent(levels[-1])}, each variant at its own look"


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
        ax.annotate(interval(c.delta, c.ci_low, c.ci_high), (c.delta, y), fontsize=7,
                    xytext=(0, 7), textcoords="offset points", ha="center")
    ax.axvline(0, color="black", lw=0.8)
    margin = rows[0].margin
    if margin == margin and margin > 0:  # not NaN: the non-inferiority boundary, worse side
        ax.axvline(margin if lower else -margin, color="tab:red", lw=0.8, ls="--",
                   label=f"margin: {margin_text(margin)}")
        ax.legend(loc="best", fontsize=7)
    ax.set_yticks(list(ys), [c.variant for c in rows])
    ax.set_ylim(-0.6, len(rows) - 0.4)
    arrow = "← better" if lower else "→ better"
    ax.set_xlabel(f"Δ {display_name(metric)} vs {r.control} ({ci_label(rows)}) {arrow}")
    fig.tight_layout()
    path = out / f"delta_{metric.replace('.', '_')}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def pareto_plot(r: AblationResult, out: Path, x: str = "context.tokens_per_served_need",
                y: str = "context.retrieval_relevance") -> Path | None:
    """Quality against the gated token-efficiency metric, each variant as its
    paired difference from the control on its own cases and repeats (Δ with
    its CI on both axes), so the control sits at the origin and no point is
    an average over cases another point did not run; the Pareto front by each
    metric's declared direction."""
    cx = {c.variant: c for c in r.table(x)}
    points = [(c.variant, cx[c.variant], c) for c in r.table(y) if c.variant in cx]
    if not points:
        return None
    sx = -1 if spec(x).direction == "lower" else 1  # oriented: larger is better
    sy = -1 if spec(y).direction == "lower" else 1
    coords = [(r.control, 0.0, 0.0)] + [(v, px.delta, py.delta) for v, px, py in points]

    def dominated(p) -> bool:
        return any(sx * q[1] >= sx * p[1] and sy * q[2] >= sy * p[2] and q != p for q in coords)

    front = sorted((p for p in coords if not dominated(p)), key=lambda p: p[1])
    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(0, 0, "s", color="black")
    ax.annotate(f"{r.control} (control)", (0, 0), fontsize=8, xytext=(5, -12),
                textcoords="offset points", annotation_clip=False)
    on_front = {p[0] for p in front}
    for v, px, py in points:
        ax.errorbar(px.delta, py.delta, xerr=[[px.delta - px.ci_low], [px.ci_high - px.delta]],
                    yerr=[[py.delta - py.ci_low], [py.ci_high - py.delta]], fmt="o", capsize=3,
                    color="tab:blue" if v in on_front else "tab:gray")
        ax.annotate(f"{v}\nΔ {signed(px.delta)}, {signed(py.delta)} ({py.n_cases} cases)",
                    (px.delta, py.delta), fontsize=7, xytext=(5, 5), textcoords="offset points",
                    annotation_clip=False)
    ax.plot([p[1] for p in front], [p[2] for p in front], color="tab:blue", lw=1,
            label="Pareto front")
    ax.axhline(0, color="black", lw=0.5)
    ax.axvline(0, color="black", lw=0.5)
    ax.margins(x=0.3, y=0.25)  # room for the labels inside the axes
    ax.set_xlabel(f"Δ {display_name(x)} vs control ({spec(x).arrow()}), "
                  f"{ci_label([p[2] for p in points])}")
    ax.set_ylabel(f"Δ {display_name(y)} vs control ({spec(y).arrow()})")
    ax.set_title("Each variant against the control on that variant's own cases", fontsize=9)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    path = out / "pareto_tokens_vs_quality.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def ablation_plots(r: AblationResult, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [delta_plot(r, m, out) for m in r.gated] + [pareto_plot(r, out)]
    return [p for p in paths if p is not None]
