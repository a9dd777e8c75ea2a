"""What every phase shares: the Phase contract, the parent-side run context and the per-client
I/O summary."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from aiio import dataset as ds
from aiio import stats
from aiio.engine import OpLog, merge_logs
from aiio.options import RunOptions
from aiio.ranks import THIS_HOST, Ranks
from aiio.result import Where, dig
from aiio.stats import ByteSeries, Histogram
from aiio.target import Target, TargetInfo
from aiio.units import KiB, MiB, mib_per_s
from aiio.workload import Workload

if TYPE_CHECKING:
    from aiio.clients import ClientContext


@dataclass
class RunContext:
    """Everything a phase needs in the parent process to prepare and summarize a run."""

    workload: Workload
    target: Target
    info: TargetInfo
    method: str
    clients: int
    options: RunOptions = RunOptions()
    note: Callable[[str], None] = print
    progress: Callable[[str, int, int], None] | None = None  # (label, done, total)
    ranks: Ranks = THIS_HOST  # the hosts a dataset is written from (aiio.comm's world)


THREAD_BYTES = 256 * KiB  # one I/O thread's stack pages and operation log
# Against a bucket every client holds its own boto3 client (models, endpoint rules, pool):
# 30.80 MiB at 4 clients in a load run less its 1 MiB reader (train 30.36 at 4 less 2 MiB;
# 16 and 64 clients of each object phase less), rounded up (docs/PERFORMANCE.md, "Memory
# per client"; Dec 2 2026, under load).
OBJECT_CLIENT_BASE = 30 * MiB


@dataclass(frozen=True)
class ClientMemory:
    """What one client of a phase holds in memory; aiio.memcheck adds its margin. `base` is
    the largest client USS measured for the phase (`python -m tools.phase_memory`) less the
    buffers counted for that run: its threads and records are in it and counted again (an
    upper bound)."""

    base: float        # bytes, measured (some figures are halves of a MiB)
    buffers: int = 0   # I/O buffers, from the workload at their full size
    threads: int = 0   # I/O threads, THREAD_BYTES each
    log: int = 0       # records that grow with the run (a training client's steps)

    @property
    def bytes(self) -> int:
        return int(self.base + self.buffers + self.threads * THREAD_BYTES + self.log)


def object_writer_bytes(part_size: int) -> int:
    """An object writer's payload buffer and the copy of the part it sends."""
    return 2 * part_size


