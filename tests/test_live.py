"""The live per-client view: current MiB/s and AU per client, slowest first, the aggregate
against the fio hero; drawn only on a terminal, never into --json or quiet output."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from aiio.term.live import ClientRates, Hero, live_table
from aiio.units import MiB
from tests.conftest import TINY_ARGS
from tests.terminal import run_on_terminal


def _render(renderable) -> str:
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(renderable)
    return out.getvalue()


def test_slowest_first_edges_only_and_the_hero():
    n = 20
    rates = ClientRates(compute_s=0.1)
    rates.add(0.0, [0] * n, [0] * n)
    # client i moves (i + 1) MiB and finishes i batches in the 2 s window
    rates.add(2.0, [(i + 1) * MiB for i in range(n)], list(range(n)))
    text = _render(live_table(rates, Hero("seq_read", 420.0)))
    # aggregate: sum(1..20) MiB over 2 s = 105 MiB/s, a quarter of the hero
    assert "105.0 MiB/s from 20 clients, 25% of fio seq_read (420.0 MiB/s)" in text
    clients = [line.split() for line in text.splitlines() if line.strip()[:1].isdigit()]
    assert [int(c[0]) for c in clients] == [0, 1, 2, 3, 4, 15, 16, 17, 18, 19]
    assert clients[0][1:] == ["0.5", "0%"] and clients[-1][1:] == ["10.0", "95%"]
    assert "(10 more)" in text
    assert all(len(line) <= 80 for line in text.splitlines())


def test_window_forgets_old_ticks():
    rates = ClientRates()
    rates.add(0.0, [0], [0])
    rates.add(1.0, [100 * MiB], [0])  # a fast start ...
    for t in range(2, 8):
        rates.add(float(t), [100 * MiB + (t - 1) * MiB], [0])  # ... then 1 MiB/s
    [(client, mib_s, au)] = rates.rows()
    assert (client, au) == (0, None) and abs(mib_s - 1.0) < 1e-9


def _run_with_terminal_stderr(cwd: Path, *args: str) -> tuple[str, str, int]:
    """stdout to a file (as `> out.json` would), stderr to a pseudo-terminal."""
    err, code = run_on_terminal(args, cwd, stdout=cwd / "stdout.txt", TERM="xterm")
    return (cwd / "stdout.txt").read_text(), err, code


@pytest.mark.long
def test_live_view_on_a_terminal_and_json_and_quiet_stay_clean(tmp_path: Path):
    (tmp_path / "target").mkdir()
    run = ("run", "--phase", "train", "--target", "target", "--results", "reports",
           "--no-history", "--no-report", *TINY_ARGS, "--duration", "4s")
    out, err, code = _run_with_terminal_stderr(tmp_path, *run)
    assert code == 0, err[-2000:]
    assert "now (2 s window)" in err and "AU (est.)" in err  # the person watching sees it
    assert "now (" not in out and "\x1b[" not in out  # the piped summary does not
    for quiet in (("--json",), ("-q",)):
        out, err, code = _run_with_terminal_stderr(tmp_path, *run, *quiet)
        assert code == 0
        assert err.strip() == "", quiet
        if quiet == ("--json",):
            assert json.loads(out)["phase"] == "train"  # stdout is the JSON, nothing else
