"""The package layering of docs/architecture.md, checked on the source: every
import (module level, inside a function or under ``if TYPE_CHECKING:``) goes
from a package to one in the same or a lower layer, no packages import each
other in a cycle, no modules import each other in a cycle, and tracking never
imports analysis, probes, run or the entry points.

``KNOWN`` lists the imports that break these rules today, each with the
module that makes it; the tests fail on any other, and also when a known one
is gone (so the list only shrinks)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "silas_exp"

# lowest first; a package may import packages of its own layer or below (a new
# package: add it to the row it belongs to, and to docs/architecture.md)
LAYERS = [
    {"errors", "schema", "exits", "resolvers", "jit"},
    {"llm", "stats", "plugins", "records", "baselines"},
    {"context", "facts"},
    {"feedback", "scorers", "metrics", "probes"},
    {"eviction"},
    {"analysis", "variants"},
    {"config"},
    {"tracking", "data"},
    {"study"},
    {"run", "tune"},
    {"gate", "plan"},
    {"cli", "__main__"},
]


# tracking must stay one-way: it is handed results, it does not compute them
TRACKING_MAY_NOT_IMPORT = {"analysis", "probes", "run", "gate", "cli"}

# imports that break the rules today (none): an entry names (package,
# imported package, importing module) and must go when the import goes
KNOWN: set[tuple[str, str, str]] = set()


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "<root>"


def imports() -> dict[str, set[tuple[str, str]]]:
    """package -> {(imported package, importing file)}"""
    edges: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        module = ".".join(rel.parts).removesuffix(".__init__")
        here = package_of(module)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
                if node.module == "silas_exp":
                    names = [f"silas_exp.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                if name.startswith("silas_exp.") and package_of(name) != here:
                    edges[here].add((package_of(name), str(rel)))
    return edges


def layer(pkg: str) -> int:
    for i, members in enumerate(LAYERS):
        if pkg in members:
            return i
    raise AssertionError(f"package silas_exp.{pkg} is in no layer of this test; add it "
                         "(and to docs/architecture.md)")


def test_every_package_has_a_layer() -> None:
    for path in ROOT.iterdir():
        name = path.stem if path.suffix == ".py" else path.name
        if name.startswith(("_", ".")) and name != "__main__" or not (
                path.suffix == ".py" or (path / "__init__.py").exists()):
            continue
        layer(name)


def violations() -> set[tuple[str, str, str]]:
    """(package, imported package, importing module) of every import against the rules."""
    found = set()
    for pkg, targets in imports().items():
        for dst, src in targets:
            if pkg == "<root>":
                continue
            if layer(dst) > layer(pkg) or (pkg == "tracking" and dst in TRACKING_MAY_NOT_IMPORT):
                found.add((pkg, dst, src))
    return found


def test_imports_go_down_the_layers_and_tracking_is_one_way() -> None:
    new = sorted(violations() - KNOWN)
    assert not new, "imports against the layering (docs/architecture.md):\n" + "\n".join(
        f"{src} imports silas_exp.{dst}" for _, dst, src in new)


def test_known_exceptions_are_still_there() -> None:
    gone = sorted(KNOWN - violations())
    assert not gone, f"these imports are gone: remove them from KNOWN: {gone}"


def test_no_cycle_between_packages() -> None:
    graph = {pkg: {dst for dst, _ in targets} for pkg, targets in imports().items()}
    allowed = {(a, b) for a, b, _ in KNOWN}
    graph = {a: {b for b in bs if (a, b) not in allowed} for a, bs in graph.items()}
    state: dict[str, int] = {}  # 1 on the path, 2 done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path, node, nxt]
            if nxt not in state and (cycle := visit(nxt, [*path, node])):
                return cycle
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start, [])
            assert cycle is None, "packages import each other in a cycle: " + " -> ".join(cycle)


# module cycles tolerated for now, each a set of the modules in it; the
# ablation <-> decision one goes with the one report pipeline
KNOWN_MODULE_CYCLES: list[set[str]] = []  # none tolerated


def module_imports(root: Path | None = None) -> dict[str, set[str]]:
    """module -> the silas_exp modules it imports (``from pkg import mod`` is the
    module ``pkg.mod``; ``from mod import name`` is ``mod``), every import counted."""
    root = root or ROOT
    modules = {".".join(p.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__"): p
               for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                         for a in node.names]
            else:
                continue
            for name in names:
                while name and name not in modules:  # an attribute of a module: the module
                    name = name.rpartition(".")[0]
                if name.startswith("silas_exp") and name != module:
                    found.add(name)
        graph[module] = found
    return graph


def module_cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_no_cycle_between_modules() -> None:
    new = [sorted(c) for c in module_cycles(module_imports()) if c not in KNOWN_MODULE_CYCLES]
    assert not new, "modules import each other in a cycle (imports inside functions count too): " \
        + "; ".join(" <-> ".join(c) for c in new)


def test_the_module_check_sees_a_cycle_inside_a_function(tmp_path) -> None:
    pkg = tmp_path / "silas_exp"
    (pkg / "run").mkdir(parents=True)
    (pkg / "run" / "__init__.py").write_text("")
    (pkg / "run" / "a.py").write_text("from silas_exp.run.b import f\n")
    (pkg / "run" / "b.py").write_text("def f():\n    from silas_exp.run import a\n")
    (pkg / "run" / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                      "    from silas_exp.run.a import x\n")
    assert module_cycles(module_imports(pkg)) == [{"silas_exp.run.a", "silas_exp.run.b"}]


def test_the_check_sees_a_violation(tmp_path) -> None:
    """The check can fail: a planted upward import is reported."""
    pkg = tmp_path / "silas_exp"
    (pkg / "context").mkdir(parents=True)
    (pkg / "context" / "__init__.py").write_text("")
    (pkg / "context" / "bad.py").write_text("def f():\n    from silas_exp.run.job import run_job\n")
    globals_ = globals()
    saved = globals_["ROOT"]
    globals_["ROOT"] = pkg
    try:
        found = imports()
    finally:
        globals_["ROOT"] = saved
    assert ("run", "silas_exp/context/bad") in found["context"]
    assert layer("run") > layer("context")


def _third_party_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_only_tracking_imports_mlflow() -> None:
    """MLflow lives behind tracking: the gate reads runs through a run reader,
    the entry points and analysis see plain values."""
    outside = sorted(str(p.relative_to(ROOT.parent)) for p in ROOT.rglob("*.py")
                     if "mlflow" in _third_party_imports(p)
                     and p.relative_to(ROOT).parts[0] != "tracking")
    assert not outside, f"only silas_exp/tracking may import mlflow: {outside}"


# attributes only an MLflow run object has (``run.info.run_id``, ``run.data.tags``)
RUN_OBJECT = {("info", "run_id"), ("info", "status"), ("info", "start_time"),
              ("info", "experiment_id"), ("data", "tags"), ("data", "params"),
              ("data", "metrics")}


def run_object_uses(root: Path, packages: tuple[str, ...]) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] not in packages:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) \
                    and (node.value.attr, node.attr) in RUN_OBJECT:
                found.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return found


def test_no_mlflow_run_objects_above_tracking() -> None:
    """cli, analysis and gate read ``LoggedRun`` values (schema/runs.py), never
    MLflow's run objects."""
    uses = run_object_uses(ROOT, ("cli", "analysis", "gate"))
    assert not uses, "MLflow run objects read outside tracking: " + ", ".join(uses)


def test_the_run_object_check_sees_one(tmp_path) -> None:
    pkg = tmp_path / "silas_exp"
    (pkg / "cli").mkdir(parents=True)
    (pkg / "cli" / "x.py").write_text("def f(run):\n    return run.data.tags['a']\n")
    assert run_object_uses(pkg, ("cli",)) == ["silas_exp/cli/x.py:2"]
