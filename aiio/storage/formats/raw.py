"""Raw format: samples concatenated with no framing, like fixed-size binary records.

A sample's range is exactly its bytes. With no framing the file alone cannot say where sample N
starts, so reading one sample needs its ``span`` from ``write`` (a span may also cover a run of
consecutive samples, as a loader reading contiguous records does).
"""

from __future__ import annotations

import itertools
from pathlib import Path

from aiio.errors import RunFailed
from aiio.storage.formats.common import CHUNK, check_sizes, iter_random, new_rng

EXTENSION = ".bin"


def write(path: Path, sample_sizes: list[int], seed: int) -> list[tuple[int, int]]:
    """Write the samples back to back; each range is (offset, size)."""
    check_sizes(sample_sizes)
    rng = new_rng(seed)
    total = sum(sample_sizes)
    # Sample boundaries do not matter to the bytes, so draw in big chunks: millions of tiny
    # records (dlrm) would otherwise cost a call each.
    with open(path, "wb") as f:
        for chunk in iter_random(rng, total):
            f.write(chunk)
    offsets = itertools.accumulate(sample_sizes, initial=0)
    return list(zip(offsets, sample_sizes, strict=False))


def read_native(path: Path, index: int | None = None, *,
                span: tuple[int, int] | None = None) -> int:
    """Plain reads of the whole file, or of the span holding sample index; returns bytes read."""
    if span is None:
        if index is None:
            return _read_all(path)
        raise ValueError(f"{path}: raw files have no framing; reading sample {index} "
                         "needs its span=(offset, length)")
    offset, length = span
    got = _read_at(path, offset, length)
    if got != length:
        raise RunFailed(f"{path}: truncated at offset {offset + got}: sample {index} needs "
                        f"{length} bytes from offset {offset}")
    return got


def _read_at(path: Path, offset: int, length: int) -> int:
    """Read length bytes from offset (fewer at end of file); return how many came."""
    buf = bytearray(min(length, CHUNK))
    got = 0
    # Unbuffered: a 160-byte record must not pull in a read-ahead buffer's worth of the file.
    with open(path, "rb", buffering=0) as f:
        f.seek(offset)
        while got < length:
            view = memoryview(buf)[:min(len(buf), length - got)]
            n = f.readinto(view)
            if not n:
                break
            got += n
    return got


def _read_all(path: Path) -> int:
    """Read the file start to end through one reused buffer."""
    buf = bytearray(CHUNK)
    total = 0
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            total += n
    return total
