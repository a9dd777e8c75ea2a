"""The KV-cache phase: LLM inference servers offloading their attention KV cache to the target.

Each client is one inference server (one process) serving `kvcache.users` concurrent users
(one thread each). A request's prefill writes the full KV blocks of its context that the target
does not hold yet (one file or object per block, durable as the engine defines it), then its
decode reads back every block of its context that no memory tier holds (the GPU and host tiers,
kvcache_tiers). Requests come from conversations (closed loop: users with think time; open
loop: a Poisson rate per client) or from a trace (BurstGPT, Mooncake). Figures: read and write
bandwidth (first and last done), bytes per request, hit rate per tier, latency histograms of
every storage call and of each request's storage time, tokens/s, the share of requests within
each class's goal, and whether the run was steady or overloaded (kvcache_figures).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

from aiio.engines import blocks
from aiio.engines.seam import OpLog, align_up
from aiio.engines.timing import Window, cpu_seconds, edge_ns
from aiio.errors import ConfigError, RunFailed
from aiio.options import RunOptions
from aiio.phases import kvcache_figures as kf
from aiio.phases.base import (
    OBJECT_CLIENT_BASE,
    ClientMemory,
    Phase,
    RunContext,
    client_identity,
    client_io_figures,
    io_aggregate,
    object_writer_bytes,
    read_write_sections,
)
from aiio.phases.kvcache_requests import (
    Arrivals,
    Conversation,
    Request,
    TraceRecord,
    client_share,
    read_trace,
    system_blocks,
    trace_format,
    trace_request,
)
from aiio.phases.kvcache_tiers import STORAGE, BlockIndex, Tiers
from aiio.phases.rundata import new_run_tag, remove_run_folder
from aiio.phases.threads import run_parallel
from aiio.results.kvcache import KvFigures
from aiio.results.steadiness import Verdict
from aiio.run.clients import ClientContext
from aiio.units import MiB, format_size
from aiio.workload import KvcacheSpec, Workload

THREAD_STACK = 256 * 1024  # a user's thread: Python frames only, no buffers on its stack


@dataclass
class KvArgs:
    """What every client gets: the workload's section, the run's folder and its trace."""

    folder: str
    spec: KvcacheSpec
    method: str
    seed: int
    clients: int
    part_size: int = 0  # an engine that sends objects in parts: the workload's s3.part_size
    records: list[TraceRecord] = field(default_factory=list)

    def path(self, name: str) -> str:
        return os.path.join(self.folder, name)

    def tag(self, name: str) -> int:
        return blocks.file_tag(self.seed, name)

    @property
    def write_size(self) -> int:
        """What a writer's buffer holds: a transfer on files; on a bucket a part, or the one
        block every object is when that is smaller (a part-size buffer for each user, made
        at once, held parts of which no block used more than its own size)."""
        return min(self.part_size, align_up(self.spec.block_bytes)) if self.part_size \
            else self.spec.transfer_size

    def describe(self) -> dict[str, Any]:
        k = self.spec
        return {"model": k.model, "bytes_per_token": k.bytes_per_token,
                "block_tokens": k.block_tokens, "block_bytes": k.block_bytes,
                "users_per_client": k.users, "load": k.load, "duration_s": k.duration,
                "gpu_cache": k.gpu_cache, "host_cache": k.host_cache,
                "trace_requests": len(self.records)}


# --- the parent side -----------------------------------------------------------------------

def space_needed(a: KvArgs) -> int:
    """The most bytes the run holds on the target at once: the shared system prompts, and
    per client each user's longest conversation (or trace request), or a Mooncake trace's
    distinct blocks."""
    k = a.spec
    shared = k.system_prompts * len(system_blocks(k, 0))
    if a.records and any(r.hash_ids for r in a.records):
        per = [len({h for r in client_share(a.records, c, a.clients)
                    for h in r.hash_ids[:r.context // k.block_tokens]})
               for c in range(a.clients)]
        own = sum(per)
    elif a.records:
        own = a.clients * k.users * max(r.context // k.block_tokens for r in a.records)
    else:
        own = a.clients * k.users * (k.max_context_tokens // k.block_tokens)
    return (shared + own) * k.block_bytes


def prepare_run(rc: RunContext) -> KvArgs:
    """Read the trace, check space and parts, make the run's folder, write the shared
    system prompts' blocks (durable, before the clock starts)."""
    w, k = rc.workload, rc.workload.kvcache
    records: list[TraceRecord] = []
    if k.load == "trace":
        records = read_trace(k.trace, trace_format(k.trace, k.trace_format), k.trace_speed,
                             k.duration, k.block_tokens)
    part = w.s3.part_size if rc.engine.caps.multipart else 0
    folder = rc.target.root / "kvcache" / new_run_tag()
    a = KvArgs(str(folder), k, rc.method, w.run.seed, rc.clients, part, records)
    if part:
        rc.engine.check_parts(k.block_bytes, part, "a KV block")
    need = space_needed(a)
    if rc.options.space_check:
        rc.target.require_space(need, f"KV blocks ({format_size(need)} at most at once)")
    rc.target.make_run_folder(folder)
    rc.note(f"kvcache: {k.model}, {k.bytes_per_token:,} B/token, blocks of "
            f"{format_size(k.block_bytes)}; {rc.clients} client(s) x {k.users} users")
    try:
        _write_system_prompts(rc, a)
    except BaseException:  # cleanup never sees args that prepare did not return
        remove_run_folder(rc, a.folder)
        raise
    return a


