"""Scorer protocol and the one registry of scorer kinds.

A scorer sees only harness-visible items (``LiveItem``) and returns a
relevance in [0, 1] per ctx_id (0 = irrelevant, evict first). Scorers that
learn online implement ``observe``. Each kind registers its name, its
settings model (validated once at start-up), its factory and the capabilities
it needs in one registry (:mod:`silas_exp.plugins`), built-in or plug-in; the
config group option ``scorer=<name>`` is generated from the settings model.
"""

from __future__ import annotations

import inspect
import numbers
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from silas_exp.context.window import LiveItem
from silas_exp.errors import ConfigError, PluginFailure
from silas_exp.plugins import Kind, Registry, raised
from silas_exp.scorers.trace import producing_line


class ScorerUnavailable(Exception):
    """The scorer could not answer (timeout, model error); the harness falls back."""


class Scorer(Protocol):
    name: str
    model_id: str

    def score(self, items: Sequence[LiveItem], turn: int) -> dict[str, float]: ...

    def observe(self, items: Sequence[LiveItem], excluded: Sequence[bool], turn: int) -> None: ...


class ScorerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str


@dataclass
class ScorerContext:
    """What the runner offers a scorer besides the items it is asked about.
    ``seed``, ``namespace`` and ``scorer_model`` go to every scorer; the rest
    are capabilities a kind gets only when it declares them (``needs``)."""

    seed: int
    namespace: str
    scorer_model: str
    llm: Any = None  # silas_exp.llm.LLMClient                          (capability "llm")
    calibration: Any = None  # silas_exp.feedback.calibration.Calibration  ("calibration")
    prompt: Any = None  # PromptSettings                               ("prompt")
    oracle: Callable[[str, int], float] | None = None  # ground truth   ("oracle": reference kinds)


@dataclass(frozen=True)
class CalibrationSpec:
    """What offline calibration needs from a scorer that declares ``calibration``:
    the weights it starts from (``HeuristicWeights``), the exploration rate
    while feedback is collected and the shrinkage toward the base weights."""

    base: Any
    explore_rate: float
    l2: float


SCORERS = Registry(
    "scorer", key="scorer", group="silas_exp.scorers", builtins="silas_exp.scorers",
    capabilities=("llm", "calibration", "prompt", "oracle"), example="scorer=weights",
    config_group="scorer")


def register_scorer(name: str, settings: type[ScorerSettings], *, needs: Iterable[str] = (),
                    description: str = "", reference: bool = False,
                    calibration: Callable[[Any], CalibrationSpec] | None = None,
                    linear: bool = False, stateless: bool = False, online: bool = False,
                    array_scores: bool = False) -> Callable:
    """Register a built-in scorer kind. ``calibration`` (with ``needs`` holding
    "calibration") maps the kind's settings to its :class:`CalibrationSpec`.
    ``linear``: the kind's scores are ``linear_scores(items, turn, scorer.weights)``
    and ``observe`` changes nothing (a strategy's compiled replay may score
    with those weights itself). ``stateless``: ``score`` depends only on its
    items and turn, whatever was scored or observed before, and may be called
    from two threads at once (a case's replay scores the reference's
    candidates beside its own steps). ``online``: the scores are
    ``linear_scores`` with ``scorer.weights``, which ``observe`` refits as
    ``OnlineScorer.observe`` does (its ``settings``: ``window``,
    ``update_every``, ``min_records``; ``refit(X, y)``; ``restore(X, y, seen)``).
    ``array_scores``: the scorer has ``array_scorer(ctx_ids, zones, kinds,
    statuses, relevances, completed, snippets)``, which returns None or a
    function scoring items given as rows of those columns with their state
    (rows, tokens, masked, active, last reference, turn) exactly as ``score``
    scores them (a strategy's compiled replay may ask it for Tier 2's scores)."""
    return SCORERS.register(name, settings, needs=needs, description=description,
                            reference=reference, calibration=calibration, linear=linear,
                            stateless=stateless, online=online, array_scores=array_scores)


def scorer_kind(name: str, settings: type[ScorerSettings], factory: Callable[[Any, Any], Scorer], *,
                needs: Iterable[str] = (), description: str = "",
                calibration: Callable[[Any], CalibrationSpec] | None = None,
                linear: bool = False, stateless: bool = False) -> Kind:
    """A plug-in scorer kind, for an entry point in group ``silas_exp.scorers``
    or a ``scorer._target_``. ``linear``, ``stateless``: as for :func:`register_scorer`."""
    return SCORERS.kind(name, settings, factory, needs=needs, description=description,
                        calibration=calibration, linear=linear, stateless=stateless)


