"""Start N client processes, release them together, gather their results, handle faults.

Each client is one OS process (one emulated accelerator). Clients get ready (open files, start
loader threads), mark themselves ready, and block on a pipe; the parent then publishes one start
instant slightly in the future, closes the pipe to wake them all, and every client starts its
clock at exactly that instant. Live progress flows
through shared counters; results come back through a queue. A client that dies or raises ends
the run with its name and cause; Ctrl-C stops every client and keeps what they measured.
"""

from __future__ import annotations

import _signal
import gc
import importlib
import multiprocessing as mp
import os
import queue
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiio import interrupts
from aiio.errors import AiioError, RunFailed, RunInterrupted, StopSignal, Terminated
from aiio.run import pools, procsetup

# The start instant is published this far ahead of time, plus a little per client: every
# client must wake, read it and go back to sleep before it comes.
START_LEAD_NS = 50_000_000
START_LEAD_PER_CLIENT_NS = 100_000
SYNC_LEAD_NS = 20_000_000   # the same for the start of a later stage (`sync`)
READY_TIMEOUT_S = 300.0
CHECK_S = 0.1  # how often the parent looks for clients that died


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
    # The last stage's release on the timeline every host shares (ns after the start, as rank
    # 0 fixed it): decisions every host must make alike read this, never their own clock.
    stage_at_ns: int = 0
    # The run's storage engine (aiio.engines.base.Engine): where the client's readers,
    # writers and metadata calls come from. Configuration only, so it crosses the fork.
    engine: Any = None
    # How many clients run in this one's process (threads of it; 1: a process of its own).
    shares_process: int = 1

    def ready_and_wait(self) -> int:
        """Report ready, wait for the common start instant, return it (monotonic ns)."""
        start_ns = self.ready()
        sleep_until(start_ns)
        return start_ns

    def ready(self) -> int:
        """Report ready and return the common start instant (monotonic ns) as soon as the
        parent has fixed it, a little ahead of it: the caller hands it to the threads that do
        the I/O, which wait for it themselves (`sleep_until`). At the start instant only they
        wake; with hundreds of clients on a few CPUs each extra wake-up there (a thread that
        wakes only to wake another) delays some client's first request inside its window."""
        self._shared.ready[self.slot] = 1
        # Blocks without waking until the parent closes the pipe's other end: a client that
        # polled a flag here woke a thousand times a second, and hundreds of them took the
        # CPUs the parent needed to start the rest.
        while os.read(self._shared.gate_r, 1):
            pass
        return self._shared.start_ns.value

    def sync(self, wait: bool = True) -> int | None:
        """Wait until every client has called sync() as often as this one, then return one
        common start instant for the next stage (monotonic ns); None when the run is stopping.
        With `wait` False it returns the instant without waiting for it, as `ready` does.
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
            self.stage_at_ns = sh.stage_at_ns.value
        if sh.stop.is_set():
            return None
        if wait:
            sleep_until(start_ns)
        return start_ns

    def messages_put(self, message: tuple) -> None:
        """Queue a message for the parent (a result, an error)."""
        self._shared.messages.put(message)

    def add_bytes(self, n: int) -> None:
        self._shared.bytes[self.slot] += n

    def add_units(self, n: int = 1) -> None:
        """Progress in the phase's own unit (steps, files, shards)."""
        self._shared.units[self.slot] += n

    @property
    def stop(self) -> Any:
        """An event set when the run must end early (Ctrl-C, another client failed)."""
        return self._shared.stop

    def wait_for_stop(self) -> None:
        """Block until the run must end early; returns at once if it already must. Reads the
        halt pipe, never `stop.wait()`: see _Shared.halt."""
        while os.read(self._shared.halt_r, 1):
            pass


def sleep_until(instant_ns: int) -> None:
    """Sleep until a monotonic instant; return at once if it has passed."""
    delay = (instant_ns - time.monotonic_ns()) / 1e9
    if delay > 0:
        time.sleep(delay)


