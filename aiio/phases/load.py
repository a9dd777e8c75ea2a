"""Model loading for inference deployment: N replicas read the model's weights at the same
moment, cold, optionally with staggered starts. Figures: time to load per replica, when the
first and the last replica are ready (first and last done), and per-replica MiB/s.

The weights are safetensors-like large flat files (size from the model, or given), written once
under TARGET/aiio/models/<key>/ with block checksums, made durable and dropped from the page
cache, and reused by later runs while their manifest matches.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from aiio import stats
from aiio.cache_methods import METHOD_DIRECT
from aiio.engines import blocks
from aiio.engines.seam import OpLog, io_failure
from aiio.engines.timing import PolledStop, Window, cpu_seconds, edge_ns
from aiio.errors import ConfigError, RunFailed
from aiio.options import RunOptions
from aiio.phases import kept
from aiio.phases.base import (
    OBJECT_CLIENT_BASE,
    ClientMemory,
    Phase,
    RunContext,
    client_identity,
    client_io_figures,
    io_aggregate,
)
from aiio.phases.rundata import split_sizes, verify_summary
from aiio.phases.threads import run_parallel
from aiio.run.clients import ClientContext
from aiio.storage.placement import Located, locate, recorded, tally
from aiio.units import MiB, format_size, mib_per_s
from aiio.workload import Workload

GENERATOR = 1  # bump when the bytes written for given parameters change


def reader_count(threads: int, files: int) -> int:
    """A replica's reader threads: `load.threads`, but one per weight file at most (each
    takes whole files). The fio pairing and the emitted job count the same."""
    return max(1, min(threads, files))


def weight_bytes(w: Workload) -> tuple[int, int, str]:
    """(bytes after --scale, bytes before it, where the size came from)."""
    spec = w.load
    if spec.size > 0:
        base, source = spec.size, "load.size"
    elif w.model.parameters > 0:
        base, source = int(round(w.model.parameters * spec.bytes_per_parameter)), "model"
    else:
        raise ConfigError(f"workload {w.name} gives no model size: set load.size "
                          "(e.g. --set load.size=2GiB) or model.parameters "
                          "(e.g. --set model.parameters=8B)")
    total = int(base * spec.scale)
    if total < spec.files:
        raise ConfigError(f"{source} ({format_size(base)}) x scale {spec.scale:g} leaves "
                          f"{total} B for {spec.files} weight files, less than a byte each; "
                          f"use a larger {source if source == 'load.size' else 'model'} or "
                          "--scale, or fewer load.files")
    return total, base, source


@dataclass
class LoadArgs:
    folder: str
    names: list[str]
    sizes: list[int]
    total_bytes: int
    base_bytes: int
    scale: float
    source: str
    method: str
    threads: int
    transfer_size: int
    stagger_s: float
    seed: int
    checksum: bool
    reused: bool = False
    # Where the weight files live (aiio.storage.placement); None: storage without folders
    placed: Located | None = None

    def path(self, f: int) -> str:
        return os.path.join(self.folder, self.names[f])

    def items(self, range_size: int) -> list[tuple[int, int, int | None]]:
        """(file, offset, length) of every read of one replica: whole files (length None),
        or, where the engine reads in ranges (`Capabilities.range_size`), every range."""
        if not range_size:
            return [(f, 0, None) for f in range(len(self.names))]
        return [(f, off, min(range_size, size - off)) for f, size in enumerate(self.sizes)
                for off in range(0, size, range_size)]

    def tag(self, f: int) -> int:
        return blocks.file_tag(self.seed, self.names[f])

    def describe(self) -> dict[str, Any]:
        out = asdict(self)
        del out["names"], out["sizes"], out["placed"]
        out["files"] = len(self.names)
        return out


# --- the weights on the target ----------------------------------------------------------------

def weight_params(w: Workload, total: int) -> dict[str, Any]:
    return {"model": w.model.name or w.name, "bytes": total, "files": w.load.files,
            "seed": w.run.seed, "generator": GENERATOR}


def weight_names(files: int) -> list[str]:
    return [f"weights-{i + 1:05d}-of-{files:05d}.bin" for i in range(files)]


def ensure_weights(rc: RunContext, total: int) -> tuple[Path, bool]:
    """Reuse matching weight files, or write them (durable, cache dropped); (folder, reused),
    kept under their lock (aiio.phases.kept)."""
    w = rc.workload
    params = weight_params(w, total)
    name = f"{_file_name(params['model'])}-{total}B-{w.load.files}f-s{w.run.seed}"

    def write(folder: Path) -> None:
        rc.note(f"writing model weights: {format_size(total)} in {w.load.files} file(s)")
        _write_weights(rc, folder, params)

    return kept.ensure(rc.target, kept.Kept(
        "models", name, "model weights", params, total,
        f"model weights {params['model']} ({params['files']} files)"), write, rc.note,
        rc.options.space_check)


def _file_name(model: str) -> str:
    """The model's name as one file name inside models/: a hub-style name (org/model) has
    path separators, and a name may start with dots."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", model).lstrip(".") or "model"


