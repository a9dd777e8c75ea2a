"""The memory a client needs, and the refusal of client counts a host cannot hold.

The figures are measured per phase, not guessed. `python -m tools.phase_memory` ran each
phase of the demo workload at 4, 64 and 256 clients (Dec 2 2026, on a 2-core host under
load from other work) and read every client's USS (the pages it alone holds: what one more
client adds; the rest it shares with the parent) from /proc/PID/smaps_rollup while it ran;
docs/PERFORMANCE.md ("Memory per client") has every figure and the command. One client of
the phase a run runs needs

    MARGIN x (the phase's base + its I/O buffers + its I/O threads + its step log)

- the base (BASES, OBJECT_BASE, NATIVE_BASES): the largest client USS measured in the phase
  less the buffers counted for it; its threads' pages and its steps' records are in it, and
  counted again below: an upper bound, not a second guess;
- the buffers, from the workload at their full size (a dataset of large files needs it), of
  the phase that runs: a train run does not count the checkpoint phase's (unless it
  checkpoints), a checkpoint run not the loader's; a native reader's thread holds a sample;
- THREAD_BYTES per I/O thread (its stack pages and operation log);
- a training client's step log: STEP_RECORD_BYTES per step up to its share of the run's
  step records (aiio.phases.train.step_log_cap), its steps bounded by its share of the
  epochs' batches, or by the duration over the compute time per batch. A margin does not
  cover it: a one-hour demo run of one client keeps 200,000 records, 100 MiB.
MARGIN is for what the runs measured do not pin down: the largest client of one phase moved
by up to 16 % from run to run (randrw: 5.23 to 6.04 MiB), and the byte series of a client's
op logs grow by 8 bytes per 0.1 s each (about 1.1 MiB an hour for a demo training client, a
quarter of its 4.4 MiB), where the runs lasted 10 s.
A client of an s3:// target holds its own boto3 client: the object phases' base is its own,
measured the same way against a local SeaweedFS service.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import psutil

from aiio.errors import AiioError
from aiio.phases import OBJECT_PREFIX
from aiio.phases.train import MAX_STEP_RECORDS, step_log_cap
from aiio.s3.location import is_s3
from aiio.units import KiB, MiB, format_size
from aiio.workload import Workload

# A client's USS besides the I/O buffers counted from the workload, per phase: the largest
# client USS of the demo runs at 4, 64 and 256 clients (docs/PERFORMANCE.md, "Memory per
# client"; Dec 2 2026, under load), less the buffers `buffers_and_threads` counts for the
# demo, rounded up to 0.5 MiB. Its threads and step log are in it and counted again below.
BASES = {
    "train": 4 * MiB,            # 4.65 MiB at 4 clients (4.36 at 64, 4.17 at 256) - 1 MiB
    "prep": 6 * MiB,             # 9.71 MiB at 4 (9.66 at 64, 9.54 at 256) - 4 MiB
    # 9.82 MiB at 1 client in a 150 s run - 16 KiB: a lone client's USS grows for a minute
    # or two (6.04 MiB at 4 clients in 10 s, 5.23 at 64, 5.31 at 256; 7.1 at 3 in 45 s)
    "randrw": 10 * MiB,
    "checkpoint": 4.5 * MiB,     # 6.01 MiB at 256 (5.82 at 4, 5.90 at 64) - 2 MiB
    "load": 4 * MiB,             # 4.95 MiB at 64 (3.26 at 4, 3.73 at 256) - 1 MiB
}
# A training client with --reader native reads each sample through its format's library and
# holds the sample whole (counted below); its base, measured the same way at 4 and 64
# clients (the largest client less its buffers: the loader's 1 MiB and two 640 KiB samples).
NATIVE_BASES = {
    "npz": 6 * MiB,              # 8.09 MiB at 64 clients (8.07 at 4) - 2.25 MiB
    "hdf5": 8 * MiB,             # 9.80 MiB at 64 clients (9.52 at 4) - 2.25 MiB
    "tfrecord": 5.5 * MiB,       # 7.70 MiB at 4 clients (6.24 at 64) - 2.25 MiB
}
# Against a bucket every client holds its own boto3 client (models, endpoint rules, pool):
# 30.80 MiB at 4 clients in a load run less its 1 MiB reader (train 30.36 at 4 less 2 MiB;
# 16 and 64 clients of each object phase less), rounded up.
OBJECT_BASE = 30 * MiB
THREAD_BYTES = 256 * KiB     # one I/O thread's stack pages and operation log
# One training step's record: 261 B measured in the client (a list of six numbers, 200,000
# of them built in CPython 3.11), and the same again in the parent once it holds the client's
# result; a training client keeps at most step_log_cap(clients) of them.
STEP_RECORD_BYTES = 2 * 272
PARENT_BYTES = 160 * MiB     # the parent process (measured up to 133 MiB PSS), once per host
MARGIN = 1.25                # over the measured figures, for what a short run does not show
USABLE = 0.8                 # share of the available memory a run may plan to use


def _train(w: Workload, on_s3: bool, checkpoints: bool) -> tuple[int, int]:
    """A loader's read buffers and threads, and the checkpoint writers it runs."""
    t = w.train
    # On a mount a client's loader threads read into one buffer; an object reader each.
    buffers = (t.read_threads if on_s3 else 1) * t.transfer_size
    if t.reader == "native":  # each thread holds the sample it reads, at most 2 stdev long
        buffers += t.read_threads * (w.dataset.sample_size + 2 * w.dataset.sample_size_stdev)
    if not checkpoints:
        return buffers, t.read_threads
    # --checkpoint-every: the checkpoint writers; training does not restore
    writers, threads = _checkpoint(w, on_s3, restore=False)
    return buffers + writers, t.read_threads + threads


