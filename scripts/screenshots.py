"""Screenshots of the MLflow UI for ``docs/img/`` (not part of the test run).

Builds a throwaway project folder, fills an MLflow store the way a user would —
the README's sweep (``scorer=weights,prompt,online``), a baseline promoted from
it and a ``regress`` check, a later study against another control, a
compression-probe sweep, and one real-model probe run against the local
Messages API server of the tests (real ``anthropic`` SDK, judge=llm) — serves
it on 127.0.0.1 as ``silas-exp ui`` does (``mlflow server --app-name
silas-exp``) and takes PNGs in headless Chromium, each page in a
fresh profile (a new user's browser: nothing clicked before, nothing closed by
this script), 1280×800 unless said:

* ``experiments_list.png``  the experiments list: each description opens with plain words
* ``experiment_runs.png``   the experiment as the printed link opens it (runs)
* ``runs_expanded.png``     the runs table with the sweep's parent run expanded: its name
                            opens with the verdict counts (``1✓ 1✗ 1?``), all three visible
* ``job_clicked.png``       a job's name clicked in that table: its run page, "Model training"
* ``job_metrics.png``       that job's "Model metrics" tab as it opens: the gated section first
* ``paired_table.png``      the parent run's description expanded, scrolled to the table of
                            each variant beside the control on that variant's own cases
* ``chart_view.png``        the experiment's chart view, its charts searched for ``ndcg``: the
                            two studies' margins, a section per control
* ``parent_verdict.png``    the README sweep's parent run at 1600×1000: the decision in its
                            collapsed description
* ``child_run.png``         a job run of the README sweep: name, description, metrics, dataset
* ``ablation_report.png``   the probe sweep parent's ``ablation.html`` in the artifact view
* ``probe_trace.png``       a probe's trace (answer + judge spans) with the judge's feedback
* ``plain_mlflow.png``      the experiment as plain ``mlflow server`` (no ``--app-name``) shows it
                            to a new browser at 1600×1000: GenAI, its pop-up, the Assistant

Needs Debian's ``chromium`` and ``chromium-driver``, ``pip install selenium``, and
silas_exp installed (its ``mlflow.app`` entry point); run from the repository root:

    python scripts/screenshots.py [--out docs/img] [--keep /tmp/shots]

PNGs are reduced to a 256-colour palette (each well under 200 KB).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SIZE = (1280, 800)
WIDE = (1600, 1000)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(module: str, args: list[str], env: dict[str, str] | None = None,
         ok: tuple[int, ...] = (0,)) -> None:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME")}
    proc = subprocess.run([sys.executable, "-m", module, *args], cwd=REPO,
                          env={**clean, "MLFLOW_DISABLE_TELEMETRY": "true", **(env or {})},
                          capture_output=True, text=True, timeout=3600)
    if proc.returncode not in ok:
        raise SystemExit(f"{module} {' '.join(args)} failed:\n{proc.stderr[-3000:]}")


def _silas(work: Path, *args: str, env: dict[str, str] | None = None) -> None:
    paths = [f"paths.root={work}", f"paths.suites={REPO / 'suites'}", f"paths.cache={work / 'cache'}"]
    _run("silas_exp", [*args, *paths], env)


def _promote_and_regress(work: Path) -> None:
    """A weights job becomes the baseline; an online job is checked against it."""
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{work / 'mlruns' / 'mlflow.db'}"
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("silas-default").experiment_id
    runs = client.search_runs([exp], order_by=["attributes.start_time ASC"])
    pick = {r.data.tags.get("silas.variant"): r.info.run_id for r in runs}
    suite_dir = work / "suites" / "default"
    shutil.copytree(REPO / "suites" / "default", suite_dir)
    cli = ["--tracking-uri", uri, "--suite-dir", str(suite_dir)]  # the suite's copy, not REPO's
    _run("silas_exp.cli.main", ["baseline", "promote", pick["scorer=weights"], *cli])
    _run("silas_exp.cli.main", ["regress", pick["scorer=online"], *cli], ok=(0, 1))


def fill_store(work: Path) -> None:
    from tests.fakes.messages_server import API_KEY, FakeMessagesServer
    from tests.tracking.responders import grading_responder

    _silas(work, "-m", "scorer=weights,prompt,online", f"hydra.sweep.dir={work / 'multirun'}")
    # the store as the README's sweep leaves it, before a promotion and a check put their
    # lines above the decision in its parent's description (parent_verdict.png)
    (work / "readme").mkdir(exist_ok=True)
    shutil.copy2(work / "mlruns" / "mlflow.db", work / "readme" / "mlflow.db")
    _promote_and_regress(work)
    # a later study of the same suite against another control: its margins charts get a
    # section of their own in the experiment's chart view (chart_view.png)
    _silas(work, "-m", "scorer=online,weights", "analysis.control=\"scorer=weights\"",
           f"hydra.sweep.dir={work / 'later'}")
    _silas(work, "-m", "suite=probes", f"suite.path={REPO / 'probes' / 'default'}",
           "eviction=keep_all,anchored,truncate", "repeats=3",
           "analysis.control=\"eviction=keep_all\"", f"hydra.sweep.dir={work / 'probe_sweep'}")
    with FakeMessagesServer(responder=grading_responder, latency_s=0.25, jitter_s=0.1) as server:
        _silas(work, "suite=probes", f"suite.path={REPO / 'probes' / 'default'}",
               "suite.max_cases=1", "eviction=anchored",
               "model=claude-haiku-4-5", "judge=llm", "judge.repeats=1",
               f"llm.base_url={server.base_url}", f"hydra.run.dir={work / 'probe'}",
               env={"ANTHROPIC_API_KEY": API_KEY})


def serve(work: Path, wait: float = 300.0, plain: bool = False, db: Path | None = None
          ) -> tuple[subprocess.Popen, str]:
    """The store (``db``, default the project's) served as ``silas-exp ui`` serves
    it, or (``plain``) by plain MLflow."""
    from silas_exp.tracking.ui_app import APP_NAME

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
         "--backend-store-uri", f"sqlite:///{db or work / 'mlruns' / 'mlflow.db'}",
         "--workers", "1", *([] if plain else ["--app-name", APP_NAME])],
        env={**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + wait
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2):
                return server, url
        except OSError:
            time.sleep(0.5)
    stop(server)
    raise SystemExit(f"mlflow server did not become healthy within {wait:.0f} s")


def stop(server: subprocess.Popen) -> None:
    """The server and every process it started (its process group)."""
    from silas_exp.cli.ui import _stop

    _stop(server)


def browser(size: tuple[int, int] = SIZE):
    """Headless Chromium with a fresh profile, at ``size``."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    profile = tempfile.mkdtemp(prefix="silas-chromium-")  # a new user's browser: fresh profile
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}"):
        opts.add_argument(arg)
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    driver = webdriver.Chrome(options=opts, service=Service(shutil.which("chromedriver")))
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": size[0], "height": size[1], "deviceScaleFactor": 1, "mobile": False})
    return driver


