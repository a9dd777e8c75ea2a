"""The fio job file closest to a phase's I/O, for users who want to cross-check in fio.

Block size is the phase's transfer size (capped by the file or sample it reads), the pattern
follows the workload's shuffle, files and sizes follow its dataset, numjobs is the client
count, and O_DIRECT is on. What fio cannot express (loader threads, compute overlapping I/O) is
approximated and said in the file's comments.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from aiio import __version__
from aiio.engines.seam import align_up
from aiio.errors import ConfigError
from aiio.fio.job import escape, render, size_opt
from aiio.phases import REGISTRY, get_phase
from aiio.units import format_size
from aiio.workload import Workload


def emit(phase: str, w: Workload, folder: Path) -> str:
    """The job text for `phase` of workload `w`, with its files in `folder`."""
    return emitter_for(phase, w)(w, folder)


def emitter_for(phase: str, w: Workload) -> Callable[[Workload, Path], str]:
    """The function writing the job of the phase that runs `w` (`Phase.fio_job`, a function
    of this module); a one-line error for a phase without one."""
    known = ", ".join(sorted(p for p in REGISTRY if get_phase(p).fio_job))
    if phase not in REGISTRY:
        raise ConfigError(f"unknown phase {phase!r}; fio jobs can be emitted for: {known}")
    if get_phase(phase).stages:
        raise ConfigError(f"phase {phase!r} runs several phases: emit one at a time, one of "
                          f"{known}")
    name = get_phase(phase).variant(w).fio_job
    if name is None:
        raise ConfigError(f"no fio job for phase {phase!r} yet; fio jobs can be emitted for: "
                          f"{known}")
    return globals()[name]


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
    glob = {"directory": escape(str(folder)), **_engine(t.read_threads), "direct": direct,
            "rw": pattern, "bs": size_opt(bs), "nrfiles": nrfiles,
            "filesize": size_opt(file_size), "file_service_type": service, **timing}
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
    text = render(glob, [(f"train-{w.name}", {"numjobs": clients})], comments)
    # inside the job section, so the two lines work once uncommented
    return text + (f"; to add the accelerator's compute of {w.compute_time:g} s per batch of "
                   f"{t.batch_size} (fio stalls instead of overlapping it with reads), "
                   f"uncomment:\n; thinktime={int(w.compute_time * 1e6)}\n"
                   f"; thinktime_blocks={batch_blocks}\n")


def _files_list(names: list[str]) -> str:
    """fio's filename= list: every job opens every one of these files."""
    return ":".join(escape(n) for n in names)


def checkpoint_job(w: Workload, folder: Path) -> str:
    """Every client writes its shard (files_per_client files) and fsyncs; then the restore."""
    from aiio.phases.load import reader_count
    from aiio.phases.rundata import split_sizes
    from aiio.phases.shards import checkpoint_bytes

    c, clients = w.checkpoint, w.run.clients
    total, _, source = checkpoint_bytes(w)
    slots = clients * c.files_per_client
    file_size = max(split_sizes(total, slots))
    bs = min(c.transfer_size, align_up(file_size))
    writers = reader_count(c.threads, c.files_per_client)  # as many as the client starts
    glob = {"directory": escape(str(folder)), **_engine(writers), "direct": 1,
            "bs": size_opt(bs), "nrfiles": c.files_per_client,
            "filesize": size_opt(align_up(file_size)), "file_service_type": "sequential",
            "filename_format": "ckpt.$jobnum.$filenum"}
    jobs = [(f"checkpoint-{w.name}", {"rw": "write", "fsync_on_close": 1, "loops": c.count,
                                      "numjobs": clients})]
    if c.restore:
        jobs.append((f"restore-{w.name}", {"stonewall": 1, "rw": "read", "loops": c.count,
                                           "numjobs": clients}))
    comments = [
        f"aiio {__version__}: the fio job closest to `aiio run --phase checkpoint "
        f"--workload {w.name} --clients {clients}`",
        f"checkpoint: {format_size(total)} ({source}, scale {c.scale:g}) in {slots} files of "
        f"{format_size(file_size)}: each of the {clients} jobs writes {c.files_per_client}, "
        "fsyncs each on close",
        "then every job reads its shard back (restore, after all writes: stonewall)" if c.restore
        else "no restore (checkpoint.restore = false)",
        f"{writers} writer thread{'' if writers == 1 else 's'} per client "
        f"become{'s' if writers == 1 else ''} queue depth {writers}"
        + (f" ({c.threads} asked: one per file at most)" if writers < c.threads else "")
        + f"; {c.count} checkpoint(s) become loops={c.count} over the same files",
        "run: fio THIS_FILE   (every job is reported on its own: per-client figures)",
    ]
    return render(glob, jobs, comments)