def _write_system_prompts(rc: RunContext, a: KvArgs) -> None:
    names = [n for p in range(a.spec.system_prompts) for n in system_blocks(a.spec, p)]
    if not names:
        return
    eng = rc.engine.setup()
    eng.makedirs(OpLog(0), a.path("sys"))
    writers = [eng.writer(a.write_size, OpLog(0), seed=a.seed + i)
               for i in range(min(4, len(names)))]
    rc.note(f"writing {len(names)} shared system-prompt block(s)")
    try:
        run_parallel(names, writers,
                     lambda wr, n: wr.write_file(a.path(n), a.spec.block_bytes, a.tag(n)))
    finally:
        for wr in writers:
            wr.close()


# --- the client ----------------------------------------------------------------------------

@dataclass
class Server:
    """What a client's users share: its tiers, its index of stored blocks, its arrivals."""

    a: KvArgs
    ctx: ClientContext
    tiers: Tiers
    index: BlockIndex
    arrivals: Arrivals | None
    run: Window
    until_s: float
    halt: threading.Event
    records: list[TraceRecord] = field(default_factory=list)  # this client's trace share
    errors: list[BaseException] = field(default_factory=list)


class User:
    """One user: its own reader, writer and logs; its requests one at a time."""

    def __init__(self, srv: Server, u: int) -> None:
        a, eng = srv.a, srv.ctx.engine
        self.srv, self.u = srv, u
        size = a.spec.transfer_size
        self.reader = eng.reader(size, OpLog(0), srv.ctx.add_bytes, largest=a.spec.block_bytes)
        self.writer = eng.writer(a.write_size, OpLog(0), srv.ctx.add_bytes,
                                 seed=(a.seed * 1_000_003 + srv.ctx.index) * 4096 + u)
        self.conv = Conversation(a.spec, srv.ctx.index, u, a.seed)
        self.last: tuple[str, ...] = ()  # a trace request's blocks, dropped at the next
        self.begin(0)

    def begin(self, start_ns: int) -> None:
        """Logs from the common start: made before it, so no user's buffers are filled
        inside the window."""
        self.read_log, self.write_log, self.meta = (OpLog(start_ns), OpLog(start_ns),
                                                    OpLog(start_ns))
        self.reader.log, self.writer.log = self.read_log, self.write_log
        self.log = kf.RequestLog(start_ns, self.srv.a.spec.duration, self.srv.a.spec.goals)

    def run(self) -> None:
        try:
            if self.srv.arrivals is None:
                self._closed()
            else:
                self._arrivals()
        except BaseException as exc:  # raised again in the client's main thread
            self.srv.errors.append(exc)
            self.srv.halt.set()

    def _closed(self) -> None:
        srv, think = self.srv, self.srv.a.spec.think_time
        while not self._over():
            t = srv.run.lap()
            self.serve(self.conv.next(), t, t)
            if think and srv.halt.wait(min(think, self._left())):
                return

    def _arrivals(self) -> None:
        srv = self.srv
        while not self._over():
            got = srv.arrivals.take(srv.until_s)
            if got is None:
                return
            i, at_s = got
            at_ns = srv.run.start_ns + int(at_s * 1e9)
            wait = (at_ns - edge_ns()) / 1e9
            if wait > 0 and srv.halt.wait(wait):
                return
            self.serve(self._request(i), at_ns, srv.run.lap())

    def _request(self, i: int) -> Request:
        srv = self.srv
        if not srv.a.records:
            return self.conv.next()
        rec = srv.records[i]
        index = i * srv.a.clients + srv.ctx.index
        req = trace_request(rec, index, srv.ctx.index, srv.a.spec.block_tokens, self.last)
        self.last = () if rec.hash_ids else req.blocks
        return req

    def _left(self) -> float:
        return max(0.0, self.srv.until_s - self.srv.run.since_start_s(edge_ns()))

    def _over(self) -> bool:
        return self.srv.halt.is_set() or self._left() <= 0

    def serve(self, req: Request, arrival_ns: int, start_ns: int) -> None:
        """Drop what the user no longer needs, write the context's new blocks (prefill),
        read back those no tier holds (decode); one request's figures."""
        self._drop(req.drop)
        storage = sum(self._prefill(name) for name in req.blocks)
        storage += sum(self._decode(name) for name in req.blocks)
        self.log.request(arrival_ns, start_ns, storage, req.context, req.generation,
                         edge_ns())
        self.srv.ctx.add_units(1)

    def _prefill(self, name: str) -> int:
        """Write one block if the target does not hold it; the ns storage took."""
        srv, k = self.srv, self.srv.a.spec
        mine, pending = srv.index.claim(name)
        if not mine:
            if pending is None:
                return 0
            t0 = edge_ns()
            pending.wait()  # another user is writing it: this request waits for that write
            return edge_ns() - t0
        t0 = edge_ns()
        try:
            self.writer.write_file(srv.a.path(name), k.block_bytes, srv.a.tag(name))
        except BaseException:
            srv.index.done(name, ok=False)
            raise
        spent = edge_ns() - t0
        srv.index.done(name)
        srv.tiers.insert(name)
        self.log.hist["block_write"].record(spent)
        self.log.counts["write_bytes"] += k.block_bytes
        self.log.counts["blocks_written"] += 1
        return spent

    def _decode(self, name: str) -> int:
        """Read one block back unless a tier holds it; the ns storage took."""
        srv, size = self.srv, self.srv.a.spec.block_bytes
        tier = srv.tiers.lookup(name)
        self.log.hits[tier] += 1
        if tier != STORAGE:
            return 0
        t0 = edge_ns()
        got = self.reader.read_file(srv.a.path(name), 0, size)
        spent = edge_ns() - t0
        if got != size and not srv.halt.is_set():
            raise RunFailed(f"read {got} of the {size} bytes of KV block {srv.a.path(name)}")
        srv.tiers.insert(name)
        self.log.hist["block_read"].record(spent)
        self.log.counts["read_bytes"] += got
        self.log.counts["blocks_read"] += 1
        return spent

    def _drop(self, names: tuple[str, ...]) -> None:
        """Delete blocks no longer needed (a conversation's end), timed apart from any
        request."""
        if not names:
            return
        self.srv.tiers.forget(names)
        self.srv.index.forget(names)
        for name in names:
            try:
                self.srv.ctx.engine.unlink(self.meta, self.srv.a.path(name))
            except FileNotFoundError:
                continue

    def close(self) -> None:
        self.reader.close()
        self.writer.close()


