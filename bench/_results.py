"""Where benchmark figures go: bench/results/<name>.json (git-ignored), or the
folder named by SILAS_BENCH_RESULTS (smoke runs in tests write to a tmp folder)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def save(name: str, result: Any) -> Path:
    folder = Path(os.environ.get("SILAS_BENCH_RESULTS") or RESULTS)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(result, indent=1))
    return path
