"""Import direction (docs/ARCHITECTURE.md, Layers): the data and target layers never reach up
to MPI (aiio.run.comm), the steps up that were taken out stay out (callers hand down what a lower
layer needs), and no modules import each other round a cycle."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import aiio

PACKAGE = Path(aiio.__file__).parent


def imported_modules(module: str) -> set[str]:
    """Every module the source of `module` imports, at the top or inside a function."""
    path = PACKAGE.joinpath(*module.split(".")[1:]).with_suffix(".py")
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_dataset_and_target_never_import_mpi_layer():
    for module in ("aiio.storage.dataset", "aiio.storage.target"):
        assert "aiio.run.comm" not in imported_modules(module), module


# Module names from before the layout was split into packages; an import alias spelling one
# keeps it alive in the reader's head after the module is gone.
OLD_MODULE_NAMES = {"ckptio", "scaling", "scale", "train_ckpt", "all", "fio", "fio_suite",
                    "fio_emit", "hero_pairing", "accept_spec", "sweep_figures", "console_scale"}
REPO = PACKAGE.parent


def old_name_aliases(source: str) -> list[str]:
    """'import x as old' and 'from m import x as old' where old is a former module name."""
    return [f"line {node.lineno}: as {alias.asname}" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names if alias.asname in OLD_MODULE_NAMES]


def test_no_import_keeps_a_former_module_name_alive():
    found = {str(p.relative_to(REPO)): hits
             for folder in ("aiio", "tools", "tests") for p in sorted((REPO / folder).rglob("*.py"))
             if (hits := old_name_aliases(p.read_text()))}
    assert not found, found


def test_the_alias_guard_sees_an_old_name():
    assert old_name_aliases("from aiio.phases import shards as ckptio\n")
    assert old_name_aliases("from aiio.fio import job as fio\n")
    assert old_name_aliases("import aiio.fio.suite as fio_suite\n")
    assert not old_name_aliases("from aiio.phases import shards\n")


# --- the import graph ---------------------------------------------------------------------
# An edge is an import statement a module's source holds, at the top or inside a function (a
# lazy import closes a cycle the first time it runs). An import under `if TYPE_CHECKING:` never
# runs: it counts for the layers (a type names its layer too) but closes no cycle. A registry's
# strings (phases.REGISTRY) are not imports and are not seen.

def _type_checking_only(source: ast.Module) -> set[int]:
    """ids of the nodes inside `if TYPE_CHECKING:` blocks."""
    return {id(inner) for node in ast.walk(source)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for inner in ast.walk(node)}


def _imported(node: ast.AST, modules: set[str]) -> list[str]:
    """The modules of `modules` one import statement imports: `from p import m` names module
    p.m when there is one, else p itself."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in modules]
    if not isinstance(node, ast.ImportFrom) or node.level or node.module not in modules:
        return []
    return [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
            for a in node.names]


@functools.cache
def _parsed(path: Path) -> ast.Module:
    """The source at `path`, parsed once for the module's tests (the guards' scratch packages
    are at paths of their own)."""
    return ast.parse(path.read_text())


def import_graph(package: Path, type_only: bool = False) -> dict[str, set[str]]:
    """module -> the modules of the package it imports (itself left out); with `type_only`,
    the imports made for type checkers alone too."""
    files = {".".join((package.name, *[p for p in path.relative_to(package).with_suffix("").parts
                                       if p != "__init__"])): path
             for path in sorted(package.rglob("*.py"))}
    graph, modules = {}, set(files)  # the set made once: made for each node, it was most
    for module, path in files.items():  # of the module's CPU
        source = _parsed(path)
        skip = set() if type_only else _type_checking_only(source)
        graph[module] = {name for node in ast.walk(source) if id(node) not in skip
                         for name in _imported(node, modules) if name != module}
    return graph


# --- layers --------------------------------------------------------------------------------
# The layers of docs/ARCHITECTURE.md, top to bottom, by package, or by module where a package
# spans two rows (the run's: the runner, its hosts and its memory check run phases; its client
# processes, ranks and process set-up are below them) or holds the one row it names (the
# results'). A module in none is in the bottom rows (the engines, the storage, the run's
# processes, the modules at the top of aiio/), not ordered among themselves.
LAYERS = {"aiio.cli": 9, "aiio.term": 8, "aiio.report": 8, "aiio.accept": 7, "aiio.sweep": 6,
          "aiio.fio": 5, "aiio.sizing": 5,
          "aiio.run.runner": 4, "aiio.run.hosts": 4, "aiio.run.memcheck": 4,
          "aiio.results.result": 3, "aiio.results.figures": 3, "aiio.results.history": 3,
           "aiio.results.monitoring": 3, "aiio.results.parts": 3, "aiio.results.beside": 3,
          "aiio.results.charts": 3, "aiio.results.markup": 3, "aiio.results.files": 3, "aiio.s3": 3,
          "aiio.phases": 2, "aiio.engines": 2}
