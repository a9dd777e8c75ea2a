"""Run a phase's clients on every host: split the count, start them together, gather them.

On one host this is `run_clients` itself. Under MPI each rank runs its share of the clients
with `run_clients`; once every client on every host is ready the ranks meet in a barrier, and
each rank then fixes its clients' start at its own clock's `START_LEAD` after leaving it. Clocks
of different hosts are never compared: each client's figures are relative to its own host's
start instant. What this relies on: the hosts leave the barrier within its release skew plus
the 0.1 ms polling spin — well under a millisecond on a cluster network, against series
buckets of 0.1 s and runs of seconds — so first-done and last-done over all clients are exact
to within that skew.

A worker's failure (a client dies, the memory check refuses) reaches rank 0 as its reply; rank 0
then stops every host, keeps what every host measured, and names the host and rank.
"""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass
from typing import Any

from aiio.errors import AiioError, RunFailed, RunInterrupted, Terminated
from aiio.phases import get_phase
from aiio.run import memcheck
from aiio.run.clients import SYNC_LEAD_NS, RunAborted, TickFn, run_clients
from aiio.run.comm import POLL_S, LocalComm, MpiComm, RankLost, world
from aiio.run.sysinfo import Monitor, collect_host, collect_software
from aiio.s3.location import is_s3
from aiio.storage.target import Target, TargetInfo, probe

STOP_DRAIN_S = 20.0   # how long rank 0 waits for the other hosts' partial results
TERM_WAIT_S = 0.05    # after SIGTERM: time for the live ranks to say so (SIGKILL is close)
TERM_SEND_S = 0.1     # after the ranks' drain (comm.TERM_DRAIN_S): time for their replies
WORKER_TICK_S = 0.25
_RUNS = itertools.count(1)


def split_clients(total: int, ranks: int) -> list[int]:
    """Clients per rank: as even as possible, the first ranks taking one more."""
    base, extra = divmod(total, ranks)
    return [base + (1 if r < extra else 0) for r in range(ranks)]


def first_numbers(split: list[int]) -> list[int]:
    """The global number of each rank's first client."""
    return [sum(split[:r]) for r in range(len(split))]


@dataclass
class Share:
    """What one rank gets to run: its clients of one run."""

    run: int
    phase: str
    args: Any
    target: str
    first: int
    count: int
    total: int
    client_bytes: Any  # memory its clients need (aiio.run.memcheck.Need)
    engine: Any = None  # the run's storage engine (aiio.engines): configuration, no connection


def host_entry(comm: LocalComm | MpiComm, info: TargetInfo) -> dict[str, Any]:
    """This rank's identity, machine and view of the target."""
    env = collect_host()
    env.update(collect_software())
    env["cpu_affinity"] = len(os.sched_getaffinity(0))  # CPUs this rank (and its clients) may use
    return {"rank": comm.rank, "host": comm.host, "environment": env,
            "target": info.to_dict()}


def _probe(target: str) -> TargetInfo:
    """This host's view of the target; an s3:// prefix is one service seen from every host."""
    if is_s3(target):
        from aiio.s3.backend import describe
        return describe(target)
    return probe(Target(target))


# --- a worker's share --------------------------------------------------------------------

def serve_share(share: Share, report: Any = None) -> dict[str, Any]:
    """On a worker: run this rank's clients with rank 0's start, report, and return them."""
    comm = world()
    phase = get_phase(share.phase)
    info = _probe(share.target)
    monitor = Monitor(info.device)
    entry = host_entry(comm, info)
    results: dict[int, dict] = {}
    try:
        memcheck.check_need(share.client_bytes, share.count, comm.host)
        phase.before_fork(share.args)
        got, _ = run_clients(share.count, phase.client, share.args, _worker_tick(share, monitor),
                             WORKER_TICK_S, first=share.first, total=share.total,
                             on_ready=lambda: _worker_ready(share),
                             on_stage=lambda k, _start: _worker_stage(share, k),
                             on_terminated=lambda: comm.term_drain_s,
                             rehearsal=rehearsal_for(phase, share.args, share.count),
                             engine=share.engine,
                             processes=phase.client_processes(share.args, share.count))
        results = {share.first + i: r for i, r in enumerate(got)}
        entry.update(status="ok", error=None)
    except RunAborted as exc:
        results = {share.first + i: r for i, r in exc.results.items()}
        status = "interrupted" if exc.exit_code == RunInterrupted.exit_code else "failed"
        entry.update(status=status, error=str(exc))
        entry["stuck"] = exc.stuck  # numbered as the run numbers them (the clients' index)
    except AiioError as exc:
        entry.update(status="failed", error=str(exc))
    entry["monitor"] = monitor.finish()
    entry["results"] = results
    return entry


