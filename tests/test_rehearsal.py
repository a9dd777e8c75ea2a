"""The rehearsal: one client's code run in the parent before the clients are forked, so the
interpreter's first-run writes (code quickening, caches, lazily made objects) happen once in
pages every client shares instead of in a private copy in each client. It must touch nothing
outside the process: no file opened, no byte read or written, no thread left behind."""

from __future__ import annotations

import _thread
import os
import shutil
import subprocess
import sys
import threading
import time

from aiio.cache_methods import METHOD_DIRECT
from aiio.phases import get_phase
from aiio.phases.train import TrainArgs
from aiio.run.clients import ClientContext, rehearse, run_clients
from aiio.storage import dataset as ds
from aiio.storage.target import Target

from .conftest import REPO, tiny_workload


def _train_args(target, **overrides) -> TrainArgs:
    w = tiny_workload(**overrides)
    data, _ = ds.ensure(Target(target), w)
    data.index()
    return TrainArgs(w, data, METHOD_DIRECT, 0.002, None, 5.0)


def test_the_train_rehearsal_runs_the_clients_code_without_opening_a_file(target):
    args = _train_args(target)
    fn, rehearsal_args = get_phase("train").rehearsal(args)
    # The dataset's files are gone: a rehearsal that opened or read one would fail.
    shutil.rmtree(args.dataset.folder)
    threads = set(threading.enumerate())
    out = rehearse(fn, rehearsal_args, 0, 2)
    assert out["steps"] > 8  # enough calls for the interpreter to settle the code it ran
    assert set(threading.enumerate()) == threads  # every thread it started has ended


def test_the_train_rehearsal_leaves_no_thread_of_any_kind_behind(target):
    # The accelerator's stop watcher is a bare _thread thread (a threading.Thread cost each
    # client about 0.1 MiB of pages more), which threading.enumerate() does not list.
    args = _train_args(target)
    fn, rehearsal_args = get_phase("train").rehearsal(args)
    before = _os_threads()
    rehearse(fn, rehearsal_args, 0, 2)
    assert _os_threads() == before


def _os_threads() -> int:
    """The threads of this process the kernel knows (threading lists only its own)."""
    return len(os.listdir("/proc/self/task"))


def _bare_thread_client(ctx: ClientContext) -> dict:
    """Starts a bare thread that outlives the client's code by a moment."""
    _thread.start_new_thread(time.sleep, (0.3,))
    return {}


def test_a_rehearsal_waits_for_bare_threads_to_end():
    before = _os_threads()
    rehearse(_bare_thread_client, None, 0, 1)
    assert _os_threads() == before


def _tasks() -> set[str]:
    return set(os.listdir("/proc/self/task"))


def _outlived_client(ctx: ClientContext) -> dict:
    """Starts a bare thread that outlives the client's code, once a thread of the process
    that was there before the rehearsal has ended."""
    ctx.args.wait()
    _thread.start_new_thread(time.sleep, (0.5,))
    return {}


def test_a_thread_ending_during_the_rehearsal_does_not_hide_one_it_started():
    # Counting threads, the rehearsal took one of the process's own that ended as it ran for
    # the bare thread it had started, and went on with that one still running.
    done = threading.Event()
    _thread.start_new_thread(lambda: (time.sleep(0.05), done.set()), ())
    before = _tasks()
    rehearse(_outlived_client, done, 0, 1)
    assert not _tasks() - before


def test_the_train_rehearsal_writes_no_checkpoint_and_runs_briefly(target):
    args = _train_args(target, train__epochs=50)
    _, rehearsal_args = get_phase("train").rehearsal(args)
    assert rehearsal_args.checkpoint is None
    assert rehearsal_args.epochs is None and rehearsal_args.duration_s <= 0.5
    assert rehearsal_args.compute_s <= args.compute_s


def test_a_native_reader_is_not_rehearsed(target):
    # The format's own library opens and reads the files itself: nothing to stub.
    args = _train_args(target, train__reader="native")
    assert get_phase("train").rehearsal(args) is None


REHEARSED = []


def _note(ctx: ClientContext) -> dict:
    ctx.ready_and_wait()
    if ctx.args == "rehearsal":
        REHEARSED.append(ctx.index)
        return {}
    return {"rehearsed": list(REHEARSED)}


def test_the_rehearsal_runs_in_the_parent_before_the_clients_are_forked():
    REHEARSED.clear()
    results, _ = run_clients(2, _note, "run", rehearsal=(_note, "rehearsal"), first=3, total=8)
    # Once, in this process, as the last client of the run: the one client sure to have a
    # share of the samples (at 1,024 clients on the demo's 512 the first has none, and its
    # rehearsal ran no step).
    assert REHEARSED == [7]
    assert [r["rehearsed"] for r in results] == [[7], [7]]  # the clients were forked after


def test_the_last_client_rehearses_steps_with_more_clients_than_samples(target):
    args = _train_args(target)  # 24 samples
    fn, rehearsal_args = get_phase("train").rehearsal(args)
    assert rehearse(fn, rehearsal_args, 0, 48)["steps"] == 0  # the first has no sample
    assert rehearse(fn, rehearsal_args, 47, 48)["steps"] > 8


def _fails(ctx: ClientContext) -> dict:
    raise ValueError("a rehearsal that breaks")


def test_a_failing_rehearsal_changes_nothing_of_the_run():
    """The rehearsal only places memory: when it breaks, the run goes on as without it (the
    clients meet whatever broke it themselves, and report it as theirs)."""
    REHEARSED.clear()
    results, _ = run_clients(2, _note, "run", rehearsal=(_fails, None))
    assert [r["rehearsed"] for r in results] == [[], []]


_SIGTERM_IN_REHEARSAL = """
import os, signal, time
from aiio.cli import _end_on_sigterm
from aiio.run.clients import RunAborted, run_clients
from tests.test_rehearsal import _note

def _sigterm(ctx):
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)  # aiio's handler raises here
    return {}

_end_on_sigterm()
try:
    run_clients(2, _note, "run", rehearsal=(_sigterm, None))
    print("ran on")
except RunAborted as exc:
    print("ended:", exc.cause.__name__)
"""


def test_a_sigterm_during_the_rehearsal_ends_the_run():
    """aiio's SIGTERM handler raises in the main thread, where the rehearsal runs: the
    rehearsal took it for one of its own failures, which it ignores, and the run went on
    (and, the handler being spent, a second SIGTERM killed it outright)."""
    done = subprocess.run([sys.executable, "-c", _SIGTERM_IN_REHEARSAL], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ended: Terminated", done.stdout + done.stderr


def test_only_a_host_with_many_clients_rehearses(target):
    """A rehearsal costs every run about 0.25 s before its clients start, for memory that
    matters only with many clients: a run of 2 waited for it all the same."""
    from aiio.run.hosts import REHEARSE_FROM, rehearsal_for

    phase, args = get_phase("train"), _train_args(target)
    assert rehearsal_for(phase, args, REHEARSE_FROM - 1) is None
    assert rehearsal_for(phase, args, REHEARSE_FROM) is not None
    assert REHEARSE_FROM <= 64  # the bench's smallest density run still rehearses
