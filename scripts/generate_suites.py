"""Regenerate the shipped synthetic suites under suites/ (deterministic)."""

from __future__ import annotations

import argparse
from pathlib import Path

from silas_exp.data.suites.build import SHIPPED, write_suite


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "suites")
    parser.add_argument("--only", nargs="*", help="suite names to write (default: all)")
    args = parser.parse_args()
    for recipe in SHIPPED:
        if not args.only or recipe.name in args.only:
            print("wrote", write_suite(recipe, args.out))


if __name__ == "__main__":
    main()
