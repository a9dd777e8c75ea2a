"""Import direction (docs/ARCHITECTURE.md, Layers): the data and target layers never reach up
to MPI (aiio.comm), and the steps up that were taken out stay out; callers hand down what a
lower layer needs."""

from __future__ import annotations

import ast
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
    for module in ("aiio.dataset", "aiio.target"):
        assert "aiio.comm" not in imported_modules(module), module


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


# The layers of docs/ARCHITECTURE.md, top to bottom (a module in none is in the bottom rows).
LAYERS = {"cli": 9, "term": 8, "report": 8, "accept": 7, "sweep": 6, "fio": 5, "runner": 4,
          "hosts": 4, "memcheck": 4, "s3": 3, "phases": 2}
# The bends that are meant, importer module -> part (ARCHITECTURE, Layers): readers asking the
# phase registry how a phase lays out and is judged, the registry finding object phases
# (phases/__init__).
MEANT = {("aiio.result", "aiio.phases"), ("aiio.figures", "aiio.phases"),
         ("aiio.charts", "aiio.phases"), ("aiio.phases", "aiio.s3")}


def layer(module: str) -> tuple[str, int]:
    """The top-level part of aiio a module belongs to, and how high that part sits."""
    part = module.split(".")[1]
    return f"aiio.{part}", LAYERS.get(part, 1)


def _names(node: ast.AST) -> list[str]:
    """The aiio modules (or names within them) one import statement imports."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.startswith("aiio.")]
    if isinstance(node, ast.ImportFrom) and node.module == "aiio":
        return [f"aiio.{a.name}" for a in node.names]  # from aiio import runner
    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("aiio."):
        return [node.module]
    return []


def upward_imports(package: Path) -> set[str]:
    """'importer -> imported' for every import of a module of a higher layer."""
    found = set()
    for path in sorted(package.rglob("*.py")):
        parts = [p for p in path.relative_to(package).with_suffix("").parts if p != "__init__"]
        if not parts or parts == ["__main__"]:
            continue  # the package and its entry point stand above everything
        module = ".".join(("aiio", *parts))
        part, height = layer(module)
        for name in (n for node in ast.walk(ast.parse(path.read_text())) for n in _names(node)):
            other, other_height = layer(name)
            if other != part and other_height > height and (module, other) not in MEANT:
                found.add(f"{module} -> {name}")
    return found


def test_no_import_runs_upward_but_the_meant_bends():
    assert not upward_imports(PACKAGE)
