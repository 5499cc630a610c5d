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
RUN_NAME_VALUES = 12  # characters of a variant's values in a job run's name
# never params: machine-specific, tracking plumbing, price tables, anything secret
NOT_PARAMS = ("paths.", "tracking.", "llm.prices.", "llm.cache_dir", "resume", "hydra.")
SECRET = re.compile(r"(^|[._])(api_?key|secret|password|passwd|credentials?|auth_?token)($|[._])",
                    re.IGNORECASE)
SOURCE_NAME = "python -m silas_exp"
BASELINE_RUN_TAG = "silas.baseline_run_id"  # on a run: the suite's baseline when it ran
EXPERIMENT_KIND = {"mlflow.experimentKind": "custom_model_development"}  # UI opens on runs


LOCAL_UI = ("127.0.0.1", 5000)  # where the printed ``mlflow ui`` command serves a local store
RUNS_VIEW = "?workflowType=machine_learning"  # MLflow 3.17's UI opens GenAI pages without it
BASELINE_NAME_MARK = " · baseline"  # the current baseline's run name ends so in the runs table
NOTE_END = "<!-- silas_exp -->"  # ended silas_exp's part of an experiment's description, once
OWN_LINES = ("Baseline of suite ", "No baseline of suite ", "No baseline promoted yet")


def ui_base(tracking_uri: str) -> str:
    """The UI's address: the tracking server itself, or (a local store) where
    ``ui_command`` serves it."""
    if tracking_uri.startswith(("http://", "https://")):
        return tracking_uri.rstrip("/")
    return f"http://{LOCAL_UI[0]}:{LOCAL_UI[1]}"


def ui_command(tracking_uri: str) -> str | None:
    """The command that serves a local store at ``ui_base``; None for a server."""
    if tracking_uri.startswith(("http://", "https://")):
        return None
    return (f"mlflow ui --backend-store-uri {tracking_uri} --host {LOCAL_UI[0]} "
            f"--port {LOCAL_UI[1]}")


def ui_path(experiment_id: str | None, run_id: str | None = None) -> str:
    """The UI's page of an experiment's runs (or of one run), as a link inside
    the UI (``#/…``): it opens on the runs view, not on the GenAI pages."""
    page = f"runs/{run_id}" if run_id else "runs"
    return f"#/experiments/{experiment_id}/{page}{RUNS_VIEW}"


def ui_link(tracking_uri: str, experiment_id: str | None, run_id: str | None = None) -> str:
    """Where to look in the MLflow UI. ``workflowType=machine_learning`` opens the
    runs view: MLflow 3.17's UI picks GenAI vs Model training from that switch
    (default GenAI), whatever the experiment's ``mlflow.experimentKind`` tag says."""
    return f"{ui_base(tracking_uri)}/{ui_path(experiment_id, run_id)}"


def baseline_pointers(tags: Mapping[str, str]) -> dict[str, str]:
    """suite -> run id of its current baseline, from an experiment's tags."""
    return {key.removeprefix("silas.baseline."): run_id for key, run_id in sorted(tags.items())
            if key.startswith("silas.baseline.") and not key.endswith(".history") and run_id}


