"""Where a file's bytes live, where the filesystem says so: which server holds each file a run
wrote or read, the bytes and the time each server was busy, and which one was hot.

A distributed filesystem places files on servers by a hash or a layout. Clients whose files
share a server share that server's rate while other servers idle: the aggregate stops growing
before the servers are saturated. The placement tells that apart from every server being busy.

Read here: GlusterFS, from the `trusted.glusterfs.pathinfo` attribute its client answers on the
mount (`<POSIX(<brick folder>):<host>:<file on the brick>>`, one entry per brick that holds the
path; a folder's lists every brick of the volume). Other filesystems say nothing aiio reads:
the placement is recorded as unknown, with that reason.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiio.storage.server_time import ServerTally, server_times

GLUSTER = "glusterfs"
PATHINFO = "trusted.glusterfs.pathinfo"
# A pathinfo's parts: a group's opening `(<KIND:name>` (DISTRIBUTE spreads files over its
# children; REPLICATE, a disperse or stripe set holds each of its files on all of its
# bricks), a group's end, and a brick entry: the brick's folder, the host that serves it
_PART = re.compile(r"\(<([A-Za-z-]+):[^>]*>|(\))|<POSIX\(([^)]*)\):([^:>]+):[^>]*>")
SPREADS = "DISTRIBUTE"
# the attribute's answer when a filesystem has no such attribute, or no attributes at all
_UNSAID = {errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM, errno.EACCES}
UNKNOWN = "the filesystem does not say where a file lives (aiio reads GlusterFS's placement)"


def servers_in(pathinfo: str) -> list[str]:
    """The servers a pathinfo names, in its order: a brick ("host:brick folder") of a plain
    distributed volume; a replica (or disperse) set whose bricks all hold the same files, as
    one server ("host:brick+host:brick"): its bricks are never idle while another has work."""
    out: list[str] = []
    groups: list[tuple[str, list[str]]] = []  # the open groups: their kind and their bricks
    for kind, end, folder, host in _PART.findall(pathinfo):
        if kind:
            groups.append((kind.upper(), []))
        elif end:
            if groups:
                kind, bricks = groups.pop()
                if bricks:
                    _hold(out, groups, "+".join(bricks))
        else:
            _hold(out, groups, f"{host}:{folder}")
    return out


def _hold(out: list[str], groups: list[tuple[str, list[str]]], server: str) -> None:
    """A brick or a set: part of the open set it is in, else a server of its own."""
    if groups and groups[-1][0] != SPREADS:
        groups[-1][1].append(server)
    else:
        out.append(server)


def servers_of(path: str) -> list[str] | None:
    """The servers that hold `path` (every server of the volume, for a folder), or None when
    the filesystem does not say."""
    try:
        raw = os.getxattr(path, PATHINFO)
    except OSError as exc:
        if exc.errno in _UNSAID:
            return None
        raise
    return servers_in(raw.decode(errors="replace")) or None


@dataclass(frozen=True)
class Placed:
    """One file of a run: the client that moved it, its bytes, and how long that client took
    (from the burst's common start) to move all of its files."""

    client: int
    path: str
    nbytes: int
    busy_s: float


# Files whose servers a run asks for at most: one attribute read each, before the run starts.
PROBE_MAX = 20_000


@dataclass(frozen=True)
class Located:
    """Where a run's files live: the volume's servers (every one of the folder's, the idle
    ones too) and, per file, the index of its server; `reason` says why not when not known."""

    servers: tuple[str, ...] = ()
    of_file: tuple[int, ...] = ()
    reason: str = ""

    @property
    def known(self) -> bool:
        return bool(self.servers)

    def files_on(self) -> list[int]:
        """How many of the files each server holds."""
        out = [0] * len(self.servers)
        for s in self.of_file:
            out[s] += 1
        return out


def server_index(where: Sequence[str], servers: list[str]) -> int:
    """The index in `servers` of the server that holds a file the filesystem says is on
    `where`: its set, where a brick of the set was down and the file's answer named only the
    others; a server not among them is added."""
    bricks = set(where[0].split("+"))
    for i, server in enumerate(servers):
        if bricks <= set(server.split("+")):
            return i
    servers.append(where[0])
    return len(servers) - 1


def locate(folder: str, count: int, path_of: Callable[[int], str]) -> Located:
    """Ask once per file where each of `count` files (file i at `path_of(i)`) lives, the
    folder first: on a filesystem that does not say, one question and no more. Never raises:
    a probe describes a run, it does not fail it."""
    try:
        volume = servers_of(folder)
        if volume is None:
            return Located(reason=UNKNOWN)
        if count > PROBE_MAX:
            return Located(reason=f"{count:,} files: aiio asks where files live for at most "
                                  f"{PROBE_MAX:,}")
        servers, of_file = list(volume), []
        for i in range(count):
            where = servers_of(path_of(i))
            if not where:
                return Located(reason=f"{path_of(i)}: {UNKNOWN}")
            of_file.append(server_index(where, servers))
        return Located(tuple(servers), tuple(of_file))
    except OSError as exc:
        return Located(reason=f"asking where files live failed: {exc}")


def placement(folder: str, files: Iterable[Placed], what: str) -> dict[str, Any]:
    """Per server (every server of `folder`'s volume, idle ones too): bytes, files, the
    clients whose files it held, and the time it was busy (each client's files keep their
    server busy from the burst's start until that client was done); the hot server (most
    bytes). Unknown, with the reason, where the filesystem does not say."""
    files = list(files)
    located = locate(folder, len(files), lambda i: files[i].path)
    if not located.known:
        return unknown(located, what)
    loads: dict[int, dict[str, Any]] = {}
    for f, server in zip(files, located.of_file, strict=True):
        load = loads.setdefault(f.client, {"client": f.client,
                                           "bytes": [0] * len(located.servers),
                                           "spans": [[] for _ in located.servers]})
        load["bytes"][server] += f.nbytes
        load["spans"][server].append([0.0, f.busy_s])
    return table(located, list(loads.values()), what)


def unknown(located: Located, what: str) -> dict[str, Any]:
    return {"source": None, "of": what, "reason": located.reason}


def table(located: Located, loads: Sequence[Mapping[str, Any] | None],
          what: str) -> dict[str, Any]:
    """The placement figures from each client's tally (`ServerTally.to_dict`, with its
    "client"; None for a client that recorded none): per server its bytes, files, clients and
    time busy; the hot server; how long clients shared a server while another was idle."""
    if not located.known:
        return unknown(located, what)
    loads = [load for load in loads if load]
    times = server_times(loads, len(located.servers))
    servers = [{"server": name, "bytes": sum(load["bytes"][s] for load in loads),
                "files": files,
                "clients": sorted(load["client"] for load in loads
                                  if load["bytes"][s] or load["spans"][s]),
                "busy_s": round(times.busy_s[s], 4)}
               for s, (name, files) in enumerate(zip(located.servers, located.files_on(),
                                                     strict=True))]
    hot = max(servers, key=lambda e: e["bytes"])
    return {"source": GLUSTER, "attribute": PATHINFO, "of": what, "servers": servers,
            "hot": hot["server"], "busy": sum(1 for e in servers if e["bytes"]),
            "shared": sum(1 for e in servers if len(e["clients"]) > 1),
            "window_s": round(times.window_s, 4),
            "collided_s": None if times.collided_s is None else round(times.collided_s, 4),
            "resolution_s": times.gap_s, "blurred_s": round(times.blurred_s, 4)}


def known(placed: Mapping[str, Any] | None) -> bool:
    return bool(placed) and placed.get("source") is not None


def tally(located: Located | None, client: int) -> ServerTally | None:
    """A client's tally of bytes and time per server, where the run's files were located."""
    if located is None or not located.known:
        return None
    return ServerTally(client, located.of_file, len(located.servers))


def recorded(located: Located | None, clients: Sequence[Mapping[str, Any]],
             what: str) -> dict[str, Any] | None:
    """The run's placement from its clients' tallies (their "placement"); None when the run
    did not ask (storage without folders)."""
    if located is None:
        return None
    return table(located, [c.get("placement") for c in clients], what)