class _Shared:
    def __init__(self, ctx: mp.context.BaseContext, n: int) -> None:
        self.messages = ctx.Queue()
        self.ready = ctx.RawArray("b", n)  # 1 once a client waits for the start
        # The start gate: a pipe whose write end only the parent keeps. Closing it wakes every
        # waiting client at once. Not an Event: Event.set() waits for every waiter to wake,
        # and waits forever for one that was killed while waiting (a dead client hung the run).
        self.gate_r, self.gate_w = os.pipe()
        self.stop = ctx.Event()
        # The stop, for clients that block until it comes: the same kind of pipe (see halt).
        self.halt_r, self.halt_w = os.pipe()
        self.start_ns = ctx.RawValue("q", 0)
        self.bytes = ctx.RawArray("q", n)
        self.units = ctx.RawArray("q", n)
        self.cond = ctx.Condition()
        self.arrived = ctx.RawValue("q", 0)     # guarded by cond
        self.release_ns = ctx.RawValue("q", 0)  # guarded by cond
        self.released = ctx.RawValue("q", 0)    # stages released so far; guarded by cond
        self.stage_at_ns = ctx.RawValue("q", 0)  # ClientContext.stage_at_ns; guarded by cond
        self.hosts = ctx.RawValue("b", 0)       # 1: stages are released across hosts
        self.n = n

    def open_gate(self) -> None:
        """Wake every client waiting for the start (the parent, once; later calls do nothing)."""
        if self.gate_w >= 0:
            if not self.start_ns.value:
                # A stop opens the gate before any start was fixed: the clients' windows begin
                # now, or a client that measured nothing reads the time since boot as elapsed.
                self.start_ns.value = time.monotonic_ns()
            os.close(self.gate_w)
            self.gate_w = -1

    def halt(self) -> None:
        """Tell every client to stop: the flag they look at between calls, and the halt pipe
        closed for those blocked until a stop. Clients never sleep in `stop.wait()`: set()
        would wait for every sleeper to wake, forever for one killed while it slept."""
        self.stop.set()
        if self.halt_w >= 0:
            os.close(self.halt_w)
            self.halt_w = -1

    def close(self) -> None:
        self.open_gate()
        os.close(self.gate_r)
        if self.halt_w >= 0:
            os.close(self.halt_w)
            self.halt_w = -1
        os.close(self.halt_r)


def _release(sh: _Shared, stage: int, at_ns: int | None = None) -> None:
    """Start stage `stage` shortly (the caller holds sh.cond); `at_ns` is its instant on the
    hosts' common timeline when rank 0 fixed it, else this host's release after its start."""
    sh.release_ns.value = time.monotonic_ns() + SYNC_LEAD_NS
    sh.stage_at_ns.value = sh.release_ns.value - sh.start_ns.value if at_ns is None else at_ns
    sh.released.value = stage
    sh.cond.notify_all()


ClientFn = Callable[[ClientContext], dict]
_HELD_SIGNALS = {_signal.SIGINT, _signal.SIGTERM}  # held back across each client's fork
TickFn = Callable[[list[int], list[int], float], None]
ReadyFn = Callable[[], None]
StageFn = Callable[[int, int], int]  # (stage, this host's start) -> the stage's common instant