def _watch_stop(ctx: ClientContext, halt: threading.Event) -> None:
    """Wake every user at the client's stop (a Ctrl-C, another client's failure)."""
    ctx.wait_for_stop()
    halt.set()


def run_client(ctx: ClientContext) -> dict[str, Any]:
    """One inference server: its users' requests for the run's duration."""
    a: KvArgs = ctx.args
    k = a.spec
    ctx.engine = ctx.engine.with_streams(k.users)  # a bucket: a connection per user
    ctx.engine.makedirs(OpLog(0), a.path(f"c{ctx.index:05d}"))
    stored = [n for p in range(k.system_prompts) for n in system_blocks(k, p)]
    halt = threading.Event()
    threading.Thread(target=_watch_stop, args=(ctx, halt), daemon=True).start()
    srv = Server(a, ctx, Tiers(k.gpu_cache // k.block_bytes, k.host_cache // k.block_bytes),
                 BlockIndex(stored), _arrivals(a, ctx.index), Window(0), k.duration, halt,
                 client_share(a.records, ctx.index, a.clients))
    users = [User(srv, u) for u in range(k.users)]
    srv.run = Window(ctx.ready_and_wait())
    for u in users:
        u.begin(srv.run.start_ns)
    cpu0 = cpu_seconds()
    try:
        _run_users(users)
        # an open loop's users stop once no request arrives before the end: the run is
        # its duration still, idle or not, as a closed loop's is
        left = k.duration - srv.run.since_start_s(edge_ns())
        if left > 0 and not srv.errors:
            halt.wait(left)
        end_ns = srv.run.close()
        cpu_s = cpu_seconds() - cpu0  # the window's: the figures' own work comes after
        if srv.errors:
            raise srv.errors[0]
    finally:
        for u in users:
            u.close()
    return _client_figures(ctx, srv, users, end_ns, cpu_s)


# The arrivals an open loop's client may draw in its duration: each one's instant is kept
# until the run ends (those never served are counted then, Arrivals.waiting), 8 to 32 bytes
# each; a rate of 1e9/s asked for 7.45 GiB a client and the run died of a MemoryError.
MAX_ARRIVALS = 1_000_000


def too_many_arrivals(k: KvcacheSpec) -> str | None:
    """Why an open loop cannot run at `k`'s rate: more arrivals a client than it keeps."""
    n = k.request_rate * k.duration
    if n <= MAX_ARRIVALS:
        return None
    return (f"kvcache.request_rate {k.request_rate:g}/s over kvcache.duration {k.duration:g} s "
            f"is {n:.3g} requests a client; an open loop draws at most {MAX_ARRIVALS:,} "
            "requests a client (each arrival is kept until the run ends): lower the rate or "
            "the duration")


def _arrivals(a: KvArgs, client: int) -> Arrivals | None:
    k = a.spec
    if k.load == "closed":
        return None
    if k.load == "trace":
        return Arrivals([r.at_s for r in client_share(a.records, client, a.clients)])
    return Arrivals(rate=k.request_rate, seed=(a.seed, client, 11))


def _run_users(users: list[User]) -> None:
    old = threading.stack_size(THREAD_STACK)
    try:
        threads = [threading.Thread(target=u.run) for u in users]
    finally:
        threading.stack_size(old)
    for th in threads:
        th.start()
    for th in threads:
        th.join()


def _client_figures(ctx: ClientContext, srv: Server, users: list[User], end_ns: int,
                    cpu_s: float) -> dict[str, Any]:
    start = srv.run.start_ns
    log = users[0].log
    for u in users[1:]:
        log.merge(u.log)
    if srv.arrivals is not None:  # requests that arrived and were never served
        log.unserved(srv.arrivals.waiting(srv.until_s), (end_ns - start) / 1e9)
    read = client_io_figures([u.read_log for u in users], start, end_ns, main_op="read")
    write = client_io_figures([u.write_log for u in users], start, end_ns, main_op="write")
    out = client_identity(ctx.index)
    out.update(elapsed_s=(end_ns - start) / 1e9, cpu_s=cpu_s, read=read,
               write=write, bytes=read["bytes"] + write["bytes"], kvcache=log.to_dict())
    out.update(ctx.engine.client_figures(read, out["elapsed_s"]))  # a bucket's SDK counts
    return out


def summarize_run(rc: RunContext, a: KvArgs, clients: list[dict]) -> dict[str, Any]:
    read, write = io_aggregate([c["read"] for c in clients]), \
        io_aggregate([c["write"] for c in clients])
    k = a.spec
    shape = kf.RunShape(k.model, k.bytes_per_token, k.block_bytes, k.load, k.users, k.goals,
                        k.duration, max(c["elapsed_s"] for c in clients))
    figures = kf.aggregate(shape, kf.client_logs(clients))
    out = {"read": read, "write": write, "read_bytes": read["bytes"],
           "write_bytes": write["bytes"], "bytes": read["bytes"] + write["bytes"],
           "plan": a.describe(), "kvcache": figures.to_dict()}
    why = _not_measured(figures)
    if why:
        out["not_measured"] = why
    out.update(rc.engine.aggregate(clients))
    return out


def _not_measured(f: KvFigures) -> str | None:
    """Why the read headline is no figure of the storage, when the memory tiers served every
    block a decode looked up (a longer run or more data would not change that)."""
    if f.hits[STORAGE] or not sum(f.hits.values()):
        return None
    return (f"the memory tiers held every block the requests read back ({f.hits['gpu']:,} "
            f"GPU and {f.hits['host']:,} host hits): the target was read nothing, so the read "
            "headline is no figure of it; make kvcache.gpu_cache and host_cache smaller than "
            "the blocks the users need, or give more users or longer contexts")


def run_warnings(rc: RunContext, a: KvArgs, out: dict[str, Any]) -> list[dict[str, str]]:
    agg = out["aggregate"]
    found = []
    v = Verdict.from_dict(agg["kvcache"]["verdict"])
    if v.overloaded:
        found.append({"code": "kvcache_overloaded", "message": (
            "the storage did not keep up with the requests: " + "; ".join(v.evidence)
            + " (figures of an overloaded run grow with its duration)")})
    # every block read was written by this run: what a reread warning would say is the
    # phase's design, and a service's cache is named below
    found += rc.engine.warnings(agg, agg.get("bytes", 0))
    if not rc.engine.caps.client_cache and agg.get("read_bytes"):
        found.append({"code": "object_read_after_write", "message": (
            "KV blocks were read back soon after this run wrote them: the S3 service may "
            "have served them from its own cache, as it would serve a real KV store")})
    return found


# A client's memory besides its users' buffers: not measured yet for this phase; taken as
# randrw's (one process, threads and op logs), and each user's thread counted.
MEMORY_BASE = 10 * MiB


class KvcachePhase(Phase):
    name = "kvcache"
    main_op = "read"
    console = "kvcache_tables"
    duration_key = ("kvcache", "duration")
    streams_key = ("kvcache", "users")
    users_key = ("kvcache", "users")
    rate_key = ("kvcache", "request_rate")
    steadiness_at = ("kvcache", "verdict")
    judged_on = "first_done"
    own_figures = ("tokens_per_s", "storage_p95_ms", "request_p95_ms")
    workload_sections = ("kvcache",)

    def io_sections(self, part: Any, client: bool) -> dict[str, Any]:
        return read_write_sections(part)

    def client_memory(self, w: Workload, clients: int, lifecycle: bool = False) -> ClientMemory:
        """Each user holds a reader's and a writer's buffer."""
        k = w.kvcache
        write = object_writer_bytes(min(w.s3.part_size, align_up(k.block_bytes))) \
            if self.object_store else k.transfer_size  # as KvArgs.write_size
        base = OBJECT_CLIENT_BASE if self.object_store else MEMORY_BASE
        return ClientMemory(base, k.users * (write + k.transfer_size), k.users)

    def validate(self, w: Workload, options: RunOptions) -> None:
        k = w.kvcache
        if k.block_bytes < 4096:
            raise ConfigError(f"a KV block of {k.block_tokens} tokens x {k.bytes_per_token} "
                              "B/token is under 4 KiB; use more kvcache.block_tokens")
        why = too_many_arrivals(k) if k.load == "open" else None
        if why:
            raise ConfigError(why)

    def closed_to_rates(self, w: Workload) -> str | None:
        """A closed loop or a trace has no rate to set: its users or the trace pace it. An
        open loop at more arrivals than a client keeps cannot run either."""
        load = w.kvcache.load
        if load == "open":
            return too_many_arrivals(w.kvcache)
        return (f"--rates sets the open loop's rate: this workload's kvcache.load is {load}; "
                "add --set kvcache.load=open")

    prepare = staticmethod(prepare_run)
    client = staticmethod(run_client)
    summarize = staticmethod(summarize_run)
    warnings = staticmethod(run_warnings)

    def cleanup(self, rc: RunContext, args: KvArgs | None, status: str) -> None:
        """The run's blocks are scratch data: its folder goes, whatever the status."""
        remove_run_folder(rc, args.folder if args is not None else None)


PHASE = KvcachePhase()
