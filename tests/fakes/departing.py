"""A model that is not the simulator, for benches and tests: the simulated
model's answers, departed from by a set amount ``departure`` in [0, 1].

At 0 every answer is the simulated model's (identical); at 1 none is
(unrelated). In between, each decision the answer is made of departs on its
own with probability ``departure``, drawn from counter-based uniforms keyed
like the simulated model's own draws (so the departure is deterministic per
seed, namespace and request, and the same decision departs alike in every
variant of a repeat):

* ``keepback``: each candidate's keep-back is the simulated model's, or, when
  it departs, the other model's: kept back at the proposal's mean keep-back
  rate, blind to whether the candidate is needed (same rate, wrong items).
* ``scorer``: each item's relevance logit is the blend (1 − departure) ×
  the simulated model's + departure × the other model's fixed, uninformed
  opinion of that item (a normal keyed by the item, spread like a scorer's):
  a ranking moves by degrees, where replacing whole items would reorder it.
* every other task (probe answers, the judge, summaries): the whole answer is
  the simulated model's, or, when it departs, the simulated model's under an
  independent namespace (the same model with other noise).

How far the per-case differences of a study then are from the simulated ones
is measured, not assumed: ``bench/bench_cv.py`` reports their correlation at
each setting of ``SETTINGS``.

Two ways to use it, never as a user option (nothing here is in the built-in
backend registry):

* in process: ``register(departure)`` names a backend kind for
  ``model.backend=`` (``departing_overrides``), as fast as the simulated
  model's Python replay, for benches;
* over HTTP: ``departing_responder(departure)`` answers for
  ``tests.fakes.messages_server.FakeMessagesServer``, and the
  ``register_http()`` kind is the real Anthropic backend (the real SDK) that also sends, in one
  header, what only the simulator may see (``request.sim``, the seed, the
  namespace, the task): the server answers exactly as the in-process backend
  would. The real API never gets that header: this kind exists only here.
"""

from __future__ import annotations

import importlib
import json
import math
from dataclasses import replace
from typing import Any

from silas_exp.llm.backends import BACKENDS, backend_kind
from silas_exp.llm.base import LLMRequest, LLMResponse, Message
from silas_exp.llm.settings import LLMSettings
from silas_exp.llm.simulated import KeyedDraws, SimulatedBackend

# the simulated model of every task the runner asks (their modules register them)
for _module in ("silas_exp.eviction.compression", "silas_exp.feedback.flush",
                "silas_exp.probes.answer", "silas_exp.probes.judge", "silas_exp.scorers.prompt"):
    importlib.import_module(_module)

SETTINGS: dict[str, float] = {"identical": 0.0, "close": 0.2, "far": 0.5, "unrelated": 1.0}
HEADER = "x-silas-simulated"  # what the simulator sees; only this test server reads it
_OTHER_SD = 2.0  # spread of the other model's logits (a scorer's relevance spans most of (0, 1))


def _counter(request: LLMRequest) -> tuple[int, ...]:
    sim = request.sim or {}
    draw = sim.get("draw")
    return tuple(draw) if draw else (int(request.fingerprint()[:15], 16),)


def _depart_keepback(request: LLMRequest, data: dict, draws: KeyedDraws, other: KeyedDraws,
                     d: float) -> dict:
    sim = request.sim or {}
    needed: dict[str, int] = dict(sim.get("needed", {}))
    if not needed:
        return data
    recall, false_keep = sim.get("recall", 0.85), sim.get("false_keep", 0.05)
    rate = sum(false_keep if g <= 0 else recall * (0.5 if g == 1 else 1.0)
               for g in needed.values()) / len(needed)
    counter, names = _counter(request), list(needed)
    mix, own = draws.uniforms(counter, names), other.uniforms(counter, names)
    kept = set(data["exclude_ctx_ids"])
    reasons = {r["ctx_id"]: r["reason"] for r in data.get("reasons", [])}
    out_keep, out_reasons = [], []
    for cid, u, v in zip(names, mix, own, strict=True):
        keep = (v < rate) if u < d else (cid in kept)
        if keep:
            out_keep.append(cid)
            out_reasons.append({"ctx_id": cid, "reason": reasons.get(cid, "may need")})
    return {"exclude_ctx_ids": out_keep, "reasons": out_reasons}


def _depart_scores(data: dict, other: KeyedDraws, d: float) -> dict:
    scores = data.get("scores", [])
    out = []
    for s in scores:
        r = min(max(s["relevance"], 1e-4), 1 - 1e-4)
        z = (1 - d) * math.log(r / (1 - r)) + d * _OTHER_SD * other.normal((0,), s["ctx_id"])
        out.append({"ctx_id": s["ctx_id"], "relevance": round(1 / (1 + math.exp(-z)), 4)})
    return {"scores": out}


