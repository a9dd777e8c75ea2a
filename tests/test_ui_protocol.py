"""Every console a run can be handed speaks the one UI protocol, with the same signatures."""

from __future__ import annotations

import inspect

import pytest

from aiio.term.console import RichUI
from aiio.ui import UI, QuietUI

METHODS = ("note", "alert", "progress", "start", "tick", "stop")


@pytest.mark.parametrize("cls", [QuietUI, RichUI])
def test_implementations_match_the_protocol(cls):
    for name in METHODS:
        want = inspect.signature(getattr(UI, name))
        assert inspect.signature(getattr(cls, name)) == want, f"{cls.__name__}.{name}"


def test_quiet_ui_accepts_a_whole_run_and_shows_nothing(capsys):
    ui: UI = QuietUI()
    ui.note("hello")
    ui.alert("the storage did not answer")
    ui.progress("generating", 1, 2)
    ui.start("train demo", 10, 2, compute_s=0.1, hero={"test": "seqread", "fio_mib_s": 1.0})
    ui.tick([1, 2], [1, 1], 0.5)
    ui.stop()
    assert capsys.readouterr() == ("", "")


def test_the_bar_ends_on_the_runs_mean_rate_not_on_its_idle_last_tick():
    """The bar showed the rate since the tick before: the last tick comes after every client
    is done, so a run of 188 MiB/s ended its bar on "0.0 MiB/s" above its summary."""
    import io

    from rich.console import Console

    from aiio.units import MiB

    ui = RichUI()
    out = io.StringIO()
    ui.console = Console(file=out, width=100, force_terminal=False)
    ui.start("train demo", 10, 2)
    ui.tick([50 * MiB, 0], [5, 0], 0.5)
    ui.tick([50 * MiB, 50 * MiB], [5, 5], 1.0)
    ui.tick([50 * MiB, 50 * MiB], [5, 5], 1.25)  # the clients are done: nothing moved
    ui.stop()
    last = out.getvalue().strip().splitlines()[-1]
    assert "80.0 MiB/s" in last and "0.0 MiB/s" not in last.replace("80.0", ""), last
