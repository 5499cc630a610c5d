"""Canonical metric keys: one function builds every key so MLflow, reports and
regression checks agree. MLflow names must match ``^[/\\w.\\- ]*$`` (no "@")."""

from __future__ import annotations

import re

_PART = re.compile(r"^[a-z0-9_]+$")
_LOWER_IS_BETTER = ("latency", "cost", "usd", "re_retriev", "tokens_per", "fallback", "breaker",
                    "error", "failures", "harmful", "auto_resolved", "hard_ceiling", "mean_window")
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


def higher_is_better(key: str) -> bool:
    return not any(token in key for token in _LOWER_IS_BETTER)