def _click(driver, xpath: str, wait: float = 1.5) -> bool:
    from selenium.webdriver.common.by import By

    found = driver.find_elements(By.XPATH, xpath)
    if found:
        driver.execute_script("arguments[0].click();", found[0])
        time.sleep(wait)
    return bool(found)


def _open(driver, url: str, wait: float = 6.0, until: str | None = None,
          limit: float = 240.0) -> None:
    """Load ``url``; wait until an element matches ``until`` (a busy machine serves
    slowly), then ``wait`` seconds more for the rest of the page."""
    from selenium.webdriver.common.by import By

    driver.get(url)
    if until and not _wait_for(driver, lambda d: any(
            e.is_displayed() for e in d.find_elements(By.XPATH, until)), limit):
        raise SystemExit(f"{url}: nothing matched {until} within {limit:.0f} s")
    time.sleep(wait)


def _real_click(driver, element) -> None:
    """A pointer click as a user's (move, press, release), not a script's ``.click()``."""
    from selenium.webdriver.common.action_chains import ActionChains

    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)
    time.sleep(0.5)
    ActionChains(driver).move_to_element(element).pause(0.3).click().perform()


def _wait_for(driver, test, wait: float) -> bool:
    deadline = time.time() + wait
    while time.time() < deadline:
        if test(driver):
            return True
        time.sleep(0.5)
    return False


