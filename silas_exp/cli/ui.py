"""``silas-exp ui``: the MLflow UI on the store the last sweep used (or the one
given), opened on that sweep's parent run, where the decision is.

The last sweep is the newest ``sweep.json`` under ``multirun/`` (or
``--sweep DIR``); its record names its store, experiment and parent run. A
local store is served with ``mlflow ui`` on 127.0.0.1 until Ctrl-C; a tracking
server is only linked to.

Stopping (Ctrl-C or SIGTERM) stops every process ``mlflow ui`` started: its
web server, its job runner and the job runner's huey consumers, which all share
``mlflow ui``'s process group. ``mlflow ui`` forwards a signal to its web
server only, and starts its job runner after the web server, so a signal
during start-up leaves a job runner and its consumers behind: the whole group
is signalled until it is empty, and killed after ``STOP_GRACE_S``. A second
signal while stopping kills the group at once. Written by hand (no psutil
here): the group's members are read from ``/proc`` where there is one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
import webbrowser
from pathlib import Path

from silas_exp.errors import ConfigError, SilasExpError

HEALTH_TIMEOUT_S = 240.0  # mlflow ui answers after ~9 s idle, 80 s on a busy 2-core machine
STOP_GRACE_S = 10.0  # SIGTERM to SIGKILL; mlflow ui's processes stop in ~3-10 s on 2 busy cores


def last_sweep(root: Path) -> Path | None:
    """The sweep folder under ``root/multirun`` (``multirun/<date>/<time>``, or a
    fixed ``hydra.sweep.dir`` there) whose record was written last."""
    found = sorted(root.glob("multirun/**/sweep.json"), key=lambda p: p.stat().st_mtime)
    return found[-1].parent if found else None


def _newest_parent(uri: str) -> tuple[str, str] | None:
    """(experiment id, run id) of the newest sweep parent run in the store."""
    from silas_exp.tracking.reader import MlflowRunReader

    parents = MlflowRunReader(uri).sweep_parents()
    best = max(parents, key=lambda run: run.start_time, default=None)
    return (best.experiment_id, best.run_id) if best else None


def target(args, default_uri: str) -> tuple[str, str | None, str | None, Path | None]:
    """(store, experiment id, parent run id, sweep folder) to open."""
    from silas_exp.records import read_manifest

    root = Path(os.environ.get("SILAS_EXP_ROOT", os.getcwd()))
    sweep = Path(args.sweep) if args.sweep else last_sweep(root)
    if args.sweep and not (sweep / "sweep.json").is_file():
        raise ConfigError(f"--sweep {args.sweep}: no sweep.json there; pass the folder of a "
                          "silas_exp sweep (multirun/<date>/<time>)")
    manifest = read_manifest(sweep) if sweep else None
    uri = args.tracking_uri or (manifest.tracking_uri if manifest else None) or default_uri
    if manifest and manifest.parent_run_id and uri == manifest.tracking_uri:
        return uri, manifest.experiment_id, manifest.parent_run_id, sweep
    found = _newest_parent(uri)
    return (uri, *found, None) if found else (uri, None, None, None)


def page(base: str, experiment_id: str | None, run_id: str | None) -> str:
    from silas_exp.tracking.payload import ui_path

    return f"{base.rstrip('/')}/" + (ui_path(experiment_id, run_id) if experiment_id else "")


def server_command(uri: str, port: int) -> list[str]:
    """``mlflow ui`` on the store, on 127.0.0.1 only, one worker (one user), as
    silas_exp's MLflow app (``silas_exp.tracking.ui_app``: the UI opens on Model
    training, its Assistant closed) when its entry point is installed."""
    from importlib.metadata import entry_points

    from silas_exp.tracking.ui_app import APP_NAME

    app = ["--app-name", APP_NAME] if entry_points(group="mlflow.app", name=APP_NAME) else []
    return [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri,
            "--host", "127.0.0.1", "--port", str(port), "--workers", "1", *app]


def _serve(uri: str, port: int) -> subprocess.Popen:
    """``server_command`` in a process group of its own; returns once it answers."""
    cmd = server_command(uri, port)
    print("serving: " + " ".join(["mlflow", *cmd[3:]]), flush=True)
    server = subprocess.Popen(cmd, env={**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"},
                              stdout=sys.stderr,  # its log; stdout keeps the command's own lines
                              start_new_session=True)  # its workers stop with it (_stop)
    _Signals.group = server.pid
    try:
        _wait_healthy(server, port)
    except BaseException:
        _stop(server)
        raise
    return server


def _wait_healthy(server: subprocess.Popen, port: int) -> None:
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SilasExpError(f"mlflow ui exited with {server.returncode} (is port {port} "
                                "taken? pass --port)")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise SilasExpError(f"mlflow ui did not answer on port {port} within {HEALTH_TIMEOUT_S:.0f} s")


def _group_alive(group: int) -> bool:
    """Does a live (not zombie) process of process group ``group`` remain?"""
    proc = Path("/proc")
    if not proc.is_dir():  # no /proc (macOS): ask the kernel; zombies count until reaped
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # gone meanwhile
            continue
        if len(fields) > 2 and fields[0] != "Z" and fields[2] == str(group):
            return True
    return False


def _signal_group(group: int, signum: int) -> None:
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError):
        pass


class _Signals:
    """What Ctrl-C and SIGTERM do while ``silas-exp ui`` serves: the first stops
    the command (KeyboardInterrupt: ``_stop`` runs); any later one, however soon,
    kills the UI's process group at once."""

    group: int | None = None  # the process group of mlflow ui, once started
    stopping = False
    hurry = False

    @classmethod
    def handle(cls, *_) -> None:
        if not cls.stopping:
            cls.stopping = True
            raise KeyboardInterrupt
        cls.hurry = True
        if cls.group is not None:
            _signal_group(cls.group, signal.SIGKILL)


