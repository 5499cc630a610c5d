"""Who may do what on a team tracking server (MLflow's basic-auth app).

Credentials are MLflow's own: ``MLFLOW_TRACKING_USERNAME`` /
``MLFLOW_TRACKING_PASSWORD``, ``MLFLOW_TRACKING_TOKEN``, or the ``[mlflow]``
section of ``~/.mlflow/credentials``, resolved by MLflow's
``get_default_host_creds``, the function its clients call. This module reads
them only to send them; its messages name the variables, never their values.

Two checks, each one request or two, made before work that would be lost:

* ``whoami``: the server knows these credentials (a 401 becomes one paragraph
  naming the server and the variables to check; exit 2, no retry);
* ``require``: the user holds a permission on an experiment, as the server
  resolves it (``/users/permissions/get``), else one paragraph saying which
  permission is missing, on which experiment, and who can grant it.

A server without the basic-auth app, and every local store, has no users:
both checks pass. The rules: a sweep needs ``EDIT`` on its experiment (it
creates runs and logs to them); promoting or demoting a baseline needs
``MANAGE``, because the baseline is the team's control and ``EDIT`` is what
every member's sweep needs (see docs/operations.md, "A team server").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from silas_exp.errors import TrackingError

SWEEP = "EDIT"  # create runs, log metrics, artifacts, tags and dataset inputs
PROMOTE = "MANAGE"  # move or clear the experiment's baseline pointer (the team's control)
# MLflow's permissions, weakest first (mlflow.server.auth.permissions)
RANK = {"NO_PERMISSIONS": 0, "DENY": 0, "READ": 1, "USE": 2, "EDIT": 3, "MANAGE": 4}
CREDENTIALS = ("MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN, "
               "or the [mlflow] section of ~/.mlflow/credentials)")
CURRENT_USER = "/api/2.0/mlflow/users/current"
EXPERIMENT = "/api/2.0/mlflow/experiments/get-by-name"
USER_PERMISSION = "/api/3.0/mlflow/users/permissions/get"


@dataclass(frozen=True)
class Identity:
    """Who the server takes this process for; ``username`` None: no authentication."""

    uri: str
    username: str | None = None
    is_admin: bool = False


def is_server(uri: str | None) -> bool:
    return bool(uri) and str(uri).startswith(("http://", "https://"))


def refuse_credentials_in_uri(uri: str, field: str = "tracking.uri") -> None:
    """A password inside the URI would be written wherever the URI is (the sweep's
    manifest, the console): refused, with where credentials go instead."""
    parts = urlsplit(uri)
    if parts.username is None and parts.password is None:
        return
    host = parts.hostname or ""
    clean = parts._replace(netloc=host + (f":{parts.port}" if parts.port else "")).geturl()
    raise TrackingError(f"{field} carries credentials ({parts.scheme}://…@{host}); silas_exp "
                        "writes the tracking URI into every sweep folder, so it must not hold a "
                        f"password. Use {field}={clean} and put the credentials in "
                        f"{CREDENTIALS}.")


def _host_creds(uri: str) -> Any:
    from mlflow.utils.credentials import get_default_host_creds  # MLflow's own resolution

    return get_default_host_creds(uri)


def _get(uri: str, endpoint: str, **params: str) -> Any:
    """One GET with MLflow's own timeout and retries, which retry only transient
    answers (429, 5xx): a refused password (401, 403) is never sent again."""
    from mlflow.utils.rest_utils import http_request

    try:
        return http_request(_host_creds(uri), endpoint, "GET", raise_on_status=False,
                            params=params)
    except Exception as exc:  # noqa: BLE001  (connection refused, DNS, TLS, timeout: named below)
        first = (str(exc).splitlines() or [""])[0][:300]
        raise TrackingError(f"tracking server {uri} did not answer {endpoint} ({type(exc).__name__}: "
                            f"{first}). Start it, fix tracking.uri, or run with tracking=none; "
                            "nothing was run.") from None


def _sent(uri: str) -> str:
    creds = _host_creds(uri)
    if creds.username and creds.password:
        return f"the password of user {creds.username!r}"
    if creds.token:
        return "a token (MLFLOW_TRACKING_TOKEN)"
    if creds.username:
        return f"no credentials (user {creds.username!r} has no password set)"
    return "no credentials"


def acting_user(uri: str | None) -> str:
    """Who a promotion, demotion or accepted regression is recorded as done
    by: the user the team server authenticates (its credentials' username),
    else the operating-system user."""
    from silas_exp.tracking.payload import user_name

    if is_server(uri):
        username = getattr(_host_creds(str(uri)), "username", None)
        if username:
            return username
    return user_name()


def whoami(uri: str) -> Identity:
    """The user the server authenticates; raises TrackingError (exit 2) on 401."""
    resp = _get(uri, CURRENT_USER)
    if resp.status_code == 401:
        sent = _sent(uri)
        fix = ("set " if sent.startswith("no credentials") else "check ") + CREDENTIALS
        raise TrackingError(f"tracking server {uri} refused {sent} (401 Unauthorized: a wrong "
                            f"password, an unknown user or an expired token). {fix[0].upper()}"
                            f"{fix[1:]}; an admin of the server can reset a password. Nothing "
                            "was run or written.")
    if resp.status_code != 200:  # no basic-auth app (404): a server without users
        return Identity(uri)
    user = resp.json().get("user", {})
    return Identity(uri, user.get("username"), bool(user.get("is_admin")))


def experiment_id(uri: str, name: str) -> str | None:
    """The experiment's id, None when it does not exist yet."""
    resp = _get(uri, EXPERIMENT, experiment_name=name)
    if resp.status_code == 200:
        return resp.json()["experiment"]["experiment_id"]
    if resp.status_code == 403:
        return ""  # exists, and this user may not even read it
    return None


def permission(who: Identity, exp_id: str) -> str:
    """The user's effective permission on the experiment, as the server resolves it."""
    if who.username is None or who.is_admin:
        return "MANAGE"
    resp = _get(who.uri, USER_PERMISSION, username=who.username, resource_type="experiment",
                resource_id=exp_id)
    if resp.status_code != 200:
        return "NO_PERMISSIONS"
    return str(resp.json().get("permission", "NO_PERMISSIONS"))


def require(uri: str, experiment: str, needed: str, action: str, *, by_id: bool = False) -> None:
    """Raise TrackingError (exit 2) unless this process's user holds ``needed``
    on the experiment (a name, or an id with ``by_id``). A local store, a server
    without users, and an experiment that does not exist yet (its creator gets
    MANAGE on it) pass."""
    if not is_server(uri):
        return
    who = whoami(uri)
    if who.username is None:
        return
    exp_id = experiment if by_id else experiment_id(uri, experiment)
    if exp_id is None:
        return
    held = permission(who, exp_id) if exp_id else "NO_PERMISSIONS"
    if RANK.get(held, 0) >= RANK[needed]:
        return
    label = f"experiment id {experiment}" if by_id else f"experiment {experiment!r}" + (
        f" (id {exp_id})" if exp_id else "")
    raise TrackingError(
        f"user {who.username!r} holds {held} on {label} at {uri}; to {action} needs {needed}. "
        f"A server admin, or a user with MANAGE on that experiment, can grant it (MLflow UI: the "
        f"experiment's permissions; or MLflow's auth client: get_app_client('basic-auth', "
        f"tracking_uri=...).grant_user_permission({who.username!r}, 'experiment', "
        f"'{exp_id or '<id>'}', '{needed}')). Nothing was run or written.")


def refused(uri: str, call: str) -> TrackingError:
    """A write the server refused (403) after the checks above passed: the
    permission was revoked meanwhile, or a command writes where its user may only read."""
    return TrackingError(
        f"tracking server {uri} refused {call} (403 Permission denied): this user needs "
        f"{SWEEP} on the experiment ({PROMOTE} to promote or demote a baseline). A server admin, "
        "or a user with MANAGE on that experiment, can grant it; commands that can skip writing "
        "(`silas-exp regress --no-log`, `silas-exp ablation` without --log) need only READ.")


def require_promote(uri: str, exp_id: str) -> None:
    """Promotion's rule: MANAGE on the run's experiment (see the module's docstring)."""
    require(uri, exp_id, PROMOTE, "promote a baseline (the team's control)", by_id=True)


def require_demote(uri: str, exp_id: str) -> None:
    """Demotion's rule, promotion's: taking the team's control away is the same decision."""
    require(uri, exp_id, PROMOTE, "demote a baseline (the team's control)", by_id=True)
