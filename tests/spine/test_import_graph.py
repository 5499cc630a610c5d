"""Tracking is one-way: nothing under silas_exp/tracking imports the layers
that call it (analysis, the runner, probes, the app) — not at module level,
not inside a function, not under TYPE_CHECKING."""

from __future__ import annotations

import ast
from pathlib import Path

from ..conftest import REPO

TRACKING = REPO / "silas_exp" / "tracking"
FORBIDDEN = ("silas_exp.analysis", "silas_exp.runner", "silas_exp.probes", "silas_exp.app")


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in a file, relative ones resolved."""
    package = "silas_exp.tracking"
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def _forbidden(module: str) -> bool:
    return any(module == f or module.startswith(f + ".") for f in FORBIDDEN)


def test_tracking_imports_no_layer_above_it():
    files = sorted(TRACKING.rglob("*.py"))
    assert files
    bad = [f"{path.relative_to(REPO)}:{line}: {module}" for path in files
           for line, module in imported_modules(path) if _forbidden(module)]
    assert not bad, "tracking imports a layer above it:\n" + "\n".join(bad)


def test_the_check_sees_function_level_and_relative_imports(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from silas_exp.analysis.data import load_sweep_dir\n"
                     "from .. import runner\nimport silas_exp.app as app\n")
    modules = [m for _, m in imported_modules(probe)]
    assert {m for m in modules if _forbidden(m)} == {
        "silas_exp.analysis.data", "silas_exp.analysis.data.load_sweep_dir",
        "silas_exp.runner", "silas_exp.app"}