def _stop(server: subprocess.Popen) -> None:
    """Stop ``mlflow ui`` and every process of its group (module docstring):
    SIGTERM, again each second for processes started meanwhile, SIGKILL after
    ``STOP_GRACE_S`` or at a second Ctrl-C / SIGTERM."""
    group = server.pid
    _Signals.stopping = True  # a signal from now on hurries
    deadline = time.monotonic() + STOP_GRACE_S
    next_term = 0.0
    while time.monotonic() < deadline and not _Signals.hurry:
        server.poll()  # reaps mlflow ui itself: a zombie still counts as the group's
        if not _group_alive(group):
            break
        if time.monotonic() >= next_term:
            _signal_group(group, signal.SIGTERM)
            next_term = time.monotonic() + 1.0
        time.sleep(0.1)
    else:
        _signal_group(group, signal.SIGKILL)
    server.wait()


def cmd_ui(args) -> int:
    uri, experiment_id, run_id, sweep = target(args, args.default_uri)
    remote = uri.startswith(("http://", "https://"))
    url = page(uri if remote else f"http://127.0.0.1:{args.port}", experiment_id, run_id)
    what = (f"the parent run of sweep {sweep}" if sweep else "the newest sweep's parent run"
            ) if run_id else "the store (no sweep parent run found in it)"
    if args.print_only or remote:
        if not remote:
            print(f"mlflow ui --backend-store-uri {uri} --host 127.0.0.1 --port {args.port}")
        print(f"{what}: {url}")
        if remote and args.open:
            webbrowser.open(url)
        return 0
    for signum in (signal.SIGINT, signal.SIGTERM):  # SIGTERM stops it as Ctrl-C does
        signal.signal(signum, _Signals.handle)
    try:  # Ctrl-C or SIGTERM while the UI starts or serves: stop it, no traceback
        server = _serve(uri, args.port)
        print(f"{what}: {url}\n(Ctrl-C stops the UI)", flush=True)
        if args.open:
            webbrowser.open(url)
        try:
            server.wait()
        finally:
            _stop(server)
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    return 0


def register(sub, default_uri) -> None:
    p = sub.add_parser("ui", help="the MLflow UI on the last sweep's store, at its parent run")
    p.add_argument("--tracking-uri", default=None,
                   help=f"store to open (default: the one the last sweep used, else "
                        f"{default_uri()})")
    p.add_argument("--sweep", help="sweep folder (default: the newest under multirun/)")
    p.add_argument("--port", type=int, default=5000)
    p.add_argument("--open", action="store_true", help="also open the page in a browser")
    p.add_argument("--print-only", action="store_true",
                   help="print the command and the page, do not serve")
    p.set_defaults(func=cmd_ui, default_uri=default_uri())
