"""FreshDiskANN's streaming merge, emulated: once `merge_every` inserts wait in a client's
in-memory index, the client reads its current disk index sequentially, in chunks of whole
sectors, and writes a new index file in the run's own folder through the engine's writer: every
old record copied (the nodes the inserted vectors land next to with their neighbour lists
patched to point at them: the graph's backward edges), the inserted vectors' records after them,
made durable. The queries then switch to it, while the queries and inserts go on; the file read
is never written (the kept index stays as it was laid out), and the run's merged files go
when no query reads them any more, and with the run's folder at its end.
"""

from __future__ import annotations

import dataclasses
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from aiio.engines.seam import OpLog, io_failure
from aiio.engines.timing import DeadlineOrStop, Window, thread_cpu_seconds
from aiio.errors import RunFailed
from aiio.phases import vector_index as vi
from aiio.phases.vector_inserts import Fresh, InsertArgs
from aiio.units import MiB

CHUNK = 1 * MiB  # bytes a merge reads and writes a call (whole sectors)
POLL_S = 0.05  # how often a waiting merge looks at the deadline and the stop


@dataclass(frozen=True)
class IndexView:
    """A disk index the queries may read: its file, its shape and its place in the run."""

    path: str
    shape: vi.IndexShape
    version: int = 0
    own: bool = False  # a merged file of this run's, deleted once no query reads it


class Views:
    """The index queries read now, and how many queries read each one."""

    def __init__(self, first: IndexView) -> None:
        self.current = first
        self.reading = {first.version: 0}
        self.cond = threading.Condition()

    def enter(self) -> IndexView:
        """The index a query begins on (counted as read until it `leave`s)."""
        with self.cond:
            self.reading[self.current.version] += 1
            return self.current

    def leave(self, view: IndexView) -> None:
        with self.cond:
            self.reading[view.version] -= 1
            self.cond.notify_all()

    def switch(self, new: IndexView) -> IndexView:
        """Queries begun from now read `new`; returns the one they read before."""
        with self.cond:
            old, self.current = self.current, new
            self.reading[new.version] = 0
            return old

    def wait_unread(self, view: IndexView, until: DeadlineOrStop) -> bool:
        """Wait until no query reads `view` (False: the run ended first)."""
        with self.cond:
            while self.reading[view.version]:
                if until.passed():
                    return False
                self.cond.wait(POLL_S)
            return True


@dataclass
class MergeRecord:
    """One merge: its span on the client's clock, the inserts it took and the bytes it moved."""

    start_ns: int
    end_ns: int = 0
    inserts: int = 0
    read_bytes: int = 0
    write_bytes: int = 0
    done: bool = False  # durable and switched to (False: the run ended first)
    cpu_s: float = 0.0  # the merge thread's CPU time over its span (the client's own work)

    def to_dict(self, window_start_ns: int) -> dict[str, Any]:
        span = (self.end_ns - self.start_ns) / 1e9
        return {"start_s": (self.start_ns - window_start_ns) / 1e9, "duration_s": span,
                "inserts": self.inserts, "read_bytes": self.read_bytes,
                "write_bytes": self.write_bytes, "done": self.done, "cpu_s": self.cpu_s,
                "read_mib_per_s": self.read_bytes / MiB / span if span > 0 else 0.0,
                "write_mib_per_s": self.write_bytes / MiB / span if span > 0 else 0.0}


class _Cut(Exception):
    """The run's duration ended inside a merge."""


