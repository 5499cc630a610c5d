"""``silas-exp``: everything that is not a Hydra job.

Exit codes: 0 ok; 1 a gate or regression check failed; 2 bad input.
Heavy imports (mlflow, scipy, matplotlib) happen inside the commands so
``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

from silas_exp.data.transcripts.progress import DEFAULT_MAX_MB
from silas_exp.errors import SilasExpError

DEFAULT_URI = "sqlite:///{root}/mlruns/mlflow.db"
EPILOG = """examples:
  silas-exp import ~/.claude/projects/my-repo/*.jsonl --opt-in   # real sessions -> a suite
  silas-exp fixtures --fail-under fixtures.zone_precision=0.95 --fail-under fixtures.guard_accuracy=1
  silas-exp upload multirun/2026-11-22/15-59-52          # tracking failed during a sweep
"""


def default_uri() -> str:
    """MLFLOW_TRACKING_URI when set (MLflow's convention), else the project's store;
    --tracking-uri wins over both."""
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    root = os.environ.get("SILAS_EXP_ROOT", os.getcwd())
    return DEFAULT_URI.format(root=os.path.abspath(root))


def cmd_fixtures(args: argparse.Namespace) -> int:
    from silas_exp.analysis.gates import check_gates, parse_gates
    from silas_exp.run.fixtures import run_fixtures

    gates = parse_gates(args.fail_under)
    metrics, outcomes = run_fixtures(args.fixtures)
    for o in outcomes:
        ok = set(o.zones) == set(o.expected.zones) and o.guard == o.expected.guard and (
            o.expected.profile is None or o.profile == o.expected.profile)
        print(f"{'ok  ' if ok else 'MISS'} {o.id}: zones={sorted(o.zones)} guard={o.guard} "
              f"profile={o.profile}")
    for key, value in metrics.items():
        print(f"{key} = {value:.4f}")
    if args.output:
        import json

        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(metrics, indent=1))
    results = check_gates(metrics, gates)
    for r in results:
        print(r.line())
    return 1 if any(not r.passed for r in results) else 0


def cmd_upload(args: argparse.Namespace) -> int:
    from silas_exp.records import read_manifest, read_sweep_end, write_manifest, write_sweep_end
    from silas_exp.run.sweep_end import recorded_end
    from silas_exp.tracking.background import Uploader

    sweep_dir = Path(args.sweep_dir)
    info = read_manifest(sweep_dir)
    if info is None:
        raise SilasExpError(f"{sweep_dir}: no sweep.json; pass the folder of a silas_exp sweep")
    if args.tracking_uri:
        info.tracking_uri = args.tracking_uri
        write_manifest(sweep_dir, info)
    up = Uploader(sweep_dir)
    n = up.drain()
    end = read_sweep_end(sweep_dir) or recorded_end(sweep_dir)  # a sweep cut short has none
    up.finish(end)
    write_sweep_end(sweep_dir, end)
    print(f"uploaded {n} job(s) to {info.tracking_uri} (parent run {up.info.parent_run_id})")
    return 0


def _probe_model(model: str):
    """The client and model id of ``--probes llm``: the experiment config with
    ``model=<model>`` (conf/model), composed as a sweep would compose it."""
    from hydra.errors import HydraException

    from silas_exp.cli.app import CONF_DIR
    from silas_exp.config import compose_config
    from silas_exp.data.transcripts.suite import ProbeModel
    from silas_exp.errors import ConfigError
    from silas_exp.llm import build_client

    try:
        cfg = compose_config([f"model={model}"])
    except HydraException as exc:
        options = sorted(p.stem for p in (Path(CONF_DIR) / "model").glob("*.yaml"))
        raise ConfigError(f"--model {model}: {str(exc).splitlines()[0]}; pick one of "
                          f"{', '.join(options)}") from None
    llm = build_client(cfg.llm, seed=cfg.seed, cache_dir=cfg.llm.cache_dir)
    if llm.backend_name != "simulated":
        llm.check_models([cfg.model.main_id])
    return ProbeModel(llm, cfg.model.main_id)


def cmd_import(args: argparse.Namespace) -> int:
    import getpass
    from datetime import UTC, datetime

    from silas_exp.data.transcripts.events import ReadOptions
    from silas_exp.data.transcripts.progress import ImportProgress
    from silas_exp.data.transcripts.suite import DEFAULT_OUT, ImportSettings, import_transcripts

    out = Path(args.out) if args.out else DEFAULT_OUT / args.name
    opt_in = (f"confirmed with --opt-in by {getpass.getuser()} at "
              f"{datetime.now(UTC).isoformat(timespec='seconds')}") if args.opt_in else ""
    settings = ImportSettings(name=args.name, profile=args.profile, fill=args.fill,
                              probes=args.probes, read=ReadOptions(sidechains=args.sidechains),
                              extra_names=tuple(args.scrub_name), opt_in=opt_in,
                              calibration=args.calibration, max_mb=args.max_mb)
    writer = _probe_model(args.model) if args.probes == "llm" else None
    progress = ImportProgress()  # on stderr: sizes, steps, share done, rate, time left
    try:
        report = import_transcripts([Path(p) for p in args.paths], out, fmt=args.format,
                                    settings=settings, writer=writer, progress=progress)
    finally:
        if writer is not None:
            writer.llm.close()
    for line in report.lines():
        print(line)
    print(progress.finished())
    cases = sum(len(s.cases) for s in report.sessions)
    print(f"wrote {out}: {cases} case(s) from {len(report.sessions)} session(s); provenance in "
          f"{out / 'import_report.json'}")
    print(f"next: python -m silas_exp -m suite.path={out} suite.name={args.name} "
          "scorer=heuristic,weights,prompt")
    print(f"      python -m silas_exp -m suite.path={out} suite.name={args.name} "
          "eviction=two_tier,truncate,anchored,regenerative,opaque")
    return 0


def cmd_generate_suite(args: argparse.Namespace) -> int:
    from silas_exp.data.suites.scale import write_scale_suite

    out = write_scale_suite(args.cases, Path(args.out), args.seed, args.median_turns)
    print(f"wrote {out}: {args.cases} evaluation + 8 calibration case(s)")
    print(f"next: python -m silas_exp suite.path={out} suite.name={out.name}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="silas-exp", description="silas_exp management commands (analysis, gates, uploads).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--verbose", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("fixtures", help="context-assembly fixture benchmark with --fail-under gates")
    p.add_argument("--fixtures", default="fixtures/context/bench_v1.json")
    p.add_argument("--fail-under", action="append", default=[], metavar="METRIC=VALUE")
    p.add_argument("--output", help="write the metrics as JSON here")
    p.set_defaults(func=cmd_fixtures)

    p = sub.add_parser("upload", help="upload a sweep folder whose tracking failed")
    p.add_argument("sweep_dir")
    p.add_argument("--tracking-uri", help=f"default: the sweep's own (e.g. {DEFAULT_URI})")
    p.set_defaults(func=cmd_upload)

    p = sub.add_parser(
        "import", help="transcripts -> a runnable organic suite (ground truth, probes, PII scrubbed)",
        description="Read real transcripts (Claude Code session JSONL, aider chat history, "
                    "SWE-agent .traj, OpenAI-style chat JSONL, silas session JSON), scrub PII, derive "
                    "ground truth from what later turns used, write probes at compression points, "
                    "and write a §20.2 suite folder (docs/organic.md).")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--out", help="suite folder to write (default: data/benchmarks/organic/<name>, "
                                 "which git ignores)")
    p.add_argument("--name", default="organic", help="suite name (default: organic)")
    p.add_argument("--format", default="auto",
                   choices=["auto", "claude-code", "aider", "swe-agent", "openai", "silas"])
    p.add_argument("--probes", default="rules", choices=["rules", "llm", "none"],
                   help="probe cases written by rule from the transcript's facts (default), by "
                        "the model of --model (every expected fact verified against the session), "
                        "or none")
    p.add_argument("--model", default="simulated",
                   help="conf/model option whose main model writes --probes llm (default: "
                        "simulated; claude-haiku-4-5 needs ANTHROPIC_API_KEY)")
    p.add_argument("--profile", default="coding",
                   choices=["conversation", "coding", "research", "support"])
    p.add_argument("--fill", type=float, default=2.5,
                   help="peak window usage / budget: how hard eviction is pushed (default 2.5)")
    p.add_argument("--sidechains", default="drop", choices=["drop", "separate"],
                   help="Claude Code subagent records: dropped, or sessions of their own")
    p.add_argument("--scrub-name", action="append", default=[], metavar="NAME",
                   help="a name to scrub wherever it appears (repeatable)")
    p.add_argument("--calibration", type=int, metavar="N",
                   help="sessions whose replay case calibrates weights/prompt/online scorers "
                        "instead of being evaluated (default: a quarter, at least one of two)")
    p.add_argument("--opt-in", action="store_true",
                   help="confirm the sessions' owners opted in (§20.7); recorded in the suite")
    p.add_argument("--max-mb", type=float, default=DEFAULT_MAX_MB, metavar="MB",
                   help=f"refuse a file larger than this before reading it (default "
                        f"{DEFAULT_MAX_MB:g}: it is parsed whole, and scrubbing takes about "
                        "3-4 s of CPU per MB); progress goes to stderr")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser(
        "generate-suite", help="a generated N-case suite of realistic sessions (scale checks)",
        description="Write scale-<N>: N generated evaluation sessions (the default suite's "
                    "flavours and fill levels, 30 to 400 turns, median 120) plus 8 calibration "
                    "cases; deterministic in (N, seed).")
    p.add_argument("--cases", type=int, required=True, metavar="N")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--median-turns", type=int, default=120, help="median session length")
    p.add_argument("--out", default="data/benchmarks",
                   help="folder to write scale-<N> into (default: data/benchmarks, which git ignores)")
    p.set_defaults(func=cmd_generate_suite)

    from silas_exp.cli.analysis import register  # analysis subcommands
    from silas_exp.cli.plan import register as register_plan
    from silas_exp.cli.plugins import register as register_plugins
    from silas_exp.cli.ui import register as register_ui

    register(sub, default_uri)
    register_plan(sub)
    register_plugins(sub)
    register_ui(sub, default_uri)
    return parser


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    args = build_parser().parse_args(argv)
    try:
        code = args.func(args)
    except SilasExpError as exc:
        if args.verbose:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        code = exc.exit_code
    sys.exit(code)


if __name__ == "__main__":
    main()