def load_job(w: Workload, folder: Path) -> str:
    """Every replica reads every weight file front to back, cold (O_DIRECT)."""
    from aiio.phases.load import reader_count, weight_bytes

    spec, clients = w.load, w.run.clients
    total, _, source = weight_bytes(w)
    file_size = align_up(-(-total // spec.files))
    bs = min(spec.transfer_size, file_size)
    names = [f"weights.{i}" for i in range(spec.files)]
    readers = reader_count(spec.threads, spec.files)
    glob = {"directory": escape(str(folder)), **_engine(readers), "direct": 1,
            "rw": "read", "bs": size_opt(bs), "filename": _files_list(names),
            "filesize": size_opt(file_size), "file_service_type": "sequential"}
    comments = [
        f"aiio {__version__}: the fio job closest to `aiio run --phase load --workload "
        f"{w.name} --clients {clients}`",
        f"weights: {format_size(total)} ({source}, scale {spec.scale:g}) in {spec.files} "
        f"files of {format_size(file_size)}; every one of the {clients} replicas reads all",
        f"{readers} reader threads per replica become queue depth {readers}"
        + (f" ({spec.threads} asked: one per file at most)" if readers < spec.threads else "")
        + (f"; the stagger of {spec.stagger:g} s between replicas is not expressed"
           if spec.stagger else ""),
        "run: fio THIS_FILE   (every job is reported on its own: per-replica figures)",
    ]
    return render(glob, [(f"load-{w.name}", {"numjobs": clients})], comments)


def randrw_job(w: Workload, folder: Path) -> str:
    """fio's randrw on one file per client, time-based."""
    p, clients = w.prep, w.run.clients
    # each thread keeps prep.iodepth reads in flight (the queue-depth path)
    glob = {"directory": escape(str(folder)), **_engine(p.threads * p.iodepth),
            "direct": 1, "rw": "randrw", "rwmixread": int(round(p.read_share * 100)),
            "bs": size_opt(p.block_size), "size": size_opt(align_up(p.file_size)),
            "time_based": 1, "runtime": f"{int(p.duration * 1000)}ms", "norandommap": 1,
            "randrepeat": 0}
    comments = [
        f"aiio {__version__}: the fio job closest to `aiio run --phase randrw --workload "
        f"{w.name} --clients {clients}` (or --phase prep with prep.mode = randrw)",
        f"each of the {clients} jobs: random {p.read_share:.0%} reads / rest writes of "
        f"{format_size(p.block_size)} on its own {format_size(p.file_size)} file",
        "run: fio THIS_FILE   (every job is reported on its own: per-client figures)"]
    return render(glob, [(f"randrw-{w.name}", {"numjobs": clients})], comments)


def prep_job(w: Workload, folder: Path) -> str:
    """Sample reads and shard writes running side by side (shards mode)."""
    p, d, clients = w.prep, w.dataset, w.run.clients
    sample = align_up(d.samples_per_file * d.sample_size)
    nread = _per_client_files(d.num_files, clients)
    written = int(nread * sample * p.output_ratio * p.passes)
    shard = align_up(min(p.shard_size, max(written, 4096)))
    nshards = max(1, -(-written // shard))
    glob = {"directory": escape(str(folder)), **_engine(p.threads), "direct": 1}
    rbs = min(p.transfer_size, sample)
    jobs = [(f"prep-read-{w.name}", {"rw": "read", "bs": size_opt(rbs), "nrfiles": nread,
                                     "filesize": size_opt(sample),
                                     "file_service_type": f"random:{-(-sample // rbs)}",
                                     "loops": p.passes, "numjobs": clients}),
            (f"prep-write-{w.name}", {"rw": "write",
                                      "bs": size_opt(min(p.transfer_size, shard)),
                                      "nrfiles": nshards, "filesize": size_opt(shard),
                                      "file_service_type": "sequential", "fsync_on_close": 1,
                                      "numjobs": clients})]
    comments = [
        f"aiio {__version__}: the fio job closest to `aiio run --phase prep --workload "
        f"{w.name} --clients {clients}` (shards mode)",
        f"each client reads its {nread} raw samples of {format_size(sample)} in random order "
        f"while writing {nshards} shard(s) of {format_size(shard)} (output ratio "
        f"{p.output_ratio:g}), both at once",
        "not expressed: stat/list/unlink metadata operations and the transform time",
        "run: fio THIS_FILE   (every job is reported on its own: per-client figures)"]
    return render(glob, jobs, comments)
