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

from silas_exp.errors import SilasExpError

DEFAULT_URI = "sqlite:///{root}/mlruns/mlflow.db"
EPILOG = """examples:
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
    from silas_exp.context.fixtures import run_fixtures

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
    from silas_exp.tracking.background import DONE_FILE, Uploader
    from silas_exp.tracking.jobs import SweepInfo

    sweep_dir = Path(args.sweep_dir)
    info = SweepInfo.read(sweep_dir)
    if info is None:
        raise SilasExpError(f"{sweep_dir}: no sweep.json; pass the folder of a silas_exp sweep")
    if args.tracking_uri:
        info.tracking_uri = args.tracking_uri
        info.write(sweep_dir)
    up = Uploader(sweep_dir)
    n = up.drain()
    failed = sum(1 for d in sweep_dir.iterdir() if (d / "result.json").is_file()
                 and '"status": "failed"' in (d / "result.json").read_text())
    up.finish("FAILED" if failed else "FINISHED")
    (sweep_dir / DONE_FILE).write_text("{}")
    print(f"uploaded {n} job(s) to {info.tracking_uri} (parent run {up.info.parent_run_id})")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from silas_exp.probes.importer import import_transcript, write_session

    imported = import_transcript(Path(args.transcript), session_id=args.session_id,
                                 profile=args.profile)
    out = write_session(imported, Path(args.output))
    scrubbed = ", ".join(f"{k}={v}" for k, v in sorted(imported.pii_counts.items())) or "nothing"
    print(f"wrote {out}: {len(imported.session.items)} items over {imported.session.turns} turns; "
          f"scrubbed {scrubbed}")
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

    p = sub.add_parser("import-transcript",
                       help="chat-message JSONL -> PII-scrubbed session file (organic probe sessions)")
    p.add_argument("transcript")
    p.add_argument("--output", required=True, help="session JSON to write")
    p.add_argument("--session-id")
    p.add_argument("--profile", default="coding", choices=["conversation", "coding", "research", "support"])
    p.set_defaults(func=cmd_import)

    from silas_exp.analysis.commands import register  # analysis subcommands

    register(sub, default_uri)
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
