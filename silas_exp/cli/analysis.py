"""Analysis subcommands of ``silas-exp`` (registered by silas_exp.cli.main)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from silas_exp.cli.gate import cmd_baseline, cmd_regress
from silas_exp.cli.store import reader as _reader
from silas_exp.errors import AnalysisError
from silas_exp.metrics.numbers import num, p_value, signed

if TYPE_CHECKING:
    from silas_exp.analysis.data import SweepData


def ablation_settings(args):
    """``--control``, ``--gate``, ``--margin KEY=VALUE`` … as AnalysisSettings
    (validated like the config group, same errors)."""
    from pydantic import ValidationError

    from silas_exp.analysis.settings import AnalysisSettings
    from silas_exp.errors import pydantic_error_to_config_error

    raw = {"control": args.control, "use_baseline": not args.no_baseline,
           "correction": args.correction}
    if args.confidence is not None:
        raw["confidence"] = args.confidence
    if args.gate:
        raw["gate"] = args.gate
    margins = {}
    for item in args.margin:
        key, sep, value = item.partition("=")
        try:
            margins[key] = float(value) if sep else float("nan")
        except ValueError:
            margins[key] = float("nan")
    raw["margins"] = margins
    try:
        return AnalysisSettings.model_validate(raw)
    except ValidationError as exc:
        raise pydantic_error_to_config_error(exc, prefix="analysis") from None


def load_sweep_from_mlflow(uri: str, sweep_id: str) -> tuple[SweepData, Any, Any]:
    """A sweep's finished jobs read back from MLflow (their result artifacts),
    its parent run (None if absent) and, for a sequential sweep, the plan and
    stops its parent run keeps (``adaptive.json``; else None)."""
    from silas_exp.analysis.baseline import ControlArm
    from silas_exp.analysis.data import SweepData, job_from_result, latest_per_job, merge_blocks
    from silas_exp.records import ADAPTIVE_FILE
    from silas_exp.study.state import AdaptiveState
    from silas_exp.tracking.reader import MlflowRunReader

    reader = MlflowRunReader(uri)
    parent, children = reader.sweep_runs(sweep_id)
    jobs = merge_blocks([job_from_result(reader.job_result(r.run_id), r.run_id)
                         for r in latest_per_job(children)])
    command = parent.tags.get("silas.command", "") if parent else ""
    text = reader.artifact_text(parent.run_id, ADAPTIVE_FILE) if parent else None
    arm = ControlArm.from_tags(parent.tags) if parent else None
    return (SweepData(sweep_id, command, jobs, control_arm=arm), parent,
            AdaptiveState.from_json(text) if text else None)


def cmd_ablation(args) -> int:
    from silas_exp.analysis.data import load_sensitivity, load_sweep_dir
    from silas_exp.analysis.pipeline import report_ablation
    from silas_exp.study.state import AdaptiveState, read_as_decided, with_fixed_margins

    settings = ablation_settings(args)
    suite_dir = Path(args.suite_dir) if args.suite_dir else None
    if Path(args.sweep).is_dir():
        data, parent = load_sweep_dir(Path(args.sweep), suite_dir), None
        state = AdaptiveState.read(Path(args.sweep))
    else:
        data, parent, state = load_sweep_from_mlflow(args.tracking_uri, args.sweep)
        data.sensitivity = load_sensitivity(suite_dir) if suite_dir else None
    own, notes = None, []
    if args.confidence is None:  # a sequential study: read as it decided, look by look
        settings, own, notes = read_as_decided(state, settings)
    else:  # at another confidence, still with the study's fixed margins
        settings = with_fixed_margins(state, settings)
    out = Path(args.out or f"ablation-{data.sweep_id}")
    report = report_ablation(data, out, settings, plot_dir="", metrics=args.metrics,
                             use_sprt=args.sprt, mde=args.mde, confidence_of=own, notes=notes,
                             pool_cases=state.pool_cases if state else None)
    print(report.markdown)
    print(f"written: {report.path}, {out / 'ablation.html'} and {len(report.plots)} plot(s)")
    if parent is not None and args.log:
        reader = _reader(args)
        for path in [report.path, out / "ablation.html", *report.plots]:
            reader.log_artifact(parent.run_id, path, "ablation")
    return 0


def cmd_sensitivity(args) -> int:
    """Oracle-vs-random separation of the gated metrics from a sanity sweep; with
    --suite-dir, stored as the suite's sensitivity.json for later ablations."""
    from dataclasses import asdict

    from silas_exp.analysis.ablation import REFERENCE, sensitivity_of
    from silas_exp.analysis.data import SENSITIVITY_FILE, load_sweep_dir
    from silas_exp.metrics.names import labelled

    data = load_sweep_dir(Path(args.sweep))
    missing = [v for v in REFERENCE if v not in data.variants()]
    if missing:
        raise AnalysisError(f"{args.sweep}: no {', '.join(missing)} jobs; run "
                            "`python -m silas_exp -m experiment=sanity` on the suite first")
    result = sensitivity_of(data)
    print("| metric | oracle − random | per-case SDs | sensitive |\n|---|---|---|---|")
    for m, s in result.items():
        print(f"| {labelled(m)} | {signed(s.gap)} | {num(s.separation)} | "
              f"{'yes' if s.sensitive else 'NO (insensitive here)'} |")
    if args.suite_dir:
        out = Path(args.suite_dir) / SENSITIVITY_FILE
        out.write_text(json.dumps({"sweep": data.sweep_id, "metrics": {
            m: {k: v for k, v in asdict(s).items() if k != "metric"} for m, s in result.items()}},
            indent=1) + "\n")
        print(f"written: {out}")
    return 0 if all(s.sensitive for s in result.values()) else 1


