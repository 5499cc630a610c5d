"""PostgreSQL and ``mlflow server`` for the ``postgres``-marked tests: each
started on 127.0.0.1 for one test and stopped after it."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

START_S = 300  # ~9 s on a quiet 2-core machine; minutes when other work keeps it busy

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


@contextlib.contextmanager
def postgres(*databases: str) -> Iterator[str]:
    """A PostgreSQL cluster with the given databases; yields its address
    (``postgres@127.0.0.1:PORT``) for SQLAlchemy URIs."""
    bindir = _pg_bin()
    if bindir is None or shutil.which("runuser") is None:
        missing = "PostgreSQL is not installed (apt-get install postgresql)"
        if os.environ.get("SILAS_REQUIRE_POSTGRES"):  # CI: a skip would hide the test
            pytest.fail(missing)
        pytest.skip(missing)
    if os.environ.get("SILAS_REQUIRE_POSTGRES"):
        import psycopg2  # noqa: F401
    pytest.importorskip("psycopg2")
    # the server runs as the postgres user, which cannot enter pytest's 0700 tmp folders
    base = Path(tempfile.mkdtemp(prefix="silas-pg-"))
    os.chmod(base, 0o755)
    data, sock = base / "pg", base / "sock"
    sock.mkdir()
    data.mkdir()
    shutil.chown(data, "postgres")
    shutil.chown(sock, "postgres")
    as_pg = ["runuser", "-u", "postgres", "--"]
    subprocess.run([*as_pg, str(bindir / "initdb"), "-D", str(data), "-A", "trust"], check=True,
                   capture_output=True)
    pg_port = free_port()
    subprocess.run([*as_pg, str(bindir / "pg_ctl"), "-D", str(data), "-w", "-l", str(data / "log"),
                    "-o", f"-p {pg_port} -k {sock} -h 127.0.0.1", "start"], check=True,
                   capture_output=True)
    try:
        for db in databases:
            subprocess.run([*as_pg, str(bindir / "createdb"), "-h", "127.0.0.1", "-p",
                            str(pg_port), db], check=True, capture_output=True)
        yield f"postgres@127.0.0.1:{pg_port}"
    finally:
        subprocess.run([*as_pg, str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"],
                       capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def mlflow_server(args: list[str], log: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """``mlflow server ARGS`` on 127.0.0.1 (a free port); yields its URI once /health answers."""
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
         *args],
        env={**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", **(env or {})},
        stdout=subprocess.DEVNULL, stderr=open(log, "w"))  # noqa: SIM115
    try:
        deadline = time.time() + START_S
        while True:
            try:
                with urllib.request.urlopen(uri + "/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            assert server.poll() is None and time.time() < deadline, log.read_text()[-2000:]
            time.sleep(0.5)
        yield uri
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
