"""Jobs of one shape share a composition: the derived config equals the one
Hydra composes from scratch, hydra node included."""

from __future__ import annotations

import pickle

import pytest
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.utils import create_config_search_path
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import OmegaConf

import silas_exp  # noqa: F401  (registers resolvers)
from hydra_plugins.silas_sweeper._compositions import SharedCompositions, share_key

from ..conftest import CONF


@pytest.fixture
def loader_and_master(tmp_path):
    loader = ConfigLoaderImpl(config_search_path=create_config_search_path(str(CONF)))
    master = loader.load_configuration(
        "config", overrides=["scorer=weights,prompt", f"hydra.sweep.dir={tmp_path}"],
        run_mode=RunMode.MULTIRUN)
    HydraConfig.instance().set_config(master)
    return loader, master


def _task(cfg):
    return OmegaConf.to_container(OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"]),
                                  resolve=True)


def test_derived_configs_equal_fresh_compositions(loader_and_master):
    loader, master = loader_and_master
    shared = SharedCompositions(loader)
    jobs = [[f"repeat={r}", f"scorer={s}", f"seed={r + 7}", "+budget.evict_to_pct=0.6",
             f"metrics.horizon={20 + r}"] for r in range(3) for s in ("weights", "prompt")]
    jobs.append(["repeat=1", "scorer=weights", "seed=8", "+budget.evict_to_pct=0.65",
                 "metrics.horizon=20"])
    for overrides in jobs:
        fresh = loader.load_sweep_config(master, list(overrides))
        derived = shared.load_sweep_config(master, list(overrides))
        assert OmegaConf.to_yaml(derived) == OmegaConf.to_yaml(fresh)
        assert _task(derived) == _task(fresh)
        assert OmegaConf.is_struct(derived) and OmegaConf.is_struct(fresh)
    # weights, prompt, and the job whose "+" override differs
    assert len(shared._composed) == 3


def test_what_may_differ_between_jobs_sharing_a_composition():
    def is_group(name):
        return name in ("scorer", "suite")

    base = share_key(["repeat=0", "scorer=weights", "metrics.horizon=20"], is_group)
    assert base == share_key(["repeat=4", "scorer=weights", "metrics.horizon=30"], is_group)
    for other in (["repeat=0", "scorer=prompt", "metrics.horizon=20"],   # a group option
                  ["repeat=[0]", "scorer=weights", "metrics.horizon=20"],  # a list value
                  ["repeat=0", "scorer=weights", "+metrics.horizon=20"],
                  ["repeat=0", "scorer=weights", "hydra.job.name=x"]):
        assert share_key(other, is_group) != base
    # a key another override also touches is never shared
    touched = ["metrics.horizon=20", "metrics=x"]
    assert share_key(touched, is_group) == tuple(touched)


def test_the_loader_pickles_for_launcher_workers(loader_and_master):
    loader, master = loader_and_master
    shared = SharedCompositions(loader)
    shared.load_sweep_config(master, ["repeat=0", "scorer=weights"])
    copy = pickle.loads(pickle.dumps(shared))
    assert copy._composed == {}
    assert copy.repository is not None  # other attributes are the wrapped loader's
    cfg = copy.load_sweep_config(master, ["repeat=1", "scorer=weights"])
    assert cfg.repeat == 1
