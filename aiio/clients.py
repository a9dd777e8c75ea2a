"""Start N client processes, release them together, gather their results, handle faults.

Each client is one OS process (one emulated accelerator). Clients get ready (open files, start
loader threads), report ready, and wait; the parent then publishes one start instant slightly
in the future and every client starts its clock at exactly that instant. Live progress flows
through shared counters; results come back through a queue. A client that dies or raises ends
the run with its name and cause; Ctrl-C stops every client and keeps what they measured.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiio.errors import AiioError, RunFailed, RunInterrupted, Terminated

START_LEAD_NS = 50_000_000  # the start instant is published this far ahead of time
SYNC_LEAD_NS = 20_000_000   # the same for the start of a later stage (`sync`)
READY_TIMEOUT_S = 300.0


@dataclass
class ClientContext:
    """What a client process gets: its number, the shared state, and the phase's arguments.

    `index` and `count` are global (over every host of an MPI run); `slot` is the client's
    place among this host's clients.
    """

    index: int
    count: int
    args: Any
    _shared: Any
    slot: int = 0
    _syncs: int = 0

    def ready_and_wait(self) -> int:
        """Report ready, wait for the common start instant, return it (monotonic ns)."""
        self._shared.messages.put(("ready", self.slot, None))
        while not self._shared.go.value:
            time.sleep(0.001)
        start_ns = self._shared.start_ns.value
        delay = (start_ns - time.monotonic_ns()) / 1e9
        if delay > 0:
            time.sleep(delay)
        return start_ns

    def sync(self) -> int | None:
        """Wait until every client has called sync() as often as this one, then return one
        common start instant for the next stage (monotonic ns); None when the run is stopping.
        """
        sh = self._shared
        self._syncs += 1
        with sh.cond:
            sh.arrived.value += 1
            # Alone, the last local client releases the stage; across hosts the parent does,
            # once every host's clients have arrived (run_clients' `on_stage`).
            if sh.arrived.value == self._syncs * sh.n and not sh.hosts.value:
                _release(sh, self._syncs)
            while sh.released.value < self._syncs and not sh.stop.is_set():
                sh.cond.wait(0.1)
            start_ns = sh.release_ns.value
        if sh.stop.is_set():
            return None
        delay = (start_ns - time.monotonic_ns()) / 1e9
        if delay > 0:
            time.sleep(delay)
        return start_ns

    def add_bytes(self, n: int) -> None:
        self._shared.bytes[self.slot] += n

    def add_units(self, n: int = 1) -> None:
        """Progress in the phase's own unit (steps, files, shards)."""
        self._shared.units[self.slot] += n

    @property
    def stop(self) -> Any:
        """An event set when the run must end early (Ctrl-C, another client failed)."""
        return self._shared.stop


class _Shared:
    def __init__(self, ctx: mp.context.BaseContext, n: int) -> None:
        self.messages = ctx.Queue()
        # A plain flag, not an Event: Event.set() waits for every waiter to wake, and waits
        # forever for one that was killed while waiting (a dead client hung the run).
        self.go = ctx.RawValue("b", 0)
        self.stop = ctx.Event()
        self.start_ns = ctx.RawValue("q", 0)
        self.bytes = ctx.RawArray("q", n)
        self.units = ctx.RawArray("q", n)
        self.cond = ctx.Condition()
        self.arrived = ctx.RawValue("q", 0)     # guarded by cond
        self.release_ns = ctx.RawValue("q", 0)  # guarded by cond
        self.released = ctx.RawValue("q", 0)    # stages released so far; guarded by cond
        self.hosts = ctx.RawValue("b", 0)       # 1: stages are released across hosts
        self.n = n


def _release(sh: _Shared, stage: int) -> None:
    """Start stage `stage` shortly (the caller holds sh.cond)."""
    sh.release_ns.value = time.monotonic_ns() + SYNC_LEAD_NS
    sh.released.value = stage
    sh.cond.notify_all()


ClientFn = Callable[[ClientContext], dict]
TickFn = Callable[[list[int], list[int], float], None]
ReadyFn = Callable[[], None]
StageFn = Callable[[int], None]


