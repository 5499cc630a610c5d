"""Command-line overrides checked before Hydra runs any job.

Hydra answers a misspelt key under a config group (``scorer.keyword_wieght=0.3``)
with "Could not override … To append to your config use +scorer…", advice that
is wrong here: the group's settings are fixed by its option. This check finds
such a key first and says, in one paragraph, which option lacks it and which
of its keys are nearest; a misspelt option (``scorer=heuristic,mien``) gets
the nearest options and the list of them (exit 2, in a sweep before the first job). A sweep
that chooses several options of a group may set a key that only some of them
have (the sweeper leaves it out of the others' jobs); the key is wrong only
when none has it. A key outside the groups (``repeets=3``, ``metrics.horizn=3``)
gets the same answer, from the composed config and the settings model that
validates it (``budget`` holds only what a command changes, so its settings
are ``TokenBudget``'s and are added with ``+``). It also loads every scorer
and eviction strategy the command chooses, so a plug-in that does not load
stops a sweep before its first job, not after the control's. Every such
problem of a command is named in one paragraph.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from silas_exp.errors import ConfigError, unknown_option_message


def _parse(args: Sequence[str]) -> list[Any]:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    candidates = [a for a in args if "=" in a and not a.startswith("-")]
    try:
        return OverridesParser.create().parse_overrides(candidates)
    except Exception:  # Hydra reports its own syntax errors
        return []


def _values(override: Any) -> list[str]:
    try:
        if override.is_sweep_override():
            return [str(v) for v in override.sweep_string_iterator()]
        return [str(override.get_value_element_as_str())]
    except Exception:  # glob(...) needs Hydra's config loader: Hydra expands and checks it
        return []


def _nearest_level(cfg: Any, key: str) -> tuple[str, str, list[str]]:
    """(existing parent path, first missing part, keys at that parent); the
    missing part is "" when ``key`` exists. Interpolations are not resolved."""
    from omegaconf import OmegaConf

    node: Any = OmegaConf.to_container(cfg, resolve=False)
    parent: list[str] = []
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            keys = [str(k) for k in node] if isinstance(node, dict) else []
            return ".".join(parent), part, keys
        node, parent = node[part], [*parent, part]
    return ".".join(parent), "", []


def unknown_key_message(key: str, value: str, group: str, options: list[str],
                        levels: list[tuple[str, str, list[str]]]) -> str:
    parent, missing, _ = levels[0]
    known = sorted({k for _, _, keys in levels for k in keys})
    near = difflib.get_close_matches(missing, known, n=3, cutoff=0.5)
    where = f"{group}={options[0]} has no" if len(options) == 1 else \
        f"none of {', '.join(f'{group}={o}' for o in options)} has a"
    return (f"{key}={value}: {where} setting {missing!r} under {parent}"
            + (f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ".")
            + f" The settings there are: {', '.join(known) or '(none)'}. Correct the key on the "
              "command line" + ("; `silas-exp plugins` lists every option's settings."
                                if group in ("scorer", "eviction") else "."))


def settings_follow_options(args: Sequence[str]) -> list[str]:
    """In a sweep over a group's options (``-m scorer=heuristic,my_scorer``), a
    single-valued setting of that group (``scorer.keyword_weight=0.3``) is given
    as a one-value sweep (``choice(0.3)``): Hydra then applies it per job, and
    the sweeper gives it only to the options that have it, instead of Hydra
    applying it to the group's default option first and failing."""
    if not ({"-m", "--multirun"} & set(args)):
        return list(args)
    swept = {o.key_or_group for o in _parse(args) if o.is_sweep_override()}
    out = []
    for arg in args:
        key, sep, value = arg.partition("=")
        group, dot, _ = key.partition(".")
        plain = value and not set(value) & set(",()[]{}'\" $")
        if sep and dot and group in swept and plain and not key.startswith(("+", "~", "hydra")):
            arg = f"{key}=choice({value})"
        out.append(arg)
    return out


def _settings_at(cfg: Any, path: list[str]) -> tuple[list[str], Any]:
    """The keys the composed config holds at ``path`` and the settings model
    that validates it (``budget`` holds only what a command changes; its
    settings are ``TokenBudget``'s)."""
    from silas_exp.config import ExperimentConfig
    from silas_exp.errors import model_at

    level = _nearest_level(cfg, ".".join([*path, "\0"]))
    keys = level[2] if level[0] == ".".join(path) else []
    return keys, model_at(ExperimentConfig, tuple(path))


