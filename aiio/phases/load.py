"""Model loading for inference deployment: N replicas read the model's weights at the same
moment, cold, optionally with staggered starts. Figures: time to load per replica, when the
first and the last replica are ready (first and last done), and per-replica MiB/s.

The weights are safetensors-like large flat files (size from the model, or given), written once
under TARGET/aiio/models/<key>/ with block checksums, made durable and dropped from the page
cache, and reused by later runs while their manifest matches.
"""

from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from aiio import blocks, engine, stats
from aiio.cache_methods import METHOD_DIRECT
from aiio.clients import ClientContext
from aiio.engine import OpLog, Reader, Writer, io_failure
from aiio.errors import ConfigError, RunFailed
from aiio.options import RunOptions
from aiio.phases.base import (
    OBJECT_CLIENT_BASE,
    ClientMemory,
    Phase,
    RunContext,
    client_identity,
    client_io_figures,
    io_aggregate,
)
from aiio.phases.rundata import remove_run_folder, split_sizes, verify_summary
from aiio.phases.threads import run_parallel
from aiio.target import remove_tree
from aiio.timing import PolledStop, Window, cpu_seconds
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
        raise ConfigError(f"scale {spec.scale:g} leaves {total} B for {spec.files} weight "
                          "files; use a larger --scale")
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

    def path(self, f: int) -> str:
        return os.path.join(self.folder, self.names[f])

    def tag(self, f: int) -> int:
        return blocks.file_tag(self.seed, self.names[f])

    def describe(self) -> dict[str, Any]:
        out = asdict(self)
        del out["names"], out["sizes"]
        out["files"] = len(self.names)
        return out


# --- the weights on the target ----------------------------------------------------------------

def _params(w: Workload, total: int) -> dict[str, Any]:
    return {"model": w.model.name or w.name, "bytes": total, "files": w.load.files,
            "seed": w.run.seed, "generator": GENERATOR}


def _names(files: int) -> list[str]:
    return [f"weights-{i + 1:05d}-of-{files:05d}.bin" for i in range(files)]


def ensure_weights(rc: RunContext, total: int) -> tuple[Path, bool]:
    """Reuse matching weight files, or write them (durable, cache dropped); (folder, reused).
    As a dataset's (`aiio.dataset.ensure`), the weights' lock is held shared until the run
    ends (another run reads them meanwhile, none removes them) and alone while they are
    written: two load runs at once removed each other's weights."""
    w = rc.workload
    params = _params(w, total)
    name = f"{_file_name(params['model'])}-{total}B-{w.load.files}f-s{w.run.seed}"
    folder = rc.target.root / "models" / name
    if not folder.exists():  # refused before the lock's file is made: a refusal writes nothing
        _require_space(rc, params, total)
    lock = rc.target.lock("models", name, f"model weights {name}")
    lock.shared(rc.note)
    if _complete(folder, params):
        return folder, True
    lock.exclusive(rc.note)
    if _complete(folder, params):  # written by the run this one waited for
        lock.shared(rc.note)
        return folder, True
    rc.target.hold()  # the run writes from here (Target.written; aiio clean refuses meanwhile)
    if folder.exists():
        remove_tree(folder, rc.target.root)
    _require_space(rc, params, total)
    folder.mkdir(parents=True)
    rc.note(f"writing model weights: {format_size(total)} in {w.load.files} file(s)")
    try:
        _write_weights(rc, folder, params)
    except BaseException:
        remove_run_folder(rc, str(folder))  # and models/ when nothing else is in it
        raise
    (folder / "manifest.json").write_text(json.dumps({"params": params, "complete": True}) + "\n")
    lock.shared(rc.note)
    return folder, False


def _file_name(model: str) -> str:
    """The model's name as one file name inside models/: a hub-style name (org/model) has
    path separators, and a name may start with dots."""
    return re.sub(r"[^A-Za-z0-9._+-]", "_", model).lstrip(".") or "model"