def _last_changes(tags: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """suite -> the last entry of its baseline history (``silas.baseline.<suite>.history``)."""
    out = {}
    for key, text in sorted(tags.items()):
        if key.startswith("silas.baseline.") and key.endswith(".history"):
            try:
                history = json.loads(text)
            except ValueError:
                continue
            if isinstance(history, list) and history and isinstance(history[-1], dict):
                out[key.removeprefix("silas.baseline.").removesuffix(".history")] = history[-1]
    return out


def experiment_note(experiment_id: str, tags: Mapping[str, str], previous: str = "",
                    names: Mapping[str, str] | None = None) -> str:
    """The experiment's description (``mlflow.note.content``): one line per suite,
    its current baseline (``names``: run id -> run name) or, after a demotion, who
    demoted it, when and why; the first line ends with a link to the runs view.
    Plain words first, links last: the experiments lists show the description
    unrendered and cut after a few words; the experiment's header renders it,
    collapsed to its first line. silas_exp's part is its first paragraph; the
    paragraphs a user wrote after it (in ``previous``) are kept."""
    names = names or {}
    pointers = baseline_pointers(tags)
    lines = [f"Baseline of suite {suite}: {names.get(run_id, 'run')} (run {run_id[:8]}, "
             f"[open]({ui_path(experiment_id, run_id)}))."
             for suite, run_id in pointers.items()]
    lines += [f"No baseline of suite {suite}: run {last['run_id'][:8]} was demoted "
              f"{str(last.get('demoted_at', ''))[:10]} by {last.get('by')} ({last.get('reason')}); "
              "silas-exp baseline promote RUN sets one."
              for suite, last in _last_changes(tags).items()
              if suite not in pointers and last.get("action") == "demote" and last.get("run_id")]
    lines = lines or ["No baseline promoted yet (silas-exp baseline promote RUN)."]
    lines[0] += f" [Runs view]({ui_path(experiment_id)})"
    user = _user_text(previous)
    return "  \n".join(lines) + (f"\n\n{user}" if user else "")


def _user_text(previous: str) -> str:
    """What a user wrote below silas_exp's part of a description: after its first
    paragraph when each line of that opens as silas_exp's lines do, after
    ``NOTE_END`` in an older description, else all of it."""
    _, marker, user = previous.partition(NOTE_END)
    if marker:
        return user.strip()
    first, _, rest = previous.partition("\n\n")
    own = first and all(line.startswith(OWN_LINES) for line in first.splitlines())
    return (rest if own else previous).strip()


def with_first_line(note: str, line: str, prefix: str) -> str:
    """A description with ``line`` as its first paragraph, replacing an earlier
    first paragraph that starts with ``prefix`` (a rerun's result replaces the last)."""
    if note.startswith(prefix):
        note = note.partition("\n\n")[2]
    return f"{line}\n\n{note}" if note else line


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


def override_keys(overrides: Iterable[str]) -> list[str]:
    """The keys a job's command-line overrides set (``scorer=weights`` -> ``scorer``)."""
    keys = []
    for ov in overrides:
        key, sep, _ = ov.partition("=")
        if sep and not ov.startswith("~"):
            keys.append(key.lstrip("+"))
    return keys


def run_params(flat: Mapping[str, str], swept: Iterable[str],
               overrides: Iterable[str] = ()) -> dict[str, str]:
    """What makes the run what it is: the swept keys, the keys the command line
    set (a config group by its option name, ``scorer.name``) and the option of
    every config group (``<group>.name``); never the defaults an option brings
    along (the full config is the ``hydra/config.yaml`` artifact). At most MAX_PARAMS."""
    wanted = [*swept, *override_keys(overrides)]
    chosen: dict[str, str] = {}
    for key in wanted:
        hits = [k for k in (key, f"{key}.name") if k in flat] or \
            [k for k in flat if k.startswith(f"{key}.")]
        chosen.update((k, flat[k]) for k in hits)
    chosen.update((k, v) for k, v in flat.items() if k.count(".") == 1 and k.endswith(".name"))
    return dict(list((k, v) for k, v in chosen.items() if loggable(k, v))[:MAX_PARAMS])


def short_run_name(variant: str, repeat: int, block: int = 0) -> str:
    """A job run's name that the runs table does not cut (it shows ~16
    characters): the variant's values, then the repeat ("weights r3",
    "anchored weights r1") and, past the first block of a sequential study,
    the block ("weights r0 b3"); long values are shortened alike."""
    values = [part.partition("=")[2] or part for part in variant.split(",")]
    if len(" ".join(values)) > RUN_NAME_VALUES:
        each = max(3, (RUN_NAME_VALUES - len(values) + 1) // len(values))
        values = [v[:each] for v in values]
    return f"{' '.join(values)} r{repeat}" + (f" b{block}" if block else "")


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
        tags["mlflow.source.git.commit"] = rev.split("-")[0]
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


# what takes part in a run (the gate's records in a suite folder do not): a local
# change here makes a revision "-dirty", which no commit reproduces
RUNTIME_PATHS = ("silas_exp", "hydra_plugins", "conf", "suites", "probes", "pyproject.toml",
                 ":(exclude)suites/*/baseline.json", ":(exclude)suites/*/baseline_history.jsonl",
                 ":(exclude)suites/*/sensitivity.json")


@cache
def git_revision(root: str) -> str:
    """HEAD commit of the checkout at ``root``, or "unknown"; with local changes
    to what takes part in a run (new files there included) "-dirty-" and their
    digest (:func:`changes_digest`): the same digest on the same commit is the
    same code."""
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                             text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", *RUNTIME_PATHS], cwd=root,
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return rev + (f"-dirty-{changes_digest(root)}" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def changes_digest(root: str | Path) -> str:
    """12 hex digits of a digest of the checkout's uncommitted changes to what
    takes part in a run: the diff against HEAD and every new file there."""
    digest = hashlib.sha256(subprocess.run(
        ["git", "diff", "HEAD", "--binary", "--", *RUNTIME_PATHS], cwd=root,
        capture_output=True, timeout=60, check=True).stdout)
    new = subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "-z", "--",
                          *RUNTIME_PATHS], cwd=root, capture_output=True, timeout=60,
                         check=True).stdout
    for name in sorted(filter(None, new.split(b"\0"))):
        digest.update(b"\0" + name + b"\0")
        digest.update((Path(root) / name.decode()).read_bytes())
    return digest.hexdigest()[:12]


def project_root_of(path: str | Path) -> str:
    return str(Path(path).resolve())
