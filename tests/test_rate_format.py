"""A rate reads the same wherever it is shown: console, report, verdict card, acceptance."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from aiio.report import html
from aiio.results.figures import FIGURES
from aiio.sweep.verdict import Point, judge
from aiio.term import console, sweep_console
from aiio.units import format_rate
from tests.conftest import call_cli

SHOWN = [(1234.56, "1,234.6 MiB/s"), (12.25, "12.2 MiB/s"), (0.0123, "0.0123 MiB/s"),
         (0.0, "0.0 MiB/s"), (1_073_741_824, "1,073,741,824.0 MiB/s")]


@pytest.mark.parametrize("value, text", SHOWN)
def test_one_text_for_one_rate(value, text):
    assert format_rate(value) == text
    assert html.mib_s(value) == text  # the report's tables
    for name in ("aggregate_mib_s", "client_mib_s_min"):  # verdict cards, acceptance messages
        assert FIGURES[name].format(value) == text


def test_a_bare_number_under_a_mib_s_heading():
    assert format_rate(1234.56, unit=False) == "1,234.6"


STORED = Path(__file__).parent / "data" / "results-v1"
SLOW = 0.0123  # MiB/s: a client's share when many share slow storage


def _shown(tables) -> str:
    """The tables as a terminal of 200 columns shows them."""
    con = Console(width=200, file=io.StringIO(), record=True)
    for table in tables:
        con.print(table)
    return con.export_text()


def _stored(name: str) -> dict:
    return json.loads((STORED / name / "result.json").read_text())


def test_a_sweep_shows_a_slow_rate_as_every_other_place():
    sweep = _stored("20261130-230558-scale-train-demo-c1_2")
    for row in sweep["table"]:
        row["first_done_mib_s"] = row["last_done_mib_s"] = SLOW
        row["per_client_mib_s"].update(mean=SLOW, min=SLOW, max=SLOW)
    text = _shown([sweep_console.aggregate_table(sweep), sweep_console.client_table(sweep)])
    # first done, last done; per client mean, min, max
    assert text.count(format_rate(SLOW, unit=False)) == 5 * len(sweep["table"])


def test_the_fio_and_train_tables_show_a_slow_rate_as_every_other_place():
    fio = _stored("20261130-230552-fio-c2")
    for test in fio["tests"].values():
        test["aggregate"]["per_client_mib_s"].update(min=SLOW, max=SLOW)
    train = _stored("20261130-230529-train-demo-c2")
    train["aggregate"]["demand_mib_s_per_client"] = SLOW
    train["aggregate"]["per_client_mib_s"].update(mean=SLOW, min=SLOW, max=SLOW)
    assert _shown([console.fio_table(fio)]).count(format_rate(SLOW, unit=False)) == \
        2 * len(fio["tests"])
    shown = _shown(console.train_tables(train))
    assert format_rate(SLOW) in shown  # the demand
    assert " / ".join([format_rate(SLOW, unit=False)] * 3) in shown  # per client mean/min/max


def test_the_scaling_verdict_shows_a_slow_plateau_as_every_other_place():
    aggs = [0.2, 0.4, 0.41, 0.405, 0.4]  # MiB/s: storage that saturates at 2 clients
    v = judge([Point(n, a, a / n) for n, a in zip((1, 2, 4, 8, 16), aggs, strict=True)])
    assert v.shape == "saturated"
    low, high = (format_rate(v.plateau[k], unit=False) for k in ("min_mib_s", "max_mib_s"))
    assert any(f"({low} to {high})" in s for s in v.statements), v.statements


def test_history_shows_a_rate_as_every_other_place():
    """The stored one-client train run made 3.067 MiB/s: the console and report show 3.1."""
    done = call_cli("history", "--history", str(STORED / "history.sqlite"))
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if "train demo c1 " in line)
    assert f" {format_rate(3.0671385922276198, unit=False)} " in row, row
