"""The memory a client needs, and the refusal of client counts a host cannot hold.

The figures are measured per phase, not guessed. `python -m tools.phase_memory` ran each
phase of the demo workload at 4, 64 and 256 clients (Dec 2 2026, on a 2-core host under
load from other work) and read every client's USS (the pages it alone holds: what one more
client adds; the rest it shares with the parent) from /proc/PID/smaps_rollup while it ran;
docs/PERFORMANCE.md ("Memory per client") has every figure and the command. Each phase says
what one of its clients holds (`Phase.client_memory`, aiio.phases.base.ClientMemory), next
to the code that holds it:

- the base: the largest client USS measured in the phase less the buffers counted for it
  (each phase's MEMORY_BASE; OBJECT_CLIENT_BASE against a bucket, where every client holds
  its own boto3 client); its threads' pages and its steps' records are in it and counted
  again below: an upper bound, not a second guess;
- the buffers, from the workload at their full size (a dataset of large files needs it), of
  the phase that runs: a train run does not count the checkpoint phase's (unless it
  checkpoints), a checkpoint run not the loader's; a native reader's thread holds a sample;
- THREAD_BYTES per I/O thread (its stack pages and operation log);
- a training client's step log: STEP_RECORD_BYTES per step up to its share of the run's
  step records (aiio.phases.train.step_log_cap), its steps bounded by its share of the
  epochs' batches, or by the duration over the compute time per batch. A margin does not
  cover it: a one-hour demo run of one client keeps 200,000 records, 100 MiB.
MARGIN is for what the runs measured do not pin down: the largest client of one phase moved
by up to 16 % from run to run (randrw: 5.23 to 6.04 MiB), and the byte series of a client's
op logs grow by 8 bytes per 0.1 s each (about 1.1 MiB an hour for a demo training client, a
quarter of its 4.4 MiB), where the runs lasted 10 s.
"""

from __future__ import annotations

from dataclasses import dataclass

import psutil

from aiio import engines
from aiio.errors import AiioError
from aiio.phases import REGISTRY, get_phase
from aiio.phases.base import ClientMemory, PrepareMemory
from aiio.units import MiB, format_size
from aiio.workload import Workload

PARENT_BYTES = 160 * MiB     # the parent process (measured up to 133 MiB PSS), once per host
MARGIN = 1.25                # over the measured figures, for what a short run does not show
USABLE = 0.8                 # share of the available memory a run may plan to use


def client_memory(w: Workload, phase: str = "train", clients: int | None = None,
                  objects: bool = False) -> ClientMemory:
    """What one client of `phase` holds, before the margin (`objects`: on an engine whose
    clients each hold an object client, a bucket's); a phase that does not say (one
    registered by a test) takes the largest that do."""
    clients = w.run.clients if clients is None else clients

    def of(name: str) -> ClientMemory | None:
        p = get_phase(name).variant(w)
        return (p.on_objects() if objects else p).client_memory(w, clients)

    got = of(phase)
    if got is not None:
        return got
    known = (of(name) for name in REGISTRY)
    return max((m for m in known if m is not None), key=lambda m: m.bytes)


def client_bytes(w: Workload, phase: str = "train", clients: int | None = None,
                 objects: bool = False) -> int:
    """Bytes one client of `phase` needs (`objects`: see client_memory): the measured base
    and what the workload makes it hold, with the margin."""
    return int(MARGIN * client_memory(w, phase, clients, objects).bytes)


