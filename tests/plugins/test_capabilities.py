"""Capabilities: a kind gets what it declares and nothing else; ground truth
only reaches built-in reference kinds; bad plug-ins fail at validation with
messages that name the fix."""

from __future__ import annotations

import pytest

from silas_exp.errors import ConfigError
from silas_exp.plugins import CapabilityError
from silas_exp.scorers import ScorerContext, build_scorer, validate_scorer_settings
from silas_exp.scorers.base import calibration_spec


def _ctx(**offers):
    return ScorerContext(seed=1, namespace="n", scorer_model="m", **offers)


def truth(cid: str, turn: int) -> float:
    return 1.0


def test_a_plugin_declaring_ground_truth_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        validate_scorer_settings({"_target_": "tests.plugins.kinds.ASK"})
    msg = str(err.value)
    assert "tests.plugins.kinds.ASK" in msg and "'oracle'" in msg and "remove it from needs" in msg


def test_a_plugin_not_declaring_ground_truth_cannot_reach_it() -> None:
    settings = validate_scorer_settings({"_target_": "tests.plugins.kinds.PEEK"})
    with pytest.raises(CapabilityError) as err:
        build_scorer(settings, _ctx(oracle=truth))
    assert "'peek'" in str(err.value) and "'oracle'" in str(err.value)
    assert "built-in reference kinds" in str(err.value)


def test_only_declared_capabilities_are_granted() -> None:
    """The built-in oracle (a reference kind) reads ground truth; the control
    (heuristic) declares nothing and gets no model, prompt or calibration."""
    oracle = build_scorer(validate_scorer_settings({"name": "oracle"}), _ctx(oracle=truth))
    assert oracle.score([], 0) == {}
    from silas_exp.plugins import Granted
    from silas_exp.scorers.base import SCORERS

    kind = SCORERS.get("heuristic")
    view = Granted(kind, "scorer", {"seed": 1}, {"llm": object(), "oracle": truth})
    assert view.seed == 1
    for withheld in ("llm", "oracle"):
        with pytest.raises(CapabilityError):
            getattr(view, withheld)


def test_calibration_needs_are_declared_by_the_kind() -> None:
    weights = calibration_spec(validate_scorer_settings({"name": "weights", "l2": 7.0,
                                                         "explore_rate": 0.3}))
    assert (weights.l2, weights.explore_rate) == (7.0, 0.3)
    prompt = calibration_spec(validate_scorer_settings({"name": "prompt"}))
    assert (prompt.l2, prompt.explore_rate) == (20.0, 0.15)
    assert calibration_spec(validate_scorer_settings({"name": "heuristic"})) is None
    assert calibration_spec(validate_scorer_settings({"_target_": "tests.plugins.kinds.LONGEST"})) is None


@pytest.mark.parametrize("target, says", [
    ("tests.plugins.kinds.NO_SUCH", "cannot be imported"),
    ("no_such_package.KIND", "cannot be imported"),
    ("tests.plugins.kinds.NOT_A_KIND", "not a scorer kind"),
])
def test_bad_targets_name_the_fix(target: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        validate_scorer_settings({"_target_": target})
    assert target in str(err.value) and says in str(err.value)


def test_unknown_name_lists_the_options() -> None:
    with pytest.raises(ConfigError) as err:
        validate_scorer_settings({"name": "nope"})
    msg = str(err.value)
    assert "'nope'" in msg and "heuristic" in msg and "silas_exp.scorers" in msg


def test_a_target_setting_is_validated_like_a_built_in() -> None:
    with pytest.raises(ConfigError) as err:
        validate_scorer_settings({"_target_": "tests.plugins.kinds.LONGEST", "depth": 3})
    assert "scorer.depth: there is no setting 'depth' under scorer" in str(err.value)


def test_an_unlisted_metric_plugin_is_a_config_error() -> None:
    from silas_exp.metrics.plugins import case_metric_functions

    with pytest.raises(ConfigError) as err:
        case_metric_functions(["nope.metric"])
    assert "metrics.plugins" in str(err.value) and "silas_exp.metrics" in str(err.value)
