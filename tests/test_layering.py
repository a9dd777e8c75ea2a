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


# The layers above the runner (docs/ARCHITECTURE.md): it is handed what it needs from them.
ABOVE_THE_RUNNER = ("aiio.fio", "aiio.sweep", "aiio.accept", "aiio.term", "aiio.report",
                    "aiio.cli", "aiio.charts")


def test_the_runner_imports_nothing_above_it():
    upward = {m for m in imported_modules("aiio.runner")
              if any(m == top or m.startswith(top + ".") for top in ABOVE_THE_RUNNER)}
    assert not upward, upward


def test_charts_import_nothing_of_the_report_they_are_drawn_for():
    """report/ draws with charts, and a sweep writes chart files with them: charts reaching
    into report/ would import the whole report package and close a cycle across its edge."""
    assert not {m for m in imported_modules("aiio.charts") if m.startswith("aiio.report")}


def test_the_object_storage_layer_never_imports_fio():
    """s3/ sits below fio/: the fio suite against a bucket belongs to fio/ and reaches down."""
    upward = {f"{p.stem}: {m}" for p in sorted((PACKAGE / "s3").glob("*.py"))
              for m in imported_modules(f"aiio.s3.{p.stem}") if m.startswith("aiio.fio")}
    assert not upward, upward


def test_run_options_import_nothing_of_object_storage():
    """RunOptions rides in every phase's RunContext: it sits below phases/ and so below s3/."""
    assert not {m for m in imported_modules("aiio.options") if m.startswith("aiio.s3")}
