"""MLflow's own conventions: MLFLOW_TRACKING_URI and MLFLOW_EXPERIMENT_NAME
are honoured when exported; an explicit tracking.uri= / tracking.experiment=
(or --tracking-uri) wins over them."""

from __future__ import annotations

from silas_exp.config import validate
from silas_exp.tracking.jobs import experiment_name
from silas_exp.tracking.store import artifact_root_for


def _cfg(compose, *overrides):
    from omegaconf import OmegaConf

    return validate(OmegaConf.to_container(compose(*overrides), resolve=True))


def test_default_store_without_environment(compose, tmp_path):
    cfg = _cfg(compose)
    assert cfg.tracking.uri == f"sqlite:///{tmp_path / 'mlruns'}/mlflow.db"
    assert experiment_name(cfg) == "silas-default"


def test_environment_then_config_wins(compose, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow.team:5000")
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "context-eviction")
    cfg = _cfg(compose, "suite=smoke")
    assert cfg.tracking.uri == "http://mlflow.team:5000"
    assert experiment_name(cfg) == "context-eviction"
    cfg = _cfg(compose, "tracking.uri=sqlite:///elsewhere.db", "tracking.experiment=mine")
    assert cfg.tracking.uri == "sqlite:///elsewhere.db" and experiment_name(cfg) == "mine"
    assert not _cfg(compose, "tracking=none").tracking.enabled


def test_management_cli_follows_the_environment(monkeypatch):
    from silas_exp.cli.main import build_parser, default_uri

    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow.team:5000")
    assert default_uri() == "http://mlflow.team:5000"
    args = build_parser().parse_args(["report", "RUN", "--tracking-uri", "sqlite:///x.db"])
    assert args.tracking_uri == "sqlite:///x.db"
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    assert default_uri().startswith("sqlite:///") and default_uri().endswith("/mlruns/mlflow.db")


def test_a_server_keeps_its_own_artifacts():
    assert artifact_root_for("http://h:5000", "/srv/mlruns/artifacts") is None
    assert artifact_root_for("http://h:5000", "s3://bucket/mlflow") == "s3://bucket/mlflow"
    assert artifact_root_for("sqlite:///x.db", "/srv/a") == "/srv/a"
