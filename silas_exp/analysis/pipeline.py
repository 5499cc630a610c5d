"""One report pipeline for an ablation: statistics -> plots -> ``ablation.md``,
``ablation.html`` and what the parent run shows. The end of a sweep
(``run.sweep_end``), ``silas-exp ablation`` and a tuning study's certification
(``tune.report``) all call :func:`report_ablation`; they differ only in where
their data comes from and what they print."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from silas_exp.analysis.ablation import ablation
from silas_exp.analysis.data import SweepData
from silas_exp.analysis.decision import decision_sentence, needed_text
from silas_exp.analysis.html import ablation_html
from silas_exp.analysis.parent import ParentReport, parent_summary
from silas_exp.analysis.plots import ablation_plots
from silas_exp.analysis.report import ablation_markdown, paired_table
from silas_exp.analysis.result import REFERENCE, AblationResult
from silas_exp.analysis.settings import AnalysisSettings

ABLATION_MD, ABLATION_HTML, ABLATION_DIR = "ablation.md", "ablation.html", "ablation"


@dataclass
class AblationReport:
    """What the pipeline computed and wrote (``markdown`` is ``ablation.md``'s text)."""

    result: AblationResult
    plots: list[Path]
    markdown: str
    parent: ParentReport
    folder: Path

    @property
    def path(self) -> Path:
        return self.folder / ABLATION_MD


def report_ablation(data: SweepData, out: Path, settings: AnalysisSettings | None = None, *,
                    result: AblationResult | None = None, plot_dir: str = ABLATION_DIR,
                    metrics: list[str] | None = None, use_sprt: bool = False,
                    mde: float | None = None, confidence_of: Mapping[str, float] | None = None,
                    notes: Sequence[str] = (), appendix: str = "",
                    pool_cases: int | None = None) -> AblationReport:
    """The ablation of ``data`` (or the ``result`` a caller computed, e.g. a
    tuning study's certification), its plots under ``out/plot_dir``, and
    ``ablation.md`` (+ ``appendix``) and ``ablation.html`` in ``out``."""
    if result is None:
        result = ablation(data, settings, metrics=metrics, use_sprt=use_sprt, mde=mde,
                          confidence_of=confidence_of, pool_cases=pool_cases)
    result.notes += list(notes)
    out.mkdir(parents=True, exist_ok=True)
    plots = ablation_plots(result, out / plot_dir if plot_dir else out)
    md = ablation_markdown(result, [f"{plot_dir}/{p.name}" if plot_dir else p.name
                                    for p in plots]) + appendix
    (out / ABLATION_MD).write_text(md)
    (out / ABLATION_HTML).write_text(ablation_html(result, plots))
    parent = parent_summary(result, data.swept_keys, data.added_control)
    return AblationReport(result, plots, md, parent, out)


def console_lines(report: AblationReport, data: SweepData, suite_dir: str | None) -> list[str]:
    """What the end of a sweep prints of its ablation: the decision, each
    variant's verdict and why, what the sensitivity check says, where the report is."""
    r = report.result
    lines = [f"\nAblation vs {r.control} ({r.control_reason}):", "",
             paired_table(r), "", f"  {decision_sentence(r, r.ranking)}"]
    for variant, vv in sorted(r.verdicts.items()):
        need = f" ({needed_text(vv.n_needed, r.pool_cases, vv.n_repeats)})" if vv.n_needed else ""
        lines.append(f"  {variant}: {vv.outcome.words} — "
                     f"{'; '.join(vv.reasons)}{need}")
        lines += [f"    warning: {w}" for w in r.warnings.get(variant, [])]
    lines += [f"  note: {metric} cannot separate oracle from random on this suite "
              "(insensitive here)" for metric in r.insensitive()]
    if r.sensitivity and set(REFERENCE) <= set(data.variants()):
        lines.append(f"  sensitivity of the gated metrics is in the report; keep it for later "
                     f"ablations on this suite:\n    silas-exp sensitivity {report.folder} "
                     f"--suite-dir {suite_dir or '<suite folder>'}")
    lines.append(f"  report: {report.path}")
    return lines
