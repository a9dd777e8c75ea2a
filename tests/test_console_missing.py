"""The console's per-client table shows a figure a client did not record as '-', as it
shows a missing AU and as the typed model reads it (None), never as a measured zero."""

from __future__ import annotations

from pathlib import Path

from aiio.results import result
from aiio.term import console

STORED = Path(__file__).parent / "data" / "results-v1"


def _column(table, title: str) -> list[str]:
    (col,) = [c for c in table.columns if c.header == title]
    return [str(v) for v in col._cells]


def test_a_client_without_an_accelerator_waited_no_measured_zero_seconds() -> None:
    # prep's clients emulate no accelerator: 'wait s' said 0.00 for each
    res = result.load(STORED / "20261130-230534-prep-demo-c2")
    assert all(c.wait_s is None for c in res.clients)
    assert set(_column(console.client_table(dict(res.doc)), "wait s")) == {"-"}


def test_a_train_client_keeps_its_measured_wait() -> None:
    res = result.load(STORED / "20261130-230529-train-demo-c2")
    shown = _column(console.client_table(dict(res.doc)), "wait s")
    assert sorted(shown) == sorted(f"{c.wait_s:.2f}" for c in res.clients)
