"""Variant naming: which keys a sweep varies, and the name of one sweep point.

A variant is a sweep point without its repeat (``scorer=weights``); its name
groups a sweep's jobs in the summary, the ablation and MLflow.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

NOT_VARIANT = ("repeat", "block", "hydra", "tracking", "paths", "llm.cache", "seed",
               "fail_on", "case_errors")  # the exit status asked for (run/exit_policy.py)


def swept_keys(cli_overrides: Iterable[str], sweeper_params: Mapping[str, Any] | None) -> list[str]:
    """Keys that vary across a sweep: command-line overrides with a list/range
    and the sweeper's configured params."""
    keys = set((sweeper_params or {}).keys())
    for ov in cli_overrides:
        key, _, value = ov.partition("=")
        if "," in value or value.startswith(("range(", "choice(", "interval(", "glob(")):
            keys.add(key.lstrip("+~"))
    return sorted(keys)


def variant_name(task_overrides: Iterable[str], swept: Iterable[str], scorer: str) -> str:
    """The sweep point without its repeat, e.g. "scorer=weights"; defaults to the scorer."""
    swept = set(swept)
    parts = []
    for ov in task_overrides:
        key = ov.partition("=")[0].lstrip("+~")
        if key in swept and not key.startswith(NOT_VARIANT):
            parts.append(ov.lstrip("+~"))
    return ",".join(sorted(parts)) or f"scorer={scorer}"


def _canonical(name: str) -> str:
    """A variant name as the sweep writes it, whatever the user typed: its
    overrides sorted, Hydra's booleans (``False``) as typed (``false``)."""
    return ",".join(sorted(o.strip().replace("=False", "=false").replace("=True", "=true")
                           for o in name.split(",")))


def find_variant(name: str, variants: Iterable[str]) -> str | None:
    """The variant among ``variants`` that ``name`` names: overrides in any
    order, ``false`` or ``False``; None when none is it."""
    wanted = _canonical(name)
    return next((v for v in variants if _canonical(v) == wanted), None)