class _Client:
    """One client process, forked directly rather than as a `multiprocessing.Process`: its
    start (pipes, a finalizer and a registry entry per child, made in the parent between
    forks) and its bootstrap in the child (stdin reopened, every after-fork hook) left every
    client about 0.9 MiB of private pages more than a plain fork, nearly a GiB at 1,024
    clients. The parent reaps it here; it dies with the parent (`procsetup.die_with_parent`).

    It runs one client, or several as threads of its own (`per_process` in `run_clients`):
    each process copies about 3 MiB of the parent's pages as the interpreter writes to the
    objects it uses, so a host of a thousand compute-paced clients spends most of its memory
    on processes, not on the clients' own buffers."""

    def __init__(self, fn: ClientFn, ctxs: list[ClientContext]) -> None:
        self.fn, self.ctxs = fn, ctxs
        self.ctx = ctxs[0]
        self.pid = 0
        self._status: int | None = None

    def start(self) -> None:
        parent = os.getpid()
        # Ctrl-C reaches the whole process group, and the client is in ours until it has set
        # itself up: held back across the fork, a Ctrl-C is the parent's alone, and in the
        # client it meets the handlers _client_main sets (a KeyboardInterrupt raised in the
        # child's after-fork hooks printed a traceback under the run's one-line message).
        _signal.pthread_sigmask(_signal.SIG_BLOCK, _HELD_SIGNALS)
        try:
            pid = os.fork()
        except BaseException:
            _signal.pthread_sigmask(_signal.SIG_UNBLOCK, _HELD_SIGNALS)
            raise
        if pid == 0:  # the client: never return into the parent's code
            code = 1
            try:
                code = _client_main(self.fn, self.ctxs, parent)
            finally:
                os._exit(code)
        self.pid = pid
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, _HELD_SIGNALS)

    @property
    def exitcode(self) -> int | None:
        """None while it runs; its exit code, or minus the signal that ended it."""
        if not self.pid:  # never started (its fork failed): waitpid(0) means the whole group
            return 255
        if self._status is None:
            self._status = procsetup.exit_status(self.pid)
        return self._status

    def is_alive(self) -> bool:
        return self.exitcode is None

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def freeze(self) -> None:
        """Stop it where it is (SIGSTOP): it runs no more code before a SIGKILL."""
        self._signal(signal.SIGSTOP)

    def _signal(self, sig: int) -> None:
        if self.is_alive():
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:  # exited between the look and the signal
                pass


def _client_main(fn: ClientFn, ctxs: list[ClientContext], parent_pid: int) -> int:
    """Body of a client process: run the phase for each of its clients, send each one's
    result or error; its exit code.

    Every object a client touches first after the fork costs it the page that object lies on
    (a reference count changes): the set-up below calls what it needs directly."""
    ctx = ctxs[0]
    # Reset the result queue as multiprocessing does after a fork, and only it: running every
    # after-fork hook of the parent's locks and queues cost each client ~0.5 MiB.
    ctx._shared.messages._after_fork()
    # Ctrl-C reaches the whole process group; only the parent handles it, and stops us.
    # `_signal`, not `signal`: the latter's enum conversions touched ~50 pages.
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)  # not the MPI rank's handler: just end
    _signal.pthread_sigmask(_signal.SIG_UNBLOCK, _HELD_SIGNALS)  # held across the fork
    os.close(ctx._shared.gate_w)  # only the parent may hold it, or the gate never opens
    os.close(ctx._shared.halt_w)  # the same for the halt pipe
    procsetup.die_with_parent(parent_pid)
    procsetup.own_session()
    last = f"-{ctxs[-1].index}" if len(ctxs) > 1 else ""
    procsetup.set_process_name(f"aiio-client-{ctx.index}{last}")
    procsetup.exact_timers()
    gc.enable()  # forked with collection off (see _start_all); the parent's objects stay frozen
    if len(ctxs) > 1:
        return _run_together(fn, ctxs)
    try:
        result = fn(ctx)
        _step_back()
        _send(ctx, ("result", ctx.slot, result))
        return 0
    except AiioError as exc:
        _send_and_exit(ctx, {"message": str(exc), "partial": getattr(exc, "partial", None)})
    except BaseException as exc:  # a crash is data: name it and let the parent fail the run
        _send_and_exit(ctx, {"message": f"{type(exc).__name__}: {exc}",
                             "trace": traceback.format_exc(limit=4)})


