"""Collecting the suite costs little: every worker of every pass imports every test module,
most of them to run none of its tests (docs/TESTING.md)."""

from __future__ import annotations

import pytest

from tests.conftest import COMPILED_WHEN_COLLECTED


def test_collecting_the_test_modules_compiles_no_loop(pytestconfig: pytest.Config) -> None:
    # a check at a module's top (a skipif asking whether io_uring can be had) compiled the
    # ring's loop, about 1.7 s of CPU, on each of the eight workers and again in the serial
    # pass; a fixture asks when a test starts
    assert pytestconfig.stash[COMPILED_WHEN_COLLECTED] == []
