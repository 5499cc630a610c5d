"""Canonical metric keys: one function builds every key so MLflow, reports and
regression checks agree. MLflow names must match ``^[/\\w.\\- ]*$`` (no "@")."""

from __future__ import annotations

import re

_PART = re.compile(r"^[a-z0-9_]+$")
_DISPLAY = {"ndcg": "nDCG", "mrr": "MRR", "recall": "Recall"}


def metric_key(family: str, name: str, k: int | None = None) -> str:
    for part in (family, name):
        if not _PART.match(part):
            raise ValueError(f"metric key part {part!r} must be lowercase [a-z0-9_]+")
    key = f"{family}.{name}"
    return f"{key}_at_{int(k)}" if k is not None else key


def display_name(key: str) -> str:
    """"ir.ndcg_at_10" -> "nDCG@10"; other keys are shown as they are."""
    m = re.match(r"^ir\.(ndcg|mrr|recall)_at_(\d+)$", key)
    return f"{_DISPLAY[m.group(1)]}@{m.group(2)}" if m else key



def labelled(key: str) -> str:
    """Display name with the declared direction: "nDCG@10 ↑" (higher is better)."""
    from silas_exp.metrics.registry import find_spec

    found = find_spec(key)
    arrow = {"higher": " ↑", "lower": " ↓"}.get(found.direction if found else "", "")
    return display_name(key) + arrow