def shoot_runs_table(driver, url: str, experiment: str, sweep_id: str, job: str, out: Path) -> None:
    """The runs table, its parent expanded; then a job's name clicked in it (the
    table's run links carry no ``?workflowType=``: the page follows the browser's
    stored choice, which ``silas-exp ui`` defaults to "Model training"), and that
    job's "Model metrics" tab."""
    from selenium.webdriver.common.by import By

    _open(driver, f"{url}/#/experiments/{experiment}/runs?workflowType=machine_learning", wait=5,
          until="//button[contains(@data-component-id,'runnamecellrenderer')]")
    save(driver, out, "experiment_runs.png")
    # the expand button of the parent's row (a later study's row may come first)
    _click(driver, f"//a[contains(., '{sweep_id}')]/preceding::button"
                   "[contains(@data-component-id,'runnamecellrenderer')][1]", wait=3)
    save(driver, out, "runs_expanded.png")

    def visible_links():
        return [a for a in driver.find_elements(By.XPATH, f"//a[contains(@href,'/runs/{job}')]")
                if a.is_displayed()]

    links = visible_links()
    if not links:
        raise SystemExit(f"job {job} has no visible link in the runs table")
    _real_click(driver, links[0])
    if not _wait_for(driver, lambda d: f"/runs/{job}" in d.current_url, 20):
        raise SystemExit(f"clicking job {job} left the page at {driver.current_url}")
    _wait_for(driver, lambda d: "Metrics (" in d.find_element(By.TAG_NAME, "body").text, 240)
    time.sleep(5)  # the run page loads its params, metrics and datasets
    body = driver.find_element(By.TAG_NAME, "body").text
    if "Evaluation runs" in body:
        raise SystemExit("the clicked job opened MLflow's GenAI evaluation layout")
    save(driver, out, "job_clicked.png")
    # its "Model metrics" tab as it opens (the tab's own address, no ?workflowType=)
    _open(driver, f"{url}/#/experiments/{experiment}/runs/{job}/model-metrics", wait=8,
          until="//*[starts-with(normalize-space(), 'gated')]")
    save(driver, out, "job_metrics.png")


def shoot_paired_table(driver, url: str, experiment: str, parent: str, out: Path) -> None:
    """The parent run's description expanded and scrolled to the paired table."""
    from selenium.webdriver.common.by import By

    _open(driver, f"{url}/#/experiments/{experiment}/runs/{parent}?workflowType=machine_learning",
          wait=5, until="//*[contains(., 'Show more')]")
    for xpath in ("//button[contains(., 'Show more') or contains(., 'See more') "
                  "or contains(., 'Expand') or contains(@aria-label, 'xpand')]",):
        _click(driver, xpath, wait=2)
    heads = driver.find_elements(By.XPATH, "//th[contains(., 'on the same cases')]")
    if not heads:
        raise SystemExit("the parent's description shows no paired table")
    driver.execute_script("arguments[0].scrollIntoView({block: 'start'});", heads[0])
    time.sleep(2)
    save(driver, out, "paired_table.png")


def save(driver, out: Path, name: str) -> Path:
    from PIL import Image

    raw = out / f".{name}.raw.png"
    driver.save_screenshot(str(raw))
    path = out / name
    Image.open(raw).convert("RGB").quantize(colors=256).save(path, optimize=True)
    raw.unlink()
    print(f"{path} ({path.stat().st_size // 1024} KB)")
    return path


def first_job(client, parent) -> str:
    """The newest job run of a sweep: the first row under its parent in the runs table."""
    jobs = client.search_runs([parent.info.experiment_id],
                              f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'",
                              order_by=["attributes.start_time DESC"], max_results=1)
    return jobs[0].info.run_id


