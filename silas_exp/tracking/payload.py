"""Pure helpers that shape what gets logged: flattened params, run tags,
the suite as a dataset. No MLflow import here (silas_exp.tracking.store does that)."""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import platform
import re
import subprocess
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

PARAM_VALUE_MAX = 6000
MAX_PARAMS = 40  # a run's Params column stays readable; the full config is an artifact
# never params: machine-specific, tracking plumbing, price tables, anything secret
NOT_PARAMS = ("paths.", "tracking.", "llm.prices.", "llm.cache_dir", "resume", "hydra.")
SECRET = re.compile(r"(^|[._])(api_?key|secret|password|passwd|credentials?|auth_?token)($|[._])",
                    re.IGNORECASE)
SOURCE_NAME = "python -m silas_exp"
BASELINE_RUN_TAG = "silas.baseline_run_id"  # on a run: the suite's baseline when it ran
EXPERIMENT_KIND = {"mlflow.experimentKind": "custom_model_development"}  # UI opens on runs


def ui_link(tracking_uri: str, experiment_id: str | None, run_id: str | None = None) -> str:
    """Where to look in the MLflow UI. ``workflowType=machine_learning`` opens the
    runs view: MLflow 3.17's UI picks GenAI vs Model training from that switch
    (default GenAI), whatever the experiment's ``mlflow.experimentKind`` tag says."""
    base = tracking_uri.rstrip("/") if tracking_uri.startswith(("http://", "https://")) \
        else "http://127.0.0.1:5000"
    page = f"runs/{run_id}" if run_id else "runs"
    return f"{base}/#/experiments/{experiment_id}/{page}?workflowType=machine_learning"


def baseline_key(suite: str) -> str:
    """Experiment tag holding the run id of ``suite``'s current baseline."""
    return f"silas.baseline.{suite}"
PACKAGES = ("silas_exp", "mlflow", "hydra-core", "omegaconf", "anthropic", "pydantic", "numpy", "scipy")


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


def _is_machine_path(value: str) -> bool:
    return value.startswith(("/", "~", "file:")) or bool(re.match(r"^[A-Za-z]:[\\/]", value))


def loggable(key: str, value: str) -> bool:
    """May this config value be an MLflow param? Not paths, secrets, prices or plumbing."""
    return not (key.startswith(NOT_PARAMS) or key in ("resume",) or SECRET.search(key)
                or _is_machine_path(value))


def run_params(flat: Mapping[str, str], defaults: Mapping[str, str],
               swept: Iterable[str]) -> dict[str, str]:
    """The swept keys (a swept config group by its option name, ``scorer.name``)
    and every value that differs from the default config, at most MAX_PARAMS."""
    swept = set(swept)
    first: dict[str, str] = {}
    rest: dict[str, str] = {}
    for key, value in flat.items():
        if not loggable(key, value):
            continue
        if key in swept or (key.endswith(".name") and key.rsplit(".", 1)[0] in swept):
            first[key] = value
        elif defaults.get(key) != value:
            rest[key] = value
    return dict(list({**first, **rest}.items())[:MAX_PARAMS])


@cache
def default_params() -> dict[str, str]:
    """The default config (``python -m silas_exp`` with no overrides), flattened.
    Composed with Hydra's compose API (~0.1 s), once per process."""
    from silas_exp.config import compose_config

    return flatten(compose_config().model_dump(mode="json", exclude={"paths", "resume"}))


def user_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return os.environ.get("USER", "unknown")


def standard_tags(root: str) -> dict[str, str]:
    """MLflow's own fields: Source, Version (git commit), User; one tag for versions."""
    tags = {"mlflow.source.name": SOURCE_NAME, "mlflow.source.type": "LOCAL",
            "mlflow.user": user_name(), "silas.versions": versions_line()}
    rev = code_revision(root)
    if rev != "unknown":
        tags["mlflow.source.git.commit"] = rev.removesuffix("-dirty")
    return tags


def versions_line() -> str:
    return ", ".join(f"{k} {v}" for k, v in package_versions().items())


@cache
def suite_dataset(path: str, name: str, version: str, root: str) -> dict[str, Any]:
    """The suite as an MLflow dataset input: name, version, digest of its files
    (suite.json + cases/), source (relative to the project root when inside it)."""
    folder = Path(path)
    files = sorted([folder / "suite.json", *(folder / "cases").glob("*.json")])
    digest = hashlib.sha256()
    for f in files:
        if f.is_file():
            digest.update(f.relative_to(folder).as_posix().encode() + b"\0" + f.read_bytes())
    try:
        source = folder.resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        source = str(folder)
    return {"name": name, "version": version, "digest": digest.hexdigest()[:12],
            "source": source, "cases": sum(1 for f in files if f.parent.name == "cases")}


@cache
def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for pkg in PACKAGES:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = "not-installed"
    return versions


def code_revision(root: str) -> str:
    """Git revision of the code that runs: the checkout silas_exp is imported
    from (an editable install), else the project folder ``root``."""
    rev = git_revision(str(Path(__file__).resolve().parents[2]))
    return rev if rev != "unknown" else git_revision(root)


@cache
def git_revision(root: str) -> str:
    """HEAD commit of the checkout at ``root`` (+"-dirty" with local changes), or "unknown"."""
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                             text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def project_root_of(path: str | Path) -> str:
    return str(Path(path).resolve())
