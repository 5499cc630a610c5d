"""Regenerate the shipped synthetic suites under suites/ (deterministic)."""

from __future__ import annotations

import argparse
from pathlib import Path

from silas_exp.data.suites.build import SHIPPED, write_suite, write_suite_file
from silas_exp.data.suites.pool import POOL_KEY, POOLS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "suites")
    parser.add_argument("--only", nargs="*", help="suite names to write (default: all)")
    args = parser.parse_args()
    for recipe in SHIPPED:
        if not args.only or recipe.name in args.only:
            print("wrote", write_suite(recipe, args.out))
    for name, recipe in POOLS.items():  # generated pools: suite.json only, cases made on use
        if not args.only or name in args.only:
            write_suite_file(recipe, args.out / name, **{POOL_KEY: name})
            print("wrote", args.out / name / "suite.json")


if __name__ == "__main__":
    main()
