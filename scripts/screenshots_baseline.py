"""Screenshots of a promoted baseline and a regression check in the MLflow UI,
for ``docs/img/`` (not part of the test run).

Reads a project folder where the workflow of docs/mlflow.md ran ("Decide →
promote → change → gate": a study, ``baseline promote``, a second study and
``regress`` on one of its variants), serves its store with ``mlflow server``
on 127.0.0.1 as ``silas-exp ui`` does and takes 1280×800 PNGs in headless
Chromium with a fresh profile (``scripts/screenshots.py``'s browser and server):

* ``baseline_experiment.png``  the experiments list: the baseline, one click away
* ``baseline_run.png``         the promoted study's parent run: "Baseline:" first
* ``regress_result.png``       the checked study's parent run: the regression decision first

    python scripts/screenshots_baseline.py PROJECT_FOLDER [--out docs/img]

A project folder of that workflow (W, with a copy of ``suites/default``; run from
the repository root with ``SILAS_EXP_ROOT=$W``, ``P="paths.root=$W
paths.suites=$W/suites paths.cache=$W/cache"``, ``URI=sqlite:///$W/mlruns/mlflow.db``)::

    python -m silas_exp -m scorer=weights,prompt,online $P hydra.sweep.dir=$W/first
    silas-exp baseline promote FIRST_SWEEP_ID scorer=weights --tracking-uri $URI --suite-dir $W/suites/default
    python -m silas_exp -m scorer=prompt,online $P hydra.sweep.dir=$W/second
    silas-exp regress SECOND_SWEEP_ID scorer=prompt --tracking-uri $URI --suite-dir $W/suites/default
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from screenshots import REPO, _open, browser, save, serve, stop  # noqa: E402

RUNS_VIEW = "?workflowType=machine_learning"
WAIT = 20.0  # seconds a page gets to load (a busy machine is slow)


def shoot(url: str, work: Path, out: Path) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{work / 'mlruns' / 'mlflow.db'}")
    exp = client.get_experiment_by_name("silas-default").experiment_id
    [promoted] = client.search_runs([exp], "tags.`silas.baseline` = 'true'")
    checked = client.search_runs([exp], "tags.`silas.regress` != '' and tags.`silas.kind` = 'sweep'",
                                 order_by=["attributes.start_time DESC"])[0]  # a study checked
    driver = browser()
    try:
        _open(driver, f"{url}/#/experiments", wait=WAIT)
        save(driver, out, "baseline_experiment.png")
        _open(driver, f"{url}/#/experiments/{exp}/runs/{promoted.info.run_id}{RUNS_VIEW}", wait=WAIT)
        save(driver, out, "baseline_run.png")
        _open(driver, f"{url}/#/experiments/{exp}/runs/{checked.info.run_id}{RUNS_VIEW}", wait=WAIT)
        save(driver, out, "regress_result.png")
    finally:
        driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path, help="folder whose mlruns/mlflow.db to show")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    server, url = serve(args.project, wait=600)  # a busy machine starts it slowly
    try:
        shoot(url, args.project, args.out)
    finally:
        stop(server)


if __name__ == "__main__":
    main()
