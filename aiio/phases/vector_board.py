"""Every client's merge windows on a host, in memory its client processes share, so that a
query is judged against every merge that ran beside it on the storage, not only its own
client's (docs/METHOD.md, "Vector search: inserts and merges").

Made in the parent before the clients fork (fork-inherited shared memory). Each client
writes only its own row; a reader takes whatever the rows hold when it looks. A merge still
running then reads as ending never: every query after its start met it. Under MPI each rank
gets the arguments pickled, and with them an empty board of its own, made as they arrive and
before it forks its clients: merges are seen among one rank's clients (one rank a host, as
aiio runs MPI; two ranks on one machine do not see each other's)."""

from __future__ import annotations

import multiprocessing as mp

import numpy as np

from aiio.phases.vector_inserts import expected_inserts
from aiio.units import MiB
from aiio.workload import VectorSpec

SLOTS = 256  # merge windows kept a client unless the run says how many (board_for)
OPEN = np.iinfo(np.int64).max  # the end of a merge not ended yet
WINDOW_BYTES = 16
MOST_BYTES = 256 * MiB  # a board's cap, over every client of the run


class MergeBoard:
    """Each client's merge windows, (start, end) ns on the host's monotonic clock."""

    def __init__(self, clients: int, slots: int = SLOTS) -> None:
        ctx = mp.get_context("fork")
        self.clients, self.slots = clients, slots
        self._count = ctx.RawArray("q", clients)
        self._spans = ctx.RawArray("q", clients * slots * 2)

    def __reduce__(self) -> tuple:
        """Pickled (to another MPI rank): an empty board of the same shape where it lands;
        shared memory made here means nothing there."""
        return (MergeBoard, (self.clients, self.slots))

    def _at(self, client: int, n: int) -> int:
        return (client * self.slots + min(n, self.slots - 1)) * 2

    def begin(self, client: int, start_ns: int) -> None:
        """A merge of `client` began. Past its slots, the last slot keeps its start and is
        open again: it spans every later merge and the gaps between them, so a query that
        met one of them is never read as calm (one in a gap reads as merging)."""
        n = self._count[client]
        at = self._at(client, n)
        if n < self.slots:
            self._spans[at] = start_ns
        self._spans[at + 1] = 0  # open; written before the count that publishes it
        self._count[client] = n + 1

    def end(self, client: int, end_ns: int) -> None:
        self._spans[self._at(client, self._count[client] - 1) + 1] = end_ns

    def windows(self) -> np.ndarray:
        """Rows of (start, end) ns of every merge recorded; one still running ends never."""
        spans = np.frombuffer(self._spans, np.int64).reshape(self.clients, self.slots, 2)
        used = np.minimum(np.frombuffer(self._count, np.int64), self.slots)
        rows = np.concatenate([spans[c, :n] for c, n in enumerate(used) if n] or
                              [np.zeros((0, 2), np.int64)])
        # a start not seen yet (a weakly ordered core may show the count first) is no window
        rows = rows[rows[:, 0] != 0]
        return np.where(rows == 0, [0, OPEN], rows) if len(rows) else rows


def board_for(v: VectorSpec, clients: int) -> MergeBoard:
    """A board with a window for every merge a client can make: a merge takes merge_every
    new inserts of those a client expects (expected_inserts). Past MOST_BYTES in all,
    fewer, and the last window of a client that runs out widens (MergeBoard.begin)."""
    need = expected_inserts(v.insert_rate, v.duration) // max(1, v.merge_every) + 1
    room = MOST_BYTES // (WINDOW_BYTES * max(1, clients))
    return MergeBoard(clients, max(16, min(need, room)))


def met_a_merge(queries: np.ndarray, windows: np.ndarray) -> np.ndarray:
    """For each query (rows of arrival, begun, done ns), whether its span from arrival to
    done overlapped any window (rows of start, end ns), by any overlap however short."""
    if not len(windows) or not len(queries):
        return np.zeros(len(queries), bool)
    spans = _union(windows)
    # the first span that ends after the query arrives: it met a merge iff that span
    # started before the query was done
    i = np.searchsorted(spans[:, 1], queries[:, 0], side="right")
    inside = i < len(spans)
    met = np.zeros(len(queries), bool)
    met[inside] = spans[i[inside], 0] < queries[inside, 2]
    return met


def _union(windows: np.ndarray) -> np.ndarray:
    """The windows as disjoint spans in time order (overlapping ones made one)."""
    rows = windows[np.argsort(windows[:, 0], kind="stable")]
    out = [list(rows[0])]
    for start, end in rows[1:]:
        if start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return np.array(out, np.int64)
