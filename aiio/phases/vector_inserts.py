"""The vector phase's insert stream, as FreshDiskANN's (Singh et al. 2021): the disk index stays
read-only; each client takes inserts at `insert_rate` a second (Poisson arrivals, open loop),
appends each to its own insert log in the run's folder (one record of whole sectors a vector,
made durable by an fsync every `insert_sync` inserts) and adds it to its in-memory index
(`Fresh`), where queries find it at once with no read. A streaming merge
(aiio.phases.vector_merge) later writes the inserted vectors into a new disk index.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aiio.engines.seam import OpLog
from aiio.engines.timing import Deadline, DeadlineOrStop
from aiio.phases import vector_index as vi

ID_BYTES = 8  # a log record's insert id, before the vector
INSERT_SPREAD = 0.25  # an inserted vector's code around the node it lands next to


@dataclass(frozen=True)
class InsertArgs:
    """A client's insert stream: where its files go and how it logs and merges."""

    folder: str         # the run's own folder on the target (never the kept index's)
    rate: float         # inserts offered a second per client
    sync_every: int     # inserts between two fsyncs of the log
    merge_every: int    # inserts in memory that start a merge
    # every client's merge windows on this host (aiio.phases.vector_board.MergeBoard): shared
    # memory the clients inherit across the fork
    board: Any = field(default=None, compare=False, repr=False)


def expected_inserts(rate: float, duration_s: float) -> int:
    """The most inserts one client plans for over a run: its Poisson arrivals at `rate` over
    the duration, a tenth and 100 more (space, memory and the merge board count them)."""
    return int(rate * duration_s * 1.1) + 100