def validate_scorer_settings(raw: Mapping[str, Any]) -> ScorerSettings:
    return SCORERS.validate(raw)  # type: ignore[return-value]


def calibration_spec(settings: ScorerSettings) -> CalibrationSpec | None:
    """The scorer's calibration needs, or None when its kind declares none."""
    kind = SCORERS.kind_of(settings)
    if "calibration" not in kind.needs:
        return None
    make = kind.trait("calibration")
    if make is None:
        raise ConfigError(f"scorer {kind.name!r} ({kind.source}) declares 'calibration' but gives no "
                          "calibration spec; pass calibration=<settings -> CalibrationSpec>")
    return make(settings)


CONTRACT = "a finite relevance in [0, 1] for every item asked about"


class CheckedScorer:
    """A scorer, built-in or plug-in, held to its contract. ``ScorerUnavailable``
    (a timeout, a model error: the scorer could not answer) passes through to
    the strategy, whose circuit breaker falls back. Any other exception, and a
    score that is missing, not finite or outside [0, 1], is a bug in the
    scorer: it becomes a ``PluginFailure`` naming the scorer, its source, the
    file and line, the turn and the item, and the case errors (counted per
    cause and reported; docs/plugins.md)."""

    def __init__(self, inner: Scorer, kind: Kind) -> None:
        self.inner, self.kind = inner, kind
        self.name, self.model_id = inner.name, inner.model_id

    def __getattr__(self, name: str) -> Any:  # a scorer's own attributes (e.g. its weights)
        inner = self.__dict__.get("inner")
        if inner is None:
            raise AttributeError(name)
        return getattr(inner, name)

    def score(self, items: Sequence[LiveItem], turn: int) -> dict[str, float]:
        try:
            got = self.inner.score(items, turn)
        except ScorerUnavailable:
            raise
        except Exception as exc:
            raise raised(self.kind, "scorer", exc, f"turn {turn}, scoring {len(items)} item(s) "
                                                   f"from {items[0].ctx_id if items else '-'}") from exc
        values = list(got.values())
        if len(got) == len(items) and (not values or (
                min(values) >= 0.0 and max(values) <= 1.0
                and all(map(operator.eq, values, values)))):  # and no NaN
            return got
        for it in items:
            value = got.get(it.ctx_id)
            if not isinstance(value, numbers.Real) or not 0.0 <= value <= 1.0:
                raise PluginFailure(self._broken(items, turn, value),
                                    f"item {it.ctx_id} scored {value!r}" if value is not None
                                    else f"no score for item {it.ctx_id}", f"turn {turn}")
        return got

    def _broken(self, items: Sequence[LiveItem], turn: int, value: Any) -> str:
        """The broken contract, at the line that produced the bad value when a
        second, traced call of ``score`` finds it; else at ``score`` itself,
        saying that the line cannot be known."""
        problem = f"broke its contract ({CONTRACT})"
        score = type(self.inner).score
        if isinstance(value, numbers.Real):
            home, own_file = self.kind.home(), inspect.getsourcefile(score)
            line = producing_line(lambda: self.inner.score(items, turn), value,
                                  lambda f: f == own_file or bool(home and f.startswith(home)))
            if line is not None:
                return self.kind.blame("scorer", problem, line=line)
        return self.kind.blame("scorer", problem, code=score) + (
            " (its score method; the line that produced the value could not be traced: "
            + ("a second call did not give it again)" if isinstance(value, numbers.Real)
               else "no score is no value)"))

    def observe(self, items: Sequence[LiveItem], excluded: Sequence[bool], turn: int) -> None:
        try:
            self.inner.observe(items, excluded, turn)
        except Exception as exc:
            raise raised(self.kind, "scorer", exc, f"turn {turn}, observe") from exc


def build_scorer(settings: ScorerSettings, ctx: ScorerContext) -> Scorer:
    always = {"seed": ctx.seed, "namespace": ctx.namespace, "scorer_model": ctx.scorer_model}
    offers = {"llm": ctx.llm, "calibration": ctx.calibration, "prompt": ctx.prompt,
              "oracle": ctx.oracle}
    return CheckedScorer(SCORERS.build(settings, always, offers), SCORERS.kind_of(settings))
