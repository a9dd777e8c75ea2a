"""What any phase may need for the data it writes itself: a folder name unique to the run, its
removal (inside TARGET/aiio only), bytes split over files in whole blocks, and the --verify
summary over its clients.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path
from typing import Any

from aiio.engines import blocks
from aiio.engines.timing import Window
from aiio.phases.base import RunContext
from aiio.run.wallclock import now_stamp

ALIGN = 4096


def new_run_tag() -> str:
    """A folder name unique to this run: time and the parent's pid."""
    return f"{now_stamp()}-{os.getpid()}"


# How long a run's folder may stay not empty after its files are removed: a file a client
# still holds open goes on NFS and FUSE by a rename (.nfsXXXX, .fuse_hiddenXXXX) until it is
# closed. Clients killed while the storage did not answer exit only once it answers, in the
# moments after the removal (which waited on the same storage) went through.
HELD_OPEN_S = 5.0
HELD_OPEN_POLL_S = 0.1


def remove_run_folder(rc: RunContext, folder: str | None) -> None:
    """Delete this run's files under TARGET/aiio/<kind>/<run>, and <kind> when left empty."""
    remove_folder(rc.target, folder)


def remove_folder(target: Any, folder: str | None) -> None:
    """Delete TARGET/aiio/<kind>/<name> (a mount's or a bucket's), and <kind> when left empty."""
    if not folder:
        return
    path = Path(folder)
    until = Window().deadline(HELD_OPEN_S)
    while True:
        try:
            target.remove(path)
            break
        except OSError as exc:
            if exc.errno != errno.ENOTEMPTY or until.passed():
                raise
            time.sleep(HELD_OPEN_POLL_S)  # the renamed file goes when its last holder closes it
    target.remove_if_empty(path.parent)  # kept while other runs' folders are there


def split_sizes(total: int, slots: int) -> list[int]:
    """`total` bytes over `slots` files: whole 4 KiB blocks spread evenly (so O_DIRECT writes
    stay aligned), the sub-block remainder on the last file. The sizes add up to `total`."""
    nblocks, tail = divmod(total, ALIGN)
    sizes = [(nblocks * (s + 1) // slots - nblocks * s // slots) * ALIGN for s in range(slots)]
    sizes[-1] += tail
    return sizes


def verify_summary(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """--verify over a list of burst figures: blocks, mismatches with file and offset, cost."""
    merged = blocks.Verifier()
    busy = checksum = 0.0
    for e in entries:
        busy += e.get("elapsed_s", 0.0)
        checksum += e.get("checksum_s", 0.0) + e.get("verify_s", 0.0)
        if "verify" in e:
            merged.merge(blocks.Verifier(e["verify"]["blocks_checked"],
                                         e["verify"]["mismatches"], e["verify"]["corrupt"],
                                         e["verify"]["check_s"]))
    out = merged.to_dict()
    out.update(enabled=True, checksum_s=checksum,
               cost_share=checksum / busy if busy > 0 else 0.0)
    return out
