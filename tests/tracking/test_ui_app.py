"""What ``silas-exp ui`` serves: MLflow's app, its UI page with a script that
gives two browser-kept choices their defaults (Model training; the Assistant
already opened once), keeping any choice the browser holds."""

from __future__ import annotations

import asyncio
import http.server
import json
import re
import shutil
import threading

import pytest

from silas_exp.tracking.ui_app import DEFAULTS, SeededDefaults, defaults_script, with_defaults

PAGE = (b'<!doctype html><html lang="en"><head><meta charset="utf-8"/><title>MLflow</title>'
        b'<script defer="defer" src="static-files/static/js/main.js"></script></head>'
        b'<body><div id="root"></div></body></html>')


seen: list[dict] = []  # the requests the app below was given


def _mlflow_page(scope, receive, send):
    """An ASGI app serving the UI page as MLflow's Flask app does (with validators)."""
    async def app():
        seen.append(dict(scope))
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/html; charset=utf-8"), (b"content-length", b"%d" % len(PAGE)),
            (b"etag", b'"1795-701"'), (b"last-modified", b"Sat, 28 Nov 2026 09:05:27 GMT")]})
        await send({"type": "http.response.body", "body": PAGE[:40], "more_body": True})
        await send({"type": "http.response.body", "body": PAGE[40:]})
    return app()


def _get(app, path: str, headers=()) -> tuple[dict, bytes]:
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request"}

    async def send(message):
        sent.append(message)

    asyncio.run(app({"type": "http", "method": "GET", "path": path, "headers": list(headers)},
                    receive, send))
    return sent[0], b"".join(m.get("body", b"") for m in sent[1:])


def test_the_ui_page_sets_the_defaults_before_mlflows_code():
    seen.clear()
    app = SeededDefaults(_mlflow_page)
    start, body = _get(app, "/", [(b"if-none-match", b'"1795-701"'), (b"host", b"127.0.0.1")])
    assert body.index(defaults_script()) < body.index(b"main.js")  # read before MLflow's code runs
    assert body.replace(defaults_script(), b"") == PAGE
    headers = dict(start["headers"])
    assert headers[b"content-length"] == str(len(body)).encode()
    assert b"etag" not in headers and b"last-modified" not in headers
    # a browser holding the page without the script gets it whole, never "not modified"
    assert [k for k, _ in seen[0]["headers"]] == [b"host"]


def test_everything_else_is_mlflows_own():
    seen.clear()
    start, body = _get(SeededDefaults(_mlflow_page), "/ajax-api/2.0/mlflow/runs/get")
    assert body == PAGE and dict(start["headers"])[b"etag"] == b'"1795-701"'
    _, prefixed = _get(SeededDefaults(_mlflow_page, "/mlflow"), "/mlflow/")
    assert defaults_script() in prefixed  # under mlflow ui --static-prefix
    assert with_defaults(b"no page") == b"no page"


def test_the_script_sets_only_what_the_browser_holds_no_value_for():
    script = defaults_script().decode()
    pairs = json.loads(re.search(r"\}\)\((\{.*\})\);</script>", script).group(1))
    assert {k: json.loads(v) for k, v in pairs.items()} == DEFAULTS
    assert "localStorage.getItem(k)===null" in script


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("chromium") and shutil.which("chromedriver")),
                    reason="needs Debian's chromium and chromium-driver")
def test_in_a_browser_a_users_own_choice_is_kept(tmp_path):
    """Headless Chromium, a fresh profile: a page with the script stores the
    defaults; where the browser already chose GenAI, GenAI stays."""
    pytest.importorskip("selenium")
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    (tmp_path / "index.html").write_bytes(with_defaults(PAGE.replace(b"main.js", b"none.js")))
    handler = lambda *a: http.server.SimpleHTTPRequestHandler(*a, directory=str(tmp_path))  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    opts = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                f"--user-data-dir={tmp_path / 'profile'}"):
        opts.add_argument(arg)
    opts.binary_location = shutil.which("chromium")
    driver = webdriver.Chrome(options=opts, service=Service(shutil.which("chromedriver")))
    url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
    stored = "return [localStorage.getItem('mlflow.workflowType_v1'), " \
             "localStorage.getItem('mlflow.assistant.fab.autoOpenedOnFirstLoad_v1')]"
    try:
        driver.get(url)
        assert driver.execute_script(stored) == ['"machine_learning"', "true"]
        driver.execute_script("localStorage.setItem('mlflow.workflowType_v1', '\"genai\"')")  # a click
        driver.get(url)
        assert driver.execute_script(stored) == ['"genai"', "true"]
    finally:
        driver.quit()
        server.shutdown()
