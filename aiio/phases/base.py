"""What every phase shares: the Phase contract, the parent-side run context and the per-client
I/O summary."""

from __future__ import annotations

import copy
import os
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from aiio.document import Where
from aiio.engines.seam import OpLog, merge_logs
from aiio.options import RunOptions
from aiio.results.layout import burst_sections, read_write_sections  # noqa: F401 (phases take them from here)
from aiio.results.sections import AggregateIo, ClientIo
from aiio.run.ranks import THIS_HOST, Ranks
from aiio.storage import dataset as ds
from aiio.storage.target import Target, TargetInfo
from aiio.units import KiB, MiB
from aiio.workload import Workload

if TYPE_CHECKING:
    from aiio.run.clients import ClientContext


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
    ranks: Ranks = THIS_HOST  # the hosts a dataset is written from (aiio.run.comm's world)
    # The run's storage engine (aiio.engines.base.Engine), chosen once by the runner: what
    # the phase reads, writes and asks metadata of, here and (ClientContext.engine) in clients.
    engine: Any = None


THREAD_BYTES = 256 * KiB  # one I/O thread's stack pages and operation log
# Against a bucket every client holds its own boto3 client (models, endpoint rules, pool):
# 30.80 MiB at 4 clients in a load run less its 1 MiB reader (train 30.36 at 4 less 2 MiB;
# 16 and 64 clients of each object phase less), rounded up (docs/PERFORMANCE.md, "Memory
# per client"; Dec 2 2026, under load).
OBJECT_CLIENT_BASE = 30 * MiB


@dataclass(frozen=True)
class ClientMemory:
    """What one client of a phase holds in memory; aiio.run.memcheck adds its margin. `base` is
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


@dataclass(frozen=True)
class PrepareMemory:
    """What the parent holds at the peak of a phase's `prepare`, beyond its own, before any
    client runs (a vector index laid out); aiio.run.memcheck adds its margin."""

    bytes: int
    what: str    # "laying out the vector index (...)", as a refusal names it
    advice: str  # what to do when it does not fit


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
    # The key, in that section, of the files each client's threads share: a thread takes whole
    # files, so a client runs min(threads, files) streams (fio/pairing); None: no such cap.
    streams_files_key: str | None = None
    # How sweeps and headline figures judge it: a key of aiio.sweep.per_point.JUDGES.
    judged_on: str = "first_done"
    # The history figure (aiio.results.figures.FIGURES) `aiio history` trends its series by
    # when no threshold judges them: a vector search's queries/s, as MLPerf publishes it.
    trend_figure: str = "aggregate_mib_s"
    # History figures only its results hold (a threshold on one is refused for another phase).
    own_figures: tuple[str, ...] = ()
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
    # Runs against a bucket: its clients hold an S3 client each (its memory estimate).
    object_store: bool = False
    # (section, key) of the concurrent users each client serves, with the latency goals in
    # that section: `aiio scale --find-max --max-users` searches it (aiio.sweep.find_users).
    users_key: tuple[str, str] | None = None
    # (section, key) of its open loop's offered request rate, per client: `aiio scale
    # --rates` runs a table over it (aiio.sweep.rates_sweep). None: it has no open loop.
    rate_key: tuple[str, str] | None = None
    # (section, key) in its aggregate of its steady-or-overloaded verdict (aiio.phases.
    # steadiness): a sweep names the counts whose runs were overloaded.
    steadiness_at: tuple[str, str] | None = None
    # The workload sections its code reads: its figures follow them, so a record's settings
    # key in the history holds these (and the run's own settings), never another phase's
    # section (aiio.results.history.compared_settings). None: not declared, every section.
    # tests/test_phase_sections.py runs each phase and sees it read no other.
    workload_sections: tuple[str, ...] | None = None

    def sections_read(self, w: Mapping[str, Any]) -> tuple[str, ...] | None:
        """The workload sections a run of `w` (the workload as its result records it) reads:
        `workload_sections`, unless a setting makes it read more."""
        return self.workload_sections

    def on_objects(self) -> Phase:
        """The phase as it runs against a bucket: the same code, its clients holding an S3
        client each, which its memory estimate counts."""
        bucket = copy.copy(self)
        bucket.object_store = True
        return bucket

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

    def closed_to_rates(self, w: Workload) -> str | None:
        """Why `w` runs no open loop whose rate `rate_key` sets, as a one-line refusal of
        `aiio scale --rates`; None when it runs one."""
        return None

    def client_memory(self, w: Workload, clients: int,
                      lifecycle: bool = False) -> ClientMemory | None:
        """What one of `clients` clients holds (`lifecycle`: as a stage of `--phase all`);
        None: not measured, and aiio.run.memcheck takes the largest of the phases that are."""
        return None

    def prepare_memory(self, w: Workload, target: str) -> PrepareMemory | None:
        """What `prepare` holds in the parent on `target` (a path or a bucket's URL) at its
        peak, beyond the parent's own; None: nothing of note."""
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
        the clients are forked (aiio.run.clients.rehearse): the same code, reaching nothing
        outside the process. None: no rehearsal."""
        return None

    def client_processes(self, args: Any, clients: int) -> int:
        """How many processes a host (an MPI rank's share) runs its `clients` in, as their
        threads (aiio.run.clients.run_clients). By default one a client."""
        return clients

    def process_cap(self, w: Workload) -> int | None:
        """The most processes a host forks for `client_processes`, as the memory check
        counts them (None: one a client)."""
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


def ensure_dataset(rc: RunContext) -> ds.Dataset:
    """The run's dataset, reused when it matches, else generated with a progress bar; a
    target that keeps its dataset its own way (a bucket's objects) makes it itself."""
    own = getattr(rc.target, "ensure_dataset", None)
    if own is not None:
        return own(rc)
    w = rc.workload
    progress = None
    if rc.progress:
        def progress(files: int, nbytes: int) -> None:
            rc.progress("generating dataset", files, w.dataset.num_files)
    data, _ = ds.ensure(rc.target, w, progress=progress, note=rc.note, ranks=rc.ranks)
    return data


def client_io(logs: list[OpLog], start_ns: int, end_ns: int,
              main_op: str | None = None) -> ClientIo:
    """One client's stream, typed: bytes, ops, MiB/s, latency summary (of main_op),
    histograms and series of its merged operation logs."""
    hist, series, ops, nbytes = merge_logs(logs)
    return ClientIo.of(hist, series, ops, nbytes, (end_ns - start_ns) / 1e9, main_op)


def client_io_figures(logs: list[OpLog], start_ns: int, end_ns: int,
                      prefix: str = "", main_op: str | None = None) -> dict[str, Any]:
    """One client's stream (`client_io`) as its entry records it, its keys after `prefix`."""
    return client_io(logs, start_ns, end_ns, main_op).to_dict(prefix)


def client_identity(index: int) -> dict[str, Any]:
    return {"client": index, "host": socket.gethostname(), "pid": os.getpid()}


def aggregate_io(clients: list[dict], prefix: str = "") -> AggregateIo:
    """One stream over every client's entry, typed: first done, last done, spread, fairness,
    latency."""
    return AggregateIo.over([ClientIo.from_dict(c, prefix) for c in clients])


def io_aggregate(clients: list[dict], prefix: str = "") -> dict[str, Any]:
    """`aggregate_io` as the aggregate records it."""
    return aggregate_io(clients, prefix).to_dict()
