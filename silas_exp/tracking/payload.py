"""Pure helpers that shape what gets logged: flattened params, run tags,
variant names. No MLflow import here (silas_exp.tracking.store does that)."""

from __future__ import annotations

import json
import platform
import subprocess
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

PARAM_VALUE_MAX = 6000
PACKAGES = ("silas_exp", "mlflow", "hydra-core", "omegaconf", "anthropic", "pydantic", "numpy", "scipy")
NOT_VARIANT = ("repeat", "hydra", "tracking", "paths", "llm.cache", "seed")


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested config → {"a.b.c": "value"} with scalars as strings; lists as JSON."""
    out: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            out.update(flatten(value, name))
        else:
            text = value if isinstance(value, str) else json.dumps(value, default=str)
            out[name] = text[:PARAM_VALUE_MAX]
    return out


@cache
def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for pkg in PACKAGES:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = "not-installed"
    return versions


@cache
def git_revision(root: str) -> str:
    """HEAD commit of the project checkout (+"-dirty" with local changes), or "unknown"."""
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                             text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def swept_keys(cli_overrides: Iterable[str], sweeper_params: Mapping[str, Any] | None) -> list[str]:
    """Keys that vary across a sweep: command-line overrides with a list/range
    and the sweeper's configured params."""
    keys = set((sweeper_params or {}).keys())
    for ov in cli_overrides:
        key, _, value = ov.partition("=")
        if "," in value or value.startswith(("range(", "choice(", "interval(", "glob(")):
            keys.add(key.lstrip("+~"))
    return sorted(keys)


def variant_name(task_overrides: Iterable[str], swept: Iterable[str], scorer: str) -> str:
    """The sweep point without its repeat, e.g. "scorer=weights"; defaults to the scorer."""
    swept = set(swept)
    parts = []
    for ov in task_overrides:
        key = ov.partition("=")[0].lstrip("+~")
        if key in swept and not key.startswith(NOT_VARIANT):
            parts.append(ov.lstrip("+~"))
    return ",".join(sorted(parts)) or f"scorer={scorer}"


def project_root_of(path: str | Path) -> str:
    return str(Path(path).resolve())