@dataclass(frozen=True)
class Need:
    """What a host's clients of one phase hold, margins included: `each` a client in a
    process of its own; `sharing` one more client in a process another already holds (its
    buffers, threads and records, not the base: the interpreter and the parent's pages every
    process copies); `cap` the most processes a host forks (None: one a client;
    `Phase.process_cap`). The sharing figure is an upper bound too: 1,024 demo clients as 256
    processes measured 2.29 GiB of PSS where it counts 4.4 (docs/PERFORMANCE.md, Density)."""

    each: int
    sharing: int
    cap: int | None = None

    def processes(self, clients: int) -> int:
        return clients if self.cap is None else min(clients, self.cap)

    def bytes(self, clients: int) -> int:
        """The clients' memory, the parent's not included."""
        procs = self.processes(clients)
        return procs * self.each + (clients - procs) * self.sharing

    def fits(self, room: float) -> int:
        """The most clients whose memory fits in `room` bytes."""
        alone = max(0, int(room // max(1, self.each)))
        if self.cap is None or alone < self.cap:  # at the cap, the next client shares
            return alone
        return self.cap + int((room - self.cap * self.each) // max(1, self.sharing))


def need_for(w: Workload, phase: str = "train", clients: int | None = None,
             objects: bool = False) -> Need:
    """`client_bytes`, and what a client adds to a process another holds, with the phase's
    cap on processes. On a bucket each client, sharing or not, makes its own object client:
    only the base of a client on files is the process's."""
    mem = client_memory(w, phase, clients, objects)
    base = client_memory(w, phase, clients).base if objects else mem.base
    return Need(int(MARGIN * mem.bytes), int(MARGIN * (mem.bytes - base)),
                get_phase(phase).variant(w).process_cap(w))


def target_need(w: Workload, phase: str, target: str, clients: int, method: str = "auto",
                engine: str | None = None) -> Need:
    """`need_for` of `phase` as run against `target` on `engine` (None: the target's)."""
    return need_for(w, phase, clients, on_objects(target, method, engine))


def on_objects(target: str, method: str = "auto", engine: str | None = None) -> bool:
    """Whether the run's engine (the one asked for, else the target's) reads objects, not
    local files: each of its clients then holds an object client."""
    caps = engines.capabilities(engines.choose(target, method, engine))
    return caps is not None and not caps.local_files


def target_bytes(w: Workload, phase: str, target: str, clients: int, method: str = "auto",
                 engine: str | None = None) -> int:
    """`client_bytes` of `phase` as run against `target` on `engine` (None: the target's)."""
    return client_bytes(w, phase, clients, on_objects(target, method, engine))


def check_prepare(mem: PrepareMemory | None, available: int | None = None) -> None:
    """Refuse (one line, exit 2) a phase's set-up in the parent (`Phase.prepare_memory`) that
    cannot fit; it runs before the clients, so its peak is never beside theirs."""
    if mem is None:
        return
    avail = psutil.virtual_memory().available if available is None else available
    need = PARENT_BYTES + int(MARGIN * mem.bytes)
    usable = USABLE * avail
    if need > usable:
        raise AiioError(f"{mem.what} needs about {format_size(need)} of memory with the "
                        f"parent's, but a run plans on at most {USABLE * 100:.0f} % of the "
                        f"{format_size(avail)} available ({format_size(int(usable))}): "
                        f"{mem.advice}")


def check_need(need: Need | int, clients: int, host: str | None = None,
               available: int | None = None) -> None:
    """Refuse (one line, exit 2) when `clients` clients cannot fit (`need` an int: bytes a
    client, a process each)."""
    if isinstance(need, int):
        need = Need(need, need)
    avail = psutil.virtual_memory().available if available is None else available
    total = PARENT_BYTES + need.bytes(clients)
    usable = USABLE * avail
    if total > usable:
        # the share is named: "need 19 GiB but only 21 GiB is available" read as no reason
        where = f" on {host}" if host else ""
        fits = need.fits(usable - PARENT_BYTES)
        # with none fitting, neither fewer clients nor more hosts help: the sizes must shrink
        advice = (f"at most {fits} clients fit; use fewer clients or more hosts (MPI)" if fits
                  else "not even one client fits: use smaller transfer, block, shard or part "
                       "sizes")
        each = format_size(need.each) + " each"
        if need.processes(clients) < clients:
            each += f", {format_size(need.sharing)} each past {need.cap} processes"
        raise AiioError(f"{clients} clients need about {format_size(total)} of memory{where} "
                        f"({each}) but a run plans on at most "
                        f"{USABLE * 100:.0f} % of the {format_size(avail)} available "
                        f"({format_size(int(usable))}): {advice}")
