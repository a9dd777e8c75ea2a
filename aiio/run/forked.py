"""Work spread over forked processes, none of which can leave the parent waiting by dying.

Each worker gets a fixed share of the items (every n-th, so the shares stay even), computes
fn(item) for each and sends each result through a pipe of its own. The parent watches every
pipe with a poll that times out, so a worker that dies (SIGKILL, the OOM killer, a SIGTERM)
is seen at once by its pipe's end and named by its exit status. No lock, queue or semaphore is
shared: a worker that dies leaves nothing held. (A multiprocessing.Pool lost a killed worker's
task and waited for it forever, and its terminate could block for good on the task queue's
lock a dead worker held.) On every way out, normal or not, the parent kills and reaps every
worker: none outlives the call, and none outlives the parent (PDEATHSIG).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from aiio.errors import RunFailed
from aiio.run import procsetup

HEADER = struct.Struct("<Q")  # each message: its length, then its pickle
TICK_S = 0.25
REAP_S = 5.0  # after SIGKILL: a worker stuck in the kernel (a hung mount) may take long to go
_HELD_SIGNALS = {signal.SIGINT, signal.SIGTERM}  # held back across each fork


class WorkerFailed(RunFailed):
    """A worker died, or its function raised something other than OSError."""


class _Worker:
    """One forked worker: its pid, the parent's end of its pipe, what has arrived."""

    def __init__(self, number: int, pid: int, fd: int, items: Sequence[Any]) -> None:
        self.number, self.pid, self.fd, self.items = number, pid, fd, items
        self.share = len(items)
        self.buffer = bytearray()
        self.got = 0
        self.swept = 0  # items passed on as touched (on_abandon): each is passed once
        self.eof = False
        self.status: int | None = None

    def exitcode(self) -> int | None:
        """None while it runs; its exit code, or minus the signal that ended it."""
        if self.status is None:
            self.status = procsetup.exit_status(self.pid)
        return self.status

    def messages(self) -> Iterator[Any]:
        """The whole messages in the buffer, each taken out of it as it is handed on: when
        handling one raises, those after it stay in the buffer (`pending` counts them)."""
        while (length := next(self._lengths(), None)) is not None:
            message = pickle.loads(self.buffer[HEADER.size:length])
            del self.buffer[:length]
            yield message

    def pending(self) -> int:
        """How many whole messages the buffer holds, none taken out."""
        return sum(1 for _ in self._lengths())

    def _lengths(self) -> Iterator[int]:
        """The length, header included, of each whole message in the buffer, in order."""
        at = 0
        while len(self.buffer) - at >= HEADER.size:
            (size,) = HEADER.unpack_from(self.buffer, at)
            if len(self.buffer) - at < HEADER.size + size:
                return
            yield HEADER.size + size
            at += HEADER.size + size


def run_sliced(fn: Callable[[Any], Any], items: Sequence[Any], workers: int,
               on_result: Callable[[Any], None], on_tick: Callable[[], None] | None = None,
               name: str = "worker",
               on_abandon: Callable[[list[Any], list[Any]], None] | None = None) -> None:
    """fn(item) for every item, in `workers` forked processes; on_result(value) in this
    process as each value arrives (in no set order), on_tick() every TICK_S or so whether
    values arrive or not (a caller's chance to stop the work). An OSError in a worker is
    raised here as an OSError; a worker's death or other failure as WorkerFailed, naming
    it. Exceptions from the callbacks end the call too. When the call ends by an exception,
    on_abandon(touched, busy) runs at once after the workers are SIGKILLed, before the
    wait for them to go, and again once they are reaped or REAP_S passed (a caller's chance
    to undo their work first): touched, the items a worker began and is done with (it sent
    them, or died in them); busy, those a worker not yet reaped may still be in a system
    call on."""
    workers = max(1, min(workers, len(items)))
    if not items:
        return
    running: list[_Worker] = []
    try:
        for k in range(workers):
            _start(fn, items[k::workers], k, name, running)
        _watch(running, on_result, on_tick, name)
    except BaseException:
        _kill_and_reap(running, on_abandon)
        raise
    _kill_and_reap(running)


def _start(fn: Callable[[Any], Any], share: Sequence[Any], number: int, name: str,
           running: list[_Worker]) -> None:
    """Fork worker `number` for its share and add it to `running` (with the parent's end of
    its pipe) before a held signal can unwind the parent: none is left unknown, unkilled."""
    parent = os.getpid()
    parent_fds = [w.fd for w in running]
    r, w = os.pipe()
    # Ctrl-C reaches the whole process group: held back across the fork, it is the parent's
    # alone, and the worker ignores it (the parent ends the workers itself).
    signal.pthread_sigmask(signal.SIG_BLOCK, _HELD_SIGNALS)
    try:
        pid = os.fork()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD_SIGNALS)
        os.close(r)
        os.close(w)
        raise
    if pid == 0:  # the worker: never return into the parent's code
        code = 1
        try:
            for fd in (r, *parent_fds):  # only the parent reads: its death ends our writes
                os.close(fd)
            code = _worker_main(fn, share, w, parent, f"aiio-{name[:3]}-{number}")
        finally:
            os._exit(code)
    running.append(_Worker(number, pid, r, share))
    os.close(w)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD_SIGNALS)