def _run_together(fn: ClientFn, ctxs: list[ClientContext]) -> int:
    """Run each client as a thread of this process, each sending its own result or error;
    exit once all have sent (1 if any failed). A failed client does not end the process: the
    parent stops the run, and its siblings send what they measured, as separate processes
    would."""
    failed: list[int] = []

    def one(c: ClientContext) -> None:
        try:
            c.messages_put(("result", c.slot, fn(c)))
        except AiioError as exc:
            failed.append(c.slot)
            c.messages_put(("error", c.slot, {"message": str(exc),
                                              "partial": getattr(exc, "partial", None)}))
        except BaseException as exc:  # a crash is data, as in a process of its own
            failed.append(c.slot)
            c.messages_put(("error", c.slot, {"message": f"{type(exc).__name__}: {exc}",
                                              "trace": traceback.format_exc(limit=4)}))

    threads = [threading.Thread(target=one, args=(c,), name=f"client-{c.index}", daemon=True)
               for c in ctxs]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    _step_back()
    messages = ctxs[0]._shared.messages
    messages.close()
    messages.join_thread()  # every client's message written before the process leaves
    return 1 if failed else 0


def _step_back() -> None:
    """Lower this client's priority once it has measured: sending its result and exiting
    must not take CPU from clients still measuring. Its session's (autogroup scheduling
    shares the CPUs between sessions, whatever the nice values inside them) and its own."""
    if os.getsid(0) == os.getpid():  # a session of its own: the parent's is not touched
        try:
            with open("/proc/self/autogroup", "w") as fh:
                fh.write("19")
        except OSError:
            pass  # no autogroup scheduling here
    try:
        os.setpriority(os.PRIO_PROCESS, 0, 19)  # this thread and those it starts
    except OSError:
        pass


def _send(ctx: ClientContext, message: tuple) -> None:
    """Put a message and wait until the queue's thread has written it: the client leaves with
    `os._exit`, which would lose a message still buffered."""
    messages = ctx._shared.messages
    messages.put(message)
    messages.close()
    messages.join_thread()


def _send_and_exit(ctx: ClientContext, payload: dict) -> None:
    """Send an error and leave at once."""
    _send(ctx, ("error", ctx.slot, payload))
    os._exit(1)


class RunAborted(AiioError):
    """Raised by `run_clients` with whatever results the clients managed to send."""

    def __init__(self, message: str, results: dict[int, dict], cause: type[AiioError]) -> None:
        super().__init__(message)
        self.results = results
        self.cause = cause
        self.exit_code = cause.exit_code
        # the clients (numbers) that sent nothing and outlived a SIGKILL: a thread of theirs
        # waits in the kernel on storage that does not answer (`stuck`)
        self.stuck: list[int] = []