def _stop_from_root(share: Share) -> None:
    """Raise RunAborted when rank 0 says stop for this run (older runs' messages are stale)."""
    while (msg := world().from_root()) is not None:
        kind, run, reason, interrupted = msg
        if run != share.run:
            continue
        if kind == "stop":
            raise RunAborted(reason, {}, RunInterrupted if interrupted else RunFailed)
    return None


def _worker_ready(share: Share) -> None:
    """All local clients are ready: tell rank 0, wait for its go, then the barrier."""
    comm = world()
    comm.to_root("ready", share.run)
    while True:
        msg = comm.from_root()
        if msg is not None and msg[1] == share.run:
            if msg[0] == "go":
                break
            raise RunAborted(msg[2], {}, RunInterrupted if msg[3] else RunFailed)
        time.sleep(0.001)
    comm.barrier()


def _worker_stage(share: Share, stage: int) -> int:
    """Every local client reached sync number `stage`: tell rank 0, wait for its go; returns
    the stage's instant on the hosts' common timeline (rank 0's). The hosts start the stage
    within rank 0's message latency plus a 1 ms poll of each other."""
    comm = world()
    comm.to_root("stage", (share.run, stage))
    while True:
        msg = comm.from_root()
        if msg is not None and msg[1] == share.run:
            if msg[0] == "stage" and msg[2] == stage:
                return int(msg[3])
            if msg[0] == "stop":
                raise RunAborted(msg[2], {}, RunInterrupted if msg[3] else RunFailed)
            if msg[0] == "done":  # rank 0's clients ended: none of them comes to this stage
                raise RunAborted(f"its clients wait at barrier {stage} of the run, which the "
                                 f"clients of {comm.where(0)} ended before reaching", {},
                                 RunFailed)
        time.sleep(0.001)


def _worker_tick(share: Share, monitor: Monitor) -> TickFn:
    def tick(nbytes: list[int], units: list[int], elapsed: float) -> None:
        monitor.sample()
        world().to_root("tick", (share.run, nbytes, units))
        _stop_from_root(share)
    return tick


# --- rank 0 ------------------------------------------------------------------------------

