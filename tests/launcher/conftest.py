"""Hydra's test runners (``hydra_sweep_runner``) build a Hydra in this process:
its plugin scan executes Hydra's plugin modules again, replacing them in
``sys.modules``, and ``hydra_restore_singletons`` drops the plugin registry it
made. Later tests would then hold config sources whose classes are no longer
the importable ones (pickling a config loader fails). Leave Hydra's modules
and singletons as this package found them."""

from __future__ import annotations

import copy
import sys

import pytest
from hydra.core.singleton import Singleton

_HYDRA = ("hydra", "hydra_plugins")


@pytest.fixture(scope="package", autouse=True)
def _leave_hydra_as_found():
    state = copy.deepcopy(Singleton.get_state())
    modules = {k: m for k, m in sys.modules.items() if k.split(".")[0] in _HYDRA}
    yield
    for name in [k for k in sys.modules if k.split(".")[0] in _HYDRA and k not in modules]:
        del sys.modules[name]
    sys.modules.update(modules)
    Singleton.set_state(state)
