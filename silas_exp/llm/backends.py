"""LLM backend kinds (``llm.backend`` / ``model.backend``) in the one kind
registry: the built-in ``simulated`` (deterministic, offline) and
``anthropic`` (the Messages API), and plug-ins from entry point group
``silas_exp.llm_backends``. A backend answers one request
(:class:`~silas_exp.llm.base.LLMBackend`); the client adds caching, retries'
accounting and the budget around it."""

from __future__ import annotations

from collections.abc import Callable

from silas_exp.llm.base import LLMBackend
from silas_exp.llm.settings import LLMSettings
from silas_exp.llm.simulated import SimulatedBackend
from silas_exp.plugins import Kind, Registry

BACKENDS = Registry("LLM backend", key="llm", group="silas_exp.llm_backends",
                    builtins="silas_exp.llm.backends", capabilities=(), field="backend",
                    example="model=claude-haiku-4-5")


def backend_kind(name: str, factory: Callable[[LLMSettings, object], LLMBackend], *,
                 description: str = "", cached: bool = True) -> Kind:
    """A plug-in backend. The factory gets (llm settings, granted) with ``seed``;
    ``cached``: answers go through the response cache (``llm.cache_mode``)."""
    return BACKENDS.kind(name, LLMSettings, factory, description=description, cached=cached)


def build_backend(settings: LLMSettings, seed: int) -> tuple[LLMBackend, Kind]:
    kind = BACKENDS.kind_of(settings)
    return BACKENDS.build(settings, {"seed": seed}, {}), kind


# draws_in_process: every answer comes from the simulated responders' keyed draws in
# this process (a strategy's compiled replay may draw the keep-back answers itself)
@BACKENDS.register("simulated", LLMSettings, cached=False, draws_in_process=True,
                   description="deterministic simulated models (no network, no key)")
def _simulated(settings: LLMSettings, granted) -> LLMBackend:
    return SimulatedBackend(granted.seed, settings.simulated_latency_ms)


@BACKENDS.register("anthropic", LLMSettings, cached=True,
                   description="Anthropic Messages API (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL)")
def _anthropic(settings: LLMSettings, granted) -> LLMBackend:
    from silas_exp.llm.anthropic_backend import AnthropicBackend  # imports the SDK: only when used

    return AnthropicBackend(settings)