def shoot(url: str, work: Path, out: Path) -> None:
    import mlflow
    from mlflow.tracking import MlflowClient
    from selenium.webdriver.common.by import By

    uri = f"sqlite:///{work / 'mlruns' / 'mlflow.db'}"
    client = MlflowClient(uri)
    default = client.get_experiment_by_name("silas-default").experiment_id
    probes = client.get_experiment_by_name("silas-probes").experiment_id
    mlflow.set_tracking_uri(uri)
    trace = mlflow.search_traces(locations=[probes], return_type="list", max_results=1,
                                 filter_string="tags.`silas.task` = 'probe'")[0]
    runs_view = "?workflowType=machine_learning"  # every link silas_exp prints carries it
    parent = next(r for r in client.search_runs([default], order_by=["attributes.start_time ASC"])
                  if r.data.tags.get("silas.kind") == "sweep")  # the README sweep's
    probe_parent = next(r for r in client.search_runs([probes])
                        if r.data.tags.get("silas.kind") == "sweep")
    driver = browser()
    try:
        _open(driver, f"{url}/#/experiments", wait=3, until="//a[normalize-space()='silas-default']")
        save(driver, out, "experiments_list.png")
        _open(driver, f"{url}/#/experiments/{probes}/runs/{probe_parent.info.run_id}/artifacts/"
                      f"ablation.html{runs_view}", wait=10, until="//iframe")
        save(driver, out, "ablation_report.png")
        _open(driver, f"{url}/#/experiments/{default}/runs{runs_view}&compareRunsMode=CHART",
              wait=15, until="//*[starts-with(normalize-space(), 'margins vs')]")
        search = driver.find_element(By.XPATH, "//input[@placeholder='Search metric charts']")
        search.send_keys("ndcg")  # one metric: each study's section fits the first screen
        time.sleep(5)
        save(driver, out, "chart_view.png")
        shoot_paired_table(driver, url, default, parent.info.run_id, out)
        shoot_runs_table(driver, url, default, parent.data.tags["silas.sweep_id"],
                         first_job(client, parent), out)
        # a job of the README sweep (baseline promote marks the study's parent, not a job)
        _open(driver, f"{url}/#/experiments/{default}/runs/{first_job(client, parent)}{runs_view}",
              wait=5, until="//*[starts-with(normalize-space(), 'Metrics (')]")
        save(driver, out, "child_run.png")
        _open(driver, f"{url}/#/experiments/{probes}/traces?workflowType=genai"
                      f"&selectedEvaluationId={trace.info.trace_id}", wait=8)
        _click(driver, "//button[.//*[contains(text(),'Assess')] or contains(.,'Assess')]", wait=2)
        save(driver, out, "probe_trace.png")
    finally:
        driver.quit()


def shoot_readme(url: str, work: Path, out: Path) -> None:
    """The README sweep's parent run, as the link `silas-exp ui` prints opens it in
    a new browser on a wide screen (the store before the promotion and the check)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{work / 'readme' / 'mlflow.db'}")
    default = client.get_experiment_by_name("silas-default").experiment_id
    parent = next(r for r in client.search_runs([default])
                  if r.data.tags.get("silas.kind") == "sweep")
    wide = browser(WIDE)
    try:
        _open(wide, f"{url}/#/experiments/{default}/runs/{parent.info.run_id}"
                    "?workflowType=machine_learning", wait=8,
              until="//*[contains(text(), 'About this run')]")
        save(wide, out, "parent_verdict.png")
    finally:
        wide.quit()


def shoot_plain(url: str, work: Path, out: Path) -> None:
    """The experiment as plain MLflow shows it to a new browser, opened without
    ``?workflowType=``: what a team server's users see until they click."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{work / 'mlruns' / 'mlflow.db'}")
    default = client.get_experiment_by_name("silas-default").experiment_id
    driver = browser(WIDE)
    try:
        _open(driver, f"{url}/#/experiments/{default}", wait=8,
              until="//*[contains(text(), 'Detect Issues')]")
        save(driver, out, "plain_mlflow.png")
    finally:
        driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img")
    parser.add_argument("--keep", type=Path, help="build the store here and keep it")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.keep or Path(tempfile.mkdtemp(prefix="silas-shots-"))
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "mlruns" / "mlflow.db").exists():
        fill_store(work)
    try:
        for db, plain, take in ((work / "readme" / "mlflow.db", False, shoot_readme),
                                (None, False, shoot), (None, True, shoot_plain)):
            server, url = serve(work, plain=plain, db=db)
            try:
                take(url, work, args.out)
            finally:
                stop(server)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
