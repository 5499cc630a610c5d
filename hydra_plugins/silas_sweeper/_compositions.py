"""Hydra's config loader, composing each job shape once per process.

Hydra composes a job's config from scratch for every job (defaults tree, YAML
files, merges: ~0.1 s a job on 2 cores), first in the sweeper's check and then
again in the launcher. Jobs that differ only in plain ``key=scalar`` overrides
of non-group keys (``repeat=0..4``, ``seed=…``) compose alike: the loader
composes the first of them and derives the others from a copy, by applying
their scalar overrides the way Hydra applies command-line overrides after
composing, and by rewriting the two fields that record the overrides
(``hydra.overrides.task`` and ``hydra.job.override_dirname``). Anything else —
group options, ``hydra.*`` keys, ``+``/``++``/``~`` overrides, list or dict
values — is part of the shape and composes anew. Every other attribute is the
wrapped loader's, so launchers that ship the loader to workers still work.

The leading underscore keeps Hydra's plugin scan from executing this module a
second time (it re-runs every public module under ``hydra_plugins``), which
would leave two ``SharedCompositions`` classes and break pickling.
"""

import copy
from collections.abc import Callable, Sequence
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

_PLAIN = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _scalar(value: str) -> bool:
    value = value.strip()
    return not value.startswith(("[", "{")) and value != "null" and "," not in value


def variable(overrides: Sequence[str], is_group: Callable[[str], bool]) -> list[bool]:
    """Which overrides may differ between jobs that share a composition: plain
    ``key=scalar`` of a non-group, non-hydra key that no other override touches."""
    keys = [o.partition("=")[0] for o in overrides]
    flags = []
    for i, override in enumerate(overrides):
        key, sep, value = override.partition("=")
        plain = bool(sep and key and set(key) <= _PLAIN and not key.startswith("hydra"))
        alone = all(j == i or not (k.lstrip("+~") == key or k.lstrip("+~").startswith(key + ".")
                                   or key.startswith(k.lstrip("+~") + "."))
                    for j, k in enumerate(keys))
        flags.append(plain and alone and _scalar(value) and not is_group(key))
    return flags


def share_key(overrides: Sequence[str], is_group: Callable[[str], bool]) -> tuple[str, ...]:
    """The overrides that decide a composition, in order; a variable one by its key."""
    return tuple(f"{o.partition('=')[0]}=<scalar>" if var else o
                 for o, var in zip(overrides, variable(overrides, is_group), strict=True))


class SharedCompositions:
    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._composed: dict[tuple[str, ...], tuple[Any, DictConfig]] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_inner", "_composed"):
            raise AttributeError(name)  # pickling and half-built objects
        return getattr(self._inner, name)

    def __getstate__(self) -> dict[str, Any]:
        return {"_inner": self._inner, "_composed": {}}  # workers build their own

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _is_group(self, name: str) -> bool:
        repository: Any = getattr(self._inner, "repository", None)
        if repository is None:
            return True  # unknown loader: every key counts, nothing is shared
        return bool(repository.group_exists(name.replace(".", "/")))

    def load_sweep_config(self, master_config: DictConfig,
                          sweep_overrides: list[str]) -> DictConfig:
        key = share_key(sweep_overrides, self._is_group)
        hit = self._composed.get(key)
        if hit is None or hit[0] is not master_config:
            composed = self._inner.load_sweep_config(master_config, list(sweep_overrides))
            self._composed[key] = (master_config, copy.deepcopy(composed))
            return composed
        return _derive(hit[1], master_config, list(sweep_overrides),
                       variable(sweep_overrides, self._is_group))


def _derive(template: DictConfig, master_config: DictConfig, sweep_overrides: list[str],
            var: list[bool]) -> DictConfig:
    """``template`` (a composition of the same shape) with this job's overrides."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl, get_overrides_dirname
    from hydra.core.override_parser.overrides_parser import OverridesParser

    cfg = copy.deepcopy(template)
    parsed = OverridesParser.create().parse_overrides(sweep_overrides)
    changed = [o for o, v in zip(parsed, var, strict=True) if v]
    ConfigLoaderImpl._apply_overrides_to_config(changed, cfg)
    app = [o for o in parsed if not o.is_hydra_override()]
    job = cfg.hydra.job
    with open_dict(cfg.hydra):
        task = list(cfg.hydra.overrides.task)
        cfg.hydra.overrides.task = task[:len(task) - len(app)] + [o.input_line for o in app]
        job.override_dirname = get_overrides_dirname(
            overrides=app, kv_sep=job.config.override_dirname.kv_sep,
            item_sep=job.config.override_dirname.item_sep,
            exclude_keys=job.config.override_dirname.exclude_keys)
    OmegaConf.copy_cache(from_config=master_config, to_config=cfg)
    return cfg
