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
# client cost the parent two (its exit sentinel, a pipe); forked directly (aiio.run.clients) it
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
# Looked up here too: ctypes makes a function's object on its first lookup and keeps it on the
# library's object, and each client that looked prctl up made that (and wrote the library's
# attributes) itself, about 0.1 MiB of pages of its own.
_PRCTL = getattr(_LIBC, "prctl", None)


def _prctl(option: int, value: int) -> bool:
    return _PRCTL is not None and _PRCTL(option, value, 0, 0, 0) == 0


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
    # os calls, not open(): a text file's layers (buffer, encoder) are objects no other part
    # of a client makes, and each client touched the pages they lie on (about 0.1 MiB)
    try:
        fd = os.open("/proc/self/comm", os.O_WRONLY)
    except OSError:
        return
    try:
        os.write(fd, name[:15].encode())
    except OSError:
        pass
    finally:
        os.close(fd)


def exact_timers() -> None:
    """Let sleeps end when asked: Linux may otherwise end them up to 50 us late (its default
    timer slack), 1.4 % of a 3.5 ms emulated compute step. Threads started later inherit it."""
    _prctl(PR_SET_TIMERSLACK, 1)


def allow_open_files(clients: int) -> None:
    """Raise the soft open-file limit to what `clients` client processes need, up to the hard
    limit; one clear line when even the hard limit is too low."""
    need = FILES_BASE + FILES_PER_CLIENT * clients
    hard = open_files_hard_limit()
    if hard is not None and hard < need:
        raise AiioError(f"{clients} clients need about {need} open files but this process "
                        f"may open at most {hard}; raise the limit (ulimit -n) or use fewer "
                        "clients or more hosts")
    allow_files(need)


def open_files_hard_limit() -> int | None:
    """The most files this process may open (None: no limit)."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return None if hard == resource.RLIM_INFINITY else hard


def allow_files(need: int) -> None:
    """Raise the soft open-file limit to `need` (a caller checked the hard limit first)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