class _Live:
    """Rank 0's view of a run on every host: readiness, live counters, replies."""

    def __init__(self, comm: MpiComm, run: int, split: list[int], on_tick: TickFn | None,
                 tick_s: float) -> None:
        self.comm, self.run, self.split = comm, run, split
        self.firsts = first_numbers(split)
        self.on_tick, self.tick_s = on_tick, tick_s
        self.ready: set[int] = set()
        self.stages = [0] * len(split)
        self.bytes = [0] * sum(split)
        self.units = [0] * sum(split)
        self.elapsed = 0.0
        self.next_tick = 0.0

    def handle(self, rank: int, kind: str, payload: Any) -> None:
        if kind == "ready" and payload == self.run:
            self.ready.add(rank)
        elif kind == "stage" and payload[0] == self.run:
            self.stages[rank] = payload[1]
        elif kind == "tick" and payload[0] == self.run:
            lo = self.firsts[rank]
            self.bytes[lo:lo + len(payload[1])] = payload[1]
            self.units[lo:lo + len(payload[2])] = payload[2]

    def poll(self) -> None:
        """Take the workers' messages; a worker's failure becomes RunAborted naming it."""
        try:
            self.comm.poll_workers(self.handle)
        except RankLost as exc:
            raise RunAborted(str(exc), {}, RunFailed) from None
        for rank, (kind, payload) in sorted(self.comm.replied().items()):
            if kind == "error":
                raise RunAborted(f"{self.comm.where(rank)}: {payload['message']}", {}, RunFailed)
            if payload["status"] != "ok":
                cause = RunInterrupted if payload["status"] == "interrupted" else RunFailed
                raise RunAborted(f"{self.comm.where(rank)}: {payload['error']}", {}, cause)

    def wait_ready(self) -> None:
        """Rank 0's clients are ready: wait for every host's, then release them together."""
        while len(self.ready) < self.comm.size - 1:
            self.poll()
            time.sleep(0.001)
        self.comm.tell_workers(("go", self.run, "", False))
        try:
            self.comm.barrier()
        except RankLost as exc:
            raise RunAborted(str(exc), {}, RunFailed) from None

    def wait_stage(self, stage: int, start_ns: int) -> int:
        """Rank 0's clients reached sync number `stage`: wait for every host that has clients,
        then release the stage on all of them; returns its instant on the hosts' common
        timeline (ns after the start), which every host's clients judge by."""
        with_clients = [r for r in range(1, self.comm.size) if self.split[r]]
        while any(self.stages[r] < stage for r in with_clients):
            self.poll()
            self._never_coming(stage, with_clients)
            time.sleep(0.001)
        at_ns = time.monotonic_ns() + SYNC_LEAD_NS - start_ns
        self.comm.tell_workers(("stage", self.run, stage, at_ns), with_clients)
        return at_ns

    def _never_coming(self, stage: int, ranks: list[int]) -> None:
        """A host whose clients all ended short of `stage` never reaches it: fail, naming it,
        rather than wait for it forever."""
        replied = self.comm.replied()
        for r in ranks:
            if self.stages[r] < stage and r in replied:
                raise RunAborted(f"{self.comm.where(r)}: its clients ended before barrier "
                                 f"{stage} of the run, where the clients of "
                                 f"{self.comm.where(0)} wait", {}, RunFailed)

    def tick(self, nbytes: list[int], units: list[int], elapsed: float) -> None:
        """Rank 0's own tick: merge its counters with the hosts' and show all of them."""
        self.poll()
        self.bytes[:len(nbytes)] = nbytes
        self.units[:len(units)] = units
        self.elapsed = elapsed
        self._show()

    def _show(self) -> None:
        now = time.monotonic()
        if self.on_tick and now >= self.next_tick:
            self.next_tick = now + self.tick_s
            self.on_tick(list(self.bytes), list(self.units), self.elapsed)

    def wait_done(self, t0: float) -> None:
        """Rank 0's clients are done: keep the live view going until every host replies. A
        host whose clients wait at a stage learns that rank 0's never come to it."""
        self.comm.tell_workers(("done", self.run, "", False))
        while len(self.comm.replied()) < self.comm.size - 1:
            self.poll()
            self.elapsed = time.monotonic() - t0
            self._show()
            time.sleep(POLL_S)
        self.poll()


def run_everywhere(phase_name: str, args: Any, target: str, split: list[int], client_bytes: Any,
                   on_tick: TickFn | None = None, tick_s: float = 0.2,
                   engine: Any = None) -> tuple[list[dict], list[dict], int]:
    """Run the phase's clients on every rank; returns (every client's result in number
    order, each worker host's entry, rank 0's start instant). Raises RunAborted with every
    host's partial results (and `.hosts`) when any client or host fails."""
    comm = world()
    phase = get_phase(phase_name)
    total = sum(split)
    phase.before_fork(args)  # this host's; each worker's in serve_share
    if comm.size == 1:
        results, start_ns = run_clients(total, phase.client, args, on_tick, tick_s,
                                        rehearsal=rehearsal_for(phase, args, total),
                                        engine=engine,
                                        processes=phase.client_processes(args, total))
        return results, [], start_ns
    live = _Live(comm, next(_RUNS), split, on_tick, tick_s)
    firsts = first_numbers(split)
    comm.dispatch(serve_share, [Share(live.run, phase_name, args, target, firsts[r], split[r],
                                      total, client_bytes, engine) for r in range(comm.size)])
    local: dict[int, dict] = {}
    try:
        got, start_ns = run_clients(split[0], phase.client, args, live.tick, tick_s,
                                    total=total, on_ready=live.wait_ready,
                                    on_stage=live.wait_stage,
                                    on_terminated=lambda: _drain_after_sigterm(comm),
                                    rehearsal=rehearsal_for(phase, args, split[0]),
                                    engine=engine,
                                    processes=phase.client_processes(args, split[0]))
        local = dict(enumerate(got))
        live.wait_done(time.monotonic() - live.elapsed)
    except RunAborted as exc:
        local = local or dict(exc.results)
        raise _stopped(live, exc, local) from None
    except (RankLost, Terminated) as exc:
        raise _stopped(live, RunAborted(str(exc), {}, type(exc)), local) from None
    except KeyboardInterrupt:
        raise _stopped(live, RunAborted("interrupted by the user; clients stopped", {},
                                        RunInterrupted), local) from None
    entries = [payload for _, (_, payload) in sorted(comm.replied().items())]
    return _merge(local, entries), entries, start_ns


