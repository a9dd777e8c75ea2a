"""Where aiio runs: one host (`LocalComm`) or several MPI ranks (`MpiComm`), one interface.

Under MPI, rank 0 runs the command the user typed and alone prints and writes results; every
other rank serves it (`serve`): it executes the calls rank 0 sends (its share of the dataset,
its share of the clients) and replies. Nothing ever blocks inside an MPI collective that a dead
rank could leave hanging: every wait polls, watches heartbeats (each rank beats every
HEARTBEAT_S from a thread) and gives up on a rank silent for `silence_s`, naming its host. A
rank whose heartbeat goes on while its work is stuck is caught two ways: a call whose work
reports as it goes (dataset generation) must keep reporting, slow storage or not; and once the
run is failing or ending, rank 0 stops the calls in flight and waits `answer_s` at most for
each rank to answer, then names the ranks that did not and ends the job (docs/MPI.md).

Only this module imports mpi4py, and only when a launcher started this process as one of
several ranks: without MPI, aiio never imports it.
"""

from __future__ import annotations

import math
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from aiio import __version__
from aiio.errors import AiioError, ConfigError, RunFailed, Terminated
from aiio.run.ranks import CallFn, Report, ThisHost

# Variables a launcher sets for each process it starts: Open MPI, MPICH/Intel MPI (hydra),
# MVAPICH, and a Slurm job step (srun; not set in the batch script itself).
SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS")
RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID",
             "PMIX_RANK")
HEARTBEAT_S = 1.0
SILENCE_S = 30.0     # a rank not heard from for this long is lost (AIIO_MPI_SILENCE_S overrides)
# Once the run is failing or ending, how long rank 0 waits for a rank to stop its call and
# answer (AIIO_MPI_ANSWER_S overrides); a rank that does not is named and the job aborted.
ANSWER_S = 30.0
# After the launcher's SIGTERM, how long a rank's clients get to send what they measured
# (AIIO_TERM_DRAIN_S overrides): Open MPI 4.1 sends SIGKILL 1 s after a Ctrl-C's SIGTERM (250 ms
# after a rank died), Slurm after KillWait (30 s); the run still has to be saved after it.
TERM_DRAIN_S = 0.5
POLL_S = 0.002
TAG_CMD, TAG_WORK, TAG_CTRL, TAG_BEAT, TAG_CANCEL = 11, 12, 13, 14, 15
_TERMINATED = ("error", {"message": "terminated by the launcher", "code": 1})


class RankLost(RunFailed):
    """Another rank died or went silent; the message names its host and rank."""


class CallStopped(RunFailed):
    """On a worker: rank 0 stopped the call it runs (the run is failing or ending)."""


def launched_size(env: dict[str, str] | None = None) -> int:
    """Ranks the launcher says it started (1 when not under a launcher; 0 when only PMIx
    says we are a rank, so MPI itself must be asked)."""
    env = os.environ if env is None else env
    for var in SIZE_VARS:
        if env.get(var, "").isdigit():
            return int(env[var])
    return 0 if "PMIX_RANK" in env else 1


