"""On-disk dataset formats: write a file of random samples and say which bytes hold each sample.

Every format module has the same members:

- ``EXTENSION``: the file name suffix.
- ``write(path, sample_sizes, seed) -> list[(offset, length)]``: write one file whose samples are
  incompressible bytes drawn from ``PCG64(seed)``; return, per sample, the byte range a loader
  reads to get it.
- ``read_native(path, index=None, *, span=None) -> int``: read the whole file (``index=None``) or
  one sample through the format's own library, as a framework's loader would, and return the
  sample payload bytes it decoded (npz: array bytes; hdf5: row bytes; tfrecord: image_raw bytes;
  raw: bytes read). ``span`` is a byte range from ``write``'s ranges (one sample,
  or several consecutive ones merged): raw files need it to find a sample, tfrecord seeks with it
  as a TFRecord index would and parses every record in it, npz and hdf5 ignore it. Corrupt or
  truncated data raises ``RunFailed`` naming the file and offset.

Modules are imported on first use, so h5py loads only when an hdf5 dataset is used.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Protocol

from aiio.errors import ConfigError
from aiio.storage.formats.common import fill_random, iter_random, new_rng, random_array

FORMATS = ("npz", "hdf5", "tfrecord", "raw")

__all__ = ["FORMATS", "FormatModule", "fill_random", "get_format", "iter_random", "new_rng",
           "random_array"]


class FormatModule(Protocol):
    """What every module in aiio.storage.formats provides."""

    EXTENSION: str

    def write(self, path: Path, sample_sizes: list[int], seed: int) -> list[tuple[int, int]]:
        ...

    def read_native(self, path: Path, index: int | None = None, *,
                    span: tuple[int, int] | None = None) -> int:
        ...


def get_format(name: str) -> FormatModule:
    """The module that writes and reads format name."""
    if name not in FORMATS:
        raise ConfigError(f"unknown dataset format {name!r}; use one of {', '.join(FORMATS)}")
    return importlib.import_module(f"aiio.storage.formats.{name}")  # type: ignore[return-value]