def _complete(folder: Path, params: dict[str, Any]) -> bool:
    """Whether the folder holds the weights of `params`, whole (its manifest says so)."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return bool(manifest.get("complete")) and manifest.get("params") == params


def _require_space(rc: RunContext, params: dict[str, Any], total: int) -> None:
    if rc.options.space_check:
        rc.target.require_space(total, f"model weights {params['model']} "
                                       f"({params['files']} files)")


def _write_weights(rc: RunContext, folder: Path, params: dict[str, Any]) -> None:
    names = _names(params["files"])
    sizes = split_sizes(params["bytes"], params["files"])
    writers = [Writer(engine.setup_method(rc.method), rc.workload.load.transfer_size, OpLog(0),
                      seed=params["seed"]
                      + i, checksum=True) for i in range(min(4, len(names)))]
    done = [0]
    lock = threading.Lock()  # the progress display is not thread-safe

    def work(wr: Writer, f: int) -> None:
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
    """One replica: wait for its (staggered) start, read every weight file, record the time."""
    a: LoadArgs = ctx.args
    readers = [Reader(a.method, a.transfer_size, OpLog(0), ctx.add_bytes)
               for _ in range(reader_count(a.threads, len(a.names)))]
    checkers = {id(rd): blocks.Verifier() for rd in readers}
    for rd in readers:
        rd.stop = PolledStop(ctx.stop)

    def work(rd: Reader, f: int) -> None:
        path = a.path(f)
        if a.checksum:
            tag, verifier = a.tag(f), checkers[id(rd)]
            rd.check = lambda view, n, pos: verifier.check(view, n, path, tag, pos)
        try:
            got = rd.read_file(path)
        except OSError as exc:
            raise io_failure(exc, "loading", path) from exc
        if got != a.sizes[f] and not ctx.stop.is_set():
            raise RunFailed(f"loading read {got} of the {a.sizes[f]} bytes of {path}")
        ctx.add_units(1)

    try:
        start_ns = ctx.ready_and_wait()
        cpu0 = cpu_seconds()
        delay = ctx.index * a.stagger_s
        if delay > 0:
            ctx.stop.wait(delay)
        own = Window()  # this replica's own (staggered) start
        # stopped before its start (a Ctrl-C while the clients got ready): it reads nothing
        files = range(0 if ctx.stop.is_set() else len(a.names))
        logs = run_parallel(files, readers, work, start_ns)
        own.close()
    finally:
        for rd in readers:
            rd.close()
    out = client_identity(ctx.index)
    out.update(client_io_figures(logs, start_ns, own.end_ns, main_op="read"))
    load_s = own.elapsed_s
    # elapsed_s (and the series) count from the common start, so first/last done line up;
    # load_s and mib_s count from this replica's own (staggered) start.
    out.update(start_s=(own.start_ns - start_ns) / 1e9, load_s=load_s,
               mib_s=mib_per_s(out["bytes"], load_s), cpu_s=cpu_seconds() - cpu0)
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
    sweep_extras = (("ready_s", "all ready s", "s"),)
    load_at = ()
    console = "load_tables"


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
        folder, reused = ensure_weights(rc, total)
        if reused:
            rc.note(f"reusing model weights in {folder}")
        return LoadArgs(str(folder), _names(w.load.files), split_sizes(total, w.load.files),
                        total, base, w.load.scale, source, rc.method, w.load.threads,
                        w.load.transfer_size, w.load.stagger, w.run.seed,
                        rc.options.verify, reused)

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
        return agg

    def warnings(self, rc: RunContext, a: LoadArgs, out: dict[str, Any]) -> list[dict]:
        if a.method != METHOD_DIRECT and rc.clients > 1:
            return [{"code": "replicas_share_cache", "message": (
                "the replicas run on one host and share its page cache: without O_DIRECT a "
                "block one replica read may reach the others from RAM")}]
        return []

    def cleanup(self, rc: RunContext, a: LoadArgs | None, status: str) -> None:
        """The weights are kept for later runs (like datasets); `aiio clean` removes them."""


PHASE = LoadPhase()
