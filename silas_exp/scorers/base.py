"""Scorer protocol and the one registry of scorer kinds.

A scorer sees only harness-visible items (``LiveItem``) and returns a
relevance in [0, 1] per ctx_id (0 = irrelevant, evict first). Scorers that
learn online implement ``observe``. Each kind registers its name, its
settings model (validated once at start-up) and its factory here; the config
group ``conf/scorer/<name>.yaml`` carries ``name`` plus those settings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from silas_exp.context.window import LiveItem
from silas_exp.errors import ConfigError


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
    """What a scorer may use at run time besides the items it is asked about."""

    seed: int
    namespace: str
    scorer_model: str
    llm: Any = None  # silas_exp.llm.LLMClient
    calibration: Any = None  # silas_exp.feedback.calibration.Calibration
    prompt: Any = None  # PromptSettings
    oracle: Callable[[str, int], float] | None = None  # only the oracle reference scorer
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ScorerKind:
    name: str
    settings: type[ScorerSettings]
    factory: Callable[[Any, ScorerContext], Scorer]
    needs_calibration: bool = False
    description: str = ""


_REGISTRY: dict[str, ScorerKind] = {}


def register_scorer(
    name: str, settings: type[ScorerSettings], *, needs_calibration: bool = False, description: str = ""
) -> Callable[[Callable[[Any, ScorerContext], Scorer]], Callable[[Any, ScorerContext], Scorer]]:
    def deco(factory: Callable[[Any, ScorerContext], Scorer]) -> Callable[[Any, ScorerContext], Scorer]:
        _REGISTRY[name] = ScorerKind(name, settings, factory, needs_calibration, description)
        return factory

    return deco


def scorer_kinds() -> Mapping[str, ScorerKind]:
    from silas_exp import scorers as _load  # noqa: F401  (registers the built-in kinds)

    return dict(_REGISTRY)


def validate_scorer_settings(raw: Mapping[str, Any]) -> ScorerSettings:
    kinds = scorer_kinds()
    name = raw.get("name")
    if name not in kinds:
        raise ConfigError(
            f"scorer.name = {name!r} is not a known scorer; choose one of {sorted(kinds)} "
            "(e.g. scorer=weights)"
        )
    from silas_exp.config import pydantic_error_to_config_error

    try:
        return kinds[name].settings.model_validate(dict(raw))
    except Exception as exc:  # pydantic.ValidationError
        raise pydantic_error_to_config_error(exc, prefix="scorer") from None


def build_scorer(settings: ScorerSettings, ctx: ScorerContext) -> Scorer:
    return scorer_kinds()[settings.name].factory(settings, ctx)
