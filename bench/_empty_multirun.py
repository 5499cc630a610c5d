"""The reference floor for a sweep's wall time: a plain Hydra multirun of
empty jobs, each logging 30 params and 20 metrics to MLflow (the store is
created by the launching process first, as MLflow needs).

    python bench/_empty_multirun.py -m +i='range(0,20)' store=sqlite:///tmp/x.db

Used by bench_decide.py; it imports mlflow itself because it stands for what a
team would write by hand without silas_exp.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig


@hydra.main(version_base="1.3", config_path=None, config_name=None)
def main(cfg: DictConfig) -> None:
    import mlflow

    mlflow.set_tracking_uri(cfg.store)
    experiment = mlflow.get_experiment_by_name("empty") or mlflow.get_experiment(
        mlflow.create_experiment("empty"))
    with mlflow.start_run(experiment_id=experiment.experiment_id):
        mlflow.log_params({f"p{k}": k for k in range(30)})
        mlflow.log_metrics({f"m{k}": float(k) for k in range(20)})


if __name__ == "__main__":
    main()