@runtime_checkable
class Phase(Protocol):
    """What the runner, the sweep and the readers of results know about a phase: nothing else.

    A phase is one module exposing `PHASE`, an instance of a class that subclasses this
    Protocol (so it inherits the defaults below) and is named in `aiio.phases.REGISTRY`.
    Parts that live in upper layers (fio jobs, console tables) are named, not imported, so
    phases never import fio/ or term/; a test checks that every name resolves.
    """

    name: str  # `--phase NAME` and the result's "phase"
    # The phase-specific `aiio run` options that mean something to it (cli/run.PHASE_OPTIONS).
    cli_options: tuple[str, ...] = ()
    main_op: str = "read"  # the operation its p99 latency figure is taken from
    hero_test: str | None = None  # the fio hero test (fio/suite.HERO_TESTS) it is set against
    fio_job: str | None = None  # the function of aiio.fio.emit that writes its fio job
    # The function of aiio.term.console that draws its summary tables; io_tables suits any
    # phase whose aggregate is io_aggregate's.
    console: str = "io_tables"
    # (section, key) of the workload's run-time limit when the phase is time-based
    duration_key: tuple[str, str] | None = None
    # (section, key) of the workload's concurrent I/O streams in one client (fio/pairing)
    streams_key: tuple[str, str] | None = None
    # How sweeps and headline figures judge it: a key of aiio.sweep.per_point.JUDGES.
    judged_on: str = "first_done"
    # Its own figures a sweep tables against clients: (key, column title, unit).
    sweep_extras: tuple[tuple[str, str, str], ...] = ()
    # The function of aiio.fio.pairing that sets its figures against fio hero tests.
    hero_pairing: str = "main_op_side"
    # Its clients emulate accelerators: compute steps, and AU in its aggregate.
    accelerators: bool = False
    # The phases it runs in turn, each stage's figures under the stage's name, and the
    # stage whose figures are its headline (the lifecycle: prep, train, load; train).
    stages: tuple[str, ...] = ()
    headline_stage: str | None = None
    # Where in its aggregate its checkpoint aggregate and its model-load aggregate sit.
    checkpoint_at: Where | None = None
    load_at: Where | None = None
    # Byte series its clients keep in their flat entry beside the I/O sections, in no section
    # of their own: (name, key prefix). Training's consumed bytes ("consumed_series").
    other_series: tuple[tuple[str, str], ...] = ()
    # Where its metadata operations' figures sit, in its aggregate and in a client's entry.
    metadata_at: Where | None = None
    # Runs against a bucket (aiio.s3's subclasses): its clients hold an S3 client each.
    object_store: bool = False

    def variant(self, w: Workload) -> Phase:
        """The phase that runs this workload: itself, unless a workload mode hands it on."""
        return self

    def result_variant(self, res: dict[str, Any]) -> Phase:
        """The phase whose figures a saved result of this phase holds (see `variant`)."""
        return self

    def io_sections(self, part: Mapping[str, Any], client: bool) -> dict[str, Where]:
        """Name -> path inside `part` (its aggregate, or one client's entry when `client`) of
        each named I/O section: by default one stream kept flat, as io_aggregate's, named by
        the phase's main operation (a phase that only writes keeps its writes)."""
        return {self.main_op: ()}

    def client_totals(self, entry: Mapping[str, Any]) -> dict[str, Where]:
        """Name -> path in one client's entry of each stream its per-client figures show
        beside the client's own: by default its I/O sections one key below the entry (prep's
        read and write, a lifecycle stage's)."""
        return {name: path for name, path in self.io_sections(entry, True).items()
                if len(path) == 1}

    def validate(self, w: Workload, options: RunOptions) -> None:
        """Refuse impossible values in one line, before anything is written."""

    def client_memory(self, w: Workload, clients: int,
                      lifecycle: bool = False) -> ClientMemory | None:
        """What one of `clients` clients holds (`lifecycle`: as a stage of `--phase all`);
        None: not measured, and aiio.memcheck takes the largest of the phases that are."""
        return None

    def prepare(self, rc: RunContext) -> Any:
        """Check space, make what the clients need; returns the arguments they get."""
        ...

    def total_units(self, args: Any, clients: int) -> int | None:
        """Work items (steps, samples, files...) the run does in all, for the progress bar;
        None: unknown, the bar shows bytes and time."""
        return None

    def client(self, ctx: ClientContext) -> dict[str, Any]:
        """One client's work and figures, in its own process (ctx.args from `prepare`)."""
        ...

    def rehearsal(self, args: Any) -> tuple[Callable[[ClientContext], dict], Any] | None:
        """A client function and arguments for a rehearsal of one client in the parent before
        the clients are forked (aiio.clients.rehearse): the same code, reaching nothing
        outside the process. None: no rehearsal."""
        return None

    def before_fork(self, args: Any) -> None:
        """In the parent on every host, before its clients are forked: make what each client
        would otherwise make for itself, once (randrw: its compiled read loop). Nothing by
        default."""

    def summarize(self, rc: RunContext, args: Any, clients: list[dict]) -> dict[str, Any]:
        """The aggregate over every client's figures."""
        ...

    def warnings(self, rc: RunContext, args: Any, out: dict[str, Any]) -> list[dict]:
        """The phase's own reasons why its numbers may not be the storage's."""
        return []

    def cleanup(self, rc: RunContext, args: Any, status: str) -> None:
        """Remove what the run wrote (also after a failure; args is None if prepare failed)."""


