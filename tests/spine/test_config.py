"""Every option of every config group composes and validates; bad values fail
with the key, the value and a fix."""

from __future__ import annotations

import math

import pytest
from omegaconf import OmegaConf

from silas_exp.config import ExperimentConfig, job_seed, validate
from silas_exp.errors import ConfigError

from ..conftest import CONF

GROUPS = ["scorer", "eviction", "model", "prompt", "judge", "suite", "tracking", "llm"]


def _options(group: str) -> list[str]:
    """The group's options as Hydra sees them: YAML files, and the scorer and
    eviction options generated from the kinds' settings models."""
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        repository = GlobalHydra.instance().hydra.config_loader.repository
        return sorted(repository.get_group_options(group))


@pytest.mark.parametrize(
    "group,option", [(g, o) for g in GROUPS for o in _options(g)], ids=lambda v: str(v)
)
def test_every_group_option_composes_and_validates(compose, group, option):
    cfg = validate(OmegaConf.to_container(compose(f"{group}={option}"), resolve=True))
    assert isinstance(cfg, ExperimentConfig)
    node = getattr(cfg, group)
    name = node.get("name") if isinstance(node, dict) else getattr(node, "name", option)
    if group not in ("tracking", "llm", "suite"):
        assert name == option


@pytest.mark.parametrize("experiment", sorted(p.stem for p in (CONF / "experiment").glob("*.yaml")))
def test_every_experiment_composes(compose, experiment):
    cfg = compose(f"experiment={experiment}")
    validate(OmegaConf.to_container(cfg, resolve=True))


def test_required_groups_exist():
    for group in GROUPS + ["experiment"]:
        assert _options(group), f"conf/{group}/ has no options"
    assert {"heuristic", "weights", "prompt", "online"} <= set(_options("scorer"))
    assert "claude-haiku-4-5" in _options("model")


def _bad(compose, *overrides) -> str:
    with pytest.raises(ConfigError) as err:
        validate(OmegaConf.to_container(compose(*overrides), resolve=True))
    return str(err.value)


def test_negative_weight_names_key_value_and_fix(compose):
    msg = _bad(compose, "scorer.weights.zone.chronicle=-1.0")
    assert "scorer.weights.zone.chronicle" in msg and "-1.0" in msg
    assert "greater than or equal to 0" in msg and "command line" in msg


def test_nan_weight_is_rejected(compose):
    msg = _bad(compose, "scorer.weights.age_decay=nan")
    assert "scorer.weights.age_decay" in msg and "finite" in msg


def test_unknown_weight_key_is_rejected(compose):
    msg = _bad(compose, "+scorer.weights.zone.attic=0.3")
    assert "scorer.weights.zone.attic: there is no setting 'attic' under scorer.weights.zone " \
        "(the settings there: chronicle, memory, workspace)" in msg


def test_repeats_below_one(compose):
    msg = _bad(compose, "repeats=0")
    assert "repeats" in msg and "0" in msg


def test_unknown_scorer_name_lists_choices(compose):
    msg = _bad(compose, "scorer.name=magic")
    assert "magic" in msg and "heuristic" in msg and "weights" in msg


def test_job_seeds_distinct_and_stable():
    seeds = [job_seed(0, r) for r in range(50)]
    assert len(set(seeds)) == 50
    assert seeds == [job_seed(0, r) for r in range(50)]
    assert job_seed(1, 0) != job_seed(0, 1)


def test_variant_hash_ignores_repeat_and_paths(compose):
    a = validate(OmegaConf.to_container(compose("repeat=0", "repeats=2"), resolve=True))
    b = validate(OmegaConf.to_container(compose("repeat=1", "repeats=2", "tracking=none"),
                                        resolve=True))
    c = validate(OmegaConf.to_container(compose("scorer=weights"), resolve=True))
    assert a.variant_hash() == b.variant_hash() != c.variant_hash()
    assert not math.isnan(a.budget.total)
