"""The documented team server: MLflow's basic-auth app over PostgreSQL (users
and tracking data both there), on 127.0.0.1, with an admin, an editor and a
reader. Unauthenticated requests are refused; the editor's sweep lands
completely; the reader reads and analyses but their sweep is refused before
any job; a wrong password is one paragraph, exit 2; promotion and demotion
need MANAGE; no password is found in the store, the artifacts, the sweep
folders or the console. Marker ``postgres``: not in the default run."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ..conftest import REPO
from ._servers import mlflow_server, postgres

pytestmark = pytest.mark.postgres

EXPERIMENT = "silas-smoke"
SILAS_EXP = [sys.executable, "-c", "from silas_exp.cli.main import main; main()"]


def _env(user: str | None, password: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_TRACKING_")}
    env["MLFLOW_DISABLE_TELEMETRY"] = "true"
    env["HOME"] = os.environ.get("SILAS_TEST_HOME", env.get("HOME", ""))
    if user is not None:
        env["MLFLOW_TRACKING_USERNAME"] = user
    if password is not None:
        env["MLFLOW_TRACKING_PASSWORD"] = password
    return env


class Team:
    """The server, its users' passwords, and everything the commands printed."""

    def __init__(self, uri: str, tmp: Path, passwords: dict[str, str]) -> None:
        self.uri, self.tmp, self.passwords = uri, tmp, passwords
        self.console: list[str] = []

    def run(self, user: str | None, argv: list[str], *, password: str | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess:
        """A command as ``user``, with no terminal and nothing on stdin: a
        password prompt would show in its output (or hang until the timeout)."""
        pw = password if password is not None else self.passwords.get(user or "")
        proc = subprocess.run(argv, cwd=REPO, env=_env(user, pw if user else None),
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout, start_new_session=True)
        self.console += [proc.stdout, proc.stderr]
        return proc

    def sweep(self, user: str, folder: str, **kw) -> subprocess.CompletedProcess:
        return self.run(user, [
            sys.executable, "-m", "silas_exp", "-m", "scorer=heuristic,weights", "repeats=2",
            "suite=smoke", f"paths.root={self.tmp}", f"paths.suites={self.tmp / 'suites'}",
            f"hydra.sweep.dir={self.tmp / folder}", f"tracking.uri={self.uri}",
            "tracking.artifact_root=null"], **kw)

    def admin(self) -> MlflowClient:
        """This process is the admin (the fixture set its credentials)."""
        return MlflowClient(self.uri)


@pytest.fixture
def team(tmp_path, monkeypatch):
    passwords = {u: secrets.token_urlsafe(16) for u in ("admin", "editor", "reader")}
    secret_key = secrets.token_hex(16)
    shutil.copytree(REPO / "suites" / "smoke", tmp_path / "suites" / "smoke")
    home = tmp_path / "home"  # no ~/.mlflow/credentials of the machine's user
    home.mkdir()
    monkeypatch.setenv("SILAS_TEST_HOME", str(home))
    monkeypatch.setenv("HOME", str(home))
    with postgres("mlflow", "mlflow_auth") as pg:
        ini = tmp_path / "basic_auth.ini"  # as docs/operations.md writes it: no password inside
        ini.write_text(f"[mlflow]\ndefault_permission = READ\nadmin_username = admin\n"
                       f"database_uri = postgresql+psycopg2://{pg}/mlflow_auth\n"
                       "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n")
        server_env = {"MLFLOW_AUTH_CONFIG_PATH": str(ini),
                      "MLFLOW_AUTH_ADMIN_PASSWORD": passwords["admin"],
                      "MLFLOW_FLASK_SERVER_SECRET_KEY": secret_key}
        with mlflow_server(["--app-name", "basic-auth",
                            "--backend-store-uri", f"postgresql+psycopg2://{pg}/mlflow",
                            "--artifacts-destination", str(tmp_path / "artifacts"),
                            "--workers", "2"], tmp_path / "server.log", server_env) as uri:
            team = Team(uri, tmp_path, passwords)
            monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "admin")
            monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", passwords["admin"])
            client = team.admin()
            from mlflow.server.auth.client import (
                AuthServiceClient,  # the [auth] extra: -m postgres only
            )
            auth = AuthServiceClient(uri)
            for user in ("editor", "reader"):
                auth.create_user(user, passwords[user])
            exp_id = client.create_experiment(EXPERIMENT)
            auth.grant_user_permission("editor", "experiment", exp_id, "EDIT")
            team.exp_id = exp_id
            team.pg = pg
            yield team


