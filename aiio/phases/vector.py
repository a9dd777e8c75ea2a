"""The vector phase: the retrieval step of RAG, emulated as DiskANN searches its disk index
(MLPerf Storage's vector database). The index is laid out by aiio (aiio.phases.vector_index)
in the run's folder through the engine's writer; each client then runs queries, `concurrency`
at a time (closed loop) or offered at `rate` a second (open loop), each a beam search
(aiio.phases.vector_search) whose every hop reads up to W node sectors in flight through the
engine's readers and parses the next hop's ids from the bytes read. On a mount a read is a
pread of the node's sector(s) (O_DIRECT when the method says so), on a bucket a ranged GET.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aiio.cache_methods import METHOD_DIRECT, METHOD_NULL
from aiio.engines.seam import OpLog, io_failure
from aiio.engines.timing import NEVER, Deadline, DeadlineOrStop, Window, cpu_seconds
from aiio.errors import ConfigError, RunFailed
from aiio.options import RunOptions
from aiio.phases import rates, vector_native
from aiio.phases import vector_figures as vf
from aiio.phases import vector_index as vi
from aiio.phases import vector_insert_figures as vif
from aiio.phases import vector_kept as vk
from aiio.phases.base import (
    OBJECT_CLIENT_BASE,
    ClientMemory,
    Phase,
    PrepareMemory,
    RunContext,
    client_identity,
    client_io_figures,
    io_aggregate,
)
from aiio.phases.rundata import new_run_tag, remove_run_folder
from aiio.phases.vector_board import board_for
from aiio.phases.vector_inserts import (
    Fresh,
    InsertArgs,
    InsertLog,
    expected_inserts,
    log_name,
    nearest_in_memory,
    record_size,
    run_inserts,
)
from aiio.phases.vector_merge import POLL_S, IndexView, Merger, Views, chunk_sectors
from aiio.phases.vector_search import QueryTrace, search
from aiio.results.inserts import InsertFigures
from aiio.results.vector import VectorFigures, VectorIndex
from aiio.run import procsetup
from aiio.run.clients import ClientContext
from aiio.stats import Histogram
from aiio.storage.target import Target
from aiio.units import MiB, format_size
from aiio.workload import Workload

# A bucket whose GETs move this little each is bound by its request rate before its bandwidth
SMALL_REQUEST = 1 * MiB


@dataclass(frozen=True)
class VectorArgs:
    folder: str
    method: str
    shape: vi.IndexShape
    width: int
    list_size: int
    top_k: int
    concurrency: int
    rate: float  # queries offered a second per client (0: closed loop)
    duration_s: float
    queries: int  # per client (0: run for duration_s)
    kept: bool = False  # the index is kept for later runs (a mount's: aiio.phases.vector_kept)
    reused: bool = False  # ... and an earlier run or `aiio datagen` laid it out
    reader: str = "raw"  # native: queries through diskannpy (aiio.phases.vector_native)
    inserts: InsertArgs | None = None  # the insert stream (aiio.phases.vector_inserts)

    @property
    def index(self) -> str:
        """The index's name: a path on a mount, a key on a bucket."""
        return f"{self.folder}/{vi.INDEX_NAME}"


def shape_of(w: Workload) -> vi.IndexShape:
    v = w.vector
    return vi.IndexShape(v.vectors, v.dimensions, v.element_size, v.max_degree, v.sector_size,
                         v.graph, w.run.seed)


def prepare(rc: RunContext) -> VectorArgs:
    """Refuse an engine without ranged reads, check space, lay out the index."""
    if not rc.engine.caps.ranged_reads:
        raise ConfigError(f"the vector phase reads node sectors by offset, and the "
                          f"{rc.engine.name} engine reads only whole files")
    if rc.method == METHOD_NULL:
        raise ConfigError("the vector phase parses the neighbour ids its reads return, and "
                          "--cache null reads no bytes: every search would end at its first "
                          "read; use another method")
    v, shape = rc.workload.vector, shape_of(rc.workload)
    if rc.options.space_check:
        rc.target.require_space(shape.file_size, f"vector index ({format_size(shape.file_size)})")
    if rc.engine.caps.multipart:  # sent in parts of index_chunk: refused before any is made
        rc.engine.check_parts(shape.file_size, index_chunk(rc.workload, shape),
                              "the vector index")
    def args(folder: str, **kw: Any) -> VectorArgs:
        return VectorArgs(folder, rc.method, shape, v.beam_width, v.search_list, v.top_k,
                          v.concurrency, v.rate, v.duration, v.queries, **kw)

    if v.reader == "native":  # a real DiskANN index, built by diskannpy (a mount's only)
        kept, reused = vector_native.ensure_index(rc.target, shape, v.search_list, rc.note,
                                                  rc.options.space_check)
        return args(str(kept), kept=True, reused=reused, reader="native")
    if v.insert_rate:
        check_inserts(rc, shape)
    if isinstance(rc.target, Target):  # a mount keeps the index for later runs
        kept, reused = vk.ensure(rc.target, shape, lambda path: write_index(rc, shape, path),
                                 rc.note, rc.options.space_check)
        return args(str(kept), kept=True, reused=reused,
                    inserts=insert_folder(rc) if v.insert_rate else None)
    folder = str(rc.target.root / "vector" / new_run_tag())
    rc.target.make_run_folder(Path(folder))
    a = args(folder)
    try:
        write_index(rc, shape, a.index)
    except BaseException:  # cleanup never sees args that prepare did not return
        remove_run_folder(rc, folder)
        raise
    return a


