"""Regenerate the shipped probe set under probes/default (deterministic)."""

from __future__ import annotations

import argparse
from pathlib import Path

from silas_exp.data.probe_sessions import write_probe_suite


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).resolve().parents[1] / "probes" / "default")
    print("wrote", write_probe_suite(parser.parse_args().out))


if __name__ == "__main__":
    main()
