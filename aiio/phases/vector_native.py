"""`--reader native` for the vector phase: queries through diskannpy (Microsoft's DiskANN
bindings) on a real DiskANN disk index laid out on the target, so that the emulation can be
checked against the real thing on the user's own storage. diskannpy pins its own numpy; where
this Python cannot import it the run is refused in one line.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from aiio.engines.seam import OpLog
from aiio.engines.timing import NEVER, DeadlineOrStop, Window
from aiio.errors import ConfigError
from aiio.options import RunOptions
from aiio.phases import kept
from aiio.phases import vector_index as vi
from aiio.phases import vector_kept as vk
from aiio.stats import Histogram
from aiio.storage.target import Target
from aiio.units import format_size
from aiio.workload import Workload

PREFIX = "ann"  # diskannpy's file names: ann_disk.index, ann_pq_pivots.bin, ...

INSTALL = ("pip install diskannpy (0.7.0 pins numpy 1.25: a virtual environment of its own, "
           "with aiio installed in it)")


def check(w: Workload, options: RunOptions) -> None:
    """Refuse, in one line, what the native reader cannot run."""
    v = w.vector
    if v.reader != "native":
        return
    if options.s3 is not None:
        raise ConfigError("--reader native reads files through diskannpy, which reads files "
                          "only: a bucket takes the raw reader")
    if v.rate:
        raise ConfigError("--reader native runs a closed loop at [vector].concurrency (its "
                          "searches block); [vector].rate must be 0")
    check_index(w)


def check_index(w: Workload) -> None:
    """Refuse, in one line, an index diskannpy cannot build or a Python it cannot run in."""
    v = w.vector
    if v.element_size != 4:
        raise ConfigError(f"--reader native builds a float32 index; [vector].element_size = "
                          f"{v.element_size}: use 4")
    if v.sector_size != 4096:
        raise ConfigError(f"--reader native: DiskANN lays its index out in 4 KiB sectors; "
                          f"[vector].sector_size = {v.sector_size}: use 4KiB")
    if importlib.util.find_spec("diskannpy") is None:
        raise ConfigError(f"--reader native queries through diskannpy, which this Python "
                          f"cannot import: {INSTALL}")


@contextlib.contextmanager
def quiet_stdout() -> Iterator[None]:
    """DiskANN's C++ prints its progress (hundreds of lines) on file descriptor 1, where
    `--json` prints the result: sent to /dev/null for the block."""
    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


# --- the index: built by diskannpy, kept on the target -----------------------------------

def index_folder_name(shape: vi.IndexShape) -> str:
    return f"{vk.name(shape)}-diskann"


def build_size(shape: vi.IndexShape) -> int:
    """Bytes the build leaves, about: the disk index and the vectors' own file beside it."""
    return shape.file_size + shape.vectors * shape.dimensions * 4


def ensure_index(target: Target, shape: vi.IndexShape, list_size: int,
                 note: Callable[[str], None], space_check: bool = True) -> tuple[Path, bool]:
    """A DiskANN disk index of N random float32 vectors (from the seed) with out-degree R,
    built by diskannpy in TARGET/aiio/indexes/<settings>-diskann/ and kept; (folder, reused).
    By a run's prepare or by `aiio datagen --phase vector` with the native reader."""
    def build(folder: Path) -> None:
        import diskannpy

        note(f"building a DiskANN index with diskannpy: {shape.vectors:,} vectors of "
                f"{shape.dimensions} float32, R = {shape.max_degree} (CPU-bound, once)")
        data = np.random.default_rng(shape.seed).standard_normal(
            (shape.vectors, shape.dimensions), dtype=np.float32)
        with quiet_stdout():
            diskannpy.build_disk_index(data, "l2", str(folder),
                                       complexity=max(100, list_size),
                                       graph_degree=shape.max_degree,
                                       search_memory_maximum=0.05, build_memory_maximum=2.0,
                                       num_threads=2, vector_dtype=np.float32,
                                       index_prefix=PREFIX)

    params = {**vk.params(shape), "builder": "diskannpy"}
    k = kept.Kept(vk.KIND, index_folder_name(shape), "DiskANN index", params,
                  build_size(shape), f"DiskANN index ({format_size(build_size(shape))})")
    return kept.ensure(target, k, build, note, space_check)


# --- the client -------------------------------------------------------------------------------

def read_bytes() -> int:
    """Bytes this process has had read from storage (/proc/self/io: block devices only; 0 on
    tmpfs, FUSE and network mounts)."""
    try:
        with open("/proc/self/io") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("read_bytes"))
    except (OSError, StopIteration, ValueError):
        return 0


def run_client(ctx: Any, a: Any) -> tuple[list[Histogram], np.ndarray, int, int, int]:
    """`concurrency` threads each searching the real index, one query after another, until the
    duration or the count; (query latency histograms, each query's start and end (ns rows),
    window start and end (ns), bytes read from storage)."""
    import diskannpy

    with quiet_stdout():  # DiskANN prints on every load and search
        return _search(ctx, a, diskannpy)


def _search(ctx: Any, a: Any, diskannpy: Any) -> tuple[list[Histogram], np.ndarray, int,
                                                         int, int]:
    shape = a.shape
    index = diskannpy.StaticDiskIndex(a.folder, num_threads=a.concurrency + 1,
                                      num_nodes_to_cache=0, distance_metric="l2",
                                      vector_dtype=np.float32, dimensions=shape.dimensions,
                                      index_prefix=PREFIX)
    points = np.random.default_rng([shape.seed, 7, ctx.index]).standard_normal(
        (1024, shape.dimensions), dtype=np.float32)
    left = [a.queries or -1]  # -1: no count, the duration ends it
    lock = threading.Lock()
    logs = [OpLog(0) for _ in range(a.concurrency)]  # the seam times each library search
    spans: list[list[tuple[int, int]]] = [[] for _ in range(a.concurrency)]  # for the verdict

    def take() -> bool:
        with lock:
            if left[0] == 0:
                return False
            left[0] -= 1
            return True

    def stream(i: int, until: DeadlineOrStop) -> None:
        rng = np.random.default_rng([ctx.index, i])
        while not until.passed() and take():
            q = points[rng.integers(0, len(points))]
            with logs[i].timed("query") as call:
                index.search(q, a.top_k, a.list_size, a.width)
            spans[i].append((call.t0, call.end_ns))
            ctx.add_units(1)

    run = Window(ctx.ready_and_wait())
    before = read_bytes()
    deadline = NEVER if a.queries else run.deadline(a.duration_s)
    threads = [threading.Thread(target=stream, args=(i, DeadlineOrStop(deadline, ctx.stop)))
               for i in range(a.concurrency)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    run.close()
    for log in logs:
        log.flush()
    hists = [log.hist.get("query", Histogram()) for log in logs]
    rows = np.array([r for s in spans for r in s], np.int64).reshape(-1, 2)
    return hists, rows, run.start_ns, run.end_ns, read_bytes() - before