def run_clients(n: int, fn: ClientFn, args: Any, on_tick: TickFn | None = None,
                tick_s: float = 0.2, *, first: int = 0, total: int | None = None,
                on_ready: ReadyFn | None = None,
                on_stage: StageFn | None = None,
                on_terminated: Callable[[], float] | None = None,
                rehearsal: tuple[ClientFn, Any] | None = None,
                engine: Any = None, processes: int | None = None) -> tuple[list[dict], int]:
    """Run `fn` in n processes with a synchronized start; returns (results, start_ns).

    Under MPI this host runs clients first..first+n-1 of `total`, and `on_ready` (called once
    every local client is ready, before the start instant is fixed) waits for the other
    hosts, and `on_stage(k, start_ns)` (called once every local client has reached its k-th
    `sync`) waits for every host's clients to reach it and returns the stage's instant on the
    hosts' common timeline (ns after the start, rank 0's); after the MPI launcher's SIGTERM,
    `on_terminated()` says how long the clients may take to send their figures. A
    `rehearsal` (function, arguments) is run here first (`rehearse`). Raises RunAborted
    (cause RunFailed, RunInterrupted or Terminated) carrying the partial results, keyed by
    local slot. Every client gets `engine` (aiio.engines) in its context. The clients run in
    `processes` processes (None: one each), as their threads, spread evenly: no two
    processes' counts differ by more than one.
    """
    procsetup.allow_open_files(n)
    ctx = mp.get_context("fork")
    shared = _Shared(ctx, n)
    total = n if total is None else total
    shared.hosts.value = on_stage is not None
    ctxs = [ClientContext(first + i, total, args, shared, i, engine=engine) for i in range(n)]
    groups = [_Client(fn, ctxs[a:b]) for a, b in spread(n, processes or n)]
    for g in groups:
        for c in g.ctxs:
            c.shares_process = len(g.ctxs)
    procs = [g for g in groups for _ in g.ctxs]  # by slot: the process each client runs in
    results: dict[int, dict] = {}
    errors: dict[int, dict] = {}
    try:
        if rehearsal is not None:
            try:
                # the last client: the one sure to have samples
                rehearse(*rehearsal, total - 1, total, engine)
            except Terminated:  # a SIGTERM's, raised in this thread: it ends the run
                raise
            except Exception:  # it only places memory: the clients meet the cause themselves
                pass
        _start_all(groups)
        _wait_ready(procs, shared, errors, first)
        if on_ready:
            on_ready()
        start_ns = time.monotonic_ns() + START_LEAD_NS + n * START_LEAD_PER_CLIENT_NS
        shared.start_ns.value = start_ns
        shared.open_gate()
        _collect(procs, shared, results, errors, on_tick, tick_s, start_ns, first, on_stage)
    except StopSignal as exc:
        _stop_and_drain(procs, shared, results, errors)
        raise RunAborted(f"{exc}; clients stopped", results, Terminated) from None
    except Terminated as exc:
        # The launcher's SIGKILL follows after a grace: the clients get the part of it that
        # on_terminated gives them to send what they measured, the rest is left to save.
        _stop_and_drain(procs, shared, results, errors, on_terminated() if on_terminated else 0)
        raise RunAborted(str(exc), results, Terminated) from None
    except KeyboardInterrupt:
        _stop_and_drain(procs, shared, results, errors)
        raise RunAborted("interrupted by the user; clients stopped", results,
                         RunInterrupted) from None
    except RunAborted as exc:
        _stop_and_drain(procs, shared, results, errors)
        exc.results = results
        raise
    finally:
        interrupted = _reap_or_kill(groups)
        shared.close()
        aborted = sys.exc_info()[1]  # the RunAborted on its way out, if any
        if isinstance(aborted, RunAborted):
            aborted.stuck = stuck(procs, results, errors, first)
    if interrupted:  # every result is in: keep them, and still stop as asked
        raise RunAborted("interrupted by the user; clients stopped", results, RunInterrupted)
    return [results[i] for i in range(n)], start_ns


def spread(n: int, processes: int) -> list[tuple[int, int]]:
    """n clients' slots over `processes` processes (at most n, at least 1), as (first, end)
    ranges whose sizes differ by one at most: a process is its own session, and the kernel
    shares the CPUs between sessions, so a client alone beside pairs would get twice the CPU
    of each of theirs. No client, no process (an MPI rank with no share of a small point)."""
    if n <= 0:
        return []
    processes = max(1, min(n, processes))
    each, extra = divmod(n, processes)
    bounds = [0]
    for p in range(processes):
        bounds.append(bounds[-1] + each + (p < extra))
    return list(zip(bounds, bounds[1:], strict=False))


def stuck(procs: list, results: dict, errors: dict, first: int = 0) -> list[int]:
    """The clients that sent nothing and are still there after the reap's SIGKILL: a thread
    of theirs waits in a call the kernel cannot take back (a read handed to a FUSE daemon or
    an NFS server that stopped answering) until the storage answers or the mount is aborted."""
    return [first + i for i, p in enumerate(procs)
            if i not in results and i not in errors and p.is_alive()]


REHEARSAL_JOIN_S = 10.0  # how long the rehearsal's threads get to end once it is over


