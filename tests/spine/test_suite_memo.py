"""Jobs in one process share a loaded suite until one of its files changes."""

from __future__ import annotations

import os
import shutil

from silas_exp.data.suites.memo import load_suite_cached

from ..conftest import REPO


def test_an_unchanged_suite_is_loaded_once_and_a_changed_one_again(tmp_path):
    suite = tmp_path / "smoke"
    shutil.copytree(REPO / "suites" / "smoke", suite)
    first = load_suite_cached(suite)
    assert load_suite_cached(suite) is first
    case = sorted((suite / "cases").glob("*.json"))[0]
    case.write_text(case.read_text().replace('"tags"', '"tags" ', 1))
    os.utime(case, ns=(1, 1))  # a different mtime, whatever the clock's resolution
    again = load_suite_cached(suite)
    assert again is not first
    assert [c.case_id for c in again.suite.cases] == [c.case_id for c in first.suite.cases]
