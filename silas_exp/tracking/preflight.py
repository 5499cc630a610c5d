"""Checks that run before any job starts, so a dead store, refused credentials
or a missing permission fail in seconds, not after an hour of work. mlflow is
imported only for a tracking server (to send MLflow's own credentials)."""

from __future__ import annotations

import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

from silas_exp.errors import TrackingError
from silas_exp.tracking import permissions

MIN_FREE_BYTES = 50 * 1024**2


def preflight(uri: str | None, experiment: str | None = None) -> None:
    """``experiment``: the one the sweep logs to; on a server with users, this
    process's user must be able to write to it (``permissions.SWEEP``)."""
    if not uri:
        raise TrackingError("tracking.uri is empty; set it or run with tracking=none")
    if uri.startswith("sqlite:///"):
        db = Path(uri.removeprefix("sqlite:///"))
        folder = db.parent
        while not folder.exists():
            folder = folder.parent
        target = db if db.exists() else folder
        if not os.access(target, os.W_OK):
            raise TrackingError(f"tracking store {db} is not writable (read-only folder or file). "
                                "Fix the permissions, point tracking.uri elsewhere, or use tracking=none.")
        free = shutil.disk_usage(folder).free
        if free < MIN_FREE_BYTES:
            raise TrackingError(f"only {free // 1024**2} MiB free on the disk of {folder}; free some "
                                "space or point tracking.uri / paths.mlruns at another disk.")
    elif uri.startswith(("http://", "https://")):
        permissions.refuse_credentials_in_uri(uri)
        try:
            with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=5) as resp:
                if resp.status != 200:
                    raise TrackingError(f"tracking server {uri} answered {resp.status} on /health")
        except (urllib.error.URLError, OSError) as exc:
            raise TrackingError(f"tracking server {uri} is unreachable ({exc}). Start it, fix "
                                "tracking.uri, or run with tracking=none; nothing was run.") from None
        if experiment:
            permissions.require(uri, experiment, permissions.SWEEP, "log a sweep or a run")
