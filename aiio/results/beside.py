"""Typed views of the figures a run records beside its I/O sections, for the readers (console,
report) that show them: the fio pairing (`hero`), the client machine's monitor and where the
bytes went (`Placement`); and which parts of a recorded I/O section are damaged
(`damaged_parts`). Each `of` reads the part as recorded and tolerates damage: a missing or
wrong-typed figure is None (or empty), never an exception here. Counts stay integers, so they
print as recorded. (What a phase records beside its streams is one class per part, built by
the phase and read back by the same class: results/kvcache.py, vector.py, inserts.py,
bursts.py and the verdict they share, steadiness.py.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiio.document import dig
from aiio.results.lenient import count, items, mapping, number, text
from aiio.results.result import IoFigures, Result

# --- helpers ---------------------------------------------------------------------------------


def damaged_parts(io: IoFigures) -> tuple[str, ...]:
    """The parts of a recorded I/O section that are there but no object of figures (a window,
    the per-client spread, the latency): a reader names them rather than show dashes, which
    the typed fields, read leniently, would."""
    d = io.figures
    return tuple(k for k in ("first_done", "last_done", "per_client_mib_s", "latency")
                 if d.get(k) and not isinstance(d.get(k), Mapping))


# --- vector search ---------------------------------------------------------------------------

# --- the fio pairing and the monitor ---------------------------------------------------------

@dataclass(frozen=True)
class HeroFigures:
    """The run held against fio's figure on the same target (`hero`), or why it is not."""

    text: str
    test: Any                  # as recorded: shown as it is ("hero" when none was)
    percent: float | None
    window: Any
    phase_mib_s: float | None
    fio_mib_s: float | None
    fio_clients: Any
    fio_result_id: Any

    @classmethod
    def of(cls, d: Any) -> HeroFigures | None:
        """None when nothing was attached (or what was is no record)."""
        if not isinstance(d, Mapping) or not d:
            return None
        return cls(text(d.get("text")), d.get("test", "hero"), number(d.get("percent")),
                   d.get("window"), number(d.get("phase_mib_s")), number(d.get("fio_mib_s")),
                   d.get("fio_clients"), d.get("fio_result_id"))

    @classmethod
    def of_run(cls, run: Result) -> HeroFigures | None:
        """The run's own pairing (a lifecycle's: each stage's, in its stage)."""
        return cls.of(run.doc.get("hero"))


@dataclass(frozen=True)
class Nic:
    name: str
    rx_bytes: float | None
    tx_bytes: float | None
    peak_use: float | None     # the peak share of the link's speed


@dataclass(frozen=True)
class MonitorFigures:
    """The client machine during the run: CPU busy, the target's block device, the NICs."""

    seconds: float | None
    cpu_percent_mean: float | None
    cpu_percent_max: float | None
    device: str | None          # None: no block device was watched
    device_read_bytes: float | None
    device_write_bytes: float | None
    nics: tuple[Nic, ...]

    @classmethod
    def of(cls, run: Result) -> MonitorFigures | None:
        """None when the run recorded no monitor."""
        mon = run.doc.get("monitor")
        if not isinstance(mon, Mapping):
            return None
        dev = mon.get("device")
        nics = tuple(Nic(str(name), number(dig(n, "rx_bytes")), number(dig(n, "tx_bytes")),
                         number(dig(n, "peak_use")))
                     for name, n in mapping(mon.get("nics")).items())
        return cls(number(mon.get("seconds")), number(mon.get("cpu_percent_mean")),
                   number(mon.get("cpu_percent_max")),
                   str(dev.get("name", "?")) if isinstance(dev, Mapping) else None,
                   number(dig(dev, "read_bytes")), number(dig(dev, "write_bytes")), nics)


# --- where the bytes went (a filesystem that says where it placed files) ---------------------

@dataclass(frozen=True)
class ServerLoad:
    """One server of the volume: the bytes and files it held, whose, and its time busy."""

    server: str
    bytes: int
    files: int
    clients: tuple[int, ...]
    busy_s: float

    @classmethod
    def of(cls, d: Any) -> ServerLoad:
        d = mapping(d)
        return cls(text(d.get("server")), count(d.get("bytes")) or 0,
                   count(d.get("files")) or 0, tuple(items(d.get("clients"))),
                   number(d.get("busy_s")) or 0.0)


@dataclass(frozen=True)
class Placement:
    """Where the run's files were placed, per server (aiio.storage.placement), or why that is
    not known."""

    source: str | None          # None: the filesystem did not say
    what: str                   # the files placed ("the last checkpoint's files")
    reason: str
    servers: tuple[ServerLoad, ...]
    hot: str
    busy: int | None
    window_s: float | None = None     # from the common start to the last I/O on any server
    collided_s: float | None = None   # clients shared a server while another was idle
    resolution_s: float | None = None  # the coarsest gap a client's spans were merged over

    @classmethod
    def of(cls, run: Result) -> Placement | None:
        """None when the run recorded no placement (a phase that does not probe it)."""
        d = run.summary.figures.get("placement")
        if not isinstance(d, Mapping) or not d:
            return None
        source = d.get("source")
        return cls(None if source is None else str(source), text(d.get("of")),
                   text(d.get("reason")), tuple(ServerLoad.of(s) for s in items(d.get("servers"))),
                   text(d.get("hot")), count(d.get("busy")), number(d.get("window_s")),
                   number(d.get("collided_s")), number(d.get("resolution_s")))

    @property
    def collided_share(self) -> float | None:
        """The share of the window during which clients shared a server while another idled."""
        if self.collided_s is None or not self.window_s:
            return None
        return self.collided_s / self.window_s

    @property
    def busy_share(self) -> float | None:
        """The servers' mean share of the window busy."""
        if not self.window_s or not self.servers:
            return None
        return sum(s.busy_s for s in self.servers) / (len(self.servers) * self.window_s)

    @property
    def known(self) -> bool:
        return self.source is not None and bool(self.servers)


def shared_words(placed: Placement) -> str:
    """'; clients shared a server while another idled 12% of 3.00 s', or that it is not
    known (the clients' spans merged over too wide a gap), for a table's caption."""
    share = placed.collided_share
    if share is not None:
        return f"; clients shared a server while another idled {share:.0%} of " \
               f"{placed.window_s:.2f} s"
    if placed.window_s:
        gap = (placed.resolution_s or 0.0) * 1000
        return ("; how long clients shared a server while another idled is not known (their "
                f"reads hopped between servers within the {gap:.0f} ms their spans were kept at)")
    return ""
