"""The memory a client needs, and the refusal of client counts a host cannot hold.

The figures are measured, not guessed: a demo train client (two loader threads, 1 MiB
transfers) in a 256-client run held 4.86 MiB of memory of its own (USS: the pages an added
client costs; everything else it shares with the parent). 1.29 MiB of that were its two read
buffers (each the largest demo file, 644 KiB, as it is below the transfer size); the rest,
3.6 MiB, is the interpreter's pages the client copies, its own objects and its thread stacks.
docs/PERFORMANCE.md ("Memory per client", and "Where a client's memory goes") has how it was
measured. Since then a client's loader threads share one read buffer; the estimate still
counts one buffer per thread (an S3 run's readers hold one each), so it stays an upper bound.
Measured again after the parent's pools were filled and training rehearsed before the forks
(aiio.pools, aiio.clients.rehearse): a demo train client of a 256-client run held 3.7 to 3.8
MiB, 0.63 MiB of it its read buffer, so 3.2 MiB the rest. The base stays at the 3.6 MiB
measured before, rounded up: the other phases are not rehearsed.
A client's buffers and threads are counted from the workload at the full transfer size (a
dataset of large files needs it), and the whole is given a margin of 1.5 for what one run
does not show (other formats' libraries, longer runs' logs).
"""

from __future__ import annotations

import psutil

from aiio.errors import AiioError
from aiio.units import MiB, format_size
from aiio.workload import Workload

CLIENT_BASE_BYTES = 4 * MiB   # measured 3.6 MiB without the buffers, unrehearsed (above)
THREAD_BYTES = 256 * 1024     # one I/O thread's stack pages and operation log
PARENT_BYTES = 128 * MiB      # the parent process (measured about 60 MiB), once per host
MARGIN = 1.5                  # over the measured figures
USABLE = 0.8                  # share of the available memory a run may plan to use


def client_bytes(w: Workload) -> int:
    """Bytes one client needs: measured base, plus the buffers of its busiest phase."""
    io = max(threads * (size + THREAD_BYTES) for threads, size in (
        (w.train.read_threads, w.train.transfer_size),
        (w.prep.threads, w.prep.transfer_size),
        # randrw mode: each thread's reader holds iodepth blocks, its writer one more
        (w.prep.threads, w.prep.block_size * (w.prep.iodepth + 1)),
        (w.checkpoint.threads, w.checkpoint.transfer_size),
        (w.load.threads, w.load.transfer_size)))
    return int(MARGIN * (CLIENT_BASE_BYTES + io))


def check_need(each: int, clients: int, host: str | None = None,
               available: int | None = None) -> None:
    """Refuse (one line, exit 2) when `clients` clients of `each` bytes cannot fit."""
    avail = psutil.virtual_memory().available if available is None else available
    need = PARENT_BYTES + clients * each
    usable = USABLE * avail
    if need > usable:
        # the share is named: "need 19 GiB but only 21 GiB is available" read as no reason
        where = f" on {host}" if host else ""
        fits = max(0, int((usable - PARENT_BYTES) // each))
        raise AiioError(f"{clients} clients need about {format_size(need)} of memory{where} "
                        f"({format_size(each)} each) but a run plans on at most "
                        f"{USABLE * 100:.0f} % of the {format_size(avail)} available "
                        f"({format_size(int(usable))}): at most {fits} clients fit; use "
                        "fewer clients or more hosts (MPI)")
