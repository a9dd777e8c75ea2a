"""Generate a dataset in parallel, describe it in a manifest, and reuse it only when it matches.

Layout under TARGET/aiio/datasets/<workload>/:
  manifest.json   parameters, totals, and `complete: true` written last
  index.npz       per-file sizes and per-sample byte ranges (file, offset, length)
  dNNNNN/fNNNNNNN.<ext>   the files, `files_per_dir` to a folder
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from aiio.errors import AiioError, RunFailed
from aiio.run import forked
from aiio.run.ranks import THIS_HOST, Ranks
from aiio.storage import formats
from aiio.storage.locks import FolderLock
from aiio.storage.target import LATE_FILE_S, Target, check_shared, remove_tree
from aiio.workload import DatasetSpec, Workload

SCHEMA = "aiio.dataset/1"
GENERATOR = 1  # bump when the bytes a given seed produces change
# Explicit per-sample ranges above this many samples would cost too much memory; such datasets
# must have a regular layout (fixed-size records), whose ranges are computed instead.
MAX_EXPLICIT_SAMPLES = 20_000_000
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class DatasetParams:
    """Everything that decides the dataset's bytes; a manifest matches only if all are equal."""

    workload: str
    format: str
    num_files: int
    samples_per_file: int
    sample_size: int
    sample_size_stdev: int
    files_per_dir: int
    seed: int
    generator: int = GENERATOR

    @classmethod
    def from_workload(cls, w: Workload) -> DatasetParams:
        d: DatasetSpec = w.dataset
        return cls(w.name, d.format, d.num_files, d.samples_per_file, d.sample_size,
                   d.sample_size_stdev, d.files_per_dir, w.run.seed)

    @property
    def regular(self) -> bool:
        """Fixed-size raw records: ranges are arithmetic, no index needed."""
        return self.format == "raw" and self.sample_size_stdev == 0

    def relpath(self, i: int) -> str:
        ext = formats.get_format(self.format).EXTENSION
        return f"d{i // self.files_per_dir:05d}/f{i:07d}{ext}"

    def file_seed(self, i: int) -> int:
        """Distinct seed per file, so no two files hold the same bytes."""
        return int(np.random.SeedSequence([self.seed, i, 0xA110]).generate_state(1)[0])

    def sample_sizes(self, i: int) -> np.ndarray:
        """Sizes of file i's samples: normal(mean, stdev), clipped symmetrically at 2 stdev
        (keeps the mean) and at 1 byte."""
        n, mean, sd = self.samples_per_file, self.sample_size, self.sample_size_stdev
        if sd == 0:
            return np.full(n, mean, dtype=np.int64)
        rng = np.random.Generator(np.random.PCG64(self.file_seed(i) ^ 0x5EED))
        sizes = np.clip(rng.normal(mean, sd, n), max(1, mean - 2 * sd), mean + 2 * sd)
        return sizes.astype(np.int64)

    def expected_bytes(self) -> int:
        """An upper bound of the bytes the drawn sample sizes add up to, for the free-space
        check: the mean of the clipped distribution (above sample_size where the clip at 1 B
        binds, i.e. a stdev above half the mean) times the samples, plus six standard
        deviations of their sum (a small dataset's draw can land well above its mean)."""
        n, sd = self.num_files * self.samples_per_file, self.sample_size_stdev
        if sd == 0:
            return n * self.sample_size
        mean = clipped_mean(self.sample_size, sd, max(1, self.sample_size - 2 * sd),
                            self.sample_size + 2 * sd)
        return math.ceil(n * mean + 6 * sd * math.sqrt(n))


def clipped_mean(mean: float, sd: float, lo: float, hi: float) -> float:
    """The mean of a normal(mean, sd) clipped to [lo, hi]."""
    def cdf(z: float) -> float:
        return 0.5 * (1 + math.erf(z / math.sqrt(2)))

    def pdf(z: float) -> float:
        return math.exp(-z * z / 2) / math.sqrt(2 * math.pi)

    a, b = (lo - mean) / sd, (hi - mean) / sd
    return (lo * cdf(a) + hi * (1 - cdf(b)) + mean * (cdf(b) - cdf(a))
            + sd * (pdf(a) - pdf(b)))