@pytest.mark.timeout(1800)  # two sweeps and seven commands; minutes on a busy 2-core machine
def test_team_server(team):
    uri, tmp = team.uri, team.tmp

    # 1. no credentials: 401, from the server and from silas_exp (one paragraph, exit 2)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{uri}/api/2.0/mlflow/experiments/search?max_results=1", timeout=10)
    assert refused.value.code == 401
    print(f"unauthenticated GET /api/2.0/mlflow/experiments/search: {refused.value.code}")

    # 2. the editor's sweep lands completely
    proc = team.sweep("editor", "editor-sweep")
    assert proc.returncode == 0, proc.stderr[-3000:]
    print("--- the editor's sweep (stdout, last lines) ---\n" + "\n".join(
        proc.stdout.strip().splitlines()[-14:]))
    client = team.admin()
    runs = client.search_runs([team.exp_id])
    children = [r for r in runs if r.data.tags.get("silas.kind") != "sweep"]
    assert len(runs) == 5 and len(children) == 4
    assert all(r.info.status == "FINISHED" for r in runs)
    for r in children:
        assert len(r.data.metrics) > 30 and "context.retrieval_relevance" in r.data.metrics
        assert {a.path for a in client.list_artifacts(r.info.run_id)} >= {"result.json", "cases.json"}
        assert [d.dataset.name for d in r.inputs.dataset_inputs] == ["smoke"]
    sweep_id = runs[0].data.tags["silas.sweep_id"]

    # 3. the reader's sweep is refused before any job, with one paragraph
    start = time.time()
    proc = team.sweep("reader", "reader-sweep")
    print(f"--- the reader's sweep: exit {proc.returncode} in {time.time() - start:.1f} s ---\n"
          + proc.stderr.strip())
    assert proc.returncode == 2
    assert "user 'reader' holds READ on experiment 'silas-smoke'" in proc.stderr
    assert "needs EDIT" in proc.stderr and "grant_user_permission('reader'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list((tmp / "reader-sweep").glob("*/result.json"))
    assert not list((tmp / "reader-sweep").glob("*/job.json"))
    assert len(client.search_runs([team.exp_id])) == 5

    # ... but the reader reads: the ablation from MLflow
    proc = team.run("reader", [*SILAS_EXP, "ablation", sweep_id, "--tracking-uri", uri,
                               "--out", str(tmp / "reader-ablation")])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp / "reader-ablation" / "ablation.md").read_text().strip()

    # 4. a wrong password: one paragraph naming the server and the variable, exit 2, at once
    for argv in (None, [*SILAS_EXP, "ablation", sweep_id, "--tracking-uri", uri]):
        start = time.time()
        proc = (team.sweep("editor", "wrong-sweep", password="not-" + team.passwords["editor"])
                if argv is None else team.run("editor", argv, password="wrong"))
        took = time.time() - start
        print(f"--- wrong password: exit {proc.returncode} in {took:.1f} s ---\n"
              + proc.stderr.strip())
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert f"tracking server {uri} refused the password of user 'editor' (401" in proc.stderr
        assert "MLFLOW_TRACKING_PASSWORD" in proc.stderr
        assert took < 30  # no retries with back-off
    assert not list((tmp / "wrong-sweep").glob("*/job.json"))

    # 5. promotion needs MANAGE: the editor is refused, the admin promotes
    job_run = children[0].info.run_id
    promote = [*SILAS_EXP, "baseline", "promote", job_run, "--tracking-uri", uri,
               "--suite-dir", str(tmp / "suites" / "smoke")]
    proc = team.run("editor", promote)
    print(f"--- the editor promotes: exit {proc.returncode} ---\n" + proc.stderr.strip())
    assert proc.returncode == 2 and "needs MANAGE" in proc.stderr
    assert "silas.baseline.smoke" not in client.get_experiment(team.exp_id).tags
    assert not (tmp / "suites" / "smoke" / "baseline.json").exists()
    proc = team.run("admin", promote)
    assert proc.returncode == 0, proc.stderr[-3000:]
    print("--- the admin promotes ---\n" + proc.stdout.strip())
    # the pointer names the study the job belongs to (its parent run), or the run itself
    pointer = client.get_experiment(team.exp_id).tags["silas.baseline.smoke"]
    assert pointer in {job_run, children[0].data.tags.get("mlflow.parentRunId")}, pointer
    assert (tmp / "suites" / "smoke" / "baseline.json").is_file()
    promoted = json.loads((tmp / "suites" / "smoke" / "baseline.json").read_text())
    assert promoted["promoted_by"] == "admin"  # the server's user, not the process's

    # 6. regress authenticates (a regression exits 1, bad input or refused credentials 2)
    proc = team.run("editor", [*SILAS_EXP, "regress", children[1].info.run_id,
                               "--tracking-uri", uri, "--suite-dir", str(tmp / "suites" / "smoke")])
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr[-3000:]

    # 6b. demotion needs MANAGE too: the editor is refused, the admin demotes
    demote = [*SILAS_EXP, "baseline", "demote", "--tracking-uri", uri,
              "--suite-dir", str(tmp / "suites" / "smoke"), "--reason", "the judge changed"]
    proc = team.run("editor", demote)
    assert proc.returncode == 2 and "to demote a baseline" in proc.stderr, proc.stderr[-3000:]
    assert "needs MANAGE" in proc.stderr
    assert client.get_experiment(team.exp_id).tags["silas.baseline.smoke"] == pointer
    assert (tmp / "suites" / "smoke" / "baseline.json").is_file()
    proc = team.run("admin", demote)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "silas.baseline.smoke" not in client.get_experiment(team.exp_id).tags
    assert not (tmp / "suites" / "smoke" / "baseline.json").exists()
    assert client.get_run(pointer).data.tags["silas.baseline_demoted_reason"] == "the judge changed"
    assert client.get_run(pointer).data.tags["silas.baseline_demoted_by"] == "admin"

    # 7. no password anywhere: store (pg_dump of both databases), artifacts,
    #    sweep folders, the server's log, every console
    dumps = [subprocess.run(["runuser", "-u", "postgres", "--", "pg_dump", "-h", "127.0.0.1",
                             "-p", team.pg.rsplit(":", 1)[1], db], capture_output=True,
                            text=True, check=True).stdout for db in ("mlflow", "mlflow_auth")]
    assert sweep_id in dumps[0] and "reader" in dumps[1]  # the dumps hold the data
    scanned = {"store": "\n".join(dumps), "console": "\n".join(team.console)}
    files = [p for folder in ("artifacts", "editor-sweep", "reader-sweep", "wrong-sweep",
                              "reader-ablation") for p in (tmp / folder).rglob("*") if p.is_file()]
    files.append(tmp / "server.log")
    assert len(files) > 40
    scanned.update({str(p.relative_to(tmp)): p.read_bytes().decode("utf-8", "replace")
                    for p in files})
    found = [(where, user) for where, text in scanned.items()
             for user, pw in team.passwords.items() if pw in text]
    print(f"--- secret scan: {len(team.passwords)} passwords in {len(scanned)} texts "
          f"({sum(map(len, scanned.values())):,} characters): {len(found)} found ---")
    assert found == []
    prompts = [c for c in team.console if "password:" in c.lower()]
    assert prompts == []  # silas-exp never asked for a password
