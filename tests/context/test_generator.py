"""Generated sessions are deterministic and the shipped suites are up to date."""

from __future__ import annotations

import filecmp

from silas_exp.suites.build import SHIPPED, write_suite
from silas_exp.suites.generator import generate_session, spec_for

from ..conftest import REPO


def test_same_seed_same_session_other_seed_differs():
    spec = spec_for("debugging", 40)
    a = generate_session(5, spec, "x")
    b = generate_session(5, spec, "x")
    c = generate_session(6, spec, "x")
    assert a == b
    assert a[0] != c[0]


def test_case_mix_covers_profiles_and_fill_levels():
    default = next(r for r in SHIPPED if r.name == "default")
    flavours = {m.flavour for m in default.mix}
    assert {"coding", "debugging", "research", "support", "chronicle"} <= flavours
    assert len({m.fill for m in default.mix if m.split == "eval"}) >= 3
    assert min(m.turns for m in default.mix if m.split == "eval") >= 100
    assert any(m.split == "calibration" for m in default.mix)
    assert default.scorer_target  # shares fitted per session: the scorer, not a zone cap, decides


def test_shipped_suites_match_the_generator(tmp_path):
    for recipe in SHIPPED:
        out = write_suite(recipe, tmp_path)
        shipped = REPO / "suites" / recipe.name
        cmp = filecmp.dircmp(out / "cases", shipped / "cases")
        assert not cmp.left_only and not cmp.right_only and not cmp.diff_files, (
            f"suites/{recipe.name} is stale: run python scripts/generate_suites.py")
        assert (out / "suite.json").read_text() == (shipped / "suite.json").read_text()