def _write_weights(rc: RunContext, folder: Path, params: dict[str, Any]) -> None:
    names = weight_names(params["files"])
    sizes = split_sizes(params["bytes"], params["files"])
    writers = [rc.engine.setup().writer(rc.workload.load.transfer_size, OpLog(0),
                                        seed=params["seed"] + i, checksum=True)
               for i in range(min(4, len(names)))]
    done = [0]
    lock = threading.Lock()  # the progress display is not thread-safe

    def work(wr: Any, f: int) -> None:
        wr.write_file(str(folder / names[f]), sizes[f], blocks.file_tag(params["seed"], names[f]))
        with lock:
            done[0] += 1
            if rc.progress:
                rc.progress("writing model weights", done[0], len(names))

    try:
        run_parallel(range(len(names)), writers, work)
    finally:
        for wr in writers:
            wr.close()


# --- the client -------------------------------------------------------------------------------

def run_client(ctx: ClientContext) -> dict[str, Any]:
    """One replica: wait for its (staggered) start, read every weight file (whole, one file a
    thread; or in ranges over its threads where the engine reads so), record the time."""
    a: LoadArgs = ctx.args
    items = a.items(ctx.engine.caps.range_size)
    n = reader_count(a.threads, len(items))
    eng = ctx.engine.with_streams(n)
    readers = [eng.reader(a.transfer_size, OpLog(0), ctx.add_bytes) for _ in range(n)]
    checkers = {id(rd): blocks.Verifier() for rd in readers}
    for rd in readers:
        rd.stop = PolledStop(ctx.stop)
    placed = tally(a.placed, ctx.index)  # bytes and time per server, where the files live

    def work(rd: Any, item: tuple[int, int, int | None]) -> None:
        f, offset, length = item
        path = a.path(f)
        if a.checksum:
            tag, verifier = a.tag(f), checkers[id(rd)]
            rd.check = lambda view, n, pos: verifier.check(view, n, path, tag, pos)
        want = a.sizes[f] if length is None else length
        began = edge_ns()
        try:
            got = rd.read_file(path) if length is None else rd.read_file(path, offset, length)
        except OSError as exc:
            raise io_failure(exc, "loading", path) from exc
        if placed is not None:
            placed.add(f, got, began, edge_ns())
        if got != want and not ctx.stop.is_set():
            raise RunFailed(f"loading read {got} of the {want} bytes at {offset} of {path}")
        if offset + want == a.sizes[f]:  # a file's last read: the file is loaded
            ctx.add_units(1)

    try:
        start_ns = ctx.ready_and_wait()
        if placed is not None:
            placed.start_ns = start_ns
        cpu0 = cpu_seconds()
        delay = ctx.index * a.stagger_s
        if delay > 0:
            ctx.stop.wait(delay)
        own = Window()  # this replica's own (staggered) start
        # stopped before its start (a Ctrl-C while the clients got ready): it reads nothing
        logs = run_parallel([] if ctx.stop.is_set() else items, readers, work, start_ns)
        own.close()
    finally:
        for rd in readers:
            rd.close()
    out = client_identity(ctx.index)
    out.update(client_io_figures(logs, start_ns, own.end_ns, main_op="read"))
    load_s = own.elapsed_s
    # elapsed_s (and the series) count from the common start, so first/last done line up;
    # load_s and mib_s count from this replica's own (staggered) start.
    # streams: the readers it ran, the concurrency fio is paired at (a file a reader on a
    # mount; on an engine that reads in ranges the threads share the ranges, files no cap)
    out.update(start_s=(own.start_ns - start_ns) / 1e9, load_s=load_s,
               mib_s=mib_per_s(out["bytes"], load_s), cpu_s=cpu_seconds() - cpu0, streams=n)
    out.update(eng.client_figures(out, load_s))  # a bucket's requests and retries
    if placed is not None:
        out["placement"] = placed.to_dict()
    if a.checksum:
        merged = blocks.Verifier()
        for v in checkers.values():
            merged.merge(v)
        out["verify"] = merged.to_dict()
        out["verify_s"] = merged.seconds
    return out