def _step_log(w: Workload, clients: int) -> int:
    """The step records one training client keeps: its steps, bounded, at most the cap."""
    t = w.train
    compute = t.compute_time.get(t.accelerator, 0.0)
    if t.duration:
        steps = t.duration / compute if compute > 0 else MAX_STEP_RECORDS
    else:
        samples = w.dataset.num_files * w.dataset.samples_per_file
        steps = t.epochs * math.ceil(math.ceil(samples / max(1, clients)) / t.batch_size)
    return int(min(steps, step_log_cap(clients))) * STEP_RECORD_BYTES


def _object_writer(part_size: int) -> int:
    """An object writer's payload buffer and the copy of the part it sends."""
    return 2 * part_size


def _prep(w: Workload, on_s3: bool) -> tuple[int, int]:
    """Each thread's reader and writer (an object writer sends each shard as one part)."""
    p = w.prep
    write = _object_writer(p.shard_size) if on_s3 else p.transfer_size
    return p.threads * (p.transfer_size + write), p.threads


def _randrw(w: Workload) -> tuple[int, int]:
    """Each thread's reader holds iodepth blocks in flight, its writer one more."""
    p = w.prep
    return p.threads * p.block_size * (p.iodepth + 1), p.threads


def _checkpoint(w: Workload, on_s3: bool, restore: bool | None = None) -> tuple[int, int]:
    """One writer per thread that has a file, and as many readers for the restore."""
    c = w.checkpoint
    n = min(c.threads, c.files_per_client)
    readers = c.restore if restore is None else restore
    write = _object_writer(w.s3.part_size) if on_s3 else c.transfer_size
    return n * (write + readers * c.transfer_size), n


def _load(w: Workload) -> tuple[int, int]:
    """One reader per thread that has a file."""
    n = max(1, min(w.load.threads, w.load.files))
    return n * w.load.transfer_size, n


def buffers_and_threads(phase: str, w: Workload, on_s3: bool = False,
                        lifecycle: bool = False) -> tuple[int, int]:
    """The I/O buffers' bytes and the I/O threads one client of `phase` holds (a stage of
    `--phase all` when `lifecycle`: its training checkpoints every epoch unless told)."""
    parts: dict[str, Callable[[], tuple[int, int]]] = {
        "train": lambda: _train(w, on_s3, lifecycle or w.checkpoint.every > 0),
        "prep": lambda: _prep(w, on_s3),
        "randrw": lambda: _randrw(w),
        "checkpoint": lambda: _checkpoint(w, on_s3),
        "load": lambda: _load(w),
    }
    return parts[phase]()


def _io_bytes(phase: str, w: Workload, clients: int, on_s3: bool, lifecycle: bool) -> int:
    """What one client of `phase` holds besides the base: buffers, threads, step log."""
    buffers, threads = buffers_and_threads(phase, w, on_s3, lifecycle)
    log = _step_log(w, clients) if phase == "train" else 0
    return buffers + threads * THREAD_BYTES + log


def _stages(phase: str, w: Workload) -> tuple[str, ...]:
    """The phases a run of `phase` goes through in one client process."""
    if phase == "prep" and w.prep.mode == "randrw":
        return ("randrw",)
    if phase == "all":  # prep, training (with checkpoints), load: the largest stage counts
        return (*_stages("prep", w), "train", "load")
    if phase in BASES:
        return (phase,)
    return tuple(BASES)  # a phase these figures do not know: the largest of the known ones


def _base(stage: str, w: Workload, on_s3: bool) -> int:
    """The measured base of a client of `stage`, in whole bytes (some figures are halves):
    a training client's native reader adds what its format's library holds."""
    base = OBJECT_BASE if on_s3 else BASES[stage]
    if stage == "train" and w.train.reader == "native":
        # a format not measured (raw): the largest of the measured ones
        native = NATIVE_BASES.get(w.dataset.format, max(NATIVE_BASES.values()))
        base += native - BASES["train"]
    return int(base)


def client_bytes(w: Workload, phase: str = "train", clients: int | None = None) -> int:
    """Bytes one client of `phase` (as run: "s3:" before it against a bucket) needs: the
    measured base and what the workload makes it hold, with the margin."""
    on_s3 = phase.startswith(OBJECT_PREFIX)
    name = phase.removeprefix(OBJECT_PREFIX)
    clients = w.run.clients if clients is None else clients
    need = max(_base(stage, w, on_s3) + _io_bytes(stage, w, clients, on_s3, name == "all")
               for stage in _stages(name, w))
    return int(MARGIN * need)


def target_bytes(w: Workload, phase: str, target: str, clients: int) -> int:
    """`client_bytes` of `phase` as run against `target` (a bucket's phases are others)."""
    return client_bytes(w, OBJECT_PREFIX + phase if is_s3(target) else phase, clients)


def check_need(each: int, clients: int, host: str | None = None,
               available: int | None = None) -> None:
    """Refuse (one line, exit 2) when `clients` clients of `each` bytes cannot fit."""
    avail = psutil.virtual_memory().available if available is None else available
    need = PARENT_BYTES + clients * each
    usable = USABLE * avail
    if need > usable:
        # the share is named: "need 19 GiB but only 21 GiB is available" read as no reason
        where = f" on {host}" if host else ""
        fits = max(0, int((usable - PARENT_BYTES) // each))
        raise AiioError(f"{clients} clients need about {format_size(need)} of memory{where} "
                        f"({format_size(each)} each) but a run plans on at most "
                        f"{USABLE * 100:.0f} % of the {format_size(avail)} available "
                        f"({format_size(int(usable))}): at most {fits} clients fit; use "
                        "fewer clients or more hosts (MPI)")
