"""Files laid out once on a mount and kept for later runs (the load phase's model weights, the
vector phase's index): TARGET/aiio/<kind>/<name>/, whose manifest.json, written last, says
which parameters made them. As a dataset's (`aiio.storage.dataset.ensure`), the name's lock is
held shared until the run ends (another run reads the files meanwhile, none removes them) and
alone while they are written: two load runs at once removed each other's weights.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiio.phases.rundata import remove_folder
from aiio.storage.target import Target, remove_tree


@dataclass(frozen=True)
class Kept:
    """What is kept: where (`kind`/`name`), what it is called in a line, the parameters its
    manifest must hold to be reused, and its bytes (checked for space before writing)."""

    kind: str
    name: str
    what: str
    params: dict[str, Any]
    size: int
    space_what: str  # the files as a refusal for want of space names them


def complete(folder: Path, params: dict[str, Any]) -> bool:
    """Whether the folder holds the files of `params`, whole (its manifest says so)."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return bool(manifest.get("complete")) and manifest.get("params") == params


def ensure(target: Target, k: Kept, write: Callable[[Path], object],
           note: Callable[[str], None], space_check: bool = True) -> tuple[Path, bool]:
    """Reuse the kept files, or write them with `write(folder)`; (folder, reused)."""
    folder = target.root / k.kind / k.name
    if not folder.exists() and space_check:  # refused before the lock's file is made
        target.require_space(k.size, k.space_what)
    lock = target.lock(k.kind, k.name, f"{k.what} {k.name}")
    lock.shared(note)
    if complete(folder, k.params):
        return folder, True
    lock.exclusive(note)
    if complete(folder, k.params):  # written by the run this one waited for
        lock.shared(note)
        return folder, True
    target.hold()  # the run writes from here (Target.written; aiio clean refuses meanwhile)
    if folder.exists():
        remove_tree(folder, target.root)
    if space_check:
        target.require_space(k.size, k.space_what)
    folder.mkdir(parents=True)
    try:
        write(folder)
    except BaseException:
        remove_folder(target, str(folder))  # and <kind>/ when nothing else is in it
        raise
    (folder / "manifest.json").write_text(json.dumps({"params": k.params, "complete": True})
                                          + "\n")
    lock.shared(note)
    return folder, False
