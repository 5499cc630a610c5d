"""``silas-exp plugins``: every kind silas_exp can choose (built-in or from an
installed package), with its config option, settings and source; each is
loaded, and one that does not load makes the command exit 2."""

from __future__ import annotations

import argparse
import json

from silas_exp.exits import BAD_INPUT
from silas_exp.plugins import Kind, Registry


def _registries() -> list[Registry]:
    from silas_exp.eviction.base import STRATEGIES
    from silas_exp.llm.backends import BACKENDS
    from silas_exp.metrics.plugins import METRICS
    from silas_exp.probes.judge import JUDGES
    from silas_exp.scorers.base import SCORERS

    return [SCORERS, STRATEGIES, JUDGES, BACKENDS, METRICS]


def _options(registry: Registry, kind: Kind) -> str:
    """``key=default`` of every setting of a config group option but its name
    (a nested group of settings shows as ``{…}``)."""
    if registry.config_group is None:
        return ""
    node = registry.config_node(kind)
    node.pop(registry.field, None)
    return " ".join(f"{k}=" + ("{…}" if isinstance(v, dict) else json.dumps(v))
                    for k, v in node.items())


def _choose(registry: Registry, name: str) -> str:
    if registry.config_group:
        return f"{registry.config_group}={name}"
    if registry.key == "metrics.plugins":
        return f"metrics.plugins=[{name}]"
    return f"{registry.key}.{registry.field}={name}"


def cmd_plugins(args: argparse.Namespace) -> int:
    broken = 0
    for registry in _registries():
        print(f"{registry.what} (entry point group {registry.group}):")
        for name, kind, source, error in registry.installed():
            if args.plugins_only and source == "built-in":
                continue
            if kind is None:
                broken += 1
                print(f"  BROKEN  {name}  [{source}]\n          {error}")
                continue
            print(f"  ok      {_choose(registry, name)}  [{source}]"
                  + (f"  {kind.description}" if kind.description else ""))
            options = _options(registry, kind)
            if options:
                print(f"          options: {options}")
    if broken:
        print(f"error: {broken} installed plug-in(s) do not load (above); fix or uninstall them")
        return BAD_INPUT
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plugins", help="list the installed kinds (scorers, strategies, judges, backends, "
                        "metrics) with their options and source; exit 2 if one does not load")
    p.add_argument("--plugins-only", action="store_true", help="leave the built-ins out")
    p.set_defaults(func=cmd_plugins)
