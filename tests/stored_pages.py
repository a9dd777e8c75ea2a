"""The report page of a stored result, drawn once in a process: test_reader_golden.py and
test_typed_reading.py both read the page of every stored result (about half a second of CPU
each), and run on one worker (their xdist group, STORED_PAGES) to share it."""

from __future__ import annotations

import functools
import itertools
from pathlib import Path

import pytest

from aiio import report
from aiio.results import charts, result

STORED_PAGES = pytest.mark.xdist_group("stored-pages")


@functools.cache
def stored_page(folder: Path) -> str:
    """The page of the result stored in `folder`; chart ids start at 1, as on a page drawn
    alone (they count up per process)."""
    charts._ids = itertools.count(1)
    return report.render(result.load(folder))