REHEARSE_FROM = 64  # local clients: below, the memory a rehearsal places is not worth its time


def rehearsal_for(phase: Any, args: Any, clients: int) -> tuple[Any, Any] | None:
    """The phase's rehearsal (clients.rehearse) for a host forking `clients` clients: only from
    REHEARSE_FROM on. It costs every run about 0.25 s before its clients start, and saves
    about 0.4 MiB per client (docs/PERFORMANCE.md, Density): 25 MiB at 64 clients, nothing
    worth a quarter second at 2."""
    return phase.rehearsal(args) if clients >= REHEARSE_FROM else None


def _merge(local: dict[int, dict], entries: list[dict]) -> list[dict]:
    """Every client's result, numbered globally and tagged with its rank and host."""
    comm = world()
    merged = {n: _tag(r, 0, comm.host) for n, r in local.items()}
    for e in entries:
        for n, r in e.pop("results", {}).items():
            merged[n] = _tag(r, e["rank"], e["host"])
    return [merged[n] for n in sorted(merged)]


def _tag(result: dict, rank: int, host: str) -> dict:
    result.setdefault("host", host)
    result["rank"] = rank
    return result


def _stopped(live: _Live, exc: RunAborted, local: dict[int, dict]) -> RunAborted:
    """Stop every host, gather what each measured, and say who failed."""
    comm = live.comm
    if exc.cause is Terminated:
        message, cause = _after_sigterm(comm, live.run)
    else:
        interrupted = exc.exit_code == RunInterrupted.exit_code
        comm.tell_workers(("stop", live.run, f"stopped because of {exc}", interrupted))
        origin = str(exc) if str(exc).startswith("host ") else f"{comm.where(0)}: {exc}"
        message, cause = origin, exc.cause
        _drain_workers(live)
        message += _unheard(comm)
    entries = [p for _, (k, p) in sorted(comm.replied().items()) if k == "reply"]
    out = RunAborted(message, {}, cause)
    # every host's clients stuck in the kernel, this one's and those each worker reaped
    out.stuck = sorted({*exc.stuck, *(n for e in entries for n in e.pop("stuck", []))})
    out.results = dict(enumerate(_merge(local, entries)))
    out.hosts = entries
    return out


def _unheard(comm: Any) -> str:
    """What the result cannot say of the hosts that sent no reply within the drain and are
    not lost (a lost one is named as such): which of their clients are stuck, if any."""
    # a host that answered with its error is named by it, not as one that sent nothing
    answered = {r for r, (kind, _) in comm.replied().items() if kind in ("reply", "error")}
    silent = [r for r in range(1, comm.size) if r not in answered and r not in comm.lost]
    if not silent:
        return ""
    names = ", ".join(comm.where(r) for r in silent)
    return (f"; {names} sent no reply within {STOP_DRAIN_S:g} s: its clients' figures, and "
            "which of them are stuck in the kernel, could not be learnt")


def _drain_workers(live: _Live) -> None:
    """Wait (bounded) for every worker's partial reply; skip ranks that are gone."""
    deadline = time.monotonic() + STOP_DRAIN_S
    comm = live.comm
    while len(set(comm.replied()) | comm.lost) < comm.size - 1 and time.monotonic() < deadline:
        try:
            comm.poll_workers(live.handle)
        except RankLost:
            pass  # already named; the others' results still count
        time.sleep(POLL_S)


def _silent_after_sigterm(comm: MpiComm) -> set[int]:
    """The ranks that do not say they got the launcher's SIGTERM too within TERM_WAIT_S:
    such a rank has probably died first. Time is short (SIGKILL follows): the wait is
    counted from the SIGTERM, so asking again (the drain, then the message) waits no longer."""
    deadline = (comm.terminated_at or time.monotonic()) + TERM_WAIT_S
    silent = set(range(1, comm.size)) - set(comm.replied())
    while silent and time.monotonic() < deadline:
        try:
            comm.poll_workers()
        except RankLost:
            pass
        silent -= set(comm.replied())
        time.sleep(POLL_S)
    return silent


