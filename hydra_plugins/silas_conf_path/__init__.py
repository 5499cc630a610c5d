"""Config options of installed silas_exp plug-ins on Hydra's search path.

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

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

GROUP = "silas_exp.conf"


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


class SilasPluginConfPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
            if not _importable(ep.value):
                dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist else "an installed package"
                warnings.warn(f"silas_exp: plug-in config options left out: entry point {ep.name} = "
                              f"{ep.value} (group {GROUP}, from {dist}) names no importable package; "
                              "reinstall or fix that package", stacklevel=1)
                continue
            search_path.append(provider=f"silas_exp-plugin-{ep.name}", path=f"pkg://{ep.value}")