def _plain_key_problem(o: Any, cfg: Any) -> str | None:
    """A key outside the config groups (``repeats``, ``budget.total``,
    ``metrics.horizon``): misspelt, missing its ``+`` or with one too many."""
    key, value = o.key_or_group, ",".join(_values(o))
    parent, missing, _ = _nearest_level(cfg, key)
    written = f"{'+' if o.is_add() else ''}{key}={value}"
    if not missing:
        if o.is_add():
            return (f"{written}: {key} is already in the config, so it takes no +; write "
                    f"{key}={value}")
        return None
    path = parent.split(".") if parent else []
    keys, model = _settings_at(cfg, path)
    fields = list(getattr(model, "model_fields", {}) or {})
    depth = len(key.split(".")) - len(path)
    if model is None and path:
        return None  # a free mapping (llm.prices, tune): any key may be added
    if missing in fields and depth == 1:
        if o.is_add():
            return None
        return (f"{written}: {parent or 'the config'} holds only the settings a command changes, "
                f"so this one is added with a +: write +{key}={value}")
    known = sorted((set(keys) | set(fields)) - {"hydra"})
    near = difflib.get_close_matches(missing, known, n=3, cutoff=0.5)
    where = f"under {parent}" if parent else "at the top of the config"
    return (f"{written}: there is no setting {missing!r} {where}"
            + (f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ".")
            + f" The settings there are: {', '.join(known) or '(none)'}. Correct the key on the "
              "command line (`python -m silas_exp --cfg job` prints the composed config).")


def _top_keys(conf_dir: str) -> Any:
    """conf/config.yaml as written: the keys every command has, without composing."""
    from omegaconf import OmegaConf

    return OmegaConf.load(f"{conf_dir}/config.yaml")


def check_overrides(args: Sequence[str], conf_dir: str) -> None:
    """Raise one ConfigError naming every misspelt option of a config group,
    every unknown key (under a group or not, with the nearest keys), every
    key given a ``+`` it must not have or lacking one it needs, and every
    chosen scorer or strategy that does not load; otherwise leave everything
    to Hydra."""
    overrides = _parse(args)
    if not overrides:
        return
    from hydra import compose, initialize_config_dir

    from silas_exp.config import KIND_GROUPS

    problems: list[str] = []
    with initialize_config_dir(config_dir=conf_dir, version_base="1.3"):
        from hydra.core.global_hydra import GlobalHydra

        repository = GlobalHydra.instance().hydra.config_loader.repository  # type: ignore[union-attr]
        choices: dict[str, list[str]] = {}
        keys, plain = [], []
        for o in overrides:
            key = o.key_or_group
            if o.is_hydra_override() or o.is_delete() or o.package or o.is_force_add():
                continue
            if repository.group_exists(key):
                choices[key] = _values(o)
            elif "." in key and repository.group_exists(key.split(".")[0]):
                if not o.is_add():
                    keys.append(o)
            else:
                plain.append(o)
        searchpath = any(o.key_or_group == "hydra.searchpath" for o in overrides)
        for group, names in choices.items():  # a misspelt option: exit 2 before any job
            options = repository.get_group_options(group)
            bad = [n for n in names if not searchpath and n != "null" and n not in options]
            problems += [unknown_option_message(group, name, options) for name in bad]
            choices[group] = [n for n in names if n not in bad]  # keys are checked on the others
        for registry in KIND_GROUPS:  # a plug-in that does not load: exit 2 before any job
            for name in choices.get(str(registry.config_group), []):
                if name in registry.names():  # else a YAML option (_target_) or Hydra's error
                    try:
                        registry.get(name)
                    except ConfigError as exc:
                        problems.append(str(exc))
        if searchpath:
            _raise(problems)  # options from a search path of one's own: Hydra checks them
            return
        written = _top_keys(conf_dir)  # most keys are judged from config.yaml alone
        plain = [o for o in plain if _plain_key_problem(o, written)]
        keys = [o for o in keys if choices.get(o.key_or_group.split(".")[0], [None])]
        if not keys and not plain:
            _raise(problems)
            return
        fixed = [f"{g}={v[0]}" for g, v in choices.items() if v]
        try:
            chosen = compose(config_name="config", overrides=fixed, return_hydra_config=True)
        except Exception:
            _raise(problems)
            return  # a choice Hydra cannot compose: Hydra says so
        problems += [p for o in plain if (p := _plain_key_problem(o, chosen))]
        for o in keys:
            key = o.key_or_group
            group = key.split(".")[0]
            options = choices.get(group) or [str(chosen.hydra.runtime.choices.get(group))]
            levels = []
            for option in options:
                try:
                    cfg = compose(config_name="config",
                                  overrides=[f for f in fixed if not f.startswith(f"{group}=")]
                                  + [f"{group}={option}"])
                except Exception:
                    break
                level = _nearest_level(cfg, key)
                if not level[1]:
                    break
                levels.append(level)
            else:
                problems.append(unknown_key_message(key, ",".join(_values(o)), group, options,
                                                    levels))
    _raise(problems)


def _raise(problems: list[str]) -> None:
    if len(problems) == 1:
        raise ConfigError(problems[0])
    if problems:
        raise ConfigError(f"the command line has {len(problems)} problems; no job was started. "
                          "Fix them all:\n" + "\n".join(f"  {n}. {p}"
                                                         for n, p in enumerate(problems, 1)),
                          problems=problems)