def rehearse(fn: ClientFn, args: Any, index: int, count: int, engine: Any = None) -> dict:
    """Run one client's code in this process, before the clients are forked; its result.

    The interpreter writes to much of what a client runs the first few times it runs it
    (code objects quickened, type and method caches filled, objects made on first use). Done
    once here, those writes land in pages every client then shares; done in each client,
    each one copies the pages. The phase passes arguments that reach nothing outside this
    process (no file opened, no byte moved: Phase.rehearsal). The rehearsal starts at once
    and every thread it starts has ended before the clients are forked."""
    shared = _Shared(mp.get_context("fork"), 1)
    shared.start_ns.value = time.monotonic_ns()
    shared.open_gate()
    before = set(threading.enumerate())
    tasks = os_threads()
    try:
        return fn(ClientContext(index, count, args, shared, 0, engine=engine))
    finally:
        shared.halt()  # wakes the threads that wait for a stop
        deadline = time.monotonic() + REHEARSAL_JOIN_S
        for th in set(threading.enumerate()) - before:
            th.join(max(0.0, deadline - time.monotonic()))
        # and those started without threading (a client's stop watcher), which it does not
        # list: the kernel does. By their ids, not their count: one of the process's own
        # that ended meanwhile would hide one the rehearsal started.
        while os_threads() - tasks and time.monotonic() < deadline:
            time.sleep(0.005)
        shared.close()


def os_threads() -> set[str]:
    """The ids of the threads this process has, as the kernel lists them (threading lists
    only those it started)."""
    return set(os.listdir("/proc/self/task"))


def _stop_and_drain(procs: list, shared: _Shared, results: dict[int, dict],
                    errors: dict[int, dict], timeout_s: float = 10.0) -> None:
    """Tell every client to stop (waking those still at the gate) and keep what they send
    within timeout_s."""
    shared.halt()
    shared.open_gate()
    with interrupts.held("collecting what the clients measured"):  # a second Ctrl-C lost it
        _drain(procs, shared, results, errors, timeout_s)


def _start_all(procs: list) -> None:
    """Fork every client process with the parent's objects frozen out of the garbage collector.

    A collection in a forked child writes to the header of every object it scans, which
    copies each page of the parent's heap into that child: with hundreds of clients that was
    most of their memory. Frozen objects are never scanned, so those pages stay shared. The
    free blocks of the parent's object pools are taken meanwhile (aiio.run.pools), so that a
    client's new objects do not copy the pages those blocks lie on.
    """
    importlib.import_module("numpy.random")  # every client draws from it: import it once
    gc.disable()  # no collection between the freeze and the forks
    held = pools.take_free_blocks()
    gc.freeze()
    try:
        for i, p in enumerate(procs):
            try:
                p.start()
            except OSError as exc:  # the host's process or memory limit, part way through
                started = sum(len(q.ctxs) for q in procs[:i])
                raise RunAborted(f"could not start client {p.ctx.index}: {exc.strerror} "
                                 f"({started} of {sum(len(q.ctxs) for q in procs)} clients "
                                 "started on this host)", {}, RunFailed) from None
    finally:
        pools.give_back(held)
        gc.unfreeze()
        gc.enable()


def _describe_death(i: int, p: _Client, errors: dict[int, dict], first: int = 0) -> str:
    """Why local client slot i is gone, naming it by its global number."""
    n = first + i
    if i in errors:
        return f"client {n} failed: {errors[i]['message']}"
    code = p.exitcode
    who = f"client {n} (pid {p.pid})"
    if len(p.ctxs) > 1:  # every client of the process is gone with it
        who = f"clients {p.ctxs[0].index} to {p.ctxs[-1].index} (pid {p.pid}, one process)"
    if code is not None and code < 0:
        return f"{who} {'were' if len(p.ctxs) > 1 else 'was'} killed by " \
               f"{procsetup.signal_name(-code)}"
    what = "their results" if len(p.ctxs) > 1 else "its result"
    return f"{who} exited with code {code} before sending {what}"


def _handle(msg: tuple, results: dict, errors: dict) -> None:
    kind, i, payload = msg
    if kind == "result":
        results[i] = payload
    elif kind == "error":
        errors[i] = payload
        if payload.get("partial"):
            results[i] = payload["partial"]


