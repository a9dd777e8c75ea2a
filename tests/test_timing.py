"""The instants phases take through aiio.engines.timing: windows, deadlines and the accelerator's
steps, all on the engine's clock."""

from __future__ import annotations

from types import SimpleNamespace

from aiio.engines import seam as engine
from aiio.engines.timing import NEVER, Deadline, StepClock, Window
from aiio.phases.threads import run_parallel

SECOND = 10**9


def test_a_window_runs_from_the_instant_handed_down_to_its_close() -> None:
    start = engine.now_ns()
    run = Window(start)
    assert run.start_ns == start and run.end_ns == 0
    lap = run.lap()
    end = run.close()
    assert start <= lap <= end == run.end_ns <= engine.now_ns()
    assert run.elapsed_ns == end - start and run.elapsed_s == (end - start) / 1e9
    assert run.since_start_s(start + SECOND // 2) == 0.5


def test_a_window_without_a_start_starts_now() -> None:
    before = engine.now_ns()
    own = Window()
    assert before <= own.start_ns <= engine.now_ns()


def test_a_deadline_counts_from_its_window_start() -> None:
    run = Window(engine.now_ns())
    ahead = run.deadline(3600)
    assert ahead.at_ns == run.start_ns + 3600 * SECOND
    assert not ahead.passed() and 0 < ahead.remaining_s() <= 3600
    behind = Deadline(engine.now_ns() - 1)
    assert behind.passed() and behind.remaining_s() == 0.0


def test_an_epoch_bound_run_has_no_deadline() -> None:
    assert not NEVER.passed() and NEVER.remaining_s() is None


def test_the_first_wait_begins_at_the_common_start() -> None:
    """The accelerator may reach its loop before the common start; its wait counts from it."""
    start = engine.now_ns() + 3600 * SECOND
    step = StepClock(start)
    step.wait()
    assert step.wait_ns == start


def test_a_step_is_waited_for_then_computed() -> None:
    start = engine.now_ns()
    step = StepClock(start)
    step.wait()
    step.compute(0.001)
    wait_s, got_s, done_s = step.spans()
    assert 0 <= wait_s <= got_s < done_s
    assert done_s == (step.done_ns - start) / 1e9


def test_setup_writes_start_their_logs_at_one_instant() -> None:
    """run_parallel without a start (the files a phase writes before it measures): every
    worker's log starts at the same instant, taken when the call starts."""
    workers = [SimpleNamespace(log=None) for _ in range(3)]
    before = engine.now_ns()
    logs = run_parallel(range(6), workers, lambda w, i: None)
    assert len({log.start_ns for log in logs}) == 1
    assert before <= logs[0].start_ns <= engine.now_ns()
