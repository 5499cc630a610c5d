"""``silas-exp ui`` stops every process the UI started, at the first signal,
whenever it comes, and without a traceback.

The UI is a stand-in with ``mlflow ui``'s shape: a process-group leader whose
web worker answers ``/health`` and ignores SIGTERM (uvicorn waiting for a
browser's connections), and which starts one more worker when it is signalled
(``mlflow ui`` starts its job runner and huey consumers after its web server).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from silas_exp.records import SweepManifest, write_manifest

from .conftest import CLEAN_ENV

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process groups from /proc")

GRACE_S = 2.0  # the driver's STOP_GRACE_S (SIGTERM to SIGKILL)
SLACK_S = 8.0  # a busy 2-core machine

FAKE_UI = textwrap.dedent('''
    import os, signal, subprocess, sys, time
    port, pid_file, answer = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
    open(pid_file, "w").write(str(os.getpid()))
    web = subprocess.Popen([sys.executable, "-c", """
    import http.server, signal, sys
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.end_headers(); self.wfile.write(b"OK")
        def log_message(self, *a): pass
    if sys.argv[2] == "1":
        http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
    while True:
        signal.pause()
    """, str(port), sys.argv[3]])
    late = []
    def on_term(*_):
        late.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]))
    signal.signal(signal.SIGTERM, on_term)
    while True:
        web.wait()
''')

DRIVER = textwrap.dedent('''
    import faulthandler, signal, sys
    faulthandler.register(signal.SIGUSR1)  # where it hangs, if it does
    import silas_exp.cli.ui as ui
    from silas_exp.cli.main import main
    fake, pid_file, answer = sys.argv[1], sys.argv[2], sys.argv[3]
    ui.STOP_GRACE_S = float(sys.argv[6])
    ui.server_command = lambda uri, port: [sys.executable, fake, str(port), pid_file, answer]
    main(["ui", "--sweep", sys.argv[4], "--port", sys.argv[5]])
''')


def _alive(group: int) -> list[int]:
    """Live (not zombie) processes of a process group."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            pid, _, rest = stat.read_text().partition(" (")
            fields = rest.rpartition(")")[2].split()
        except OSError:
            continue
        if fields[0] != "Z" and fields[2] == str(group):
            found.append(int(pid))
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ui(tmp_path):
    """Start the driver; yields (process, group of the UI it started)."""
    started: list[tuple[subprocess.Popen, int]] = []

    def start(answer: bool = True, grace: float = GRACE_S) -> tuple[subprocess.Popen, int]:
        (tmp_path / "fake_ui.py").write_text(FAKE_UI)
        (tmp_path / "driver.py").write_text(DRIVER)
        sweep = tmp_path / "multirun" / "sweep"
        sweep.mkdir(parents=True)
        write_manifest(sweep, SweepManifest(sweep_id="s", experiment_name="silas-default",
                                            experiment_id="1", parent_run_id="p",
                                            tracking_uri="sqlite:///nowhere.db"))
        pid_file = tmp_path / "ui.pid"
        proc = subprocess.Popen(
            [sys.executable, str(tmp_path / "driver.py"), str(tmp_path / "fake_ui.py"),
             str(pid_file), "1" if answer else "0", str(sweep), str(_free_port()), str(grace)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**CLEAN_ENV, "MLFLOW_DISABLE_TELEMETRY": "true"})
        deadline = time.monotonic() + 60
        while not pid_file.is_file() or not pid_file.read_text():
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        group = int(pid_file.read_text())
        started.append((proc, group))
        if answer:
            lines = [proc.stdout.readline() for _ in range(3)]
            assert "Ctrl-C stops the UI" in lines[-1], lines
        else:
            time.sleep(1.0)  # still waiting for /health
        return proc, group

    yield start
    for proc, group in started:  # whatever a failed test left
        if _alive(group):
            os.killpg(group, signal.SIGKILL)
        proc.kill()


def _stopped(proc: subprocess.Popen, group: int, within: float) -> str:
    """The driver's stderr once it and the UI's group are gone, within ``within`` s."""
    start = time.monotonic()
    try:
        _, err = proc.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(1)
        proc.kill()
        left = _alive(group)
        if left:  # they hold the driver's stderr: communicate would wait for them
            os.killpg(group, signal.SIGKILL)
        pytest.fail(f"silas-exp ui still running {within:.0f} s after SIGTERM (its UI's "
                    f"processes left: {left}), in:\n" + proc.communicate()[1][-3000:])
    while _alive(group) and time.monotonic() - start < within:
        time.sleep(0.1)
    assert not _alive(group), f"left behind: {_alive(group)}"
    return err


def test_sigterm_stops_the_ui_and_what_it_started_meanwhile(ui):
    proc, group = ui()
    assert len(_alive(group)) == 2  # the UI and its web worker
    proc.send_signal(signal.SIGTERM)
    err = _stopped(proc, group, within=GRACE_S + SLACK_S)
    assert "Traceback" not in err, err
    assert proc.returncode == 0


def _delivered(pid: int, signum: int, within: float = 30.0) -> None:
    """Wait until ``signum`` is no longer pending for ``pid`` (Linux: /proc/PID/status).
    POSIX does not queue standard signals: a second SIGTERM sent while the first is
    still pending merges into it, and the process sees one."""
    bit = 1 << (signum - 1)
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            fields = dict(line.split(":", 1) for line in
                          Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
        except OSError:
            return  # gone (or no /proc): nothing pending
        if not any(int(fields.get(k, "0").strip(), 16) & bit for k in ("SigPnd", "ShdPnd")):
            return
        time.sleep(0.001)
    pytest.fail(f"signal {signum} still pending for process {pid} after {within:.0f} s")


@pytest.mark.parametrize("after", [0.2, 1.0])
def test_a_second_sigterm_kills_at_once_without_a_traceback(ui, after):
    """Soon after the first. Not at 0 s: two SIGTERMs that arrive before the
    first's handler has run are one to the process (the kernel keeps one pending
    SIGTERM, and Python runs a handler once however often its signal tripped
    meanwhile), so at 0 s this test read the machine's load, not the UI."""
    proc, group = ui(grace=120.0)  # only the second signal can stop it in time
    proc.send_signal(signal.SIGTERM)
    _delivered(proc.pid, signal.SIGTERM)
    time.sleep(after)
    proc.send_signal(signal.SIGTERM)
    err = _stopped(proc, group, within=SLACK_S)
    assert "Traceback" not in err, err


def test_sigterm_while_the_ui_starts_stops_it_without_a_traceback(ui):
    proc, group = ui(answer=False)
    proc.send_signal(signal.SIGTERM)
    err = _stopped(proc, group, within=GRACE_S + SLACK_S)
    assert "Traceback" not in err, err