# --- the parent side --------------------------------------------------------------------------

# A client's memory besides its readers (docs/PERFORMANCE.md, "Memory per client"; demo runs at
# 4, 64 and 256 clients, Dec 2 2026, under load): 4.95 MiB at 64 clients (3.26 at 4, 3.73 at
# 256) less its 1 MiB reader, rounded up to 0.5 MiB.
MEMORY_BASE = 4 * MiB


class LoadPhase(Phase):
    name = "load"
    cli_options = ("scale", "stagger")
    main_op = "read"
    hero_test = "seq_read"
    fio_job = "load_job"
    streams_key = ("load", "threads")
    streams_files_key = "files"
    sweep_extras = (("ready_s", "all ready s", "s"),)
    load_at = ()
    console = "load_tables"
    workload_sections = ("load", "model")  # the weights' size: load.size, else the model's


    def client_memory(self, w: Workload, clients: int, lifecycle: bool = False) -> ClientMemory:
        """One reader per thread that has a file."""
        n = max(1, min(w.load.threads, w.load.files))
        return ClientMemory(OBJECT_CLIENT_BASE if self.object_store else MEMORY_BASE,
                            n * w.load.transfer_size, n)

    def validate(self, w: Workload, options: RunOptions) -> None:
        weight_bytes(w)

    def prepare(self, rc: RunContext) -> LoadArgs:
        w = rc.workload
        total, base, source = weight_bytes(w)
        # a target that keeps weights its own way (a bucket: objects and a manifest object,
        # aiio.s3.weights) says so; a directory keeps them in a locked folder
        own = getattr(rc.target, "ensure_weights", None)
        folder, reused = own(rc, total) if own else ensure_weights(rc, total)
        if reused:
            # a target's own weights are a key of its bucket, its prefix included
            rc.note(f"reusing model weights in {rc.target.url(folder) if own else folder}")
        names = weight_names(w.load.files)
        placed = locate(str(folder), len(names), lambda f: os.path.join(folder, names[f])) \
            if rc.engine.caps.folders else None
        return LoadArgs(str(folder), names, split_sizes(total, w.load.files),
                        total, base, w.load.scale, source, rc.method, w.load.threads,
                        w.load.transfer_size, w.load.stagger, w.run.seed,
                        rc.options.verify, reused, placed)

    def total_units(self, a: LoadArgs, clients: int) -> int:
        return len(a.names) * clients

    client = staticmethod(run_client)

    def summarize(self, rc: RunContext, a: LoadArgs, clients: list[dict]) -> dict[str, Any]:
        agg = io_aggregate(clients)
        ready = [c["elapsed_s"] for c in clients]
        agg.update(
            model=a.describe(), replicas=len(clients), read_bytes=agg["bytes"], write_bytes=0,
            first_ready_s=min(ready), last_ready_s=max(ready),
            load_s=stats.spread([c["load_s"] for c in clients]),
            per_replica_mib_s=stats.spread([c["mib_s"] for c in clients]),
            complete=all(c["bytes"] == a.total_bytes for c in clients))
        if a.checksum:
            agg["verify"] = verify_summary(clients)
        agg.update(rc.engine.aggregate(clients))  # a bucket's requests and retries
        placed = recorded(a.placed, clients, "the weight files, as the replicas read them")
        if placed is not None:
            agg["placement"] = placed
        return agg

    def warnings(self, rc: RunContext, a: LoadArgs, out: dict[str, Any]) -> list[dict]:
        found = rc.engine.warnings(out["aggregate"], a.total_bytes)
        if rc.engine.caps.client_cache and a.method != METHOD_DIRECT and rc.clients > 1:
            found.append({"code": "replicas_share_cache", "message": (
                "the replicas run on one host and share its page cache: without O_DIRECT a "
                "block one replica read may reach the others from RAM")})
        return found

    def cleanup(self, rc: RunContext, a: LoadArgs | None, status: str) -> None:
        """The weights are kept for later runs (like datasets); `aiio clean` removes them."""


PHASE = LoadPhase()