def _drain_after_sigterm(comm: MpiComm) -> float:
    """How long rank 0's clients get to send their figures after the SIGTERM: none when a rank
    died (the launcher then sends SIGKILL within 250 ms: saving comes first)."""
    return 0.0 if _silent_after_sigterm(comm) else comm.term_drain_s


def _after_sigterm(comm: MpiComm, run: int) -> tuple[str, type[AiioError]]:
    """The launcher is ending the job: the message, after taking the partial figures the
    other ranks send in time, unless one of them probably died."""
    silent = _silent_after_sigterm(comm)
    if not silent:
        _wait_partial_replies(comm)
    # who sent it cannot be told: the launcher ending the job, or a kill of this rank alone
    base = "ended by SIGTERM"
    if not silent:
        return (f"{base} on every rank, as the MPI launcher or a batch system ends a job: it "
                "was cancelled or interrupted", RunInterrupted)
    # A rank alive that got no SIGTERM (sent to this rank alone, not by the launcher) would
    # run on while this one waits for it at the end; told now, without waiting for it.
    comm.tell_workers(("stop", run, f"{comm.where(0)} ended by SIGTERM", False), sorted(silent))
    names = ", ".join(comm.where(r) for r in sorted(silent))
    return (f"{base}; {names} said nothing of one: it died (the launcher's own message then "
            "names the rank that ended), or the signal came to this rank alone", RunFailed)


def _wait_partial_replies(comm: MpiComm) -> None:
    """After SIGTERM every rank gives its clients comm.term_drain_s to send their figures,
    then replies with them: take the replies that come within that time (and a little)."""
    if comm.terminated_at is None or comm.term_drain_s <= 0:
        return
    deadline = comm.terminated_at + comm.term_drain_s + TERM_SEND_S
    while time.monotonic() < deadline:
        try:
            comm.poll_workers()
        except RankLost:
            pass
        waiting = [r for r in range(1, comm.size)
                   if comm.replied().get(r, ("",))[0] != "reply" and r not in comm.lost]
        if not waiting:
            return
        time.sleep(POLL_S)


def host_figures(entries: list[dict], clients: list[dict], split: list[int],
                 summarize: Any) -> list[dict]:
    """Per host (keyed by rank, since ranks may share a hostname): its clients' numbers and
    the phase's aggregate over them (histograms left to the clients, which keep them)."""
    comm = world()
    have = {e["rank"] for e in entries}
    entries = entries + [_missing(comm, r) for r in range(len(split)) if r not in have]
    entries.sort(key=lambda e: e["rank"])
    for e in entries:
        mine = [c for c in clients if c.get("rank", 0) == e["rank"]]
        e["clients"] = split[e["rank"]]
        e["client_numbers"] = [c["client"] for c in mine if "client" in c]
        agg = summarize(mine) if mine else {}
        e["aggregate"] = {k: v for k, v in agg.items() if k != "histograms"}
    return entries


def _missing(comm: LocalComm | MpiComm, rank: int) -> dict[str, Any]:
    """The entry of a rank that sent no figures: what it said last, if anything."""
    said = comm.replied().get(rank) if comm.mpi else None
    if said and said[0] == "error":
        return {"rank": rank, "host": comm.hosts[rank], "status": "failed",
                "error": said[1]["message"]}
    return {"rank": rank, "host": comm.hosts[rank], "status": "lost",
            "error": "sent nothing: it died, hung or was killed"}


def binding_warning(entry: dict) -> dict[str, str] | None:
    """MPI launchers often bind each rank to a core or socket; its forked clients inherit the
    binding and then share those CPUs, which caps what the host can drive."""
    env = entry.get("environment", {})
    usable, cpus = env.get("cpu_affinity", 0), env.get("cpus", 0)
    if entry.get("clients", 0) and 0 < usable < cpus:
        return {"code": "rank_cpu_bound", "message": f"host {entry['host']} (rank "
                f"{entry['rank']}): its {entry['clients']} clients could use only {usable} of "
                f"{cpus} CPUs (the launcher bound the rank): launch with --bind-to none "
                "(Open MPI) or --cpu-bind=none (srun)", "rank": entry["rank"]}
    return None


def target_info(entry: dict) -> TargetInfo:
    return TargetInfo(**entry["target"])