class UndeclaredPhase(Phase):
    """A result's phase this aiio does not know (registered elsewhere): the defaults above."""

    name = ""


def burst_sections(part: Any, sides: tuple[str, ...]) -> dict[str, Where]:
    """'checkpoint.N.write' (and '.read') -> path, for each burst under part['checkpoints']."""
    out: dict[str, Where] = {}
    bursts = dig(part, "checkpoints", default=[])
    for k, burst in enumerate(bursts if isinstance(bursts, list) else ()):
        for side in sides:
            if isinstance(dig(burst, side), Mapping):
                out[f"checkpoint.{burst.get('n', k + 1)}.{side}"] = ("checkpoints", k, side)
    return out


def read_write_sections(part: Mapping[str, Any]) -> dict[str, Where]:
    """'read' and 'write', each under its own key (data preparation, the random mix)."""
    return {d: (d,) for d in ("read", "write") if isinstance(part.get(d), Mapping)}


def ensure_dataset(rc: RunContext) -> ds.Dataset:
    """The run's dataset, reused when it matches, else generated with a progress bar."""
    w = rc.workload
    progress = None
    if rc.progress:
        def progress(files: int, nbytes: int) -> None:
            rc.progress("generating dataset", files, w.dataset.num_files)
    data, _ = ds.ensure(rc.target, w, progress=progress, note=rc.note, ranks=rc.ranks)
    return data


def client_io_figures(logs: list[OpLog], start_ns: int, end_ns: int,
                      prefix: str = "", main_op: str | None = None) -> dict[str, Any]:
    """One client's bytes, ops, MiB/s, latency summary (of main_op), histograms and series."""
    hist, series, ops, nbytes = merge_logs(logs)
    elapsed = (end_ns - start_ns) / 1e9
    if main_op is None:
        main_op = "read" if "read" in hist else next(iter(hist), "read")
    lat = hist.get(main_op, Histogram()).summary()
    return {
        f"{prefix}bytes": nbytes, f"{prefix}ops": ops,
        f"{prefix}elapsed_s": elapsed, f"{prefix}mib_s": mib_per_s(nbytes, elapsed),
        f"{prefix}latency": lat,
        f"{prefix}histograms": {op: h.to_dict() for op, h in hist.items()},
        f"{prefix}series": series.to_dict(),
    }


def client_identity(index: int) -> dict[str, Any]:
    return {"client": index, "host": socket.gethostname(), "pid": os.getpid()}


def io_aggregate(clients: list[dict], prefix: str = "") -> dict[str, Any]:
    """Aggregates over every client: first done, last done, spread, fairness, latency."""
    series = [ByteSeries.from_dict(c[f"{prefix}series"]) for c in clients]
    ends = [c[f"{prefix}elapsed_s"] for c in clients]
    per_client = [c[f"{prefix}mib_s"] for c in clients]
    hist: dict[str, Histogram] = {}
    for c in clients:
        for op, d in c[f"{prefix}histograms"].items():
            hist.setdefault(op, Histogram()).merge(Histogram.from_dict(d))
    total = ByteSeries()
    for s in series:
        total.merge(s)
    # A client that made no call of this kind (more clients than files or samples) ends at
    # once: the window until the first client finished would close with it, near 0 s.
    busy = [i for i, c in enumerate(clients) if c[f"{prefix}ops"]] or range(len(clients))
    return {
        "first_done": stats.first_done([series[i] for i in busy], [ends[i] for i in busy]),
        "last_done": stats.last_done(series, ends),
        "per_client_mib_s": stats.spread(per_client),
        "jain": stats.jain(per_client) if any(per_client) else 0.0,
        "latency": {op: h.summary() for op, h in hist.items()},
        "histograms": {op: h.to_dict() for op, h in hist.items()},
        "series_mib_s": total.per_second(max(ends) if ends else None),
        "bytes": sum(c[f"{prefix}bytes"] for c in clients),
        "ops": sum(c[f"{prefix}ops"] for c in clients),
    }

