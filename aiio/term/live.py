"""The live per-client view of a long run: each client's current MiB/s (and AU in training),
slowest first, and the aggregate against the fio hero when one is known.

"Current" means over the last WINDOW_S seconds of ticks, so a client that stalls shows at once
instead of hiding in its run average. Live AU is batches finished in the window times the
emulated compute time per batch, over the window: the final figures in the result are computed
from the clients' own step records, not from this.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from aiio.units import MiB, format_rate

WINDOW_S = 2.0   # what "current" means
SHOW_AFTER_S = 3.0  # shorter runs end before a table could be read
EDGE = 5         # with many clients: the slowest and the fastest this many


@dataclass(frozen=True)
class Hero:
    """The fio figure the aggregate is held against."""

    test: str
    mib_s: float


class ClientRates:
    """Per-client rates over a sliding window of (elapsed, bytes, units) snapshots."""

    def __init__(self, compute_s: float | None = None) -> None:
        self.compute_s = compute_s
        self.ticks: deque[tuple[float, list[int], list[int]]] = deque()

    def add(self, elapsed: float, nbytes: list[int], units: list[int]) -> None:
        self.ticks.append((elapsed, list(nbytes), list(units)))
        while len(self.ticks) > 2 and elapsed - self.ticks[1][0] >= WINDOW_S:
            self.ticks.popleft()

    @property
    def elapsed(self) -> float:
        return self.ticks[-1][0] if self.ticks else 0.0

    def rows(self) -> list[tuple[int, float, float | None]]:
        """(client, MiB/s, AU or None) per client over the window, slowest first."""
        if len(self.ticks) < 2:
            return []
        (t0, b0, u0), (t1, b1, u1) = self.ticks[0], self.ticks[-1]
        span = t1 - t0
        if span <= 0:
            return []
        out = []
        for i, (before, after) in enumerate(zip(b0, b1, strict=True)):
            au = None
            if self.compute_s:
                au = min(1.0, (u1[i] - u0[i]) * self.compute_s / span)
            out.append((i, (after - before) / MiB / span, au))
        return sorted(out, key=lambda r: (r[1], r[0]))


def shown(rows: list, edge: int = EDGE) -> tuple[list, int]:
    """All rows, or the slowest and fastest `edge` of them and how many sit between."""
    if len(rows) <= 2 * edge + 1:
        return rows, 0
    return rows[:edge] + rows[-edge:], len(rows) - 2 * edge


def live_table(rates: ClientRates, hero: Hero | None = None) -> Group:
    """The headline and the table drawn under the progress bar."""
    rows = rates.rows()
    total = sum(r[1] for r in rows)
    title = f"now ({WINDOW_S:g} s window): {format_rate(total)} from {len(rows)} clients"
    if hero and hero.mib_s > 0:
        title += f", {total / hero.mib_s:.0%} of fio {hero.test} ({format_rate(hero.mib_s)})"
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("client", justify="right")
    table.add_column("MiB/s", justify="right")
    with_au = rows and rows[0][2] is not None
    if with_au:
        table.add_column("AU (est.)", justify="right")
    picked, hidden = shown(rows)
    for n, (client, mib_s, au) in enumerate(picked):
        if hidden and n == EDGE:
            table.add_row("", f"({hidden} more)", *([""] if with_au else []))
        cells = [str(client), format_rate(mib_s, unit=False)] + ([f"{au:.0%}"] if with_au else [])
        table.add_row(*cells)
    return Group(Text(title), table)
