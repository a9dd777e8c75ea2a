"""What the placement of a sweep's files says about its knee: where clients shared a server
while another server of the volume sat idle, the aggregate stopped growing because of where
the files were placed, not because every server was busy (aiio.storage.placement)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aiio.results.beside import Placement, ServerLoad
from aiio.results.result import model
from aiio.units import format_size

# A server that carried less than this share of the hot one's bytes was idle part of the time
# (a result that recorded no time collided: bytes are all it says).
UNEVEN = 0.9
# Clients sharing a server while another idled for at least this share of the window collided.
COLLIDED = 0.05


def _placements(points: Sequence[Mapping[str, Any]]) -> dict[int, Placement]:
    """Each client count's placement (its first repeat's), where one was recorded."""
    out: dict[int, Placement] = {}
    for p in points:
        placed = Placement.of(model(p.get("result") or {}))
        if placed and p["clients"] not in out:
            out[p["clients"]] = placed
    return out


def collided(placed: Placement) -> bool:
    """Clients shared a server while another server of the volume was idle, for COLLIDED of
    the window or more; from the bytes (another server carried less) where no time was
    recorded."""
    share = placed.collided_share
    if share is not None:
        return share >= COLLIDED
    servers = placed.servers
    most = max(s.bytes for s in servers)
    return any(len(s.clients) > 1 for s in servers) and \
        min(s.bytes for s in servers) < UNEVEN * most


def _one(n: int, placed: Placement) -> str:
    servers = placed.servers
    hot = next(s for s in servers if s.server == placed.hot)
    others = [s for s in servers if s is not hot]
    rest = ", ".join(_carried(s) for s in others)
    share = placed.collided_share
    when = "" if share is None else f" for {share:.0%} of its {placed.window_s:.2f} s;"
    return (f"at {n}:{when} {placed.busy} of {len(servers)} servers held files; the hot one, "
            f"{hot.server}, those of clients {', '.join(map(str, hot.clients))} "
            f"({_carried(hot)}; the others {rest})")


def _carried(server: ServerLoad) -> str:
    return f"{format_size(server.bytes)} in {server.busy_s:.2f} s"


def summary(points: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The verdict's placement: its source and the counts where clients collided, with a
    statement; None when no point recorded one (a bucket, a phase that does not probe)."""
    placements = _placements(points)
    if not placements:
        return None
    if not all(p.known for p in placements.values()):
        reason = next(p.reason for p in placements.values() if not p.known)
        return {"source": None, "reason": reason, "collided_at": [],
                "statement": f"placement not known: {reason}"}
    at = [n for n, p in sorted(placements.items()) if collided(p)]
    out: dict[str, Any] = {"source": next(iter(placements.values())).source,
                           "collided_at": at, "statement": None}
    if at:
        out["statement"] = (
            "placement: clients shared a server while another was idle ("
            + "; ".join(_one(n, placements[n]) for n in at)
            + "): where aggregate falls short of linear there, it comes from where the files "
            "were placed, not from every server being busy")
    else:
        out["statement"] = _not_placement(placements)
    return out


def _not_placement(placements: Mapping[int, Placement]) -> str:
    """The statement of a sweep whose clients never shared a server while another idled."""
    blurred = [n for n, p in sorted(placements.items()) if p.window_s and p.collided_s is None]
    if blurred:
        gap = max(placements[n].resolution_s or 0.0 for n in blurred)
        return ("placement: how long clients shared a server while another was idle is not "
                f"known at {', '.join(map(str, blurred))} client(s): a client's reads hopped "
                f"between servers faster than the {gap * 1000:.0f} ms its spans were kept at, "
                "and the bytes per server do not tell; placement is not ruled out where the "
                "aggregate stops growing")
    n = max(placements)
    busy = placements[n].busy_share
    how = "" if busy is None else \
        f"; at {n} the {len(placements[n].servers)} servers were busy {busy:.0%} of the time"
    return ("placement: at no count did clients share a server while another was idle"
            f"{how}: where the aggregate stops growing, it is not from where the files were "
            "placed")