def check_inserts(rc: RunContext, shape: vi.IndexShape) -> None:
    """Refuse an insert stream the engine cannot append; check the space its files take."""
    if not rc.engine.caps.partial_overwrite:
        raise ConfigError(f"vector.insert_rate: the insert stream appends to a log file "
                          f"between its fsyncs, and the {rc.engine.name} engine writes whole "
                          "objects only (each group of inserts would rewrite the log); run "
                          "inserts on a mount")
    if rc.options.space_check:
        need = insert_space(rc.workload, shape) * rc.clients
        what = f"insert stream's log and merged indexes ({format_size(need)})"
        kept = isinstance(rc.target, Target) and vk.present(str(rc.target.path), shape)
        index = 0 if kept else shape.file_size
        if index:  # the run lays the index out first: it and the merges are on the disk at once
            need += index
            what = f"vector index ({format_size(index)}) and the {what}"
        rc.target.require_space(need, f"the {what}")


def insert_space(w: Workload, shape: vi.IndexShape) -> int:
    """What one client's insert stream may hold on the target at once: its log, and two merged
    indexes (the one read and the one written) of the index plus every insert it expects
    (Poisson: a tenth and 100 more)."""
    v = w.vector
    expected = expected_inserts(v.insert_rate, v.duration)
    merged = dataclasses.replace(shape, vectors=shape.vectors + expected)
    return expected * record_size(shape) + 2 * merged.file_size


def insert_folder(rc: RunContext) -> InsertArgs:
    """The run's own folder, where the insert logs and merged indexes go (made after every
    check, so a refusal leaves nothing)."""
    v = rc.workload.vector
    folder = rc.target.root / "vector" / new_run_tag()
    rc.target.make_run_folder(folder)
    return InsertArgs(str(folder), v.insert_rate, v.insert_sync, v.merge_every,
                      board_for(v, rc.clients))


