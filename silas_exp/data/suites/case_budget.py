"""A case's own budget and zone shares (``input.config_overrides``), checked
when its suite loads, so that a bad one is found before any job, not when a
job reaches the case."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from silas_exp.context.budget import TokenBudget, ZoneShares
from silas_exp.schema.benchmark import BenchmarkCase


def case_budget(overrides: dict[str, Any], base_budget: TokenBudget) -> tuple[TokenBudget,
                                                                                 ZoneShares | None]:
    """The case's budget (its ``config_overrides.budget`` over ``base_budget``)
    and its own zone shares, if any; raises ValidationError."""
    budget = overrides.get("budget") or {}
    if not isinstance(budget, dict):
        budget = TokenBudget.model_validate(budget)  # a ValidationError naming the type
    budget = TokenBudget.model_validate({**base_budget.model_dump(), **budget})
    shares = ZoneShares.model_validate(overrides["shares"]) if "shares" in overrides else None
    return budget, shares


def _overrides_text(exc: ValidationError, part: str) -> list[str]:
    out = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in ("config_overrides", part, *err["loc"]))
        got = "" if err["type"] in ("value_error", "missing") else f" (got {err.get('input')!r})"
        out.append(f"field '{loc}': {err['msg'].removeprefix('Value error, ')}{got}")
    return out


def overrides_problem(case: BenchmarkCase, base_budget: TokenBudget | None = None) -> str | None:
    """Every problem of a case's ``input.config_overrides`` (its budget over
    ``base_budget``, by default Silas's, and its zone shares), in one
    sentence; None when they hold."""
    overrides = case.input.config_overrides or {}
    base = base_budget or TokenBudget()
    found: list[str] = []
    for part in ("budget", "shares"):
        if part not in overrides:
            continue
        try:
            case_budget({part: overrides[part]}, base)
        except ValidationError as exc:
            found += _overrides_text(exc, part)
    if not found:
        return None
    return "; ".join(found) + ". Fix the case's config_overrides."
