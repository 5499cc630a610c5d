"""``silas-exp plan -m <the study's overrides>``: cases, calls, dollars and
minutes to a verdict, before any paid call (silas_exp.plan)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def cmd_plan(args: argparse.Namespace) -> int:
    from silas_exp.analysis.planned import plan_lines
    from silas_exp.plan.build import build_plan

    overrides = list(args.overrides)
    plan = build_plan(overrides, say=lambda line: print(line, file=sys.stderr, flush=True))
    print("\n".join(plan_lines(plan)))
    if args.out:
        path = plan.write(Path(args.out)) if Path(args.out).is_dir() else _write(plan, args.out)
        print(f"written: {path}")
    return 0


def _write(plan, where: str) -> Path:
    path = Path(where)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(plan.model_dump_json(indent=1))
    return path


def register(sub) -> None:
    p = sub.add_parser(
        "plan", help="predict a study's cases, calls, dollars and minutes before paying for it",
        description="The plan of `python -m silas_exp -m <overrides>`: for each variant the "
                    "chance of each verdict and the cases to it, and for the study its calls, "
                    "dollars (with prompt caching) and wall minutes, each as a median and an "
                    "80 % range, with what would decide a variant the pool is unlikely to. "
                    "From what is free: the simulated replay of the same cases and seeds, the "
                    "promoted baseline's per-case history, the pace of the API. No paid call. "
                    "Settings: plan.* (conf/plan/default.yaml), e.g. plan.answer_s=0.9 "
                    "plan.requests_per_minute=4000.",
        epilog="example: silas-exp plan -m scorer=weights,prompt,online model=claude-haiku-4-5")
    p.add_argument("-m", "--multirun", action="store_true",
                   help="accepted for the study's own command line (a plan is of a sweep)")
    p.add_argument("--out", help="write the plan as JSON here (a file, or a folder for plan.json)")
    p.add_argument("overrides", nargs=argparse.REMAINDER, metavar="OVERRIDE",
                   help="the study's overrides, as after `python -m silas_exp -m`")
    p.set_defaults(func=cmd_plan)
