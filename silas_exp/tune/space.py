"""A tuning study's search space: ``tune.space`` in Hydra's sweep
grammar (``interval(0.1,0.9)``, ``tag(log,interval(1,100))``,
``tag(int,interval(1,8))``, ``range(1,5)``, ``choice(default,no_guidance)``
or ``a,b``), one Optuna distribution per key, and the overrides of a trial.

Repeats and seeds are not dimensions: a trial runs every repeat of its
config with the sweep's seeds (common random numbers across trials), so
``repeat``, ``repeats`` and ``seed`` are refused here, and the ``repeat``
entry that conf/config.yaml gives every sweeper's ``params`` is ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from silas_exp.errors import ConfigError

# keys a study never searches: what makes a job a repeat, where it runs, what it reads
NEVER_SEARCHED = ("repeat", "repeats", "repeats_min", "repeats_max", "seed", "resume", "suite",
                  "tracking", "paths", "hydra", "experiment", "analysis", "metrics")
_FIX = ("search scorer settings (e.g. scorer.base.age_decay: interval(0.1,1.0)) or a config "
        "group's options (prompt: choice(default,no_guidance)); docs/tuning.md")


def as_run(value: Any) -> Any:
    """The value a job runs with: a float to 4 significant digits (readable
    variant names and options, well below the noise of any metric)."""
    return float(f"{value:.4g}") if isinstance(value, float) else value


@dataclass(frozen=True)
class Dimension:
    key: str
    distribution: Any  # an optuna distribution
    group: bool  # a config group's option (``prompt=no_guidance``), else a value (``++key=v``)

    def override(self, value: Any) -> str:
        """``++key=value`` (as run: ``as_run``), or ``group=option``."""
        text = as_run(value)
        return f"{self.key}={text}" if self.group else f"++{self.key}={text}"


def _distribution(where_key: str, value: str) -> Any:
    import optuna.distributions as d
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, RangeSweep
    from hydra.errors import OverrideParseException

    where = f"tune.space.{where_key}={value!r}"
    try:
        swept = OverridesParser.create().parse_override(f"x={value}").value()
    except OverrideParseException as exc:
        raise ConfigError(f"{where} is not Hydra sweep syntax ({exc}); {_FIX}") from None
    if isinstance(swept, IntervalSweep):
        if swept.start >= swept.end:
            raise ConfigError(f"{where}: the interval is empty; give interval(low,high), low < high")
        if "int" in swept.tags:
            return d.IntDistribution(int(swept.start), int(swept.end), log="log" in swept.tags)
        return d.FloatDistribution(float(swept.start), float(swept.end), log="log" in swept.tags)
    if isinstance(swept, RangeSweep):
        values = list(swept)
        if not values:
            raise ConfigError(f"{where}: the range is empty")
        if all(isinstance(v, int) for v in values):
            return d.IntDistribution(values[0], values[-1], step=int(swept.step))
        return d.CategoricalDistribution(values)
    if isinstance(swept, ChoiceSweep):
        if len(swept.list) < 2:
            raise ConfigError(f"{where}: a choice needs two options or more")
        return d.CategoricalDistribution([v if isinstance(v, int | float | bool) else str(v)
                                          for v in swept.list])
    raise ConfigError(f"{where} is one value, not a dimension: set it on the command line "
                      f"instead, or give a range; {_FIX}")


def parse_space(space: Mapping[str, Any], is_group: Callable[[str], bool],
                params: Mapping[str, Any] | None = None, scorer: str = "<scorer>"
                ) -> list[Dimension]:
    """The dimensions of ``space``; ``params`` (the sweeper's grid params)
    may hold only the inherited ``repeat`` entry."""
    extra = sorted(k for k in (params or {}) if k != "repeat")
    if extra:
        raise ConfigError(f"hydra.sweeper.params has {extra}: a tuning study searches "
                          "tune.space and runs every repeat inside a trial; move them to "
                          "tune.space")
    if not space:
        raise ConfigError(f"tune.space.{scorer} is empty: declare what the study searches; "
                          f"{_FIX}")
    dims = []
    for key, value in space.items():
        name = key.lstrip("+~")
        if name.split(".")[0] in NEVER_SEARCHED:
            raise ConfigError(f"tune.space.{scorer}.{name}: {name.split('.')[0]!r} is never a "
                              f"search dimension (repeats and seeds run inside every trial); "
                              f"{_FIX}")
        dims.append(Dimension(name, _distribution(f"{scorer}.{name}", str(value)), is_group(name)))
    return dims


def trial_overrides(dims: list[Dimension], params: Mapping[str, Any]) -> list[str]:
    return [dim.override(params[dim.key]) for dim in dims]


def default_params(dims: list[Dimension], values: Mapping[str, Any]) -> dict[str, Any] | None:
    """The space's point at the config's own values (``values``: key -> value,
    a group's chosen option for group keys); None when one lies outside it."""
    out = {}
    for dim in dims:
        value = values.get(dim.key)
        if value is None:
            return None
        dist = dim.distribution
        if hasattr(dist, "choices"):
            if value not in dist.choices:
                return None
        elif not dist.low <= value <= dist.high:
            return None
        out[dim.key] = value
    return out
