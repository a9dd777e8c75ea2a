"""Every console a run can be handed speaks the one UI protocol, with the same signatures."""

from __future__ import annotations

import inspect

import pytest

from aiio.term.console import RichUI
from aiio.ui import UI, QuietUI

METHODS = ("note", "progress", "start", "tick", "stop")


@pytest.mark.parametrize("cls", [QuietUI, RichUI])
def test_implementations_match_the_protocol(cls):
    for name in METHODS:
        want = inspect.signature(getattr(UI, name))
        assert inspect.signature(getattr(cls, name)) == want, f"{cls.__name__}.{name}"


def test_quiet_ui_accepts_a_whole_run_and_shows_nothing(capsys):
    ui: UI = QuietUI()
    ui.note("hello")
    ui.progress("generating", 1, 2)
    ui.start("train demo", 10, 2, compute_s=0.1, hero={"test": "seqread", "fio_mib_s": 1.0})
    ui.tick([1, 2], [1, 1], 0.5)
    ui.stop()
    assert capsys.readouterr() == ("", "")