def _client_main(fn: ClientFn, ctx: ClientContext) -> None:
    """Body of a client process: run the phase, send the result or the error."""
    # Ctrl-C reaches the whole process group; only the parent handles it, and stops us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the MPI rank's handler: just end
    _die_with_parent()
    _own_session()
    _set_process_name(f"aiio-client-{ctx.index}")
    try:
        result = fn(ctx)
        ctx._shared.messages.put(("result", ctx.slot, result))
    except AiioError as exc:
        _send_and_exit(ctx, {"message": str(exc), "partial": getattr(exc, "partial", None)})
    except BaseException as exc:  # a crash is data: name it and let the parent fail the run
        _send_and_exit(ctx, {"message": f"{type(exc).__name__}: {exc}",
                             "trace": traceback.format_exc(limit=4)})


def _die_with_parent() -> None:
    """Ask Linux to kill this client if its parent dies (a killed MPI rank must not leave
    clients running, holding the launcher's output pipes open)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    parent = mp.parent_process()
    if parent is not None and os.getppid() != parent.pid:
        os._exit(1)  # the parent died before the request took effect


def _own_session() -> None:
    """Run in a session of our own, as each of fio's job processes does.

    With the kernel's autogroup scheduling every session gets its own share of the CPUs; a
    client left in the caller's session would share one with everything started there, and
    lose CPU to fio's jobs in a side-by-side comparison. The parent stops clients through
    shared state and the kernel kills them with it (PDEATHSIG), so no signal from the
    terminal's process group is needed.
    """
    try:
        os.setsid()
    except OSError:
        pass  # already a session leader


def _set_process_name(name: str) -> None:
    """Name the process as top and ps show it (Linux comm, 15 characters at most)."""
    try:
        with open("/proc/self/comm", "w") as fh:
            fh.write(name[:15])
    except OSError:
        pass


def _send_and_exit(ctx: ClientContext, payload: dict) -> None:
    """Send an error and leave at once; flush the queue first or the message is lost."""
    messages = ctx._shared.messages
    messages.put(("error", ctx.slot, payload))
    messages.close()
    messages.join_thread()
    os._exit(1)


class RunAborted(AiioError):
    """Raised by `run_clients` with whatever results the clients managed to send."""

    def __init__(self, message: str, results: dict[int, dict], cause: type[AiioError]) -> None:
        super().__init__(message)
        self.results = results
        self.cause = cause
        self.exit_code = cause.exit_code


def run_clients(n: int, fn: ClientFn, args: Any, on_tick: TickFn | None = None,
                tick_s: float = 0.2, *, first: int = 0, total: int | None = None,
                on_ready: ReadyFn | None = None,
                on_stage: StageFn | None = None) -> tuple[list[dict], int]:
    """Run `fn` in n processes with a synchronized start; returns (results, start_ns).

    Under MPI this host runs clients first..first+n-1 of `total`, and `on_ready` (called once
    every local client is ready, before the start instant is fixed) waits for the other
    hosts, and `on_stage(k)` (called once every local client has reached its k-th `sync`)
    waits for every host's clients to reach it. Raises RunAborted (cause RunFailed,
    RunInterrupted or Terminated) carrying the partial results, keyed by local slot.
    """
    ctx = mp.get_context("fork")
    shared = _Shared(ctx, n)
    total = n if total is None else total
    shared.hosts.value = on_stage is not None
    procs = [ctx.Process(target=_client_main,
                         args=(fn, ClientContext(first + i, total, args, shared, i)),
                         name=f"aiio-client-{first + i}", daemon=True) for i in range(n)]
    results: dict[int, dict] = {}
    errors: dict[int, dict] = {}
    try:
        for p in procs:
            p.start()
        _wait_ready(procs, shared, errors, first)
        if on_ready:
            on_ready()
        start_ns = time.monotonic_ns() + START_LEAD_NS
        shared.start_ns.value = start_ns
        shared.go.value = 1
        _collect(procs, shared, results, errors, on_tick, tick_s, start_ns, first, on_stage)
    except Terminated as exc:
        # The launcher's SIGKILL may follow within a fraction of a second, and it signals the
        # clients too: keep what arrived and leave at once, so the partial result gets saved.
        for p in procs:
            if p.is_alive():
                p.kill()
        raise RunAborted(str(exc), results, Terminated) from None
    except KeyboardInterrupt:
        shared.stop.set()
        shared.go.value = 1
        _drain(procs, shared, results, errors, timeout_s=10.0)
        raise RunAborted("interrupted by the user; clients stopped", results,
                         RunInterrupted) from None
    except RunAborted as exc:
        shared.stop.set()
        shared.go.value = 1
        _drain(procs, shared, results, errors, timeout_s=10.0)
        exc.results = results
        raise
    finally:
        _reap(procs)
    return [results[i] for i in range(n)], start_ns


def _describe_death(i: int, p: mp.Process, errors: dict[int, dict], first: int = 0) -> str:
    """Why local client slot i is gone, naming it by its global number."""
    n = first + i
    if i in errors:
        return f"client {n} failed: {errors[i]['message']}"
    code = p.exitcode
    if code is not None and code < 0:
        name = signal.Signals(-code).name
        return f"client {n} (pid {p.pid}) was killed by {name}"
    return f"client {n} (pid {p.pid}) exited with code {code} before sending its result"


def _handle(msg: tuple, results: dict, errors: dict, ready: set | None = None) -> None:
    kind, i, payload = msg
    if kind == "ready" and ready is not None:
        ready.add(i)
    elif kind == "result":
        results[i] = payload
    elif kind == "error":
        errors[i] = payload
        if payload.get("partial"):
            results[i] = payload["partial"]


def _wait_ready(procs: list, shared: _Shared, errors: dict, first: int = 0) -> None:
    ready: set[int] = set()
    deadline = time.monotonic() + READY_TIMEOUT_S
    while len(ready) < len(procs):
        try:
            _handle(shared.messages.get(timeout=0.1), {}, errors, ready)
        except queue.Empty:
            pass
        for i, p in enumerate(procs):
            if i not in ready and (i in errors or (p.exitcode is not None)):
                _pull_pending(shared, {}, errors)
                raise RunAborted(_describe_death(i, p, errors, first), {}, RunFailed)
        if time.monotonic() > deadline:
            raise RunAborted(f"only {len(ready)} of {len(procs)} clients got ready in "
                             f"{READY_TIMEOUT_S:.0f} s", {}, RunFailed)


def _pull_pending(shared: _Shared, results: dict, errors: dict) -> None:
    while True:
        try:
            _handle(shared.messages.get(timeout=0.05), results, errors)
        except queue.Empty:
            return


def _collect(procs: list, shared: _Shared, results: dict, errors: dict,
             on_tick: TickFn | None, tick_s: float, start_ns: int, first: int = 0,
             on_stage: StageFn | None = None) -> None:
    next_tick = time.monotonic() + tick_s
    wait_s = 0.05 if on_stage is None else 0.002  # stages wait on this loop across hosts
    while len(results) < len(procs):
        if on_stage is not None:
            _stage_check(shared, on_stage)
        try:
            _handle(shared.messages.get(timeout=wait_s), results, errors)
        except queue.Empty:
            pass
        if errors:
            i = min(errors)
            raise RunAborted(_describe_death(i, procs[i], errors, first), results, RunFailed)
        for i, p in enumerate(procs):
            if i not in results and p.exitcode is not None:
                _pull_pending(shared, results, errors)
                if i not in results:
                    raise RunAborted(_describe_death(i, p, errors, first), results, RunFailed)
        if on_tick and time.monotonic() >= next_tick:
            next_tick += tick_s
            _tick(on_tick, shared, start_ns)
    if on_tick:
        _tick(on_tick, shared, start_ns)  # the final state, so the bar ends where the run did


def _stage_check(shared: _Shared, on_stage: StageFn) -> None:
    """Every local client waits at its next `sync`: agree with the other hosts, release."""
    stage = shared.released.value + 1
    if shared.n and shared.arrived.value == stage * shared.n:
        on_stage(stage)
        with shared.cond:
            _release(shared, stage)


def _tick(on_tick: TickFn, shared: _Shared, start_ns: int) -> None:
    elapsed = (time.monotonic_ns() - start_ns) / 1e9
    on_tick(list(shared.bytes), list(shared.units), elapsed)


def _drain(procs: list, shared: _Shared, results: dict, errors: dict, timeout_s: float) -> None:
    """After a stop: give live clients time to send their partial results."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        alive = [i for i, p in enumerate(procs)
                 if i not in results and i not in errors and p.exitcode is None]
        if not alive:
            break
        try:
            _handle(shared.messages.get(timeout=0.1), results, errors)
        except queue.Empty:
            pass
    _pull_pending(shared, results, errors)


def _reap(procs: list) -> None:
    for p in procs:
        if p.is_alive():
            p.join(timeout=2.0)
        if p.is_alive():
            p.kill()
            p.join(timeout=2.0)
