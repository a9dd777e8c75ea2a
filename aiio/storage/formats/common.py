"""Helpers every format shares: the random payload stream and argument checks."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from aiio.units import MiB

# Big enough to amortize per-call overhead, small enough that a 140 MB sample never sits in
# memory twice.
CHUNK = 4 * MiB


def new_rng(seed: int) -> np.random.Generator:
    """The generator every file's payload comes from."""
    return np.random.Generator(np.random.PCG64(seed))


def random_array(rng: np.random.Generator, n: int) -> np.ndarray:
    """n incompressible bytes as a uint8 array."""
    # Full-range uint64 draws are about 3x faster than rng.bytes(), which goes through uint32.
    words = rng.integers(0, 2**64, size=(n + 7) // 8, dtype=np.uint64)
    return words.view(np.uint8)[:n]


def fill_random(rng: np.random.Generator, n: int) -> bytes:
    """n incompressible bytes."""
    return random_array(rng, n).tobytes()


def iter_random(rng: np.random.Generator, n: int,
                chunk: int | None = None) -> Iterator[memoryview]:
    """n incompressible bytes in pieces of at most chunk (default CHUNK) bytes, without copying.

    Pieces are whole 8-byte draws except the last, so the bytes do not depend on the chunk size.
    """
    chunk = (chunk or CHUNK) // 8 * 8 or 8
    while n > 0:
        size = min(n, chunk)
        yield memoryview(random_array(rng, size))
        n -= size


def check_sizes(sample_sizes: list[int]) -> None:
    """Refuse an empty file or a sample without bytes: every format needs at least one."""
    if not sample_sizes:
        raise ValueError("a file needs at least one sample")
    if min(sample_sizes) <= 0:
        raise ValueError(f"sample sizes must be positive, got {min(sample_sizes)}")