class Dataset:
    """A generated dataset on the target: paths, sizes and sample ranges."""

    def __init__(self, folder: Path, params: DatasetParams, manifest: dict) -> None:
        self.folder = folder
        self.params = params
        self.manifest = manifest
        self.total_bytes = int(manifest["total_bytes"])
        self._index = None

    @property
    def num_files(self) -> int:
        return self.params.num_files

    @property
    def num_samples(self) -> int:
        return self.params.num_files * self.params.samples_per_file

    def discard_local(self) -> None:
        """Let go of a local copy kept only for the run (a bucket's index); a mount's
        dataset keeps its files for reuse."""

    def path(self, i: int) -> str:
        # Not `folder / relpath`: pathlib interns each part, and a forked client that grows
        # the interned-string table it shares with the parent copies all of it (~0.9 MiB).
        return os.path.join(self.folder, self.params.relpath(i))

    def index(self) -> dict[str, np.ndarray]:
        """file_sizes, and (unless regular) sample_offset / sample_length per global sample."""
        if self._index is None:
            with np.load(self.folder / "index.npz") as data:
                self._index = {k: data[k] for k in data.files}
        return self._index

    def ranges(self, file_idx: np.ndarray, first: np.ndarray,
               count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Byte (offset, length) covering samples first..first+count-1 of each file."""
        p = self.params
        if p.regular:
            return first * p.sample_size, count * p.sample_size
        idx = self.index()
        g0 = file_idx * p.samples_per_file + first
        g1 = g0 + count - 1
        start = idx["sample_offset"][g0]
        end = idx["sample_offset"][g1] + idx["sample_length"][g1]
        return start, end - start

    def file_size(self, i: int) -> int:
        return int(self.index()["file_sizes"][i])


def dataset_folder(target: Target, params: DatasetParams) -> Path:
    return target.root / "datasets" / params.workload


def _read_manifest(folder: Path) -> dict | None:
    try:
        return json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return None


def check(target: Target, w: Workload) -> tuple[Dataset | None, str]:
    """(dataset, '') when a complete, matching dataset exists, else (None, why not)."""
    params = DatasetParams.from_workload(w)
    folder = dataset_folder(target, params)
    if not folder.exists():
        return None, "no dataset yet"
    manifest = _read_manifest(folder)
    if manifest is None or not manifest.get("complete"):
        return None, "the dataset there is incomplete (an earlier generation stopped)"
    if manifest.get("params") != asdict(params):
        return None, "the dataset there was made with other parameters"
    return Dataset(folder, params, manifest), ""


# --- generation ----------------------------------------------------------------------------

def _write_file(params: DatasetParams, folder: str, i: int) -> tuple[int, int, np.ndarray]:
    """Write file i, make it durable, drop its cached pages; return (i, size, ranges)."""
    path = Path(folder) / params.relpath(i)
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = formats.get_format(params.format)
    sizes = params.sample_sizes(i)
    ranges = fmt.write(path, sizes.tolist(), params.file_seed(i))
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        # Dirty pages cannot be dropped, hence the fsync first; then the reads start cold.
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    arr = np.empty((0, 2), dtype=np.int64) if params.regular else np.asarray(ranges, np.int64)
    return i, size, arr


def _check_layout(params: DatasetParams) -> None:
    n = params.num_files * params.samples_per_file
    if n > MAX_EXPLICIT_SAMPLES and not params.regular:
        raise AiioError(f"{n:,} samples of varying size need a per-sample index too large to "
                        "hold; use format = \"raw\" with sample_size_stdev = 0 for such datasets")


def _require_space(target: Target, params: DatasetParams) -> None:
    """Refuse, in one line, a dataset the target has no room for."""
    # Formats add a little framing; 1 % + 64 KiB a file covers npz/hdf5/tfrecord headers.
    needed = int(params.expected_bytes() * 1.01) + params.num_files * 65536
    target.require_space(needed, f"dataset {params.workload} ({params.num_files:,} files)")


def generate(target: Target, w: Workload, workers: int | None = None,
             progress: Progress | None = None, ranks: Ranks = THIS_HOST) -> Dataset:
    """Write the whole dataset with `workers` processes per host (every rank writes its
    range of the files), then the index and manifest (rank 0); every rank checks it."""
    params = DatasetParams.from_workload(w)
    _check_layout(params)
    folder = dataset_folder(target, params)
    check_shared(target, ranks)  # under MPI, every host must write into the same filesystem
    target.hold()  # the run writes from here (aiio clean refuses meanwhile)
    if folder.exists():
        remove_tree(folder, target.root)
    _require_space(target, params)
    folder.mkdir(parents=True)
    t0 = time.monotonic()
    # Each rank (one per host under MPI, else just this one) writes its range of the files.
    cuts = [r * params.num_files // ranks.size for r in range(ranks.size + 1)]
    shares = [(params, str(folder), cuts[r], cuts[r + 1], workers) for r in range(ranks.size)]
    try:
        parts = ranks.call_all(_generate_share, shares, on_progress=progress)
        sizes = np.concatenate([p["sizes"] for p in parts])
        ranges = [arr for p in parts for arr in p["ranges"]]
        _write_index(folder, params, sizes, ranges)
        manifest = {"schema": SCHEMA, "params": asdict(params), "complete": True,
                    "total_bytes": int(sizes.sum()), "num_files": params.num_files,
                    "num_samples": params.num_files * params.samples_per_file,
                    "generated_s": round(time.monotonic() - t0, 3),
                    "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    "generated_by": [{"rank": r, "host": p["host"], "files": cuts[r:r + 2],
                                      "seconds": p["seconds"]} for r, p in enumerate(parts)]}
        tmp = folder / "manifest.json.tmp"
        tmp.write_text(json.dumps(manifest, indent=1) + "\n")
        os.replace(tmp, folder / "manifest.json")
        dataset = Dataset(folder, params, manifest)
        verify(dataset, ranks)
    except BaseException:
        _discard(folder, target, ranks)
        raise
    return dataset


def _generate_share(share: tuple, report: Progress) -> dict:
    """Write files lo..hi-1 with forked generator processes on this host (aiio.run.forked: one
    that dies fails the share at once, naming it, instead of leaving it waiting); their
    sizes and ranges. `report` also runs while no file completes, so a caller can stop the
    share (a Ctrl-C, another host's failure) whatever the storage's pace."""
    params, folder, lo, hi, workers = share
    t0 = time.monotonic()
    workers = workers or max(1, min(os.cpu_count() or 1, 8, hi - lo))
    sizes = np.zeros(hi - lo, dtype=np.int64)
    ranges: list[np.ndarray | None] = [None] * (hi - lo)
    done = [0, 0]  # files, bytes

    def take(written: tuple[int, int, np.ndarray]) -> None:
        i, size, arr = written
        sizes[i - lo], ranges[i - lo] = size, arr
        done[0] += 1
        done[1] += size
        report(done[0], done[1])

    def tick() -> None:
        if done[0] < hi - lo:  # once all is written, a report again would show it twice
            report(done[0], done[1])

    try:
        forked.run_sliced(lambda i: _write_file(params, folder, i), range(lo, hi), workers,
                          take, tick, name="generator",
                          on_abandon=lambda touched, busy: _sweep_share(
                              touched, busy, params, folder, lo, hi))
    except OSError as exc:
        where = getattr(exc, "filename", "") or folder
        raise RunFailed(f"dataset generation failed: {exc.strerror or exc} ({where}); "
                        "partial files removed") from exc
    except forked.WorkerFailed as exc:
        raise RunFailed(f"dataset generation failed: {exc}; partial files removed") from None
    return {"sizes": sizes, "ranges": ranges, "host": socket.gethostname(),
            "seconds": round(time.monotonic() - t0, 3)}


def _sweep_share(touched: list[int], busy: list[int], params: DatasetParams, folder: str,
                 lo: int, hi: int) -> None:
    """Remove this rank's partial files at once when its share fails or is ended (a Ctrl-C,
    a SIGTERM, another rank's failure): under MPI the launcher's SIGKILL follows a quarter of
    a second after its SIGTERM, before the usual clean-up (after the generators are reaped
    and every rank has answered) could run. By name, the files its generators wrote, not a
    walk of the folder: quick, and no contention with the other ranks, which go on writing
    their own until told. A file a killed generator may still be writing is left to the
    next sweep, once it is reaped: removing it would wait for that write to end (the kernel
    locks the file, and its folder for the removal), seconds on a throttled or hung mount."""
    base = Path(folder)
    for i in touched:
        with contextlib.suppress(OSError):  # never made, or gone already: nothing to do
            os.unlink(base / params.relpath(i))
    # Only the folders of this share alone: one it shares with another rank's may be empty
    # between that rank's generator making it and creating its file there.
    per = params.files_per_dir
    for d in sorted({i // per for i in (*touched, *busy)}):
        if lo <= d * per and (d + 1) * per <= hi:
            with contextlib.suppress(OSError):  # still holds a file: the clean-up takes it
                os.rmdir(base / params.relpath(d * per).split("/", 1)[0])


def verify(dataset: Dataset, ranks: Ranks = THIS_HOST) -> None:
    """Under MPI: every rank must see the very manifest rank 0 sees, or the hosts would read
    different data (a target that is not one shared mount at one path)."""
    if ranks.size > 1:
        ranks.call_all(_same_manifest, [(str(dataset.folder), dataset.manifest)] * ranks.size,
                       bounded=True, own_s=LATE_FILE_S)


def _same_manifest(args: tuple[str, dict], report: Progress | None = None) -> None:
    folder, want = args
    deadline = time.monotonic() + LATE_FILE_S
    while (seen := _read_manifest(Path(folder))) != want and time.monotonic() < deadline:
        time.sleep(0.2)
    if seen != want:
        what = "no dataset" if seen is None else "a different dataset"
        raise RunFailed(f"sees {what} at {folder}, not the one rank 0 uses: the target must be "
                        "one shared filesystem mounted at the same path on every host")


def _discard(folder: Path, target: Target, ranks: Ranks) -> None:
    """Remove a failed generation's files on every host's view of the target, as far as it
    can: an error here must not hide why the generation failed."""
    _remove_failed(folder, target.root)
    if ranks.size > 1:
        try:
            ranks.call_all(_discard_view, [(str(folder), str(target.path))] * ranks.size,
                           bounded=True)
        except AiioError:
            pass  # best effort: the run is failing already and says why (and a rank that
            # did not answer is named as the job is ended)


def _discard_view(args: tuple[str, str], report: Progress | None = None) -> None:
    folder, path = args
    target = Target(path)
    if target.is_owned():
        _remove_failed(Path(folder), target.root)


def _remove_failed(folder: Path, root: Path) -> None:
    """remove_tree of a failed generation's folder, an OSError ignored: the run is failing
    already and says why."""
    try:
        remove_tree(folder, root)
    except OSError:
        pass  # a file a killed generator not yet gone holds open (on another rank): on NFS
        # or FUSE removing it only renames it until it is closed, so its folder is not empty
        # yet. The folder has no manifest: the next generation removes it first.


def _write_index(folder: Path, params: DatasetParams, sizes: np.ndarray,
                 ranges: list[np.ndarray | None]) -> None:
    arrays = {"file_sizes": sizes}
    if not params.regular:
        flat = np.concatenate([r for r in ranges if r is not None])
        arrays["sample_offset"] = flat[:, 0].copy()
        arrays["sample_length"] = flat[:, 1].copy()
    np.savez(folder / "index.npz", **arrays)


def dataset_lock(target: Target, params: DatasetParams) -> FolderLock:
    """The dataset's lock: TARGET/aiio/datasets/.<workload>.lock, beside its folder."""
    return target.lock("datasets", params.workload, f"dataset {params.workload}")


def ensure(target: Target, w: Workload, progress: Progress | None = None,
           note: Callable[[str], None] | None = None, ranks: Ranks = THIS_HOST,
           force: bool = False, workers: int | None = None) -> tuple[Dataset, bool]:
    """Reuse a matching dataset or generate one (`force`: generate it anyway); returns
    (dataset, generated?). The dataset's lock is held shared from here until the target is
    released (the run's end): another run reads it meanwhile, none removes it. Generating
    (or removing a stale or partial dataset) takes it alone, after any run that reads it has
    ended. Under MPI only rank 0 calls this: the other ranks write their shares, and read,
    under its lock."""
    say = note or (lambda _line: None)
    params = DatasetParams.from_workload(w)
    # Bad input is refused before the lock's file is made: a refused run writes nothing
    # but the target's ownership marker. Checked again under the lock when it generates.
    _check_layout(params)
    if not dataset_folder(target, params).exists():
        _require_space(target, params)
    lock = dataset_lock(target, params)
    lock.shared(say)
    generated = False
    while True:
        dataset, why = check(target, w)
        if dataset is not None and (generated or not force):
            verify(dataset, ranks)
            return dataset, generated
        lock.exclusive(say)
        # Checked again: another run may have generated it while this one waited.
        dataset, why = check(target, w)
        if dataset is None or (force and not generated):
            say(f"generating dataset {w.name}: {why or 'asked to (--force)'}")
            generate(target, w, workers, progress, ranks)
            generated = True
        # Shared again, so that other runs may read it. flock lets go of the lock for a moment
        # to convert it, and a run waiting to generate another dataset of this name could
        # take it then: the check at the top of the loop sees that.
        lock.shared(say)
