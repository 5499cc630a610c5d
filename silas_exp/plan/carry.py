"""A study carries its plan: before its first call the sweeper plans it
(``carry_plan``), prints the totals, refuses to start when ``llm.max_usd`` is
below the plan's 80 % upper bound, and keeps the plan in the sweep folder
(``plan.json``); at its end the study sets the plan beside what it spent
(``silas_exp.run.look_spend.plan_against_actual``) for the console and the
parent run."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from silas_exp.analysis.planned import (
    MONEY,
    Plan,
    header,
    totals,
)
from silas_exp.errors import ConfigError


def carries(cfg: Any) -> bool:
    """Whether this study plans itself: ``plan.carry`` (auto: when its calls go
    to a real model, not a dry run's simulated answers)."""
    carry = cfg.plan.carry
    if carry == "auto":
        return cfg.llm.backend != "simulated"
    return bool(carry)


def budget_refusal(plan: Plan, cap: float) -> str | None:
    """The one paragraph that refuses a study whose plan may cost more than ``cap``."""
    high = plan.usd.high
    if high <= cap:
        return None
    raise_to = f"{high:,.2f}".replace(",", "")
    return (f"llm.max_usd={cap:g} is below this study's planned cost: "
            f"${plan.usd.median:{MONEY[2:-1]}} at the median and up to ${high:{MONEY[2:-1]}} "
            f"in 80 % of {plan.worlds} simulated studies (range "
            f"${plan.usd.low:{MONEY[2:-1]}}–${high:{MONEY[2:-1]}}), so it was not started and "
            f"nothing was paid. Raise the cap to at least the range's top "
            f"(llm.max_usd={raise_to}), or plan a smaller study: fewer variants, a smaller "
            f"pool (suite.max_cases=…), a cheaper model, or wider margins "
            f"(analysis.margins.<metric>=…); `silas-exp plan -m {' '.join(plan.command)}` prints "
            "the plan and what each figure rests on.")


def carry_plan(cfg: Any, overrides: Sequence[str], sweep_dir: Path,
               say=print) -> Plan | None:
    """Plan the study of ``overrides`` before its first call (a resumed one
    reads the plan it made), print its totals, and raise ConfigError when
    ``llm.max_usd`` is below the plan's 80 % upper bound."""
    if not carries(cfg):
        return None
    from silas_exp.plan.build import build_plan
    from silas_exp.plan.design import NotAStudy

    plan = Plan.read(sweep_dir)
    if plan is None:
        try:
            plan = build_plan(list(overrides), say=say)
        except NotAStudy:
            say("Plan: none, the sweep runs one configuration (no control, nothing to decide)")
            return None
        plan.written_at = time.time()  # the study's minutes count from here, not the plan's
        plan.write(sweep_dir)
    say(header(plan))
    for line in totals(plan):
        say(line)
    if cfg.llm.max_usd is not None:
        refusal = budget_refusal(plan, cfg.llm.max_usd)
        if refusal:
            raise ConfigError(refusal)
    return plan
