"""aiio as MPI ranks, rank 1's main thread hanging at one point while its heartbeat thread
beats on, as a rank stuck on a lock did (a multiprocessing.Pool's terminate, blocked on a
dead worker's lock): `python -m tests.wedged_rank WHERE ARGS`, ARGS those of aiio, WHERE

  generating   rank 1's dataset share, once it has reported once (so rank 0 knows the call
               reports as it goes)
  discarding   rank 1's removal of a failed generation's files
  verifying    rank 1's check that it sees the dataset rank 0 made (a quick check, as on a
               hung network mount)
  late         not wedged: rank 1 sees rank 0's dataset 3 s late, within the 5 s the check
               allows a network filesystem (a healthy run)
  elsewhere    not wedged: rank 1 sees another dataset where rank 0 made its own (the target
               is not one shared filesystem at one path)
"""

from __future__ import annotations

import os
import sys
import threading
import time

from aiio.cli import main
from aiio.storage import dataset


def hang() -> None:
    """Block this thread for good on a lock that is held (a signal still interrupts it)."""
    lock = threading.Lock()
    lock.acquire()
    lock.acquire()


def _wedge_generating() -> None:
    real = dataset._generate_share

    def share(args: tuple, report) -> dict:
        def stuck(done: int, nbytes: int) -> None:
            report(done, nbytes)
            hang()
        return real(args, stuck)

    dataset._generate_share = share


def _wedge_discarding() -> None:
    dataset._discard_view = lambda args, report=None: hang()


def _wedge_verifying() -> None:
    dataset._same_manifest = lambda args, report=None: hang()


def _late_verifying() -> None:
    real = dataset._same_manifest

    def late(args: tuple, report=None) -> None:
        time.sleep(3.0)
        real(args, report)

    dataset._same_manifest = late


def _sees_elsewhere() -> None:
    dataset._read_manifest = lambda folder: {"schema": "another host's dataset"}


WEDGES = {"generating": _wedge_generating, "discarding": _wedge_discarding,
          "verifying": _wedge_verifying, "late": _late_verifying,
          "elsewhere": _sees_elsewhere}

if __name__ == "__main__":
    if os.environ.get("OMPI_COMM_WORLD_RANK") == "1":
        WEDGES[sys.argv[1]]()
    main(sys.argv[2:])