def _wait_ready(procs: list, shared: _Shared, errors: dict, first: int = 0) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        try:
            _handle(shared.messages.get(timeout=CHECK_S), {}, errors)
        except queue.Empty:
            pass
        interrupts.pending()
        ready = bytes(shared.ready)
        if ready.count(1) == len(procs):
            return
        # Looking at every process costs a system call each: do it a few times a second,
        # not after every message (with 1,024 clients that was a million calls).
        for i, p in enumerate(procs):
            if not ready[i] and (i in errors or p.exitcode is not None):
                _pull_pending(shared, {}, errors)
                raise RunAborted(_describe_death(i, p, errors, first), {}, RunFailed)
        if time.monotonic() > deadline:
            raise RunAborted(f"only {ready.count(1)} of {len(procs)} clients got ready in "
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
    next_check = time.monotonic() + CHECK_S
    wait_s = 0.05 if on_stage is None else 0.002  # stages wait on this loop across hosts
    while len(results) < len(procs):
        if on_stage is not None:
            _stage_check(shared, on_stage)
        try:
            _handle(shared.messages.get(timeout=wait_s), results, errors)
        except queue.Empty:
            pass
        interrupts.pending()  # a Ctrl-C a finalizer swallowed stops the run all the same
        if errors:
            i = min(errors)
            raise RunAborted(_describe_death(i, procs[i], errors, first), results, RunFailed)
        if time.monotonic() >= next_check:  # as in _wait_ready: not after every message
            next_check = time.monotonic() + CHECK_S
            _check_alive(procs, shared, results, errors, first)
        if on_tick and time.monotonic() >= next_tick:
            next_tick += tick_s
            _tick(on_tick, shared, start_ns)
    if on_tick:
        _tick(on_tick, shared, start_ns)  # the final state, so the bar ends where the run did


def _check_alive(procs: list, shared: _Shared, results: dict, errors: dict,
                 first: int) -> None:
    """Fail the run if a client exited without sending its result."""
    for i, p in enumerate(procs):
        if i not in results and p.exitcode is not None:
            _pull_pending(shared, results, errors)
            if i not in results:
                raise RunAborted(_describe_death(i, p, errors, first), results, RunFailed)


def _stage_check(shared: _Shared, on_stage: StageFn) -> None:
    """Every local client waits at its next `sync`: agree with the other hosts, release."""
    stage = shared.released.value + 1
    if shared.n and shared.arrived.value == stage * shared.n:
        at_ns = on_stage(stage, shared.start_ns.value)
        with shared.cond:
            _release(shared, stage, at_ns)


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


REAP_GRACE_S = 2.0  # how long the clients get to exit on their own, all together


def _reap(procs: list) -> None:
    """Wait for the clients to exit, then kill those left, together: a client stuck in a call
    never sees the stop, and waiting for each in turn held a Ctrl-C 2 s per stuck client."""
    _join_all(procs, REAP_GRACE_S)
    _kill_together(procs)


def _reap_or_kill(procs: list) -> bool:
    """Reap the clients; at a Ctrl-C meanwhile kill those left at once. True after one."""
    try:
        _reap(procs)
    except KeyboardInterrupt:
        # one more while they are killed would leave them and lose what they sent
        with interrupts.held("stopping the clients"):
            _kill_together(procs)
        return True
    return False


def _kill_together(procs: list) -> None:
    """Kill the clients left as one: each is stopped first, so none runs on (and sees a
    sibling gone, or does more I/O) while the others are being killed one call at a time."""
    for p in procs:
        p.freeze()
    for p in procs:
        p.kill()
    _join_all(procs, REAP_GRACE_S)


def _join_all(procs: list, timeout_s: float) -> None:
    """Reap the clients that exit within `timeout_s`, all under one deadline."""
    deadline = time.monotonic() + timeout_s
    alive = [p for p in procs if p.is_alive()]
    while alive and time.monotonic() < deadline:
        time.sleep(0.01)
        alive = [p for p in alive if p.is_alive()]
