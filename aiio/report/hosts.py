"""Hosts of a run that spanned several (MPI ranks): each host's share, status and figures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiio import charts
from aiio.markup import Html
from aiio.report import html as h
from aiio.result import Result, model


def hosts_section(res: Mapping[str, Any]) -> Html:
    """One row per host (rank) and its aggregate as a bar; nothing for a one-host run."""
    hosts = (res if isinstance(res, Result) else model(res)).hosts
    if len(hosts) < 2:
        return Html("")
    rows, labels, speeds = [], [], []
    for x in sorted(hosts, key=lambda x: h.finite(x.rank) or 0):
        first = x.io.first_done.mib_s if x.io.first_done else None
        last = x.io.last_done.mib_s if x.io.last_done else None
        label = f"rank {x.rank} ({x.host})"
        labels.append(label)
        speeds.append(h.finite(first) or 0.0)
        rows.append([h.num(str(x.rank), x.rank), x.host,
                     h.Cell(h.badge(x.status), str(x.status)),
                     h.num(h.plain(x.clients), x.clients), h.plain(x.client_numbers),
                     h.num(h.mib_s(first), first), h.num(h.mib_s(last), last),
                     h.num(h.size(x.io.bytes), x.io.bytes), h.num(h.pct(x.au_min), x.au_min),
                     h.num(h.number(x.cpu_percent_mean, 0, "%"), x.cpu_percent_mean),
                     h.plain(x.error or "")])
    table = h.table(["rank", "host", "status", "clients", "client numbers",
                     "aggregate first done", "last done", "bytes", "AU lowest",
                     "CPU busy", "error"], rows, sortable=True)
    chart = charts.bars(labels, speeds, title="aggregate bandwidth per host",
                        xlabel="host (MPI rank)", ylabel="MiB/s (first done)",
                        caption="Each host's clients together, over the window in which all "
                                "of them ran. Bytes add up across hosts.")
    split = h.plain(res.get("split"))
    return h.section("Hosts", table, h.figures(chart), anchor="hosts",
                     note=f"The run spanned {len(hosts)} hosts (MPI ranks); clients per host: "
                          f"{split}.")
