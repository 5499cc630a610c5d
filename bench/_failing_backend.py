"""``silas-exp`` with an LLM backend kind ``fails`` registered: any call to it
fails and is counted (in a file, so calls made by forked workers count too).
Prints ``backend calls: N`` after the command. For benches and tests that
assert a command makes no model call (``silas-exp plan``).

    python bench/_failing_backend.py plan -m scorer=weights,prompt model=claude-haiku-4-5 model.backend=fails
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from silas_exp.llm.backends import BACKENDS, backend_kind  # noqa: E402
from silas_exp.llm.base import LLMRequest, LLMResponse  # noqa: E402

COUNTER = Path(os.environ.get("SILAS_FAILING_CALLS") or tempfile.mkstemp(prefix="calls-")[1])
os.environ["SILAS_FAILING_CALLS"] = str(COUNTER)


class FailingBackend:
    """Answers nothing: every call is counted and fails the caller."""

    name = "fails"

    def _fail(self, request: LLMRequest) -> None:
        with open(COUNTER, "a") as fh:
            fh.write(f"{request.task}\n")
        raise AssertionError(f"a {request.task!r} call reached the failing backend")

    def answer(self, request: LLMRequest, namespace: str) -> LLMResponse:
        self._fail(request)
        raise AssertionError  # unreachable

    async def acomplete(self, request: LLMRequest, *, namespace: str) -> LLMResponse:
        return self.answer(request, namespace)

    async def abatch(self, requests: list[LLMRequest], *, namespace: str) -> list:
        return [self.answer(r, namespace) for r in requests]

    async def aclose(self) -> None:
        return None


def register() -> str:
    kind = backend_kind("fails", lambda settings, granted: FailingBackend(), cached=False,
                        description="fails on any call (benches and tests)")
    BACKENDS._admit(kind, kind.name, "bench._failing_backend", f"{__name__}.register")
    return kind.name


if __name__ == "__main__":
    from silas_exp.cli.main import main

    register()
    code = 0
    try:
        main(sys.argv[1:])
    except SystemExit as exc:
        code = int(exc.code or 0)
    calls = len(COUNTER.read_text().splitlines()) if COUNTER.exists() else 0
    print(f"backend calls: {calls}")
    sys.exit(code)
