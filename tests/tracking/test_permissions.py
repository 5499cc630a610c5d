"""Credentials and permissions against a team server, on a stand-in for MLflow's
basic-auth endpoints (127.0.0.1): one paragraph, exit 2, one request per check,
and never a password in a message. The real server: tests/sweeps/test_team_server.py."""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from silas_exp.errors import TrackingError
from silas_exp.tracking import permissions
from silas_exp.tracking.preflight import preflight

USERS = {"ada": ("ada-password-123", False), "root": ("root-password-123", True)}
GRANTS = {("ada", "7"): "READ", ("ada", "8"): "EDIT"}
EXPERIMENTS = {"team": "7", "mine": "8"}


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def _send(self, code: int, body: dict | None = None) -> None:
        data = json.dumps(body or {}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802
        self.server.requests.append(self.path)
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == "/health":
            return self._send(200)
        if not self.server.auth:
            return self._send(404 if "users" in url.path else 200, {})
        header = self.headers.get("Authorization", "")
        user, _, password = base64.b64decode(header.removeprefix("Basic ")).decode().partition(":")
        if user not in USERS or USERS[user][0] != password:
            return self._send(401, {"error_code": "UNAUTHENTICATED"})
        if url.path == permissions.CURRENT_USER:
            return self._send(200, {"user": {"id": 1, "username": user,
                                             "is_admin": USERS[user][1]}})
        if url.path == permissions.EXPERIMENT:
            exp = EXPERIMENTS.get(query["experiment_name"])
            return self._send(200, {"experiment": {"experiment_id": exp}}) if exp else \
                self._send(404, {"error_code": "RESOURCE_DOES_NOT_EXIST"})
        if url.path == permissions.USER_PERMISSION:
            held = GRANTS.get((query["username"], query["resource_id"]), "READ")
            return self._send(200, {"allowed": held != "READ", "permission": held})
        return self._send(404)


@pytest.fixture(params=[True], ids=["basic-auth"])
def server(request):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.requests, httpd.auth = [], request.param
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def _as(monkeypatch, user: str | None, password: str | None) -> None:
    monkeypatch.setenv("HOME", "/nonexistent")  # no ~/.mlflow/credentials of the machine
    for name, value in (("MLFLOW_TRACKING_USERNAME", user), ("MLFLOW_TRACKING_PASSWORD", password)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    monkeypatch.delenv("MLFLOW_TRACKING_TOKEN", raising=False)


def test_a_wrong_password_is_one_paragraph_and_one_request(server, monkeypatch):
    httpd, uri = server
    _as(monkeypatch, "ada", "not-her-password")
    with pytest.raises(TrackingError) as err:
        preflight(uri, "team")
    text = str(err.value)
    assert err.value.exit_code == 2 and "\n" not in text
    assert f"tracking server {uri} refused the password of user 'ada' (401" in text
    assert "MLFLOW_TRACKING_PASSWORD" in text and "not-her-password" not in text
    assert [p for p in httpd.requests if p != "/health"] == [permissions.CURRENT_USER]


def test_no_credentials_says_which_variables_to_set(server, monkeypatch):
    _, uri = server
    _as(monkeypatch, None, None)
    with pytest.raises(TrackingError, match=r"refused no credentials .* Set MLFLOW_TRACKING_USERNAME"):
        permissions.whoami(uri)


def test_a_reader_is_refused_with_the_permission_experiment_and_granter(server, monkeypatch):
    _, uri = server
    _as(monkeypatch, "ada", USERS["ada"][0])
    with pytest.raises(TrackingError) as err:
        preflight(uri, "team")
    text = str(err.value)
    assert f"user 'ada' holds READ on experiment 'team' (id 7) at {uri}" in text
    assert "needs EDIT" in text and "A server admin, or a user with MANAGE" in text
    assert "grant_user_permission('ada', 'experiment', '7', 'EDIT')" in text
    assert USERS["ada"][0] not in text


def test_who_may_sweep_and_who_may_promote_or_demote(server, monkeypatch):
    _, uri = server
    _as(monkeypatch, "ada", USERS["ada"][0])
    preflight(uri, "mine")  # EDIT
    preflight(uri, "new-experiment")  # not there yet: its creator will manage it
    with pytest.raises(TrackingError, match=r"holds EDIT on experiment id 8 .* needs MANAGE"):
        permissions.require_promote(uri, "8")
    with pytest.raises(TrackingError, match=r"to demote a baseline .* needs MANAGE"):
        permissions.require_demote(uri, "8")  # taking the control away: the same decision
    _as(monkeypatch, "root", USERS["root"][0])  # an admin manages everything
    permissions.require_promote(uri, "7")
    permissions.require_demote(uri, "7")
    assert permissions.whoami(uri) == permissions.Identity(uri, "root", True)


@pytest.mark.parametrize("server", [False], ids=["no-auth"], indirect=True)
def test_a_server_without_users_passes(server, monkeypatch):
    _, uri = server
    _as(monkeypatch, None, None)
    preflight(uri, "team")
    assert permissions.whoami(uri) == permissions.Identity(uri)


def test_local_stores_need_no_request(tmp_path):
    permissions.require(f"sqlite:///{tmp_path}/mlflow.db", "team", permissions.PROMOTE, "promote")


def test_credentials_in_the_uri_are_refused_without_echoing_them():
    with pytest.raises(TrackingError) as err:
        preflight("http://ada:s3cret-pw@mlflow.example:5000", "team")
    text = str(err.value)
    assert "s3cret-pw" not in text and "tracking.uri=http://mlflow.example:5000" in text
    assert "MLFLOW_TRACKING_PASSWORD" in text


def test_mlflow_credentials_file_is_read(server, monkeypatch, tmp_path):
    _, uri = server
    _as(monkeypatch, None, None)
    (tmp_path / ".mlflow").mkdir()
    (tmp_path / ".mlflow" / "credentials").write_text(
        f"[mlflow]\nmlflow_tracking_username = ada\nmlflow_tracking_password = {USERS['ada'][0]}\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert permissions.whoami(uri).username == "ada"


def test_an_action_on_a_team_server_is_recorded_as_its_authenticated_user(monkeypatch):
    from silas_exp.tracking.payload import user_name
    from silas_exp.tracking.permissions import acting_user

    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "alice")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "not-logged")
    assert acting_user("http://127.0.0.1:5999") == "alice"
    assert acting_user("sqlite:///mlruns/mlflow.db") == user_name()  # a local store: the OS user
    assert acting_user(None) == user_name()
