"""Hydra's own launcher test suites, run against the ``silas`` launcher (as
Hydra's launcher plugins run them): sweeps of one and two jobs, overrides,
custom resolvers, job names and working folders, in this process and as
applications in subprocesses."""

from __future__ import annotations

import pytest
from hydra.test_utils.launcher_common_tests import IntegrationTestSuite, LauncherTestSuite

from hydra_plugins.silas_launcher.silas_launcher import can_fork


@pytest.fixture(autouse=True)
def _no_version_base_yet(hydra_restore_singletons):
    """Hydra's suites expect a process in which no application has set a
    version base yet (tests that ran before in this process set 1.3; the
    fixture it depends on restores theirs afterwards)."""
    from hydra import version

    version.VersionBase.instance().version_base = version._UNSPECIFIED_


@pytest.mark.parametrize("launcher_name, overrides",
                         [("silas", ["hydra.launcher.n_jobs=2"])])
class TestSilasLauncher(LauncherTestSuite):
    pass


@pytest.mark.parametrize("task_launcher_cfg, extra_flags",
                         [({}, ["-m", "hydra/launcher=silas", "hydra.launcher.n_jobs=2"])])
class TestSilasLauncherIntegration(IntegrationTestSuite):
    pass


def test_this_machine_forks():
    """The suites above exercise the forked workers only where fork is used."""
    assert can_fork()
