"""The vector index kept on a mount for later runs (aiio.phases.kept): laid out once, by
`aiio datagen --phase vector` or by the first run of its settings, in
TARGET/aiio/indexes/<settings>/disk.index, and reused by every run whose index settings (N, D,
element size, R, sector size, graph, seed) are the same. A bucket's runs each write their own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from aiio.phases import kept
from aiio.phases import vector_index as vi
from aiio.storage.target import OWN_DIR, Target
from aiio.units import format_size

KIND = "indexes"  # TARGET/aiio/indexes/
GENERATOR = 1  # bump when the bytes an index shape lays out change


def params(shape: vi.IndexShape) -> dict:
    """Everything that decides the index's bytes; a kept index matches only if all are equal."""
    return {**dataclasses.asdict(shape), "file_size": shape.file_size, "generator": GENERATOR}


def name(shape: vi.IndexShape) -> str:
    """The folder's name: the settings, readable."""
    return (f"n{shape.vectors}-d{shape.dimensions}x{shape.element_size}-r{shape.max_degree}-"
            f"s{shape.sector_size}-{shape.graph}-seed{shape.seed}")


def present(target: str, shape: vi.IndexShape) -> bool:
    """Whether `target` (a mount's path) holds the index of `shape`, whole: a run reuses it
    and lays nothing out (a bucket's URL holds none: each of its runs writes its own)."""
    return kept.complete(Path(target) / OWN_DIR / KIND / name(shape), params(shape))


def ensure(target: Target, shape: vi.IndexShape, write: Callable[[str], int],
           note: Callable[[str], None], space_check: bool = True) -> tuple[Path, bool]:
    """Reuse the kept index of `shape`, or lay it out with `write(path)`; (folder, reused)."""
    what = f"vector index ({format_size(shape.file_size)})"
    k = kept.Kept(KIND, name(shape), "vector index", params(shape), shape.file_size, what)
    folder, reused = kept.ensure(target, k, lambda f: write(str(f / vi.INDEX_NAME)),
                                 note, space_check)
    if reused:
        note(f"reusing the vector index in {folder}")
    return folder, reused
