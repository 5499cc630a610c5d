"""Canonical metric keys and the names they are read by: one function builds
every key so MLflow, reports and regression checks agree; one gives its name. MLflow names must match ``^[/\\w.\\- ]*$`` (no "@")."""

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
    """The name a metric is read by: its spec's ``name`` ("retrieval relevance"),
    "nDCG@10" for "ir.ndcg_at_10", else the key itself."""
    from silas_exp.metrics.registry import find_spec

    found = find_spec(key)
    if found is not None and found.name and found.key == key:
        return found.name
    m = re.match(r"^ir\.(ndcg|mrr|recall)_at_(\d+)$", key)
    return f"{_DISPLAY[m.group(1)]}@{m.group(2)}" if m else key


def named(key: str) -> str:
    """The display name with the key, where both must be found: "nDCG@10 (`ir.ndcg_at_10`)"."""
    name = display_name(key)
    return name if name == key else f"{name} (`{key}`)"



def labelled(key: str) -> str:
    """Display name with the declared direction: "nDCG@10 ↑" (higher is better)."""
    from silas_exp.metrics.registry import find_spec

    found = find_spec(key)
    arrow = {"higher": " ↑", "lower": " ↓"}.get(found.direction if found else "", "")
    return display_name(key) + arrow


COST_KEYS = ("llm.cost_usd", "llm.overhead.cost_usd")
SIMULATED = "_simulated"


def labelled_cost(metrics: dict[str, float], simulated: bool) -> dict[str, float]:
    """A simulated backend spends nothing: what its calls would have cost at the
    named models' prices is ``llm.cost_usd_simulated`` (and
    ``llm.overhead.cost_usd_simulated``), never ``llm.cost_usd``, which is only
    real spend. The one place those keys are chosen."""
    if not simulated:
        return metrics
    return {(k + SIMULATED if k in COST_KEYS else k): v for k, v in metrics.items()}


_UNSAFE = re.compile(r"[^\w.\- /]")


def safe_name(variant: str) -> str:
    """A variant as an MLflow key part: "scorer=weights,eviction=x" -> "scorer_weights.eviction_x"."""
    return _UNSAFE.sub("_", variant.replace(",", ".").replace("=", "_"))


def chart_names(variants: list[str]) -> dict[str, str]:
    """Variants by their values ("scorer=online" -> "online"), so a metric's
    name shows the variant before the UI cuts it; the full name if two collide.
    A study's parent run names its ``silas.verdict.<name>`` tags and
    ``margins vs <control>/<name>.<metric>`` metrics so."""
    short = {v: safe_name("_".join(p.partition("=")[2] or p for p in v.split(",")))
             for v in variants}
    if len(set(short.values())) < len(short):
        return {v: safe_name(v) for v in variants}
    return short
