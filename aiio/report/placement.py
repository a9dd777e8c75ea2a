"""Where the bytes went, on the page: a run's bytes, files, clients and time busy per server with
the hot one named, and a sweep's bytes per server at every client count (docs/METHOD.md,
"Placement"); where the filesystem does not say, the page says that."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aiio.report import html as h
from aiio.results.beside import Placement, shared_words
from aiio.results.markup import Html
from aiio.results.result import model

TITLE = "Where the bytes went"
NOTE = ("Each server of the volume, as the filesystem names it, the idle ones too; busy is "
        "the time any client had I/O on it; clients collided while one server had two or "
        "more of them and another had none.")


def run_section(res: Mapping[str, Any]) -> Html:
    """A run's placement, or why it is not known; nothing for a run that did not ask."""
    placed = Placement.of(model(res))
    if placed is None:
        return Html("")
    if not placed.known:
        return h.section(TITLE, h.notice("info", f"placement not known: {placed.reason}"),
                         anchor="placement")
    rows = [[s.server, h.num(h.size(s.bytes), s.bytes), h.num(str(s.files), s.files),
             ", ".join(map(str, s.clients)) or "-", h.num(h.seconds(s.busy_s), s.busy_s)]
            for s in placed.servers]
    caption = f"{placed.what}; hot: {placed.hot}{shared_words(placed)}"
    return h.section(TITLE, h.table(("server", "bytes", "files", "clients", "busy"), rows,
                                    caption=caption), anchor="placement", note=NOTE)


def sweep_section(points: Sequence[Mapping[str, Any]]) -> Html:
    """Bytes per server at every client count (its first repeat), the hot server named."""
    placements: dict[int, Placement] = {}
    for p in points:
        placed = Placement.of(model(p["result"]))
        if placed is not None and p["clients"] not in placements:
            placements[p["clients"]] = placed
    if not placements:
        return Html("")
    unknown = [p for p in placements.values() if not p.known]
    if unknown:
        return h.section(TITLE, h.notice("info", f"placement not known: {unknown[0].reason}"),
                         anchor="placement")
    servers = list(dict.fromkeys(s.server for p in placements.values() for s in p.servers))
    rows = []
    for n, placed in sorted(placements.items()):
        held = {s.server: s for s in placed.servers}
        share = placed.collided_share
        rows.append([h.num(str(n), n), placed.hot, h.num(h.pct(share, 0), share),
                     *(_bytes(held.get(name)) for name in servers)])
    return h.section(TITLE, h.table(("clients", "hot server", "shared while another idled",
                                     *servers), rows, caption=next(iter(placements.values())).what),
                     anchor="placement", note=NOTE)


def _bytes(server: Any) -> Any:
    if server is None:
        return "-"
    return h.num(f"{h.size(server.bytes)} ({server.busy_s:.2f} s busy)", server.bytes)
