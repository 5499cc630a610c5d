"""What a tuning study tells its user and its parent run: the certification's
ablation report (``ablation.md``, on the held-out cases), the study's summary
(``tune.md``: configurations searched, training scores, holdout verdict, the
proposed option), and Optuna's own plots (optimisation history, parameter
importances, the Pareto front with several objectives), which the tracker
attaches to the study's parent run like any file of the sweep folder."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

from silas_exp.analysis.data import SweepData
from silas_exp.analysis.parent import ParentReport
from silas_exp.analysis.result import AblationResult
from silas_exp.metrics.names import display_name
from silas_exp.metrics.numbers import num, signed
from silas_exp.tune import certify as cert
from silas_exp.tune.record import SPLIT_FILE, TUNE_FILE, TuneRecord, read_tune
from silas_exp.tune.space import as_run

TUNE_MD = "tune.md"
PLOTS_DIR = "tune"
ABLATION_MD = "ablation.md"  # as every sweep's (analysis.pipeline)


def certification_files(sweep_dir: Path, record: TuneRecord, result: AblationResult,
                        data: SweepData) -> None:
    """The certification's ablation report, and a ready option for each
    candidate that ships (nothing is written for one that does not)."""
    from silas_exp.analysis.pipeline import report_ablation

    report_ablation(data, sweep_dir, result=result)
    certification = record.certification
    for i, candidate in enumerate(certification.candidates if certification else []):
        if not cert.ships(candidate):
            continue
        best = next(b for b in record.best if b.number == candidate.trial)
        name = f"{record.scorer}_tuned" + (f"_{i + 1}" if i else "")
        header = (f"Tuned by the study in {sweep_dir} (trial {best.number} of "
                  f"{record.n_trials + record.n_pruned} searched on {record.train_cases} "
                  "training cases), "
                  f"certified ship against {certification.control} on "
                  f"{candidate.cases or certification.holdout_cases} held-out cases.\n"
                  f"Adopt it: cp {sweep_dir / cert.PROPOSED_DIR / 'scorer' / (name + '.yaml')} "
                  f"conf/scorer/{name}.yaml\nthen: python -m silas_exp -m scorer={name}")
        params = {k: as_run(v) for k, v in best.params.items()}
        path, others = cert.write_option(sweep_dir, record.scorer, name, params, header)
        candidate.proposal = str(path.relative_to(sweep_dir))
        if others:
            candidate.reasons.append("use it with " + " ".join(others))


def _plots(sweep_dir: Path, record: TuneRecord) -> list[Path]:
    """Optuna's matplotlib plots (plotly may be absent); a plot that needs more
    trials than the study has is left out."""
    from silas_exp.analysis.plots import load_pyplot
    from silas_exp.tune.study import STUDY_NAME, require_optuna, storage_url

    optuna = require_optuna()
    plt = load_pyplot()
    vis = optuna.visualization.matplotlib
    study = optuna.load_study(study_name=STUDY_NAME, storage=storage_url(sweep_dir))
    out = sweep_dir / PLOTS_DIR
    out.mkdir(exist_ok=True)
    first = record.objectives[0]
    target = {} if len(record.objectives) == 1 else {
        "target": lambda t: t.values[0], "target_name": first}
    makers = {"optimization_history": lambda: vis.plot_optimization_history(study, **target),
              "param_importances": lambda: vis.plot_param_importances(study, **target)}
    if len(record.objectives) > 1:
        makers["pareto_front"] = lambda: vis.plot_pareto_front(
            study, target_names=record.objectives)
    paths = []
    for name, make in makers.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # optuna's ExperimentalWarning
                ax = make()
            fig = ax.figure if hasattr(ax, "figure") else ax.flat[0].figure
            fig.savefig(out / f"{name}.png", dpi=90, bbox_inches="tight")
            plt.close(fig)
            paths.append(out / f"{name}.png")
        except (ValueError, RuntimeError, ZeroDivisionError):
            continue  # e.g. importances with fewer than two complete trials
    return paths


def _num(x: float) -> str:
    return "n/a" if x is None or math.isnan(x) else signed(x)


def summary_lines(record: TuneRecord) -> list[str]:
    first = record.objectives[0]
    lines = [f"Searched **{record.n_trials + record.n_pruned}** configuration(s) of scorer "
             f"`{record.scorer}` ({record.n_pruned} pruned after one repeat, {record.n_failed} "
             f"failed) on {record.train_cases} training cases × "
             f"{record.repeats} repeats; certified the best {len(record.best)} on "
             f"{record.holdout_cases} held-out cases (split seed {record.split_seed}).", ""]
    ref = record.reference
    if ref is not None:
        lines.append(f"- untuned `{record.scorer}` (trial {ref.number}): training "
                     f"{display_name(first)} {num(ref.train[first])}")
    c = record.certification
    for best in record.best:
        cand = next((x for x in c.candidates if x.trial == best.number), None) if c else None
        line = (f"- trial {best.number}: training {display_name(first)} {num(best.train[first])}"
                + (f" (gain over untuned {_num(cand.train_gain.get(first))}, on holdout "
                   f"{_num(cand.holdout_gain.get(first))})" if cand else ""))
        if cand:
            if cand.stopped_at is not None:
                line += f" — stopped after block {cand.stopped_at} ({cand.cases} held-out cases)"
            line += f" — holdout verdict **{cand.outcome}**: {'; '.join(cand.reasons)}"
            if cand.proposal:
                line += f" — proposed option: `{cand.proposal}`"
        lines.append(line)
        lines.append("  - params: " + ", ".join(f"`{k}={as_run(v)}`" for k, v in best.params.items()))
    if c is not None:
        lines += ["", f"Certification against `{c.control}` with the verdict rule at "
                  f"{c.confidence:.2%} two-sided confidence per candidate (Bonferroni over "
                  f"k={c.k}"
                  + (f", and spent over {len(c.looks)} looks after blocks "
                     f"{', '.join(map(str, c.looks))} of {c.cases_per_block} held-out cases: "
                     "the last look's confidence, each candidate read at its own look's" if c.looks
                     else "")
                  + f"); details in `{ABLATION_MD}`."]
        if not any(cert.ships(x) for x in c.candidates):
            lines.append("No candidate ships: nothing is proposed.")
    return lines


def tune_report(sweep_dir: Path) -> ParentReport | None:
    """tune.md and the study's plots; what the parent run shows. None when
    the sweep is not a tuning study."""
    record = read_tune(sweep_dir)
    if record is None:
        return None
    plots = _plots(sweep_dir, record)
    lines = summary_lines(record)
    md = ["# Tuning study", "", *lines, "", *[f"![{p.stem}]({PLOTS_DIR}/{p.name})" for p in plots]]
    (sweep_dir / TUNE_MD).write_text("\n".join(md) + "\n")
    print("\nTuning study:\n  " + "\n  ".join(line for line in lines if line))
    print(f"  report: {sweep_dir / TUNE_MD}")
    metrics = {"tune.n_searched": float(record.n_trials + record.n_pruned),
               "tune.n_complete": float(record.n_trials), "tune.n_pruned": float(record.n_pruned),
               "tune.n_failed": float(record.n_failed)}
    tags = {"silas.tune.scorer": record.scorer}
    for best in record.best[:1]:
        for key, value in best.train.items():
            metrics[f"tune.best.train.{key}"] = value
    if record.reference is not None:
        for key, value in record.reference.train.items():
            metrics[f"tune.reference.train.{key}"] = value
    for cand in record.certification.candidates if record.certification else []:
        tags[f"silas.tune.verdict.trial_{cand.trial}"] = cand.outcome
        for key, value in cand.holdout_delta.items():
            if not math.isnan(value):
                metrics[f"tune.trial_{cand.trial}.holdout_delta.{key}"] = value
    artifacts = [TUNE_MD, TUNE_FILE, SPLIT_FILE, "optuna.db"] + ([PLOTS_DIR] if plots else [])
    if (sweep_dir / cert.PROPOSED_DIR).is_dir():
        artifacts.append(cert.PROPOSED_DIR)
    return ParentReport(metrics=metrics, tags=tags,
                        description="**Tuning study**\n\n" + "\n".join(lines),
                        artifacts=artifacts)

