"""The console's title names the engine a run asked for (`--engine`) when it is not the one
its target picks anyway: a run on an engine of one's own (every call 2 ms slower) read with
the same title as psync's, so its figures looked like the storage's."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from aiio.results import result
from aiio.term import console

STORED = Path(__file__).parent / "data" / "results-v1"


@pytest.mark.parametrize("folder", ["20261130-230529-train-demo-c2",
                                    "20261130-230542-load-demo-c2"])
def test_the_title_names_an_engine_asked_for(folder: str) -> None:
    doc = dict(result.load(STORED / folder).doc)
    before = console.phase_tables(doc)[0].title
    assert "engine" not in before  # a stored result: its target's own engine, not named
    own = copy.deepcopy(doc)
    own["engine"] = "posix"
    assert console.phase_tables(own)[0].title == before
    asked = copy.deepcopy(doc)
    asked["engine"] = "sleepy"
    assert console.phase_tables(asked)[0].title == before[:-1] + ", engine sleepy)"
