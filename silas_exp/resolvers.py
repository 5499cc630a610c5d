"""OmegaConf resolvers used by conf/ (registered on package import)."""

from __future__ import annotations

import os
from pathlib import Path

from omegaconf import OmegaConf


def project_root() -> str:
    """Where suites/, mlruns/ and .cache/ live: $SILAS_EXP_ROOT, else the
    directory the command was launched from (Hydra's runtime.cwd)."""
    env = os.environ.get("SILAS_EXP_ROOT")
    if env:
        return os.path.abspath(env)
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        return str(HydraConfig.get().runtime.cwd)
    return os.path.abspath(os.curdir)


def install_root() -> str:
    """Where silas_exp is installed from: the folder holding its package, its
    ``conf/`` and the built-in ``suites/`` and ``probes/`` (for ``pip install
    -e .``, the repository). Built-in suites resolve here whatever the working
    directory (``paths.suites``); a suite path of one's own resolves from the
    working directory."""
    return str(Path(__file__).resolve().parents[1])


def register() -> None:
    if not OmegaConf.has_resolver("silas_root"):
        OmegaConf.register_new_resolver("silas_root", project_root, use_cache=False)
    if not OmegaConf.has_resolver("silas_home"):
        OmegaConf.register_new_resolver("silas_home", install_root)
