"""Import direction: the data and target layers never reach up to MPI (aiio.comm); callers
hand them the hosts to spread work over."""

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
