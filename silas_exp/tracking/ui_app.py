"""The MLflow UI as ``silas-exp ui`` serves it: MLflow's own server app, whose
page sets the defaults of two choices the browser keeps.

MLflow 3.17's UI keeps these choices in the browser (``localStorage``), each
stored only once a user makes it:

* GenAI or Model training (``mlflow.workflowType``; default GenAI). Every page
  opened without ``?workflowType=`` follows it: the UI root and an experiment
  open on the GenAI overview (with its "Detect Issues" pop-up), and a run
  clicked in the runs table opens in the GenAI "Evaluations" layout.
* Whether the Assistant panel has opened itself (``mlflow.assistant.fab.
  autoOpenedOnFirstLoad``): on the first page a browser loads from 127.0.0.1 it
  opens, a third of a 1600 px window wide, pushing a run's description below the fold.

The UI page this app serves sets "Model training" and "has opened itself" before
MLflow's code reads them, and only where the browser holds no choice: one made
by a click is kept. Everything else is MLflow's app unchanged. MLflow runs it
as an app of its ``mlflow.app`` entry points (``mlflow ui --app-name
silas-exp``); nothing in MLflow sets these defaults from the server, so they
are set here, in a small ASGI wrapper around MLflow's FastAPI app.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

APP_NAME = "silas-exp"  # mlflow ui --app-name silas-exp (pyproject's mlflow.app entry point)
# MLflow's localStorage keys (``<key>_v<version>``, JSON values) and the defaults set here
DEFAULTS = {"mlflow.workflowType_v1": "machine_learning",
            "mlflow.assistant.fab.autoOpenedOnFirstLoad_v1": True}
DROPPED_HEADERS = (b"content-length", b"etag", b"last-modified")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def defaults_script() -> bytes:
    """A script that stores each default the browser holds no value for."""
    pairs = json.dumps({k: json.dumps(v) for k, v in DEFAULTS.items()})
    return (f"<script>(function(d){{try{{for(var k in d){{if(localStorage.getItem(k)===null)"
            f"{{localStorage.setItem(k,d[k]);}}}}}}catch(e){{}}}})({pairs});</script>").encode()


def with_defaults(page: bytes) -> bytes:
    """The UI's page with ``defaults_script`` first in its head (before MLflow's code)."""
    head = page.find(b"<head>")
    if head < 0:
        return page
    at = head + len(b"<head>")
    return page[:at] + defaults_script() + page[at:]


class SeededDefaults:
    """MLflow's ASGI app; its UI page (``GET /``, under ``--static-prefix`` if
    any) with ``with_defaults``, sent whole (never a 304 to a page cached without them)."""

    def __init__(self, app: ASGIApp, prefix: str = "") -> None:
        self.app = app
        self.page = f"{prefix.rstrip('/')}/"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") != "GET" or \
                scope.get("path") != self.page:
            await self.app(scope, receive, send)
            return
        scope = {**scope, "headers": [(k, v) for k, v in scope.get("headers", [])
                                      if k.lower() not in (b"if-none-match", b"if-modified-since")]}
        start: Message = {}
        body: list[bytes] = []

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            page = b"".join(body)
            if start.get("status") == 200:
                page = with_defaults(page)
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() not in DROPPED_HEADERS]
            await send({**start, "headers": [*headers, (b"content-length", str(len(page)).encode())]})
            await send({"type": "http.response.body", "body": page})

        await self.app(scope, receive, capture)


def create_app() -> SeededDefaults:
    """The ``mlflow.app`` factory: MLflow's FastAPI app (the one ``mlflow ui``
    serves by default), its UI page with the defaults."""
    from mlflow.server import STATIC_PREFIX_ENV_VAR
    from mlflow.server.fastapi_app import app

    return SeededDefaults(app, os.environ.get(STATIC_PREFIX_ENV_VAR, ""))
