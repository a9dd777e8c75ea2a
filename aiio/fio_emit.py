"""The fio job file closest to a phase's I/O, for users who want to cross-check in fio.

Block size is the phase's transfer size (capped by the file or sample it reads), the pattern
follows the workload's shuffle, files and sizes follow its dataset, numjobs is the client
count, and O_DIRECT is on. What fio cannot express (loader threads, compute overlapping I/O) is
approximated and said in the file's comments.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from aiio import __version__, fio
from aiio.engine import align_up
from aiio.errors import ConfigError
from aiio.phases import PHASES
from aiio.units import format_size
from aiio.workload import Workload

LIFECYCLE = ("prep", "train", "checkpoint", "load")


def emit(phase: str, w: Workload, folder: Path) -> str:
    """The job text for `phase` of workload `w`, with its files in `folder`."""
    return emitter_for(phase)(w, folder)


def emitter_for(phase: str) -> Callable[[Workload, Path], str]:
    """The function writing a phase's job; a one-line error for a phase without one."""
    emitter = EMITTERS.get(phase)
    if emitter is None:
        known = ", ".join(sorted(EMITTERS))
        if phase not in PHASES and phase not in LIFECYCLE:
            raise ConfigError(f"unknown phase {phase!r}; fio jobs can be emitted for: {known}")
        raise ConfigError(f"no fio job for phase {phase!r} yet; fio jobs can be emitted for: "
                          f"{known}")
    return emitter


def _engine(depth: int) -> dict[str, object]:
    """Concurrent synchronous readers are closest to one asynchronous queue of that depth."""
    return {"ioengine": "psync"} if depth <= 1 else {"ioengine": "libaio", "iodepth": depth}


def _per_client_files(total: int, clients: int) -> int:
    """Each client's share of the files, rounded up so the whole dataset is covered."""
    return max(1, -(-total // clients))


def train_job(w: Workload, folder: Path) -> str:
    """Every client streams its shard of the files, in shuffled order, with O_DIRECT."""
    d, t, clients = w.dataset, w.train, w.run.clients
    file_size = align_up(d.samples_per_file * d.sample_size)
    per_sample = d.samples_per_file > 1 and t.shuffle == "sample"
    if per_sample:
        # one read per sample at a random place in a random file
        bs = min(t.transfer_size, align_up(d.sample_size))
        pattern, service = "randread", "random"
    else:
        # whole files read front to back in transfer-size calls, files in shuffled order
        bs = min(t.transfer_size, file_size)
        pattern = "read"
        service = "sequential" if t.shuffle == "off" else f"random:{-(-file_size // bs)}"
    nrfiles = _per_client_files(d.num_files, clients)
    timing = ({"time_based": 1, "runtime": f"{int(t.duration * 1000)}ms"} if t.duration > 0
              else {"loops": t.epochs})
    batch_blocks = max(1, t.batch_size * -(-align_up(d.sample_size) // bs))
    # the native reader goes through the page cache (dropped per file), like fio's invalidate
    direct = 0 if t.reader == "native" else 1
    glob = {"directory": fio._escape(str(folder)), **_engine(t.read_threads), "direct": direct,
            "rw": pattern, "bs": fio.size_opt(bs), "nrfiles": nrfiles,
            "filesize": fio.size_opt(file_size), "file_service_type": service, **timing}
    comments = [
        f"aiio {__version__}: the fio job closest to `aiio run --phase train "
        f"--workload {w.name} --clients {clients}`",
        f"dataset: {d.num_files} {d.format} files of {format_size(file_size)} "
        f"({d.samples_per_file} sample(s) of {format_size(d.sample_size)}); each of the "
        f"{clients} jobs reads its {nrfiles} files",
        f"{t.read_threads} loader threads per client become queue depth {t.read_threads}; "
        f"shuffle={t.shuffle} becomes rw={pattern}, file_service_type={service}",
        "fio writes its own files (same count and size, not aiio's npz/hdf5/tfrecord framing)",
        "run: fio THIS_FILE   (every job is reported on its own: per-client figures)",
    ]
    text = fio.render(glob, [(f"train-{w.name}", {"numjobs": clients})], comments)
    # inside the job section, so the two lines work once uncommented
    return text + (f"; to add the accelerator's compute of {w.compute_time:g} s per batch of "
                   f"{t.batch_size} (fio stalls instead of overlapping it with reads), "
                   f"uncomment:\n; thinktime={int(w.compute_time * 1e6)}\n"
                   f"; thinktime_blocks={batch_blocks}\n")


EMITTERS: dict[str, Callable[[Workload, Path], str]] = {"train": train_job}