def launched_rank(env: dict[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    for var in RANK_VARS:
        if env.get(var, "").isdigit():
            return int(env[var])
    return 0


# Waits for another rank: 0 s gives none any time, so a healthy rank that had just replied
# was called hung and the job aborted. (0 s of drain is a choice: no drain.)
_SOME_TIME = frozenset({"AIIO_MPI_SILENCE_S", "AIIO_MPI_ANSWER_S"})


def _seconds_from_env(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        raise ConfigError(f"{name} must be a number of seconds") from None
    # NaN fails the comparison; inf would make the wait it bounds one without an end
    if name in _SOME_TIME and not (value > 0 and math.isfinite(value)):
        raise ConfigError(f"{name} must be a number of seconds above 0 (finite)")
    if not (value >= 0 and math.isfinite(value)):
        raise ConfigError(f"{name} must be a number of seconds, 0 or more (finite)")
    return value


class LocalComm(ThisHost):
    """One host, one rank: every collective is trivial."""

    mpi = False

    def __init__(self) -> None:
        self.host = socket.gethostname()
        self.hosts = [self.host]
        self.identities = [identity()]

    def where(self, rank: int) -> str:
        return f"host {self.hosts[rank]} (rank {rank})"

    def barrier(self) -> None:
        pass

    def abort(self, message: str, code: int = 1) -> None:
        raise RunFailed(message)

    def finish(self, code: int) -> None:
        pass


def identity() -> dict[str, Any]:
    """What ranks compare at start-up: the same aiio and Python everywhere."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "aiio": __version__,
            "python": sys.version.split()[0]}


def version_mismatch(identities: list[dict[str, Any]]) -> str | None:
    """A one-line error when ranks run different aiio or Python versions, else None."""
    ref = identities[0]
    for rank, ident in enumerate(identities[1:], 1):
        for key in ("aiio", "python"):
            if ident[key] != ref[key]:
                return (f"host {ident['host']} (rank {rank}) runs {key} {ident[key]} but rank 0 "
                        f"on {ref['host']} runs {ref[key]}; install the same versions on every "
                        "host")
    return None


_WORLD: LocalComm | MpiComm | None = None


def world() -> LocalComm | MpiComm:
    """The process's communicator: MpiComm when launched as one of several ranks."""
    global _WORLD
    if _WORLD is None:
        size = launched_size()
        _WORLD = LocalComm() if size == 1 else _start_mpi(size)
    return _WORLD


def _start_mpi(size: int) -> LocalComm | MpiComm:
    try:
        comm = MpiComm()
    except ImportError:
        if launched_rank() != 0:
            sys.exit(2)  # rank 0 says why; N copies of one line help nobody
        raise ConfigError(f"launched as {size or 'several'} MPI ranks but mpi4py is not "
                          "installed: pip install 'aiio[mpi]'") from None
    if comm.size == 1:
        if size > 1:
            raise ConfigError(f"the launcher started {size} tasks but MPI sees each one alone; "
                              "with srun pass --mpi=pmix (or pmi2), or launch with mpiexec")
        comm.close()
        return LocalComm()
    return comm


class MpiComm:
    """Several ranks, one per host. Rank 0 leads; the others `serve` it."""

    mpi = True

    def __init__(self) -> None:
        from mpi4py import MPI  # only here, and only under a launcher
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.silence_s = _seconds_from_env("AIIO_MPI_SILENCE_S", SILENCE_S)
        self.answer_s = _seconds_from_env("AIIO_MPI_ANSWER_S", ANSWER_S)
        self.term_drain_s = _seconds_from_env("AIIO_TERM_DRAIN_S", TERM_DRAIN_S)
        self.terminated_at: float | None = None  # when the launcher's SIGTERM came (monotonic)
        self._pending: list[Any] = []
        self._seen = [time.monotonic()] * self.size
        self.lost: set[int] = set()
        self.unanswered: dict[int, str] = {}  # rank -> why rank 0 gave up waiting for it
        self._call = 0         # the number of the call rank 0 dispatched last / a worker runs
        self._ended: set[int] = set()  # ranks that said the launcher's SIGTERM ends them
        self._reporting: set[int] = set()  # ranks whose current call reports as it goes
        self._worked = [0.0] * self.size   # when each rank's work last sent a word
        self._stop_beat = threading.Event()
        self._beat: threading.Thread | None = None
        # Every MPI call goes through this lock: the heartbeat thread and the main thread never
        # call MPI at once, so no MPI library's thread support is relied upon.
        self._lock = threading.RLock()
        if self.size == 1:
            return
        self.identities = self.comm.allgather(identity())
        self.hosts = [i["host"] for i in self.identities]
        self._replies: dict[int, tuple[str, Any]] = {}
        self._start_heartbeat()
        signal.signal(signal.SIGTERM, self._on_sigterm)

    # --- plumbing ------------------------------------------------------------------------
    def where(self, rank: int) -> str:
        return f"host {self.hosts[rank]} (rank {rank})"

    def _send(self, obj: Any, dest: int, tag: int) -> None:
        with self._lock:
            self._pending.append(self.comm.isend(obj, dest=dest, tag=tag))
            self._pending = [r for r in self._pending if not r.Test()]

    def _recv(self, source: int, tag: int) -> tuple[int, Any] | None:
        """One message if one is waiting (matched probe: safe with the heartbeat thread)."""
        status = self.MPI.Status()
        with self._lock:
            msg = self.comm.improbe(source=source, tag=tag, status=status)
            if msg is None:
                return None
            return status.Get_source(), msg.recv()

    def _start_heartbeat(self) -> None:
        if self.MPI.Query_thread() < self.MPI.THREAD_SERIALIZED:
            return  # without thread support, only the messages of a run show liveness
        peers = list(range(1, self.size)) if self.rank == 0 else [0]

        def beat() -> None:
            while not self._stop_beat.wait(HEARTBEAT_S):
                for peer in peers:
                    self._send(None, peer, TAG_BEAT)

        self._beat = threading.Thread(target=beat, name="aiio-heartbeat", daemon=True)
        self._beat.start()

    def check_alive(self, ranks: Sequence[int]) -> None:
        """Raise RankLost for the first of `ranks` not heard from for `silence_s`."""
        while (got := self._recv(self.MPI.ANY_SOURCE, TAG_BEAT)) is not None:
            self._seen[got[0]] = time.monotonic()
        if self._beat is None:
            return
        now = time.monotonic()
        for r in ranks:
            if now - self._seen[r] > self.silence_s:
                self.lost.add(r)
                raise RankLost(f"{self.where(r)} stopped answering (nothing heard for "
                               f"{now - self._seen[r]:.0f} s): it hung, or died without the "
                               "launcher noticing")

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        # The launcher ends the job this way when a rank dies (Open MPI follows with SIGKILL
        # within a fraction of a second) or when the job is cancelled: say so to rank 0 at
        # once, then unwind so rank 0 can save what it has.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        self.terminated_at = time.monotonic()
        if os.getpid() != self.pid:  # a forked client or generator: just end, as by default
            os.kill(os.getpid(), signal.SIGTERM)
            return
        if self.rank != 0:
            self._send(("terminated", None), 0, TAG_WORK)
        raise Terminated("ended by SIGTERM (the MPI launcher's when a rank died or the job "
                         "was cancelled, or a kill)")

    # --- collectives (each polls; none can hang on a dead rank) --------------------------
    def _wait(self, request: Any, spin_s: float = POLL_S) -> Any:
        others = [r for r in range(self.size) if r != self.rank]
        watch = others if self.rank == 0 else [0]
        while True:
            with self._lock:
                done, value = request.test()
            if done:
                return value
            self.check_alive(watch)
            time.sleep(spin_s)

    def barrier(self, spin_s: float = 0.0001) -> None:
        """All ranks meet; the tight spin keeps the release skew near the barrier latency."""
        with self._lock:
            request = self.comm.Ibarrier()
        self._wait(request, spin_s)

    # --- rank 0: calls on every rank -----------------------------------------------------
    def dispatch(self, fn: CallFn, args: Sequence[Any]) -> None:
        """Rank 0: start fn(args[r]) on every other rank r (one that said the launcher's
        SIGTERM ends it has answered already: with that)."""
        self._replies = {r: _TERMINATED for r in self._ended}
        self._call += 1
        self._reporting = set()
        self._worked = [time.monotonic()] * self.size
        for r in range(1, self.size):
            self._send(("call", fn, args[r], self._call), r, TAG_CMD)

    def poll_workers(self, handler: Callable[[int, str, Any], None] | None = None) -> None:
        """Rank 0: take every waiting message from the workers; replies are kept, the rest go
        to `handler(rank, kind, payload)`. Raises RankLost for a silent or terminated rank,
        and for one whose call reports as it goes but has stopped reporting."""
        while (got := self._recv(self.MPI.ANY_SOURCE, TAG_WORK)) is not None:
            rank, (kind, payload, *call) = got
            self._seen[rank] = self._worked[rank] = time.monotonic()
            if kind in ("reply", "error"):
                if not call or call[0] == self._call:  # not a call rank 0 gave up on
                    self._replies[rank] = (kind, payload)
            elif kind == "terminated":
                self._ended.add(rank)
                self._replies[rank] = _TERMINATED
            else:
                if kind == "progress":
                    self._reporting.add(rank)
                if handler is not None:
                    handler(rank, kind, payload)
        waiting = [r for r in range(1, self.size) if r not in self._replies and r not in self.lost]
        self.check_alive(waiting)
        self._check_working(waiting)

    def _check_working(self, ranks: Sequence[int]) -> None:
        """A rank whose call reports as it goes (at least every few tenths of a second while
        its main thread runs, whatever the storage's pace) but has sent nothing for
        `silence_s` is stuck, though its heartbeat thread beats on: lost, named."""
        now = time.monotonic()
        for r in ranks:
            if r in self._reporting and now - self._worked[r] > self.silence_s:
                self.lost.add(r)
                raise RankLost(f"{self.where(r)} stopped answering: its work has sent nothing "
                               f"for {now - self._worked[r]:.0f} s though it is alive (it hung)")

    def replied(self) -> dict[int, tuple[str, Any]]:
        return dict(self._replies)

    def _busy(self) -> list[int]:
        """The ranks still running rank 0's last call, and not given up on."""
        if not self._call:
            return []  # no call yet
        return [r for r in range(1, self.size)
                if r not in self._replies and r not in self.lost and r not in self._ended]

    def call_all(self, fn: CallFn, args: Sequence[Any], on_progress: Report | None = None,
                 bounded: bool = False, own_s: float = 0.0) -> list[Any]:
        """Run fn(args[rank], report) on every rank, rank 0's share here; values in rank
        order. `on_progress` sees the sum over ranks of what each share reported. A rank's
        failure ends rank 0's share at its next report and stops the other ranks' (as any
        failure here does). `bounded`: the call is a quick check, or the run is failing or
        ending already; each rank gets `answer_s` to answer, and RankLost names those that
        did not (a rank whose heartbeat goes on while its call hangs, as on a hung network
        mount, would otherwise be waited for without end). `own_s`: what a bounded call may
        take itself in a healthy run (a quick check's wait for a late file), added to
        `answer_s`: a low AIIO_MPI_ANSWER_S must not cut a slow network filesystem short."""
        progress = [(0, 0)] * self.size

        def total() -> None:
            if on_progress:
                on_progress(sum(p[0] for p in progress), sum(p[1] for p in progress))

        def handler(rank: int, kind: str, payload: Any) -> None:
            if kind == "progress":
                progress[rank] = payload
                total()

        def report(done: int, nbytes: int) -> None:
            progress[0] = (done, nbytes)
            self.poll_workers(handler)
            self._raise_failed()
            total()

        self.dispatch(fn, args)
        try:
            local = fn(args[0], report)
            self._wait_replies(handler, self.answer_s + own_s if bounded else None)
        except BaseException:
            self.stop_call()
            raise
        return [local] + [self._replies[r][1] for r in range(1, self.size)]

    def _wait_replies(self, handler: Callable[[int, str, Any], None],
                      timeout_s: float | None) -> None:
        """Every busy rank's reply, raising at the first failure; within timeout_s if given."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while self._busy():
            self.poll_workers(handler)
            self._raise_failed()
            if deadline is not None and time.monotonic() > deadline:
                self._give_up(self._busy(), timeout_s or 0.0, "")
                break
            time.sleep(POLL_S)
        self._raise_failed()
        if lost := [r for r in range(1, self.size) if r in self.lost and r not in self._replies]:
            raise RankLost("; ".join(self.unanswered.get(r, f"{self.where(r)} was lost")
                                     for r in lost))

    def _raise_failed(self) -> None:
        """Raise the failures the workers replied with, naming each rank."""
        failed = [(r, p) for r, (k, p) in sorted(self._replies.items()) if k == "error"]
        if failed:
            cls = RunFailed if any(p["code"] == RunFailed.exit_code for _, p in failed) \
                else AiioError
            raise cls("; ".join(f"{self.where(r)}: {p['message']}" for r, p in failed))

    def stop_call(self) -> None:
        """Rank 0, the run failing or ending: stop the last call on every rank still running
        it, and wait `answer_s` at most for each to answer (it must stop writing before the
        files are removed); the ranks that do not answer are given up on, to be named and
        the job aborted at `finish`."""
        busy = self._busy()
        for r in busy:
            self._send(("cancel", self._call), r, TAG_CANCEL)
        deadline = time.monotonic() + self.answer_s
        while busy and time.monotonic() < deadline:
            try:
                self.poll_workers()
            except RankLost:
                pass  # named at the end
            busy = self._busy()
            time.sleep(POLL_S)
        self._give_up(busy, self.answer_s, " once the run was ending")

    def _give_up(self, ranks: Sequence[int], waited_s: float, when: str) -> None:
        for r in ranks:
            self.lost.add(r)
            self.unanswered[r] = (f"{self.where(r)} did not answer within {waited_s:.0f} s"
                                  f"{when} (its heartbeat goes on: it hung)")

    def tell_workers(self, obj: Any, ranks: Sequence[int] | None = None) -> None:
        """Rank 0: a control message (go, stop, stage) to every worker, or to `ranks`."""
        for r in range(1, self.size) if ranks is None else ranks:
            self._send(obj, r, TAG_CTRL)

    # --- workers -------------------------------------------------------------------------
    def to_root(self, kind: str, payload: Any) -> None:
        self._send((kind, payload), 0, TAG_WORK)

    def from_root(self) -> Any | None:
        """A waiting control message from rank 0, or None; raises RankLost if rank 0 is."""
        self.check_alive([0])
        got = self._recv(0, TAG_CTRL)
        return None if got is None else got[1]

    def serve(self) -> int:
        """A worker's life: run rank 0's calls until it says quit; returns the exit code."""
        while True:
            self.check_alive([0])
            try:
                got = self._recv(0, TAG_CMD)
            except Exception as exc:  # noqa: BLE001 - a call this host cannot load
                self._unloadable(exc)
                continue
            if got is None:
                time.sleep(0.005)
                continue
            msg = got[1]
            if msg[0] == "quit":
                return int(msg[1])
            self._call = msg[3]
            self._run_call(msg[1], msg[2])
            if self.terminated_at is not None:  # the launcher is ending the job: once the
                self._flush(1.0)  # partial reply is out, leave rather than wait for rank 0
                return 1

    def _unloadable(self, exc: Exception) -> None:
        """A call whose code is not on this host (an engine module on rank 0's path only)
        fails as it is unpickled: answered as this call's error, with no number (the message
        carried it), which rank 0 takes for the call it waits on, rather than a traceback
        here and 30 s of silence there."""
        message = (f"cannot load rank 0's call on {self.where(self.rank)}: "
                   f"{type(exc).__name__}: {exc} (every module a run names, an engine's "
                   "included, must be importable on every host)")
        self._send(("error", {"message": message, "code": 2}), 0, TAG_WORK)

    def _run_call(self, fn: CallFn, args: Any) -> None:
        """Run one call of rank 0's and reply with its value or its error. Its reports go
        to rank 0 (a few a second at most) and are where rank 0 can stop it."""
        last = [0.0]

        def report(done: int, nbytes: int) -> None:
            now = time.monotonic()
            if now - last[0] >= 0.25:
                last[0] = now
                self.to_root("progress", (done, nbytes))
                self._check_stopped()

        try:
            value = fn(args, report)
        except Terminated:
            raise
        except AiioError as exc:
            self._reply("error", {"message": str(exc), "code": exc.exit_code})
        except Exception as exc:  # a crash on a worker is data for rank 0's message
            self._reply("error", {"message": f"{type(exc).__name__}: {exc}", "code": 1})
        else:
            self._reply("reply", value)

    def _reply(self, kind: str, payload: Any) -> None:
        self._send((kind, payload, self._call), 0, TAG_WORK)

    def _check_stopped(self) -> None:
        """Raise CallStopped when rank 0 stopped the call this rank runs (older calls' stops
        are stale)."""
        while (got := self._recv(0, TAG_CANCEL)) is not None:
            if got[1][1] == self._call:
                raise CallStopped(f"stopped by {self.where(0)}: the run is failing or ending")

    # --- the end -------------------------------------------------------------------------
    def finish(self, code: int) -> None:
        """Rank 0: tell every worker to exit with `code`; if a rank is lost or does not end
        the call it still runs within `answer_s`, abort the job (the launcher then ends every
        process) rather than wait for it forever, naming the ranks that did not answer."""
        if self.rank != 0:
            return
        self.stop_call()  # a rank still in a call would never see the quit
        if self.lost:
            self.abort("; ".join(self.unanswered[r] for r in sorted(self.unanswered)),
                       code or 1)
        for r in range(1, self.size):
            self._send(("quit", code), r, TAG_CMD)
        self._flush(10.0)

    def _flush(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self._pending and time.monotonic() < deadline:
            with self._lock:
                self._pending = [r for r in self._pending if not r.Test()]
            time.sleep(POLL_S)

    def abort(self, message: str, code: int = 1) -> None:
        """End every rank now (MPI_Abort): the last resort when a rank cannot be reached."""
        if message:
            print(f"aiio: {message}", file=sys.stderr, flush=True)
        self.comm.Abort(code)

    def close(self) -> None:
        self._stop_beat.set()