def index_chunk(w: Workload, shape: vi.IndexShape) -> int:
    """Bytes of the index written a call (a part, on a bucket): whole sectors, no more than
    the index's (its writer's buffer, made at once, is this size)."""
    sector = shape.sector_size
    whole = -(-shape.file_size // sector) * sector
    return max(sector, min(w.s3.part_size // sector * sector, whole))


def write_index(rc: RunContext, shape: vi.IndexShape, path: str) -> int:
    """The index file, written whole and made durable through the engine's writer."""
    chunk = index_chunk(rc.workload, shape)
    rc.note(f"writing the vector index: {shape.vectors:,} vectors of {shape.dimensions} x "
            f"{shape.element_size} B, R = {shape.max_degree}, {shape.graph} graph, "
            f"{format_size(shape.file_size)}")
    entry = vi.medoid(vi.codes(shape))
    writer = rc.engine.setup().writer(chunk, OpLog(0))
    try:
        return writer.write_content(path, vi.chunks(shape, entry, chunk))
    finally:
        writer.close()


# --- the client -------------------------------------------------------------------------------

class _Stream:
    """One query stream: W readers, each with its handle on the index the stream reads (the
    kept one, or the run's latest merge), and the threads that keep a hop's reads in flight
    together."""

    def __init__(self, eng: Any, a: VectorArgs, counter: Any, views: Views) -> None:
        self.a, self.shape, self.views, self.view = a, a.shape, views, views.current
        self.readers = [eng.reader(a.shape.read_size, OpLog(0), counter)
                        for _ in range(a.width)]
        self.handles = {id(rd): rd.open(self.view.path) for rd in self.readers}
        self.free: queue.SimpleQueue = queue.SimpleQueue()
        for rd in self.readers:
            self.free.put(rd)
        self.pool = ThreadPoolExecutor(a.width - 1) if a.width > 1 else None
        self.log = OpLog(0)  # each query's "service": begun to done
        self.latency = Histogram()  # each query's arrival (or start) to done
        self.records: list[tuple[int, int, int, int, int, int]] = []  # arrival, begun,
        # done, hops, reads, vectors returned (fewer than top_k where the list held fewer)

    def start(self, start_ns: int) -> None:
        for rd in self.readers:
            rd.log = OpLog(start_ns)
        self.log = OpLog(start_ns)

    def begin(self) -> IndexView:
        """The index a query reads: the latest, its handles opened when a merge made it."""
        view = self.views.enter()
        try:
            self._reopen(view)
        except BaseException:
            self.views.leave(view)
            raise
        return view

    def _reopen(self, view: IndexView) -> None:
        if view.version != self.view.version:
            for rd in self.readers:
                rd.close_file(self.handles.pop(id(rd)))
                self.handles[id(rd)] = rd.open(view.path)
            self.view = view

    def idle_until(self, arrival_ns: int, stop: threading.Event) -> bool:
        """Wait for an open loop's next arrival (True: the stop came first). With inserts the
        handles move to a merge's new index meanwhile: the file it replaced is deleted, and a
        handle left on it would keep its blocks taken until this stream's next query."""
        if self.a.inserts is not None:
            while Deadline(arrival_ns).remaining_s() > POLL_S:
                if stop.wait(POLL_S):
                    return True
                self._reopen(self.views.current)
        return stop.wait(Deadline(arrival_ns).remaining_s())

    def read(self, node: int) -> bytes:
        """One node's sector(s), copied out of the reader's buffer before it is reused."""
        rd = self.free.get()
        at = self.shape.offset_of(node)
        try:
            # released before the reader is reused or closed, on an error too
            with self._read_at(rd, node, at) as data:
                if len(data) < self.shape.within(node) + self.shape.node_len:
                    raise RunFailed(f"the vector index read {len(data)} bytes of node "
                                    f"{node}'s record at {at} of {self.view.path}")
                return bytes(data)
        finally:
            self.free.put(rd)

    def _read_at(self, rd: Any, node: int, at: int) -> memoryview:
        try:
            return rd.read_at(self.handles[id(rd)], at, self.shape.read_size)
        except OSError as exc:  # named by its file, as prep's and load's are
            raise io_failure(exc, f"reading node {node} of", self.view.path, at) from exc

    def fetch(self, nodes: list[int]) -> list[bytes]:
        """A hop's reads, all in flight together (the last in this thread)."""
        if self.pool is None or len(nodes) == 1:
            return [self.read(n) for n in nodes]
        later = [self.pool.submit(self.read, n) for n in nodes[:-1]]
        last = self.read(nodes[-1])
        return [f.result() for f in later] + [last]

    def let_go(self) -> None:
        """Close the handles on the index (no query in flight)."""
        for rd in self.readers:
            if id(rd) in self.handles:  # a reopen that failed left it without one
                rd.close_file(self.handles.pop(id(rd)))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
        self.let_go()
        for rd in self.readers:
            rd.close()


class _Arrivals:
    """The queries a client runs: their arrival instants (open loop: a Poisson stream at the
    rate; closed loop: none, a query begins when its stream is free) and the count left."""

    def __init__(self, a: VectorArgs, seed: int, start_ns: int, deadline: Deadline, *,
                 inserts: bool = False) -> None:
        # the insert stream's arrivals: at its own rate, by the duration, from a seed of its own
        self.rate = a.inserts.rate if inserts else a.rate
        self.left = -1 if inserts else a.queries or -1
        self.rng = np.random.Generator(np.random.PCG64([seed, 29 if inserts else 19]))
        self.next_ns = start_ns
        self.deadline = deadline
        self.lock = threading.Lock()

    def take(self) -> int | None:
        """The next query's arrival (0: closed loop), or None when no query is left."""
        with self.lock:
            if self.left == 0:
                return None
            self.left -= 1
            if not self.rate:
                return 0
            self.next_ns += int(self.rng.exponential(1e9 / self.rate))
            if self.next_ns >= self.deadline.at_ns and self.deadline is not NEVER:
                self.left = 0
                return None
            return self.next_ns

    def left_over(self, end_ns: int) -> np.ndarray:
        """Queries that arrived before `end_ns` (and the deadline) that no stream began: the
        open loop's queue when the run stopped. Drawn in bulk, the same gaps as one by one: a
        loop far past the storage leaves millions, one Python call each took seconds."""
        if not self.rate:
            return np.zeros(0, np.int64)
        stop = end_ns if self.deadline is NEVER else min(end_ns, self.deadline.at_ns)
        parts: list[np.ndarray] = []
        with self.lock:
            while self.left != 0 and self.next_ns < stop:
                n = max(1024, int((stop - self.next_ns) * self.rate / 1e9 * 1.01))
                n = n if self.left < 0 else min(n, self.left)
                gaps = self.rng.exponential(1e9 / self.rate, n).astype(np.int64)
                times = self.next_ns + np.cumsum(gaps)
                parts.append(times[times < stop])
                self.next_ns = int(times[-1])
                self.left = self.left if self.left < 0 else self.left - n
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def _run_stream(s: _Stream, ctx: ClientContext, node_codes: np.ndarray, memory: Fresh | None,
                entry: int, arrivals: _Arrivals, until: DeadlineOrStop,
                rng: np.random.Generator, queries: np.ndarray) -> None:
    while not until.passed():
        arrival = arrivals.take()
        if arrival is None or (arrival and s.idle_until(arrival, ctx.stop)):
            break
        q = queries[rng.integers(0, len(queries))]
        view = s.begin()
        try:
            with s.log.timed("service") as t:
                trace = _query(s, node_codes, memory, view, q, entry)
        finally:
            s.views.leave(view)
        # from its arrival in an open loop: a query that waited for a stream waited in it
        s.latency.record(t.end_ns - (arrival or t.t0))
        s.records.append((arrival or t.t0, t.t0, t.end_ns, trace.hops, trace.reads,
                          len(trace.result)))
        ctx.add_units(1)
    # no query left in this stream (an open loop's next arrival may come after the deadline,
    # seconds before the run ends): a merge may delete the index it read, so it goes now
    s.let_go()


def _query(s: _Stream, node_codes: np.ndarray, memory: Fresh | None, view: IndexView,
           q: np.ndarray, entry: int) -> QueryTrace:
    """One query: the beam search over the disk index, and (with inserts) the in-memory
    index's nearest, which cost no read."""
    a = s.a
    if memory is None:
        return search(a.shape, node_codes, q, entry, a.width, a.list_size, a.top_k, s.fetch)
    codes, recent = memory.in_memory()
    trace = search(view.shape, codes, q, entry, a.width, a.list_size, a.top_k, s.fetch)
    nearest_in_memory(recent, q, a.top_k)
    return trace


def read_entry(eng: Any, a: VectorArgs) -> int:
    """The index's header, read once before the run as DiskANN reads it when it loads the
    index: the entry node, and a check that the index is the one asked for."""
    rd = eng.reader(a.shape.sector_size, OpLog(0))
    handle = rd.open(a.index)
    try:
        with rd.read_at(handle, 0, a.shape.sector_size) as data:
            head = vi.read_header(data)
    except OSError as exc:
        raise io_failure(exc, "reading the header of", a.index) from exc
    finally:
        rd.close_file(handle)
        rd.close()
    if head["vectors"] != a.shape.vectors or head["node_len"] != a.shape.node_len:
        raise RunFailed(f"{a.index} holds {head['vectors']} vectors of {head['node_len']}-byte "
                        f"records, not the {a.shape.vectors} of {a.shape.node_len} asked for")
    return head["medoid"]


def run_client(ctx: ClientContext) -> dict[str, Any]:
    """One client's queries, its streams in threads, until the duration or the count."""
    a: VectorArgs = ctx.args
    if a.reader == "native":
        return native_client(ctx, a)
    eng = ctx.engine.with_streams(a.concurrency * a.width)
    procsetup.allow_files(files_per_client(a.concurrency, a.width, a.inserts is not None))
    node_codes = vi.codes(a.shape)
    entry = read_entry(eng, a)
    seed = a.shape.seed * 1_000_003 + ctx.index
    points = vi.query_codes(a.shape, node_codes, 1024, seed)
    views = Views(IndexView(a.index, a.shape))
    side = _Inserts(eng, a, ctx.index, node_codes, entry, views) if a.inserts else None
    streams: list[_Stream] = []
    errors: list[BaseException] = []
    try:
        streams += [_Stream(eng, a, ctx.add_bytes, views) for _ in range(a.concurrency)]
        run = Window(ctx.ready_and_wait())
        cpu0 = cpu_seconds()
        deadline = NEVER if a.queries else run.deadline(a.duration_s)
        arrivals = _Arrivals(a, seed, run.start_ns, deadline)
        for s in streams:
            s.start(run.start_ns)
        until = DeadlineOrStop(deadline, ctx.stop)
        threads = [threading.Thread(target=_guard, args=(errors, _run_stream, s, ctx,
                                                         node_codes, side and side.fresh,
                                                         entry, arrivals, until,
                                                         np.random.default_rng([ctx.index, i]),
                                                         points))
                   for i, s in enumerate(streams)]
        if side is not None:
            threads += side.threads(errors, run, deadline, ctx)
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if a.rate and deadline is not NEVER:  # an open loop offers queries its whole duration:
            ctx.stop.wait(deadline.remaining_s())  # no arrival left is no earlier end
        run.close()
        cpu_s = cpu_seconds() - cpu0  # the window's: the figures' own work comes after
        if errors:
            raise errors[0]
    finally:
        for s in streams:
            s.close()
        if side is not None:
            side.close()
    out = client_figures(ctx, eng, a, streams, run, cpu_s, arrivals.left_over(run.end_ns))
    if side is not None:
        out["inserts"] = side.figures(a, streams, run)
    return out


class _Inserts:
    """A client's insert stream and its merges, each in a thread of its own beside the query
    streams (aiio.phases.vector_inserts, vector_merge)."""

    def __init__(self, eng: Any, a: VectorArgs, client: int, node_codes: np.ndarray,
                 entry: int, views: Views) -> None:
        self.a, ia = a, a.inserts
        self.seed = a.shape.seed * 1_000_003 + client
        self.fresh = Fresh(node_codes, self.seed)
        self.log = InsertLog(eng, log_name(ia, client), a.shape, ia.sync_every, self.seed)
        self.merger = Merger(eng, ia, client, views, self.fresh, entry, self.seed)
        self.arrivals: _Arrivals | None = None

    def threads(self, errors: list[BaseException], run: Window, deadline: Deadline,
                ctx: ClientContext) -> list[threading.Thread]:
        """The insert and merge threads, from the common start."""
        self.log.start(run.start_ns)
        self.merger.log = OpLog(run.start_ns)
        self.arrivals = _Arrivals(self.a, self.seed, run.start_ns, deadline, inserts=True)
        until = DeadlineOrStop(deadline, ctx.stop)
        return [threading.Thread(target=_guard, args=(errors, run_inserts, self.log,
                                                      self.fresh, self.arrivals, until,
                                                      ctx.stop)),
                threading.Thread(target=_guard, args=(errors, self.merger.run, until))]

    def figures(self, a: VectorArgs, streams: list[_Stream], run: Window) -> dict[str, Any]:
        recs = np.array([r[:3] for s in streams for r in s.records], np.int64).reshape(-1, 3)
        left = self.arrivals.left_over(run.end_ns) if self.arrivals else np.zeros(0, np.int64)
        return vif.client_inserts(self.log, self.fresh, self.merger, left, recs, run.start_ns,
                                  run.end_ns, a.duration_s,
                                  a.shape.dimensions * a.shape.element_size)

    def close(self) -> None:
        self.log.close()


def native_client(ctx: ClientContext, a: VectorArgs) -> dict[str, Any]:
    """Queries through diskannpy: its latency and count; no hop or read of aiio's own (the
    bytes it had read from storage, where the process's I/O counters see them)."""
    cpu0 = cpu_seconds()
    hists, spans, start_ns, end_ns, nbytes = vector_native.run_client(ctx, a)
    n = len(spans)
    out = client_identity(ctx.index)
    out.update(client_io_figures([], start_ns, end_ns))
    query = Histogram()
    for h in hists:
        query.merge(h)
    out["histograms"].update(query=query.to_dict(), service=query.to_dict())
    elapsed_s = (end_ns - start_ns) / 1e9
    # an index of fewer than top_k vectors returns them all
    vector_bytes = min(a.top_k, a.shape.vectors) * a.shape.dimensions * a.shape.element_size
    # closed loop: each query arrived as it began
    at = (spans - start_ns) / 1e9
    q = vf.Queries(n, 0, nbytes // a.shape.sector_size, nbytes, n * vector_bytes,
                   in_duration=rates.count_within(spans[:, 1], start_ns, _duration(a)))
    log = vf.slice_log(a.duration_s if not a.queries else elapsed_s,
                       np.column_stack([at[:, 0], at[:, 0], at[:, 1]]), np.zeros(0), elapsed_s)
    out.update(queries=q.to_dict(), steadiness=log.slices_dict(), cpu_s=cpu_seconds() - cpu0,
               queries_per_s=_per_s(a, q, elapsed_s), native_read_bytes=nbytes)
    return out


def _duration(a: VectorArgs) -> float | None:
    """The duration the rates count within (aiio.phases.rates); a run by count has none."""
    return None if a.queries else a.duration_s


def _per_s(a: VectorArgs, q: vf.Queries, elapsed_s: float) -> float:
    """The client's queries/s, as the run's."""
    return rates.per_s(q.in_duration, rates.window(_duration(a), elapsed_s))


def _guard(errors: list[BaseException], fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except BaseException as exc:  # raised again in the client's main thread
        errors.append(exc)


def client_figures(ctx: ClientContext, eng: Any, a: VectorArgs, streams: list[_Stream],
                   run: Window, cpu_s: float, left: np.ndarray) -> dict[str, Any]:
    """`left`: arrivals no stream began (never begun: waiting until the end); `cpu_s`: the
    client's CPU seconds over its window."""
    out = client_identity(ctx.index)
    out.update(client_io_figures([rd.log for s in streams for rd in s.readers], run.start_ns,
                                 run.end_ns, main_op=eng.caps.read_op))
    hist: dict[str, Histogram] = {}
    for s in streams:
        s.log.flush()
        for op, h in s.log.hist.items():
            hist.setdefault(op, Histogram()).merge(h)
        hist.setdefault("query", Histogram()).merge(s.latency)
    for op in ("query", "service"):
        out["histograms"][op] = hist.get(op, Histogram()).to_dict()
    recs = np.array([r for s in streams for r in s.records], np.int64).reshape(-1, 6)
    w_sum = w_max = 0
    if a.rate:
        arrived = np.concatenate([recs[:, 0], left]) - run.start_ns
        begun = np.concatenate([recs[:, 1] - run.start_ns,
                                np.full(len(left), np.iinfo(np.int64).max)])
        w_sum, w_max = vf.waiting(arrived, begun)
    vector_bytes = int(recs[:, 5].sum()) * a.shape.dimensions * a.shape.element_size
    q = vf.Queries(len(recs), int(recs[:, 3].sum()), int(recs[:, 4].sum()), out["bytes"],
                   vector_bytes, w_sum, w_max, len(left),
                   in_duration=rates.count_within(recs[:, 2], run.start_ns, _duration(a)))
    # by the tenth of the duration each query arrived in (of the window, run by count)
    log = vf.slice_log(a.duration_s if not a.queries else run.elapsed_s,
                       (recs[:, :3] - run.start_ns) / 1e9,
                       (left - run.start_ns) / 1e9, run.elapsed_s)
    out.update(queries=q.to_dict(), steadiness=log.slices_dict(), cpu_s=cpu_s,
               queries_per_s=_per_s(a, q, run.elapsed_s))
    out.update(eng.client_figures(out, run.elapsed_s))  # a bucket's requests and retries
    return out


# --- the parent side --------------------------------------------------------------------------

def summarize(rc: RunContext, a: VectorArgs, clients: list[dict]) -> dict[str, Any]:
    agg = io_aggregate(clients)
    agg.update(rc.engine.aggregate(clients))  # a bucket's requests and retries
    reads = Histogram.from_dict(agg["histograms"].get(rc.engine.caps.read_op, {})) \
        if rc.engine.caps.read_op in agg["histograms"] else Histogram()
    sums = [vf.Queries.from_dict(c["queries"]) for c in clients]
    # diskannpy's reads are no calls of aiio's: the sectors its I/O counters saw, untimed
    read_ops = sum(q.reads for q in sums) if a.reader == "native" else reads.count
    fig = vf.summarize(sums, [Histogram.from_dict(c["histograms"]["query"]) for c in clients],
                       [vf.slices_of(c["steadiness"]) for c in clients],
                       [c["elapsed_s"] for c in clients], read_ops, reads.sum,
                       a.rate * len(clients), _duration(a))
    if "requests" in agg and fig.queries:
        fig = dataclasses.replace(fig, requests_per_query=agg["requests"] / fig.queries)
    agg.update(vector=fig.to_dict(), read_bytes=agg["bytes"], write_bytes=0,
               index=index_figures(a).to_dict())
    if a.reader == "native":  # diskannpy read the index: no read call of aiio's to time
        agg["reads_by"] = "diskannpy"
    if a.inserts is not None:
        agg["inserts"] = vif.summarize(clients, a.inserts.rate, fig.rate_window_s).to_dict()
    return agg


def index_figures(a: VectorArgs) -> VectorIndex:
    """The index searched, as the result records it."""
    sh = a.shape
    return VectorIndex(sh.vectors, sh.dimensions, sh.element_size, sh.max_degree,
                       sh.sector_size, sh.node_len, sh.read_size, sh.graph, sh.file_size,
                       a.width, a.list_size, a.top_k, a.index, a.kept, a.reused, a.reader)


def warnings(rc: RunContext, a: VectorArgs, out: dict[str, Any]) -> list[dict[str, str]]:
    agg = out["aggregate"]
    fig = VectorFigures.from_dict(agg["vector"])
    found = rc.engine.warnings(agg, a.shape.file_size)
    if rc.engine.caps.client_cache and a.method != METHOD_DIRECT:
        found.append({"code": "vector_cached", "message": (
            "the vector index was read without O_DIRECT: every query reads the entry node and "
            "its neighbourhood again, and the page cache may have served those reads"
            + (", and the merges' reads of the pages the queries read meanwhile"
               if a.inserts is not None else ""))})
    if fig.requests_per_query is not None and a.shape.read_size < SMALL_REQUEST:
        found.append({"code": "vector_request_bound", "message": (
            f"each query cost {fig.requests_per_query:.1f} GET requests of "
            f"{format_size(a.shape.read_size)}: {agg.get('requests_per_s', 0.0):,.0f} "
            f"requests/s moved only {fig.storage_iops * a.shape.read_size / MiB:.1f} MiB/s, "
            "so the bucket's request rate, not its bandwidth, bounds queries/s")})
    found += insert_warnings(agg.get("inserts"))
    v = fig.verdict
    if v is not None and v.overloaded:
        found.append({"code": "vector_overload", "message": (
            f"overloaded: {fig.offered_per_s:.1f} queries/s were offered and "
            f"{fig.queries_per_s:.1f} answered, faster than the storage answers; "
            + "; ".join(v.evidence) + ". Latency grew through the run: its percentiles "
            "depend on the run's length and hold only the queries answered")})
    return found


# A merge whose span was at least this much its thread's CPU time was the client's work more
# than the storage's (RAM-backed: 0.47 to 0.94; a virtio disk 0.24 to 0.41; 2 MiB/s under 0.1)
MERGE_CPU_BOUND = 0.5


def insert_warnings(recorded: Mapping[str, Any] | None) -> list[dict[str, str]]:
    """An insert log that did not keep up, said as an overloaded query stream is; merges
    that were mostly the client's own work."""
    ins = InsertFigures.from_dict(recorded)
    if not ins:
        return []
    found = []
    if ins.verdict is not None and ins.verdict.overloaded:
        found.append({"code": "vector_insert_overload", "message": (
            f"the insert log did not keep up: {ins.offered_per_s:.1f} inserts/s were "
            f"offered and {ins.done_per_s:.1f} made durable; "
            + "; ".join(ins.verdict.evidence) + ". Inserts waited longer the longer "
            "the run: their durability latency depends on the run's length")})
    share = ins.merge_cpu_share
    if share is not None and share >= MERGE_CPU_BOUND and ins.queries_merging:
        found.append({"code": "vector_merge_client_bound", "message": (
            f"the merges spent {share * 100:.0f} % of their time on the client's CPU"
            " (copying and patching the index in the client's own process), not waiting "
            "on the storage: the queries that met them waited on the client too, so query "
            "p99 while merging holds the client's cost beside the storage's")})
    return found


def files_per_client(concurrency: int, width: int, inserts: bool = False) -> int:
    """Files a client opens: a handle on the index per read in flight, and the base; with
    inserts its log and a merge's two files besides."""
    return procsetup.FILES_BASE + concurrency * width + (3 if inserts else 0)


# A client's memory besides its readers, threads and compressed vectors (docs/PERFORMANCE.md,
# "Memory per client"; Dec 3 2026, under load): `python -m tools.phase_memory --clients 4
# --phase vector` of 20,000 vectors read 7.17 MiB for the largest client, 4.10 MiB less what
# the estimate counts, rounded up to 0.5 MiB. One count only: the other phases' bases come
# from three.
MEMORY_BASE = int(4.5 * MiB)


# Laying the index out holds, in the parent, every node's compressed vector and the medoid's
# arrays, then (those freed) a chunk of records at a time: its records, their neighbour ids'
# arrays, its sectors and the bytes written. Measured (docs/PERFORMANCE.md, "Memory per
# client"): the peak over a layout of 16 vectors was 2.19 and 2.16 times the N x 32 B of
# compressed vectors (4 and 8 million vectors), and 6.5 chunks (a whole 128 MiB chunk of
# R = 64 records); counted as both at once, an upper bound.
LAYOUT_PEAK = 2.2
LAYOUT_CHUNKS = 7


def layout_memory(w: Workload) -> PrepareMemory:
    """What laying out the index of `w` holds in the parent at its peak."""
    shape = shape_of(w)
    codes = shape.vectors * vi.CODE_DIMS * 4
    need = LAYOUT_PEAK * codes + LAYOUT_CHUNKS * index_chunk(w, shape)
    return PrepareMemory(int(need), (
        f"laying out the vector index ({shape.vectors:,} vectors: {LAYOUT_PEAK:g} x their "
        f"{format_size(codes)} of compressed vectors, and {LAYOUT_CHUNKS} chunks of "
        f"{format_size(index_chunk(w, shape))})"),
        "use fewer [vector] vectors, or lay the index out once with aiio datagen --phase "
        "vector on a host with more memory (a mount's runs reuse it)")


class VectorPhase(Phase):
    name = "vector"
    main_op = "read"
    hero_test = "rand_read"
    console = "vector_tables"
    duration_key = ("vector", "duration")
    streams_key = ("vector", "concurrency")
    trend_figure = "queries_per_s"
    own_figures = ("queries_per_s", "query_p99_ms")
    sweep_extras = (("queries_per_s", "queries/s", "1/s"), ("query_p99_ms", "query p99 ms",
                                                             "ms"))
    # s3: the index is written in calls of s3.part_size (whole sectors), on a mount too
    workload_sections = ("vector", "s3")
    steadiness_at = ("vector", "verdict")

    def client_memory(self, w: Workload, clients: int, lifecycle: bool = False) -> ClientMemory:
        """W readers per stream, and every node's compressed vector."""
        v, shape = w.vector, shape_of(w)
        streams = v.concurrency * v.beam_width
        base = OBJECT_CLIENT_BASE if self.object_store else MEMORY_BASE
        buffers = streams * shape.read_size + v.vectors * vi.CODE_DIMS * 4
        if v.insert_rate:  # a merge's reader and writer, the log's record, the codes' copy
            expected = expected_inserts(v.insert_rate, v.duration)
            buffers += (2 * chunk_sectors(shape) * shape.sector_size + record_size(shape)
                        + (v.vectors + expected) * vi.CODE_DIMS * 4 * 3 // 2)
        return ClientMemory(base, buffers, streams + (2 if v.insert_rate else 0))

    def prepare_memory(self, w: Workload, target: str) -> PrepareMemory | None:
        """Laying the index out, unless a kept one is reused (diskannpy's build, --reader
        native, is not measured)."""
        if w.vector.reader == "native" or vk.present(target, shape_of(w)):
            return None
        return layout_memory(w)

    def validate(self, w: Workload, options: RunOptions) -> None:
        shape_of(w)
        if w.vector.insert_rate and w.vector.reader == "native":
            raise ConfigError("vector.insert_rate: --reader native queries a static DiskANN "
                              "index through diskannpy, which takes no inserts; use the raw "
                              "reader (or vector.insert_rate = 0)")
        vector_native.check(w, options)
        need = files_per_client(w.vector.concurrency, w.vector.beam_width,
                                bool(w.vector.insert_rate))
        hard = procsetup.open_files_hard_limit()
        if hard is not None and hard < need:
            raise ConfigError(f"each client holds a handle on the index per read in flight "
                              f"([vector] concurrency x beam_width) and needs about {need} "
                              f"open files, but this process may open at most {hard}; raise "
                              "the limit (ulimit -n) or lower them")

    def prepare(self, rc: RunContext) -> VectorArgs:
        return prepare(rc)

    def total_units(self, a: VectorArgs, clients: int) -> int | None:
        return a.queries * clients if a.queries else None

    client = staticmethod(run_client)
    summarize = staticmethod(summarize)
    warnings = staticmethod(warnings)

    def cleanup(self, rc: RunContext, a: VectorArgs | None, status: str) -> None:
        """The run's index goes (a kept one stays for the next run), and its insert logs and
        merged indexes."""
        if a is not None and not a.kept:
            remove_run_folder(rc, a.folder)
        if a is not None and a.inserts is not None:
            remove_run_folder(rc, a.inserts.folder)


PHASE = VectorPhase()