def _worker_main(fn: Callable[[Any], Any], share: Sequence[Any], fd: int, parent: int,
                 title: str) -> int:
    """Body of a worker: fn over its share, each value (or the error) sent; its exit code."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the parent's handler: just end
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD_SIGNALS)
    procsetup.die_with_parent(parent)
    procsetup.set_process_name(title)
    try:
        for item in share:
            _send(fd, ("result", fn(item)))
    except OSError as exc:
        _send(fd, ("oserror", (exc.errno, exc.strerror, exc.filename)))
        return 1
    except BaseException as exc:  # a crash is data: the parent names it
        _send(fd, ("crash", f"{type(exc).__name__}: {exc}"))
        return 1
    return 0


def _send(fd: int, message: tuple) -> None:
    data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    view = memoryview(HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _watch(running: list[_Worker], on_result: Callable[[Any], None],
           on_tick: Callable[[], None] | None, name: str) -> None:
    """Take every worker's messages until each has sent its share and exited."""
    poller = select.poll()
    for w in running:
        poller.register(w.fd, select.POLLIN)
    by_fd = {w.fd: w for w in running}
    left = list(running)
    next_tick = time.monotonic() + TICK_S
    while left:
        # once every pipe has closed, only the exits are awaited: they follow at once
        wait_ms = TICK_S * 1000 if any(not w.eof for w in left) else 1
        for fd, _event in poller.poll(wait_ms):
            w = by_fd[fd]
            data = os.read(fd, 1 << 20)
            if not data:
                w.eof = True
                poller.unregister(fd)
            w.buffer += data
            for message in w.messages():
                _take(w, message, on_result, name)
        left = [w for w in left if not _ended(w, name)]
        if on_tick is not None and time.monotonic() >= next_tick:
            next_tick = time.monotonic() + TICK_S
            on_tick()


def _take(w: _Worker, message: tuple, on_result: Callable[[Any], None], name: str) -> None:
    kind, payload = message
    if kind == "result":
        w.got += 1
        on_result(payload)
    elif kind == "oserror":
        errno, strerror, filename = payload
        raise OSError(errno, strerror, filename)
    else:
        raise WorkerFailed(f"{name} process {w.number} (pid {w.pid}) failed: {payload}")


def _ended(w: _Worker, name: str) -> bool:
    """True once the worker closed its pipe and exited having sent its whole share; raises
    WorkerFailed when it ended short of that."""
    if not w.eof:
        return False
    code = w.exitcode()
    if code is None:
        return False  # the pipe closes as the process exits: the status follows at once
    if code == 0 and w.got == w.share:
        return True
    if code < 0:
        raise WorkerFailed(f"{name} process {w.number} (pid {w.pid}) was killed by "
                           f"{procsetup.signal_name(-code)}")
    raise WorkerFailed(f"{name} process {w.number} (pid {w.pid}) exited with code {code} "
                       f"after {w.got} of its {w.share} items")


def _kill_and_reap(running: list[_Worker],
                   sweep: Callable[[list[Any], list[Any]], None] | None = None) -> None:
    """SIGKILL every worker still running (they hold nothing shared), sweep(), reap them
    within REAP_S, sweep() again; close the parent's pipe ends.

    The first sweep cannot wait for the reaping: a worker stuck in a write on a slow mount
    can take seconds to go, and under MPI the launcher SIGKILLs this process a fraction of
    a second after a Ctrl-C. A killed worker starts no new system call, so the second sweep
    catches only what a call already under way when it was killed made."""
    for w in running:
        if w.exitcode() is None:
            try:
                os.kill(w.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    try:
        if sweep is not None:
            sweep(*_touched_items(running))
        deadline = time.monotonic() + REAP_S
        while any(w.exitcode() is None for w in running) and time.monotonic() < deadline:
            time.sleep(0.005)
        if sweep is not None:
            sweep(*_touched_items(running))
    finally:
        for w in running:
            os.close(w.fd)


def _touched_items(running: list[_Worker]) -> tuple[list[Any], list[Any]]:
    """(touched, busy) as on_abandon takes them, each touched item once over the calls. A
    worker takes its items in order, so the one after the last it sent is the one it was on
    (its results still in the pipe are counted, not taken): busy while it is not reaped,
    touched once it is."""
    touched: list[Any] = []
    busy: list[Any] = []
    for w in running:
        while not w.eof and select.select([w.fd], [], [], 0)[0]:
            data = os.read(w.fd, 1 << 20)
            w.eof = not data
            w.buffer += data
        done = w.got + w.pending()  # not taken out: the next sweep counts them again
        if done < w.share and w.exitcode() is None:
            busy.append(w.items[done])
        elif done < w.share:
            done += 1  # reaped: it is done with the item it was on
        touched.extend(w.items[w.swept:done])
        w.swept = max(w.swept, done)
    return touched, busy