def record_size(shape: vi.IndexShape) -> int:
    """One log record: the insert's id and its full vector, in whole sectors (as the index's
    records are laid out in sectors; O_DIRECT-aligned)."""
    raw = ID_BYTES + shape.dimensions * shape.element_size
    return -(-raw // shape.sector_size) * shape.sector_size


def log_name(ia: InsertArgs, client: int) -> str:
    return f"{ia.folder}/c{client:05d}.insert.log"


class Fresh:
    """A client's inserted vectors: their codes (appended to the index's, as ids N, N+1, ...),
    the disk node each lands next to, their arrival, written and durable instants, and how
    many the disk index holds (merged). Queries read it under the lock; the insert thread and
    the merge write it."""

    def __init__(self, node_codes: np.ndarray, seed: int) -> None:
        self.base = len(node_codes)
        self.codes = node_codes.copy()
        self.count = 0  # inserted (searchable from memory)
        self.merged = 0  # of those, in the disk index
        self.anchors: list[int] = []
        self.arrival_ns: list[int] = []
        self.begun_ns: list[int] = []
        self.durable_ns: list[int] = []  # 0 until the fsync that covers it returned
        self.merged_ns: list[int] = []
        self.rng = np.random.Generator(np.random.PCG64([seed, 31]))
        self.lock = threading.Condition()

    def add(self, arrival_ns: int, begun_ns: int) -> int:
        """One insert, written to the log: searchable now; returns its insert number."""
        anchor = int(self.rng.integers(0, self.base))
        code = self.codes[anchor] + self.rng.standard_normal(vi.CODE_DIMS, np.float32) \
            * INSERT_SPREAD
        with self.lock:
            if self.base + self.count >= len(self.codes):  # grown by half: amortized appends
                grown = np.empty((len(self.codes) * 3 // 2 + 16, vi.CODE_DIMS), np.float32)
                grown[:len(self.codes)] = self.codes
                self.codes = grown  # a query holding the old array keeps it
            self.codes[self.base + self.count] = code
            self.anchors.append(anchor)
            self.arrival_ns.append(arrival_ns)
            self.begun_ns.append(begun_ns)
            self.durable_ns.append(0)
            self.count += 1
            self.lock.notify_all()
            return self.count - 1

    def synced(self, first: int, last: int, at_ns: int) -> None:
        """Inserts first..last-1 became durable at `at_ns` (those a merge made durable
        before keep its instant)."""
        with self.lock:
            for i in range(first, last):
                self.durable_ns[i] = self.durable_ns[i] or at_ns

    def unmerged(self) -> int:
        with self.lock:
            return self.count - self.merged

    def wait_for(self, inserts: int, timeout_s: float) -> bool:
        """Wait until `inserts` are held in memory unmerged (or the timeout)."""
        with self.lock:
            return self.lock.wait_for(lambda: self.count - self.merged >= inserts, timeout_s)

    def mark_merged(self, upto: int, at_ns: int) -> None:
        """Inserts up to `upto` are in the disk index now (its merge was durable at `at_ns`):
        durable then, those whose log record's fsync had not yet returned too."""
        with self.lock:
            self.merged_ns.extend([at_ns] * (upto - self.merged))
            for i in range(self.merged, upto):
                self.durable_ns[i] = self.durable_ns[i] or at_ns
            self.merged = upto

    def in_memory(self) -> tuple[np.ndarray, np.ndarray]:
        """Every code (the disk's and the inserted) and those of inserts not yet merged."""
        with self.lock:
            lo, hi = self.base + self.merged, self.base + self.count
            return self.codes, self.codes[lo:hi]


def nearest_in_memory(codes: np.ndarray, query: np.ndarray, top_k: int) -> np.ndarray:
    """The in-memory index's part of a query: the nearest inserted codes (no I/O)."""
    if not len(codes):
        return np.zeros(0, np.int64)
    diff = codes - query
    dist = np.einsum("ij,ij->i", diff, diff)
    k = min(top_k, len(dist))
    return np.argpartition(dist, k - 1)[:k]


class InsertLog:
    """One client's insert log: a file of records appended one write an insert, made durable
    by an fsync every `sync_every` writes (and at the end), all through the engine's writer."""

    def __init__(self, eng: Any, path: str, shape: vi.IndexShape, sync_every: int,
                 seed: int) -> None:
        self.eng, self.path, self.sync_every = eng, path, sync_every
        self.record = record_size(shape)
        self.writer = eng.writer(self.record, OpLog(0), seed=seed)
        self.spans = OpLog(0)  # each insert's log write, as one "insert" span
        self.fd: Any = None
        self.written = 0
        self.synced = 0

    def start(self, start_ns: int) -> None:
        self.writer.log = OpLog(start_ns)
        self.spans = OpLog(start_ns)
        self.fd = self.writer.create(self.path)

    def append(self, insert: int) -> tuple[int, int]:
        """Write one record at the log's end; (its call's start, end)."""
        with self.spans.timed("insert") as t:
            self.writer.write_range(self.fd, self.path, self.written * self.record,
                                    self.record, insert)
        self.written += 1
        return t.t0, t.end_ns

    def due(self) -> bool:
        return self.written - self.synced >= self.sync_every

    def sync(self) -> tuple[int, int, int]:
        """fsync the records written since the last; (first, last, the instant it returned)."""
        first, last = self.synced, self.written
        if last > first:
            # no bytes carried: the log's bytes are its writes' (an fsync's would count twice)
            self.writer.fsync(self.fd, self.path)
            self.synced = last
        return first, last, self.writer.synced_ns

    def close(self) -> None:
        if self.fd is not None:
            self.writer.close_file(self.fd)
            self.fd = None
        self.writer.close()


def run_inserts(log: InsertLog, fresh: Fresh, arrivals: Any, until: DeadlineOrStop,
                stop: threading.Event) -> None:
    """The insert thread: each arrival appended and added to memory, fsynced in groups; the
    group left at the end is made durable too."""
    while not until.passed():
        arrival = arrivals.take()
        if arrival is None or stop.wait(Deadline(arrival).remaining_s()):
            break
        t0, _ = log.append(fresh.count)
        fresh.add(arrival, t0)
        if log.due():
            fresh.synced(*log.sync())
    fresh.synced(*log.sync())
