"""HDF5 format: one contiguous, uncompressed 2-D uint8 dataset ``samples`` of shape (n, size).

HDF5 rows are fixed-size, so every sample in a file has the same size: the mean of the requested
sizes, rounded. Sample i is row i; its range is the dataset's file offset + i * size, length size.
This is the only module that imports h5py.
"""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

from aiio.errors import RunFailed
from aiio.storage.formats.common import CHUNK, check_sizes, new_rng, random_array

EXTENSION = ".h5"
DATASET = "samples"


def row_size(sample_sizes: list[int]) -> int:
    """The one size every sample in the file gets: the mean, rounded, at least 1 byte."""
    return max(1, round(sum(sample_sizes) / len(sample_sizes)))


def write(path: Path, sample_sizes: list[int], seed: int) -> list[tuple[int, int]]:
    """Write the samples as rows of one dataset; each range is (row offset, row size)."""
    check_sizes(sample_sizes)
    rng = new_rng(seed)
    n, size = len(sample_sizes), row_size(sample_sizes)
    with h5py.File(path, "w") as f:
        # fill_time never: rows are all written below, so a fill pass would double the I/O.
        dset = f.create_dataset(DATASET, shape=(n, size), dtype=np.uint8, fill_time="never")
        _fill(dset, rng, n, size)
        base = dset.id.get_offset()
    if base is None:
        raise RunFailed(f"{path}: HDF5 allocated no storage for dataset {DATASET!r}")
    return [(base + i * size, size) for i in range(n)]


def _fill(dset: h5py.Dataset, rng: np.random.Generator, n: int, size: int) -> None:
    """Write all rows in pieces of about CHUNK bytes: several small rows or part of a big one."""
    if size <= CHUNK:
        step = CHUNK // size
        for start in range(0, n, step):
            rows = min(step, n - start)
            dset[start:start + rows] = random_array(rng, rows * size).reshape(rows, size)
        return
    for row in range(n):
        for col in range(0, size, CHUNK):
            width = min(CHUNK, size - col)
            dset[row, col:col + width] = random_array(rng, width)


def read_native(path: Path, index: int | None = None, *,
                span: tuple[int, int] | None = None) -> int:
    """h5py slicing of every row, or of row index; returns the bytes read."""
    del span  # h5py finds rows itself
    try:
        with h5py.File(path, "r") as f:
            dset = f[DATASET]
            n, size = dset.shape
            if index is not None:
                if not 0 <= index < n:
                    raise IndexError(f"{path}: no sample {index} (the file holds {n})")
                return _read_rows(path, dset, index, 1, size)
            # Whole rows per slice, as a loader reads samples, but never more than about CHUNK.
            step = max(1, CHUNK // size)
            return sum(_read_rows(path, dset, start, min(step, n - start), size)
                       for start in range(0, n, step))
    except (OSError, KeyError) as exc:
        raise RunFailed(f"{path}: cannot read HDF5 dataset {DATASET!r}: {exc}") from exc


def _read_rows(path: Path, dset: h5py.Dataset, start: int, rows: int, size: int) -> int:
    """Read rows [start, start + rows) and return their bytes."""
    try:
        return dset[start:start + rows].nbytes
    except OSError as exc:
        offset = (dset.id.get_offset() or 0) + start * size
        raise RunFailed(f"{path}: cannot read sample {start} at offset {offset}: {exc}") from exc
