"""Hosts of a run that spanned several (MPI ranks): each host's share, status and figures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiio.report import html as h
from aiio.results import charts
from aiio.results.markup import Html
from aiio.results.result import Result, model


def hosts_section(res: Mapping[str, Any]) -> Html:
    """One row per host (rank) and its aggregate as a bar; nothing for a one-host run."""
    hosts = (res if isinstance(res, Result) else model(res)).hosts
    if len(hosts) < 2:
        return Html("")
    rows, labels, speeds = [], [], []
    for x in sorted(hosts, key=lambda x: h.finite(x.rank) or 0):
        rates = x.rates()  # the host's own window, else each stream's (reads, writes)
        first = rates[0][1].mib_s if rates[0][1] else None
        last = rates[0][2].mib_s if rates[0][2] else None
        label = f"rank {x.rank} ({x.host})"
        labels.append(label)
        speeds.append(h.finite(first) or 0.0)
        rows.append([h.num(str(x.rank), x.rank), x.host,
                     h.Cell(h.badge(x.status), str(x.status)),
                     h.num(h.plain(x.clients), x.clients), h.plain(x.client_numbers),
                     h.num(_rates(rates, 1), first), h.num(_rates(rates, 2), last),
                     h.num(h.size(x.io.bytes), x.io.bytes), h.num(h.pct(x.au_min), x.au_min),
                     h.num(h.number(x.cpu_percent_mean, 0, "%"), x.cpu_percent_mean),
                     h.plain(x.error or "")])
    table = h.table(["rank", "host", "status", "clients", "client numbers",
                     "aggregate first done", "last done", "bytes", "AU lowest",
                     "CPU busy", "error"], rows, sortable=True)
    chart = charts.bars(labels, speeds, title="aggregate bandwidth per host",
                        xlabel="host (MPI rank)",
                        ylabel=f"MiB/s ({' '.join([rates[0][0], 'first done']).strip()})",
                        caption="Each host's clients together, over the window in which all "
                                "of them ran. Bytes add up across hosts.")
    split = h.plain(res.get("split"))
    return h.section("Hosts", table, h.figures(chart), anchor="hosts",
                     note=f"The run spanned {len(hosts)} hosts (MPI ranks); clients per host: "
                          f"{split}.")


def _rates(rates: tuple[tuple[str, Any, Any], ...], window: int) -> str:
    """One window's rate, or each stream's by name ("read 1.0 MiB/s / write 2.0 MiB/s")."""
    return " / ".join(f"{r[0]} {h.mib_s(r[window].mib_s if r[window] else None)}".strip()
                      for r in rates)
