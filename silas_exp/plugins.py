"""One registry mechanism for every pluggable kind: scorers, eviction
strategies (and any later kind).

A kind is a name, a pydantic settings model, a factory, and what it declares:
the capabilities it needs (``llm``, ``calibration``, ``oracle`` …), whether
it is a reference kind (a ceiling or floor that may read ground truth and
never ships) and kind-specific traits. Kinds come from three places, all
validated once, at start-up, with the same errors:

- built-ins, registered with :meth:`Registry.register` in silas_exp itself;
- installed packages, through entry points: group ``silas_exp.<kinds>``,
  ``name = "package.module:KIND"`` where ``KIND`` is a :class:`Kind` (made
  with :meth:`Registry.kind`). Entry points of kinds with a config group are
  loaded at start-up to generate their options; one that fails to load is
  remembered by name and reported only when chosen (and by ``silas-exp
  plugins``), so a broken plug-in cannot break other runs;
- a ``_target_: package.module.KIND`` key in the config node (Hydra's
  convention), for a kind that is importable but not installed as a plug-in.

A kind is declared once: its settings model is the only place its options and
their defaults are written. For a registry with a config group (``scorer``,
``eviction``), :meth:`Registry.config_node` turns the settings model into the
group option's node, which ``silas_exp.config.store_kind_configs`` puts in
Hydra's ConfigStore; no YAML file repeats it.

Factories receive a :class:`Granted` view of the run's offers: a capability
the kind did not declare is not there, and asking for it says what to declare.
Ground truth (``oracle``) is granted only to built-in reference kinds.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from silas_exp.errors import ConfigError, PluginFailure, pydantic_error_to_config_error

BUILT_IN = "built-in"
GROUND_TRUTH = "oracle"


class CapabilityError(ConfigError):
    """A kind used a capability it did not declare."""


@dataclass(frozen=True)
class Kind:
    name: str
    settings: type[BaseModel]
    factory: Callable[[Any, Any], Any]
    needs: frozenset[str] = frozenset()
    description: str = ""
    reference: bool = False  # bracket (oracle, random): may read ground truth, never ships
    traits: Mapping[str, Any] = field(default_factory=dict)
    source: str = BUILT_IN  # built-in, "entry point <dist> <version>" or "_target_ <path>"

    def trait(self, key: str, default: Any = None) -> Any:
        return self.traits.get(key, default)

    def home(self) -> str | None:
        """The folder of the package that defines the kind (its code's frames are its own)."""
        module = sys.modules.get(self.settings.__module__.split(".")[0])
        path = getattr(module, "__file__", None)
        return str(Path(path).parent) if path else None

    def blame(self, what: str, problem: str, exc: BaseException | None = None,
              code: Any = None, line: tuple[str, int] | None = None) -> str:
        """``what 'name' (source) problem at file:line`` — the line: the innermost
        frame of ``exc`` in the kind's own package (else the innermost), ``line``
        (the line that produced a value breaking a contract), or where ``code``
        (the function that broke a contract) is defined."""
        where = ""
        if line is not None:
            where = f" at {_short(line[0])}:{line[1]}"
        elif exc is not None:
            frames = traceback.extract_tb(exc.__traceback__)
            home = self.home()
            own = [f for f in frames if home and f.filename.startswith(home)]
            frame = (own or frames or [None])[-1]
            if frame is not None:
                where = f" at {_short(frame.filename)}:{frame.lineno}"
        elif code is not None:
            try:
                where = f" at {_short(inspect.getsourcefile(code) or '?')}:" \
                        f"{inspect.getsourcelines(code)[1]}"
            except (OSError, TypeError):
                where = ""
        return f"{what} {self.name!r} ({self.source}) {problem}{where}"


def _short(filename: str) -> str:
    """A frame's file as package/module.py (site-packages and repository roots left out)."""
    parts = Path(filename).parts
    return "/".join(parts[-2:]) if len(parts) > 1 else filename


def raised(kind: Kind, what: str, exc: Exception, where: str) -> PluginFailure:
    """The PluginFailure for ``exc`` raised by ``kind``'s code."""
    first = str(exc).splitlines()[0] if str(exc) else ""
    return PluginFailure(kind.blame(what, f"raised {type(exc).__name__}", exc), first, where)


class Granted:
    """What a kind's factory may use: the always-given values plus the
    capabilities the kind declared. Anything else raises a clear error."""

    def __init__(self, kind: Kind, what: str, always: Mapping[str, Any],
                 capabilities: Mapping[str, Any]) -> None:
        self._kind, self._what = kind, what
        self._withheld = set(capabilities) - set(kind.needs)
        self.__dict__.update(always)
        self.__dict__.update({k: v for k, v in capabilities.items() if k in kind.needs})

    def __getattr__(self, name: str) -> Any:  # only called for attributes not set above
        if name in self.__dict__.get("_withheld", ()):
            raise CapabilityError(
                f"{self._what} {self._kind.name!r} ({self._kind.source}) used {name!r} without "
                f"declaring it; declare needs={{..., {name!r}}} when registering the kind"
                + (" (ground truth is only given to built-in reference kinds)"
                   if name == GROUND_TRUTH else ""))
        raise AttributeError(name)


class Registry:
    """Kinds of one sort (``what``: "scorer"), chosen by config key ``key``
    (``scorer``), with entry point group ``group`` and the capabilities the
    runner can offer."""

    def __init__(self, what: str, key: str, group: str, builtins: str,
                 capabilities: Iterable[str], example: str, field: str = "name",
                 config_group: str | None = None) -> None:
        self.what, self.key, self.group, self.example = what, key, group, example
        self.config_group = config_group  # the Hydra group whose options are generated
        self.field = field  # the settings field that names the kind
        self.capabilities = frozenset(capabilities)
        self._builtins_module = builtins
        self._kinds: dict[str, Kind] = {}
        self._loaded_builtins = False

    # ---- declaring kinds --------------------------------------------------------------
    def kind(self, name: str, settings: type[BaseModel], factory: Callable[[Any, Any], Any], *,
             needs: Iterable[str] = (), description: str = "", reference: bool = False,
             **traits: Any) -> Kind:
        """A kind object, for a plug-in's entry point or ``_target_``."""
        unknown = set(needs) - self.capabilities
        if unknown:
            raise ConfigError(f"{self.what} {name!r} declares unknown capabilities {sorted(unknown)}; "
                              f"a {self.what} may declare {sorted(self.capabilities)}")
        return Kind(name, settings, factory, frozenset(needs), description, reference, traits)

    def register(self, name: str, settings: type[BaseModel], *, needs: Iterable[str] = (),
                 description: str = "", reference: bool = False, **traits: Any) -> Callable:
        """Decorator for built-in factories."""
        def deco(factory: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
            self._kinds[name] = self.kind(name, settings, factory, needs=needs,
                                          description=description, reference=reference, **traits)
            return factory

        return deco

    # ---- finding kinds ----------------------------------------------------------------
    def _load_builtins(self) -> None:
        if not self._loaded_builtins:
            self._loaded_builtins = True
            importlib.import_module(self._builtins_module)

    def _entry_points(self) -> dict[str, EntryPoint]:
        return {ep.name: ep for ep in entry_points(group=self.group)}

    def names(self) -> list[str]:
        """Every name a config may choose (built-ins and installed plug-ins), unloaded."""
        self._load_builtins()
        return sorted({n for n, k in self._kinds.items() if k.source == BUILT_IN}
                      | set(self._entry_points()))

    def get(self, name: str) -> Kind:
        self._load_builtins()
        if name in self._kinds:
            return self._kinds[name]
        ep = self._entry_points().get(name)
        if ep is None:
            raise ConfigError(
                f"{self.key}.{self.field} = {name!r} is not a known {self.what}; choose one of "
                f"{self.names()} (e.g. {self.example}), install the package that provides it "
                f"(entry point group {self.group!r}), or name its kind with {self.key}._target_")
        dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist else "an installed package"
        where = f"entry point {name} = {ep.value} (group {self.group}, from {dist})"
        try:
            obj = ep.load()
        except Exception as exc:
            raise ConfigError(f"{self.what} {name!r}: {where} failed to load: "
                              f"{type(exc).__name__}: {exc}. Fix or reinstall that package, or "
                              f"choose another {self.key}") from None
        return self._admit(obj, name, f"entry point of {dist}", where)

    def _target(self, path: str) -> Kind:
        module, _, attr = path.rpartition(".")
        where = f"{self.key}._target_ = {path!r}"
        try:
            obj = getattr(importlib.import_module(module), attr)
        except Exception as exc:
            raise ConfigError(f"{where} cannot be imported ({type(exc).__name__}: {exc}); it must "
                              "be a dotted path to a kind object, e.g. my_pkg.scorers.MY_KIND") from None
        kind = self._admit(obj, None, f"_target_ {path}", where)
        known = self._kinds.get(kind.name)
        if known is not None and known.source != kind.source:
            raise ConfigError(f"{where} names {self.what} {kind.name!r}, but that name is already "
                              f"taken by the {known.source} one; give the kind another name")
        self._kinds[kind.name] = kind
        return kind

    def _admit(self, obj: Any, name: str | None, source: str, where: str) -> Kind:
        if not isinstance(obj, Kind):
            raise ConfigError(f"{where} is a {type(obj).__name__}, not a {self.what} kind; make it "
                              f"with silas_exp's {self.what} kind helper (docs/plugins.md)")
        if name is not None and obj.name != name:
            raise ConfigError(f"{where} is the {self.what} {obj.name!r}; the entry point's name "
                              "must be the kind's name")
        if GROUND_TRUTH in obj.needs:
            raise ConfigError(f"{where} declares the capability {GROUND_TRUTH!r}: ground truth is "
                              "only given to silas_exp's built-in reference kinds, so a plug-in "
                              "could not be compared fairly; remove it from needs")
        kind = replace(obj, source=source)
        if name is not None:
            self._kinds[name] = kind
        return kind

    # ---- settings and building --------------------------------------------------------
    def validate(self, raw: Mapping[str, Any]) -> BaseModel:
        """The settings model of the kind the config node chooses, validated."""
        data = dict(raw)
        target = data.pop("_target_", None)
        if target is not None:
            kind = self._target(str(target))
            data.setdefault(self.field, kind.name)
            if data[self.field] != kind.name:
                raise ConfigError(f"{self.key}.{self.field} = {data[self.field]!r} but "
                                  f"{self.key}._target_ is the {self.what} {kind.name!r}; drop "
                                  f"{self.field} or make them agree")
        else:
            name = data.get(self.field)
            if not isinstance(name, str):
                raise ConfigError(f"{self.key}.{self.field} is missing; choose one of "
                                  f"{self.names()} (e.g. {self.example})")
            kind = self.get(name)
        try:
            return kind.settings.model_validate(data)
        except Exception as exc:  # pydantic.ValidationError
            raise pydantic_error_to_config_error(exc, prefix=self.key, data=data,
                                                 model=kind.settings) from None

    def config_node(self, kind: Kind) -> dict[str, Any]:
        """The config group option of ``kind``: its name and every setting's
        default, read from the settings model (``???``: a setting without one)."""
        node: dict[str, Any] = {}
        for name, info in kind.settings.model_fields.items():
            node[name] = ("???" if info.is_required()
                          else to_jsonable_python(info.get_default(call_default_factory=True)))
        node[self.field] = kind.name
        return node

    def installed(self) -> list[tuple[str, Kind | None, str, str | None]]:
        """(name, kind or None, source, load error) of every built-in and every
        installed entry point, each loaded: for ``silas-exp plugins`` and the
        generated config options. A broken entry point gives (name, None, where, error)."""
        self._load_builtins()
        out: list[tuple[str, Kind | None, str, str | None]] = []
        for name, kind in sorted(self._kinds.items()):
            if kind.source == BUILT_IN:
                out.append((name, kind, BUILT_IN, None))
        for name, ep in sorted(self._entry_points().items()):
            if name in self._kinds and self._kinds[name].source == BUILT_IN:
                continue
            where = f"{ep.value} ({ep.dist.name} {ep.dist.version})" if ep.dist else ep.value
            try:
                out.append((name, self.get(name), where, None))
            except ConfigError as exc:
                out.append((name, None, where, str(exc)))
        return out

    def kind_of(self, settings: BaseModel) -> Kind:
        return self.get(getattr(settings, self.field))

    def build(self, settings: BaseModel, always: Mapping[str, Any],
              offers: Mapping[str, Any]) -> Any:
        kind = self.kind_of(settings)
        return kind.factory(settings, Granted(kind, self.what, always, offers))
