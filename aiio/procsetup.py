"""Set up a freshly forked client process (its name, session, parent link, timers and limits), and
name and reap the processes aiio forks."""

from __future__ import annotations

import ctypes
import os
import resource
import signal

from aiio.errors import AiioError

PR_SET_PDEATHSIG = 1
PR_SET_TIMERSLACK = 29
# Descriptors per client plus the parent's own, with room. As multiprocessing processes each
# client cost the parent two (its exit sentinel, a pipe); forked directly (aiio.clients) it
# costs none; the figure is left as it was, a margin.
FILES_PER_CLIENT = 2
FILES_BASE = 256


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


# Loaded once, in the parent: a client that loaded it again made its own copy of the objects
# ctypes builds for it, private pages in each of hundreds of clients.
_LIBC = _libc()


def _prctl(option: int, value: int) -> bool:
    try:
        return _LIBC is not None and _LIBC.prctl(option, value, 0, 0, 0) == 0
    except AttributeError:
        return False


def die_with_parent(parent_pid: int) -> None:
    """Ask Linux to kill this client if its parent (`parent_pid`) dies (a killed MPI rank must
    not leave clients running, holding the launcher's output pipes open)."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:
        os._exit(1)  # the parent died before the request took effect


def signal_name(number: int) -> str:
    """SIGKILL, or "signal 40" for those Python has no name for (the real-time ones)."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def exit_status(pid: int) -> int | None:
    """Reap child `pid` if it has ended: None while it runs, else its exit code, or minus the
    signal that ended it (255 if it was reaped elsewhere: gone, its code unknown)."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return 255
    return os.waitstatus_to_exitcode(status) if done else None


def own_session() -> None:
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


def set_process_name(name: str) -> None:
    """Name the process as top and ps show it (Linux comm, 15 characters at most)."""
    try:
        with open("/proc/self/comm", "w") as fh:
            fh.write(name[:15])
    except OSError:
        pass


def exact_timers() -> None:
    """Let sleeps end when asked: Linux may otherwise end them up to 50 us late (its default
    timer slack), 1.4 % of a 3.5 ms emulated compute step. Threads started later inherit it."""
    _prctl(PR_SET_TIMERSLACK, 1)


def allow_open_files(clients: int) -> None:
    """Raise the soft open-file limit to what `clients` client processes need, up to the hard
    limit; one clear line when even the hard limit is too low."""
    need = FILES_BASE + FILES_PER_CLIENT * clients
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return
    if hard != resource.RLIM_INFINITY and hard < need:
        raise AiioError(f"{clients} clients need about {need} open files but this process "
                        f"may open at most {hard}; raise the limit (ulimit -n) or use fewer "
                        "clients or more hosts")
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