class DepartingBackend(SimulatedBackend):
    """The simulated model departed from by ``departure`` (module docstring).
    A keep-back answer's latency is the simulated main model's keyed draw, so
    that timeouts fall as they do under the simulator."""

    name = "departing"

    def __init__(self, seed: int, departure: float, latency_ms: float = 0.0,
                 keepback_latency: tuple[float, float] = (700.0, 0.6)) -> None:
        if not 0.0 <= departure <= 1.0:
            raise ValueError(f"departure={departure}: must be within [0, 1]")
        super().__init__(seed, latency_ms)
        self.departure, self.keepback_latency = departure, keepback_latency

    def answer(self, request: LLMRequest, namespace: str) -> LLMResponse:
        base = super().answer(request, namespace)
        d, task = self.departure, request.task
        data = base.data
        if d > 0:
            draws = KeyedDraws(self.seed, namespace, f"departing.{task}")
            other = KeyedDraws(self.seed, namespace, f"departing.{task}.other")
            if task == "keepback":
                data = _depart_keepback(request, data, draws, other, d)
            elif task == "scorer":
                data = _depart_scores(data, other, d)
            elif draws.uniform(_counter(request), "call") < d:
                data = super().answer(request, f"{namespace}/departed").data
        latency = base.latency_ms
        if task == "keepback":
            median, sigma = self.keepback_latency
            z = KeyedDraws(self.seed, namespace, "keepback.latency").normal(_counter(request))
            latency = median * math.exp(sigma * z)
        text = json.dumps(data, sort_keys=True)
        usage = replace(base.usage, output_tokens=math.ceil(len(text) / 3.5))
        return replace(base, text=text, data=data, usage=usage, backend=self.name,
                       latency_ms=latency)


def register(departure: float) -> str:
    """Register the in-process departing backend at ``departure`` and return its
    name (``departing_0.2``), for ``model.backend=<name>``: a kind of this test
    process only (the built-in registry never lists it)."""
    name = f"departing_{departure:g}"
    kind = backend_kind(name, lambda s, granted: DepartingBackend(granted.seed, departure),
                        description=f"the simulated model departed from by {departure:g}",
                        cached=False)
    BACKENDS._admit(kind, name, SOURCE, f"{__name__}.register")
    return name


SOURCE = "tests.fakes.departing"


# -- over HTTP: the real SDK against the fake Messages API server -----------------------
def simulated_header(request: LLMRequest, namespace: str, seed: int) -> dict[str, str]:
    """What the server needs to answer as the simulator would, and the real API never gets."""
    return {HEADER: json.dumps({"seed": seed, "namespace": namespace, "task": request.task,
                                "temperature": request.temperature, "sim": request.sim})}


def _over_http(settings: LLMSettings, granted: Any):
    from silas_exp.llm.anthropic_backend import AnthropicBackend

    class SimulatedHeaderBackend(AnthropicBackend):
        def request_headers(self, request: LLMRequest, namespace: str) -> dict[str, str]:
            return simulated_header(request, namespace, granted.seed)

        async def acomplete(self, request: LLMRequest, *, namespace: str) -> LLMResponse:
            response = await super().acomplete(request, namespace=namespace)
            if request.task != "keepback":
                return response
            # the simulated main model's latency, as in process: a local server answers at once
            z = KeyedDraws(granted.seed, namespace, "keepback.latency").normal(_counter(request))
            return replace(response, latency_ms=700.0 * math.exp(0.6 * z))

    return SimulatedHeaderBackend(settings)


def register_http() -> str:
    """Register the Anthropic backend that sends the simulator's view in a header
    (``departing_http``), for runs against the fake server only."""
    kind = backend_kind("departing_http", _over_http, cached=True,
                        description="the Anthropic backend sending the simulator's view in a header")
    BACKENDS._admit(kind, kind.name, SOURCE, f"{__name__}.register_http")
    return kind.name


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


def request_of(body: dict, view: dict) -> LLMRequest:
    """The request the client made, rebuilt from the Messages API body and the header."""
    system = body.get("system") or None
    tools = body.get("tools") or []
    return LLMRequest(
        task=view["task"], model=body["model"],
        messages=tuple(Message(m["role"], _text(m["content"])) for m in body["messages"]),
        system=_text(system) if system else None, max_tokens=body["max_tokens"],
        temperature=view["temperature"],
        output_schema=tools[0]["input_schema"] if tools else None,
        cache_system=isinstance(system, list) and any(b.get("cache_control") for b in system),
        sim=view["sim"])


def departing_responder(departure: float):
    """A ``FakeMessagesServer`` responder answering as ``DepartingBackend`` does.
    It needs the header the ``register_http()`` kind sends; a request without it is refused
    (a KeyError is the server's 500), since it could not be answered alike."""
    def respond(body: dict, headers: dict[str, str]) -> dict:
        view = json.loads(headers[HEADER])
        request = request_of(body, view)
        answer = DepartingBackend(view["seed"], departure).answer(request, view["namespace"])
        return answer.data if request.output_schema is not None else {"text": answer.data["text"]}

    respond.wants_headers = True  # type: ignore[attr-defined]
    return respond


def departing_overrides(departure: float, base_url: str | None = None) -> list[str]:
    """Overrides of a job or sweep (in this process, or one started by
    ``python -m tests.fakes.departing``) answered by the departing model: in
    process, or (``base_url``) through the real SDK against the fake server,
    whose responder sets the departure."""
    if base_url is None:
        return [f"model.backend={register(departure)}"]
    return ["model=claude-haiku-4-5", f"model.backend={register_http()}",
            f"llm.base_url={base_url}"]


if __name__ == "__main__":  # python -m tests.fakes.departing [silas_exp arguments]
    import sys

    from silas_exp.cli.app import main

    register_http()
    for value in {*SETTINGS.values(), *(float(a.split("_", 1)[1]) for a in sys.argv
                                        if a.startswith("model.backend=departing_")
                                        and a != "model.backend=departing_http")}:
        register(value)
    main()
