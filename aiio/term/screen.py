"""Consoles that draw colour and live bars only where a person is watching.

rich already drops colour when the output is not a terminal and honours NO_COLOR. Under an MPI
launcher that is not enough: Open MPI hands each rank a pseudo-terminal even when mpiexec's own
output goes to a pipe or a file, so isatty() says yes and escape codes land in the log. There we
draw plain text (FORCE_COLOR still forces colour, as rich documents).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from rich.console import Console

from aiio.term.fit import fit

# set by Open MPI (OMPI_*, PMIX_*), MPICH and Intel MPI (PMI_*) in every rank they start
MPI_LAUNCHER_VARS = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE")


def under_mpi_launcher() -> bool:
    return any(v in os.environ for v in MPI_LAUNCHER_VARS)


def _terminal_settings() -> dict[str, Any]:
    if under_mpi_launcher() and not os.environ.get("FORCE_COLOR"):
        return {"force_terminal": False, "force_interactive": False}
    return {}


class FitConsole(Console):
    """A rich Console whose tables fit its width (one block per row when the columns do not)."""

    def print(self, *objects: Any, **kwargs: Any) -> None:  # noqa: A003 (rich's name)
        super().print(*(fit(o) for o in objects), **kwargs)


def out_console() -> FitConsole:
    """The console for a command's answer (stdout)."""
    return FitConsole(file=sys.stdout, **_terminal_settings())


def err_console() -> FitConsole:
    """The console for progress and notes (stderr, so --json output stays clean)."""
    return FitConsole(stderr=True, **_terminal_settings())
