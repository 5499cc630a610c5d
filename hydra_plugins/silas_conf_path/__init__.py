"""Config options of silas_exp's kinds and of installed plug-ins.

The options of the ``scorer`` and ``eviction`` groups, built-in or plug-in, are
generated from each kind's settings model into Hydra's ConfigStore
(``silas_exp.config.store_kind_configs``), for the silas_exp app only (a
search path holding silas_exp's own ``conf/``).

Other config groups a plug-in adds (YAML files) come from its package:

A plug-in package declares where its config groups are with an entry point
in group ``silas_exp.conf`` (``my_pkg = "my_pkg.conf"``: a package holding
``scorer/``, ``eviction/`` … folders). Each is appended as ``pkg://my_pkg.conf``
after silas_exp's own ``conf/``, so ``scorer=my_scorer`` composes after
``pip install my-pkg`` and a plug-in cannot shadow a built-in option. A conf
package that cannot be found is left out with a warning naming its entry
point, so one broken install does not stop every run.
"""

from __future__ import annotations

import importlib.util
import warnings
from importlib.metadata import entry_points
from pathlib import Path

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

GROUP = "silas_exp.conf"


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _silas_conf() -> str | None:
    spec = importlib.util.find_spec("silas_exp")
    if spec is None or spec.origin is None:
        return None
    return str(Path(spec.origin).resolve().parents[1] / "conf")


def _is_silas_app(search_path: ConfigSearchPath) -> bool:
    conf = _silas_conf()
    for element in search_path.get_path():
        path = element.path or ""
        if conf is None or "://" in path.removeprefix("file://"):
            continue  # pkg://, structured://
        try:
            if str(Path(path.removeprefix("file://")).resolve()) == conf:
                return True
        except OSError:
            continue
    return False


class SilasPluginConfPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        if _is_silas_app(search_path):
            from silas_exp.config import store_kind_configs

            store_kind_configs()
        for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
            if not _importable(ep.value):
                dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist else "an installed package"
                warnings.warn(f"silas_exp: plug-in config options left out: entry point {ep.name} = "
                              f"{ep.value} (group {GROUP}, from {dist}) names no importable package; "
                              "reinstall or fix that package", stacklevel=1)
                continue
            search_path.append(provider=f"silas_exp-plugin-{ep.name}", path=f"pkg://{ep.value}")