def _job(reader, run_id):
    from silas_exp.analysis.data import job_from_result

    return job_from_result(reader.job_result(run_id), run_id)


def cmd_compare(args) -> int:
    import numpy as np

    from silas_exp.metrics.names import labelled
    from silas_exp.metrics.shadow import eviction_shadow
    from silas_exp.stats import cluster_bootstrap_ci, paired_permutation

    reader = _reader(args)
    a, b = _job(reader, args.run_a), _job(reader, args.run_b)
    shared = sorted(set(a.cases) & set(b.cases))
    print(f"# Compare {args.run_a} ({a.variant}) → {args.run_b} ({b.variant}); {len(shared)} shared cases\n")
    print("| metric | A | B | Δ (B−A) | 95% CI (cases) | p |\n|---|---|---|---|---|---|")
    for key in sorted(set(a.metrics) & set(b.metrics)):
        if key.startswith(("llm.calls.", "feedback.exclusion_rate.")):
            continue
        diffs = np.array([b.cases[c].get(key, math.nan) - a.cases[c].get(key, math.nan) for c in shared])
        ci = p = None
        if len(diffs) > 1 and not np.all(np.isnan(diffs)):
            ci = cluster_bootstrap_ci(diffs)
            p = paired_permutation(diffs[~np.isnan(diffs)]).pvalue
        cis = f"[{signed(ci.low)}, {signed(ci.high)}]" if ci else ""
        print(f"| {labelled(key)} | {num(a.metrics[key])} | {num(b.metrics[key])} | "
              f"{signed(b.metrics[key] - a.metrics[key])} | {cis} | "
              f"{'' if p is None else p_value(p)} |")
    flips = [(c, a.status.get(c), b.status.get(c)) for c in shared if a.status.get(c) != b.status.get(c)]
    print("\nPer-case flips:" if flips else "\nNo per-case status flips.")
    for c, sa, sb in flips:
        print(f"- {c}: {sa} → {sb}")
    print("\nShadow diff of eviction orders (Kendall tau / Jaccard / top-1 changed / class):")
    for c in shared:
        d = eviction_shadow(a.evictions.get(c), b.evictions.get(c))
        if d is not None:
            again = (f", re-evictions {d.re_evictions_a}/{d.re_evictions_b}"
                     if d.re_evictions_a or d.re_evictions_b else "")
            print(f"- {c}: tau {num(d.kendall_tau)}, jaccard {num(d.jaccard)}, "
                  f"top-1 {'changed' if d.top1_changed else 'same'}, {d.classification}{again}")
    return 0