# The bend that is meant, importer module -> part (ARCHITECTURE, Layers): the s3 engine
# reaching the bucket's own I/O in aiio/s3 (objectio.py).
MEANT = {("aiio.engines.s3", "aiio.s3")}
ABOVE_ALL = {"aiio", "aiio.__main__"}  # the package and its entry point


def layer(module: str) -> tuple[str, int]:
    """The part of aiio a module belongs to (the longest name in LAYERS it lies in, else its
    top-level package or module), and how high that part sits."""
    parts = module.split(".")
    for depth in range(len(parts), 1, -1):
        name = ".".join(parts[:depth])
        if name in LAYERS:
            return name, LAYERS[name]
    return ".".join(parts[:2]), 1


def upward_imports(package: Path) -> set[str]:
    """'importer -> imported' for every import of a module of a higher layer."""
    found = set()
    for module, imported in import_graph(package, type_only=True).items():
        if module in ABOVE_ALL:
            continue
        part, height = layer(module)
        for name in imported - ABOVE_ALL:
            other, other_height = layer(name)
            if other != part and other_height > height and (module, other) not in MEANT:
                found.add(f"{module} -> {name}")
    return found


def test_no_import_runs_upward_but_the_meant_bend():
    found = upward_imports(PACKAGE)
    assert not found, sorted(found)


def _write_module(root: Path, module: str, source: str) -> None:
    """A module of a scratch package at root, its packages made with it."""
    path = root.joinpath(*module.split("."))
    for folder in [*reversed(path.parents[:len(module.split(".")) - 1])]:
        folder.mkdir(exist_ok=True)
        (folder / "__init__.py").touch()
    path.with_suffix(".py").write_text(source)


def test_results_never_import_the_phases():
    """A result records its own layout (aiio.results.layout); results of /1 and /2 read with a
    frozen copy of the phases' declarations: the model and its readers ask no phase."""
    found = {module: sorted(n for n in imported if n.startswith("aiio.phases"))
             for module, imported in import_graph(PACKAGE, type_only=True).items()
             if module.startswith("aiio.results")}
    assert not {m: names for m, names in found.items() if names}


def test_the_layer_guard_sees_a_step_up(tmp_path):
    runner, clients = "aiio.run.runner", "aiio.run.clients"
    _write_module(tmp_path, runner, "from aiio.phases import get_phase\n")
    _write_module(tmp_path, clients, f"def f():\n    import {runner}\n")  # lazily, still up
    _write_module(tmp_path, "aiio.phases.train", f"import {clients}\n")
    assert upward_imports(tmp_path / "aiio") == {f"{clients} -> {runner}"}


# --- the top level -------------------------------------------------------------------------
# Issue 28: a top level that shows the architecture, the rest in packages named for what they
# own. Counted as files, __init__.py and __main__.py included.
TOP_LEVEL_MODULES = 12


def test_the_top_level_holds_at_most_twelve_modules():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= TOP_LEVEL_MODULES, top


# --- no import cycle -----------------------------------------------------------------------

def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every group of modules that import each other round a cycle (Tarjan's strongly
    connected components of more than one module), each sorted."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for other in sorted(graph.get(module, ())):
            if other not in order:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], order[other])
        if low[module] == order[module]:
            group = stack[stack.index(module):]
            del stack[stack.index(module):]
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return found


def test_no_import_cycle_in_the_package():
    found = import_cycles(import_graph(PACKAGE))
    assert not found, found


def test_the_cycle_guard_sees_a_lazy_cycle_and_not_a_type_only_one(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("def get():\n    from pkg.sub import low\n")
    (pkg / "sub" / "low.py").write_text("from pkg import top\n")
    (pkg / "top.py").write_text("from pkg.sub import get\n")
    (pkg / "typed.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                  "    from pkg import top\n")
    (pkg / "user.py").write_text("from pkg import typed\n")
    graph = import_graph(pkg)
    assert import_cycles(graph) == [["pkg.sub", "pkg.sub.low", "pkg.top"]]
    graph["pkg.top"].add("pkg.user")  # user -> typed -> (type only) top: still no cycle there
    assert import_cycles(graph) == [["pkg.sub", "pkg.sub.low", "pkg.top"]]