def chunk_sectors(shape: vi.IndexShape) -> int:
    """Sectors a merge moves a call: whole records (a record never straddles two calls)."""
    per = max(1, CHUNK // shape.sector_size)
    spn = shape.sectors_per_node
    return max(spn, per // spn * spn)


class Merger:
    """One client's merges, one after another in their own thread."""

    def __init__(self, eng: Any, ia: InsertArgs, client: int, views: Views, fresh: Fresh,
                 entry: int, seed: int) -> None:
        self.eng, self.ia, self.client = eng, ia, client
        self.views, self.fresh, self.entry, self.seed = views, fresh, entry, seed
        self.records: list[MergeRecord] = []
        self.log = OpLog(0)  # the merges' metadata calls (folder fsync, unlink)

    def run(self, until: DeadlineOrStop) -> None:
        while not until.passed():
            if self.fresh.wait_for(self.ia.merge_every, POLL_S) and not until.passed():
                self.merge_once(until)

    def merge_once(self, until: DeadlineOrStop) -> None:
        old = self.views.current
        upto = self.fresh.count
        new = IndexView(f"{self.ia.folder}/c{self.client:05d}.merge{len(self.records) + 1}"
                        f".index", dataclasses.replace(old.shape, vectors=self.fresh.base + upto),
                        old.version + 1, own=True)
        span, cpu0 = Window(), thread_cpu_seconds()
        rec = MergeRecord(span.start_ns, inserts=upto - self.fresh.merged)
        self.records.append(rec)
        board = self.ia.board
        if board is not None:  # every query of the host, any client's, judges against it
            board.begin(self.client, span.start_ns)
        per = chunk_sectors(new.shape)
        reader = self.eng.reader(per * new.shape.sector_size, OpLog(span.start_ns))
        writer = self.eng.writer(per * new.shape.sector_size, OpLog(span.start_ns))
        try:
            fd = reader.open(old.path)
            try:
                writer.write_content(new.path, self._parts(reader, fd, old, new, until))
                self.eng.fsync_dir(self.log, self.ia.folder)  # the new file's name, durable
            finally:
                reader.close_file(fd)
        except _Cut:
            self.eng.unlink(self.log, new.path)
            return
        finally:
            rec.end_ns, rec.cpu_s = span.close(), thread_cpu_seconds() - cpu0
            if board is not None:
                board.end(self.client, rec.end_ns)
            rec.read_bytes, rec.write_bytes = reader.log.nbytes, writer.log.nbytes
            reader.close()
            writer.close()
        rec.done = True
        self.views.switch(new)
        self.fresh.mark_merged(upto, rec.end_ns)
        if old.own and self.views.wait_unread(old, until):
            self.eng.unlink(self.log, old.path)

    def _parts(self, reader: Any, fd: Any, old: IndexView, new: IndexView,
               until: DeadlineOrStop) -> Iterator[bytes]:
        """The new index in chunks: each read from the old (where it held sectors there),
        patched, and the new records placed; the header says the new count."""
        shape, sector = new.shape, new.shape.sector_size
        held, total = 1 + old.shape.node_sectors, 1 + shape.node_sectors
        patch = Patch(self, old.shape.vectors, shape)
        for s, n in spans(shape, total):
            if until.passed():
                raise _Cut
            buf = bytearray(n * sector)
            have = max(0, min(n, held - s))
            if have:
                buf[:have * sector] = _read(reader, fd, old.path, s * sector, have * sector)
            if s == 0:
                buf[:sector] = vi.header(shape, self.entry)
            patch.apply(buf, s, n)
            yield bytes(buf)


def spans(shape: vi.IndexShape, total: int) -> Iterator[tuple[int, int]]:
    """(first sector, sectors) of each call over a file of `total` sectors: the header and the
    records after it in the first, whole records in each (they start after the header)."""
    per = chunk_sectors(shape)
    s, n = 0, 1 + per - shape.sectors_per_node
    while s < total:
        yield s, min(n, total - s)
        s, n = s + n, per


def _read(reader: Any, fd: Any, path: str, at: int, length: int) -> bytes:
    try:
        with reader.read_at(fd, at, length) as data:
            if len(data) < length:
                raise RunFailed(f"the merge read {len(data)} of {length} bytes at {at} of {path}")
            return bytes(data)
    except OSError as exc:
        raise io_failure(exc, "reading (merge)", path, at) from exc


class Patch:
    """What a merge changes in the sectors it copies: each inserted vector's record (its
    vector, then its node and that node's first neighbours), and its node's list, whose last
    ids are replaced by the inserted ones (at most half of them; the degree stays R)."""

    def __init__(self, m: Merger, first_new: int, shape: vi.IndexShape) -> None:
        self.shape, self.first_new = shape, first_new
        fresh, base = m.fresh, m.fresh.base
        self.anchor = {base + i: fresh.anchors[i] for i in range(first_new - base,
                                                                  shape.vectors - base)}
        self.lands: dict[int, list[int]] = {}
        for node, at in self.anchor.items():
            self.lands.setdefault(at, []).append(node)
        self.near = np.array(sorted(self.lands), np.int64)  # the nodes patched, in order
        self.lists: dict[int, np.ndarray] = {}
        self.vec = shape.dimensions * shape.element_size
        rng = np.random.Generator(np.random.PCG64([m.seed, 37, m.client, first_new]))
        self.vectors = rng.integers(0, 256, (shape.vectors - first_new, self.vec), np.uint8)

    def ids_in(self, s: int, n: int) -> range:
        """The nodes whose records lie in sectors s..s+n-1."""
        sh, lo = self.shape, max(s, 1)
        if sh.nodes_per_sector:
            first, last = (lo - 1) * sh.nodes_per_sector, (s + n - 1) * sh.nodes_per_sector
        else:
            first, last = (lo - 1) // sh.sectors_per_node, (s + n - 1) // sh.sectors_per_node
        return range(first, min(last, sh.vectors))

    def apply(self, buf: bytearray, s: int, n: int) -> None:
        ids = self.ids_in(s, n)
        if not len(ids):
            return
        lo, hi = np.searchsorted(self.near, [ids.start, ids.stop])
        for node in self.near[lo:hi].tolist() + list(range(max(ids.start, self.first_new),
                                                          ids.stop)):
            at = self.shape.offset_of(node) - s * self.shape.sector_size \
                + self.shape.within(node)
            if node >= self.first_new:
                self._record(buf, at, node)
            else:
                self._backward(buf, at, node)

    def _backward(self, buf: bytearray, at: int, node: int) -> None:
        (degree,) = struct.unpack_from("<I", buf, at + self.vec)
        if degree > self.shape.max_degree:
            raise RunFailed(f"the merge read node {node} with degree {degree}: not a record")
        ids = np.frombuffer(buf, "<u4", degree, at + self.vec + 4).astype(np.int64)
        self.lists[node] = ids.copy()
        new = self.lands[node][:max(1, len(ids) // 2)]
        ids[len(ids) - len(new):] = new
        buf[at + self.vec + 4:at + self.vec + 4 + 4 * len(ids)] = ids.astype("<u4").tobytes()

    def _record(self, buf: bytearray, at: int, node: int) -> None:
        near = self.anchor[node]
        ids = np.concatenate([[near], self.lists[near][:self.shape.max_degree - 1]])
        buf[at:at + self.vec] = self.vectors[node - self.first_new].tobytes()
        buf[at + self.vec:at + self.vec + 4] = struct.pack("<I", len(ids))
        buf[at + self.vec + 4:at + self.vec + 4 + 4 * len(ids)] = \
            ids.astype("<u4").tobytes()