def cmd_report(args) -> int:
    from silas_exp.analysis.data import job_from_result
    from silas_exp.metrics.names import labelled

    reader = _reader(args)
    run = reader.run(args.run)
    result = reader.job_result(args.run)
    if result.run is None:
        raise AnalysisError(f"run {args.run} has no complete result ({result.error})")
    job = job_from_result(result, args.run)
    res = result.run
    lines = [f"# Run `{args.run}` — {job.variant} (repeat {job.repeat})", "",
             f"Suite `{run.tags.get('silas.suite')}` v{run.tags.get('silas.suite_version')}, "
             f"status {run.status}, backend {run.tags.get('llm.backend')}.", "",
             "| summary | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in (res.summary.model_dump() if res.summary else {}).items()]
    lines += ["", "| metric | value |", "|---|---|"]
    lines += [f"| {labelled(k)} | {num(v)} |" for k, v in sorted(job.metrics.items())
              if not k.startswith("llm.calls.")]
    worst = sorted(job.cases.items(), key=lambda kv: kv[1].get("context.retrieval_relevance", 1.0))[:5]
    lines += ["", "Worst cases by retrieval relevance:", ""]
    lines += [f"- {c}: {num(m.get('context.retrieval_relevance', math.nan))} ({job.status.get(c)})"
              for c, m in worst]
    failures = [r for r in res.results if r.status != "pass"]
    if failures:
        lines += ["", "Not passing:", ""] + [f"- {r.case_id}: {r.status} {r.error or ''}"
                                             for r in failures]
    print("\n".join(lines))
    return 0


def cmd_prometheus(args) -> int:
    from silas_exp.analysis.data import latest_per_job
    from silas_exp.schema.runs import LoggedRun

    reader = _reader(args)
    print("# HELP silas_benchmark_pass_rate Share of benchmark cases passing in the latest run.")
    print("# TYPE silas_benchmark_pass_rate gauge")
    for exp in reader.experiments():
        runs = [r for r in reader.finished_runs(exp.experiment_id)
                if "summary.pass_rate" in r.metrics]
        latest: dict[str, LoggedRun] = {}
        for r in latest_per_job(runs):
            v = r.tags.get("silas.variant", "")
            if v not in latest or r.start_time > latest[v].start_time:
                latest[v] = r
        for variant, r in sorted(latest.items()):
            suite = r.tags.get("silas.suite", exp.name)
            print(f'silas_benchmark_pass_rate{{suite="{suite}",agent="{variant}"}} '
                  f'{r.metrics["summary.pass_rate"]}')
    return 0


def register(sub, default_uri) -> None:
    def add(name, func, help_):
        p = sub.add_parser(name, help=help_)
        p.add_argument("--tracking-uri", default=default_uri(), help="MLflow store (default: %(default)s)")
        p.set_defaults(func=func)
        return p

    p = add("ablation", cmd_ablation, "ablation statistics and report of a sweep (id or folder)")
    p.add_argument("sweep", help="sweep id (MLflow) or sweep folder (multirun/…)")
    p.add_argument("--control", help="control variant (e.g. scorer=heuristic) or 'baseline' (the "
                   "promoted baseline's arm, when the sweep ran it); default: that arm, else the "
                   "§19.5 control")
    p.add_argument("--suite-dir", help="suite folder whose sensitivity.json the report reads")
    p.add_argument("--no-baseline", action="store_true",
                   help="never use the promoted baseline's arm as the control")
    p.add_argument("--metrics", nargs="*", help="metrics to report (default: by suite kind)")
    p.add_argument("--gate", nargs="*", help="gated metrics (default: the registry's for the suite)")
    p.add_argument("--margin", action="append", default=[], metavar="METRIC=VALUE",
                   help="non-inferiority margin of a metric, in its units")
    p.add_argument("--correction", choices=["holm", "bh"], default="holm")
    p.add_argument("--confidence", type=float, default=None,
                   help="two-sided CI level (default: 0.95; a sequential sweep folder: each "
                        "variant at the look it stopped at, as the sweep decided)")
    p.add_argument("--mde", type=float, help="pre-set effect size for --sprt")
    p.add_argument("--sprt", action="store_true",
                   help="also run a sequential test per variant (needs --mde; sigma from a "
                        "5-case pilot)")
    p.add_argument("--out", help="output folder (default: ablation-<sweep id>)")
    p.add_argument("--log", action="store_true", help="attach the report to the sweep's parent run")

    p = add("sensitivity", cmd_sensitivity,
            "oracle-vs-random separation of the gated metrics (exit 1 if any is insensitive)")
    p.add_argument("sweep", help="folder of an experiment=sanity sweep")
    p.add_argument("--suite-dir", help="store the figures as <suite-dir>/sensitivity.json")

    p = add("compare", cmd_compare, "two runs side by side with paired statistics and flips")
    p.add_argument("run_a")
    p.add_argument("run_b")

    p = add("report", cmd_report, "markdown report of one run")
    p.add_argument("run")

    p = add("baseline", cmd_baseline, "promote, demote or show the baseline of a suite")
    p.add_argument("action", choices=["promote", "demote", "show"])
    p.add_argument("run", nargs="?", metavar="SWEEP_OR_RUN",
                   help="promote: a study (sweep id or parent run), a job run, or a plain run "
                        "of the suite")
    p.add_argument("variant", nargs="?", help="the study's variant to promote (scorer=weights)")
    p.add_argument("--suite", help="suite name (default: --suite-dir's, else default)")
    p.add_argument("--prefix", default="silas")
    p.add_argument("--experiment", help="experiment name (default: $MLFLOW_EXPERIMENT_NAME, "
                                        "else <prefix>-<suite>)")
    p.add_argument("--suite-dir", help="suite folder for baseline.json (promote: default the "
                                       "run's suite; demote: default the folder of the run the "
                                       "experiment's pointer names; show: its full history)")
    p.add_argument("--reason", help="demote: why the baseline goes (kept in its history)")

    p = add("regress", cmd_regress, "check a study's variant or a configuration against the "
            "suite's baseline (exit 1 unless no regression)")
    p.add_argument("run", nargs="?", metavar="SWEEP_OR_RUN",
                   help="a study (sweep id or parent run) or one of its job runs")
    p.add_argument("variant", nargs="?", help="the study's variant to check (scorer=prompt)")
    p.add_argument("--config", nargs="+", metavar="OVERRIDE",
                   help="check a configuration instead: run it on the baseline's cases and seeds")
    p.add_argument("--suite-dir", help="suite folder with baseline.json (default: the study's "
                                       "suite, or the configuration's)")
    p.add_argument("--seeds-from", type=int, default=0, metavar="N",
                   help="--config: run as repeats N+ (other seeds, the same cases; the "
                        "baseline's configuration then runs beside it under the same seeds as "
                        "the control); default 0: the baseline's seeds, its logged results the "
                        "control")
    p.add_argument("--no-aa", action="store_true",
                   help="under the baseline's seeds: no A/A run (its configuration under other "
                        "seeds, for the flags' expected counts when the baseline has one repeat)")
    p.add_argument("--max-cases", type=int, default=None, metavar="N",
                   help="the most cases the check may reach when the baseline's do not decide "
                        "(both sides run more blocks of the pool); default: the pool, or the "
                        "cases the check has when the baseline's code cannot be run here")
    p.add_argument("--workers", type=int, default=1, help="processes for the jobs it runs")
    p.add_argument("--work-dir", help="where the jobs it runs write (default: a temporary folder)")
    p.add_argument("--accept-regression", metavar="REASON",
                   help="accept a regression: exit 0, the reason recorded with time and user")
    p.add_argument("--fail-under", action="append", default=[], metavar="METRIC=VALUE")
    p.add_argument("--out", help="write the markdown report here (for a pull request)")
    p.add_argument("--no-log", action="store_true",
                   help="do not record the outcome (tags silas.regress*, regress.md) in MLflow")

    add("export-prometheus", cmd_prometheus, "pass rates in Prometheus text format (§20.8)")


__all__ = ["register", "AnalysisError"]
