"""Hosts of a run that spanned several (MPI ranks): each host's share, status and figures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiio import charts
from aiio.markup import Html
from aiio.report import html as h
from aiio.result import dig


def hosts_section(res: Mapping[str, Any]) -> Html:
    """One row per host (rank) and its aggregate as a bar; nothing for a one-host run."""
    hosts = [x for x in h.items(res.get("hosts")) if isinstance(x, Mapping)]
    if len(hosts) < 2:
        return Html("")
    rows, labels, speeds = [], [], []
    for x in sorted(hosts, key=lambda x: h.finite(x.get("rank")) or 0):
        agg = x.get("aggregate") if isinstance(x.get("aggregate"), Mapping) else {}
        first = dig(agg, "first_done", "mib_s")
        label = f"rank {x.get('rank', '?')} ({x.get('host', '?')})"
        labels.append(label)
        speeds.append(h.finite(first) or 0.0)
        rows.append([h.num(str(x.get("rank", "?")), x.get("rank")), x.get("host", "?"),
                     h.Cell(h.badge(x.get("status")), str(x.get("status"))),
                     h.num(h.plain(x.get("clients")), x.get("clients")),
                     h.plain(x.get("client_numbers")),
                     h.num(h.mib_s(first), first),
                     h.num(h.mib_s(dig(agg, "last_done", "mib_s")), dig(agg, "last_done", "mib_s")),
                     h.num(h.size(agg.get("bytes")), agg.get("bytes")),
                     h.num(h.pct(agg.get("au_min")), agg.get("au_min")),
                     h.num(h.number(dig(x, "monitor", "cpu_percent_mean"), 0, "%"),
                           dig(x, "monitor", "cpu_percent_mean")),
                     h.plain(x.get("error") or "")])
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
