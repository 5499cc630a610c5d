"""Config options of installed silas_exp plug-ins on Hydra's search path.

A plug-in package declares where its config groups are with an entry point
in group ``silas_exp.conf`` (``my_pkg = "my_pkg.conf"``: a package holding
``scorer/``, ``eviction/`` … folders). Each is appended as ``pkg://my_pkg.conf``
after silas_exp's own ``conf/``, so ``scorer=my_scorer`` composes after
``pip install my-pkg`` and a plug-in cannot shadow a built-in option.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

GROUP = "silas_exp.conf"


class SilasPluginConfPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
            search_path.append(provider=f"silas_exp-plugin-{ep.name}", path=f"pkg://{ep.value}")
