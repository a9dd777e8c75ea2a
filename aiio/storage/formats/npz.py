"""NPZ format: what ``numpy.savez`` writes, streamed so a 140 MB sample is never held whole.

One uncompressed (ZIP_STORED) zip member ``x<i>.npy`` per sample, each a 1-D uint8 array, so
``numpy.load(path)["x0"]`` returns sample 0. A sample's range is its member's stored data: the
npy header (128 bytes for these arrays) followed by the array bytes; the zip local header before
it and the central directory at the end are not in any range.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np

from aiio.errors import RunFailed
from aiio.storage.formats.common import check_sizes, iter_random, new_rng

EXTENSION = ".npz"

_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, ..., name length, extra length
_LOCAL_SIGNATURE = b"PK\x03\x04"


def member_name(index: int) -> str:
    """The zip member holding sample index."""
    return f"x{index}.npy"


def write(path: Path, sample_sizes: list[int], seed: int) -> list[tuple[int, int]]:
    """Write one uint8 array per sample; each range is (member data offset, npy header + size)."""
    check_sizes(sample_sizes)
    rng = new_rng(seed)
    # The same zip settings numpy.savez uses.
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for i, size in enumerate(sample_sizes):
            with zf.open(member_name(i), "w", force_zip64=True) as member:
                header = {"descr": "|u1", "fortran_order": False, "shape": (size,)}
                np.lib.format.write_array_header_1_0(member, header)
                for chunk in iter_random(rng, size):
                    member.write(chunk)
    return member_ranges(path)


def member_ranges(path: Path) -> list[tuple[int, int]]:
    """(data offset, stored length) of every member, read from the zip's own headers."""
    ranges = []
    with zipfile.ZipFile(path) as zf, open(path, "rb") as f:
        for info in zf.infolist():
            # The local header's extra field can differ from the central directory's, so the
            # data offset must come from the local header itself.
            f.seek(info.header_offset)
            raw = f.read(_LOCAL_HEADER.size)
            signature, name_len, extra_len = _LOCAL_HEADER.unpack(raw)
            if signature != _LOCAL_SIGNATURE:
                raise RunFailed(f"{path}: no zip local header at offset {info.header_offset}")
            start = info.header_offset + _LOCAL_HEADER.size + name_len + extra_len
            ranges.append((start, info.compress_size))
    return ranges


def read_native(path: Path, index: int | None = None, *,
                span: tuple[int, int] | None = None) -> int:
    """numpy.load the whole file or sample index and touch the data; returns array bytes."""
    del span  # numpy finds members through the zip directory
    total = 0
    name = None
    try:
        with np.load(path) as npz:
            names = npz.files if index is None else [_key(npz, index, path)]
            for name in names:
                total += _touch(npz[name])
    except (zipfile.BadZipFile, zlib.error, ValueError, EOFError, OSError) as exc:
        where = "" if name is None else f" member {name} at offset {_member_offset(path, name)}"
        raise RunFailed(f"{path}: cannot read npz{where}: {exc}") from exc
    return total


def _key(npz: np.lib.npyio.NpzFile, index: int, path: Path) -> str:
    """The array name of sample index, or IndexError."""
    name = member_name(index)[:-len(".npy")]
    if name not in npz.files:
        raise IndexError(f"{path}: no sample {index} (the file holds {len(npz.files)})")
    return name


def _touch(array: np.ndarray) -> int:
    """Read one byte per page, as a consumer of the data would, and return the array's bytes."""
    flat = array.reshape(-1).view(np.uint8)
    int(flat[::4096].sum())
    return flat.nbytes


def _member_offset(path: Path, name: str) -> str:
    """Where member name starts, for error messages, or '?' when the zip directory is unreadable."""
    try:
        with zipfile.ZipFile(path) as zf:
            return str(zf.getinfo(f"{name}.npy").header_offset)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError):
        return "?"
