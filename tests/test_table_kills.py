"""A table over users, or a search over them, killed outright (SIGKILL: the OOM killer, a
batch system's limit, an MPI launcher after its SIGTERM), and two result folders made at
once: what is left must agree with what was done."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from aiio.results.result import load, unique_folder

from .conftest import ctrl_c_after_runs
from .test_kvcache_users import SETS


# the search's second run comes only if its first probe held: apart from the busy pass
@pytest.mark.parametrize("flags", [("--users", "1,2,4"), pytest.param(
    ("--find-max", "--max-users", "4"), marks=pytest.mark.serial)])
def test_runs_done_before_a_sigkill_are_in_the_history(target: Path, results: Path,
                                                       flags: tuple) -> None:
    """The first count's run ended ok and was saved (and, for a table, is its row read back
    from the table saved after the row); the history must hold it as well, or the table and
    the history disagree on what was measured."""
    code, _, _ = ctrl_c_after_runs(
        ("scale", "-p", "kvcache", "-t", str(target), "--results", str(results), "--clients",
         "2", "--duration", "1s", "--set", "kvcache.goals.lenient=100", *SETS, *flags,
         "--goal", "lenient"), results, target=target, sig=signal.SIGKILL)
    assert code == -signal.SIGKILL
    done = [load(p.parent) for p in results.glob("*-kvcache-*/result.json")]
    assert sorted(r.status for r in done) == ["interrupted", "ok"]  # "running", read back
    assert (results / "history.sqlite").exists(), "the run done was never recorded"
    from aiio.results.history import History
    with History(results / "history.sqlite") as h:
        assert [r.status for r in h.records(kind="run")] == ["ok"]


def _make_at_once(base: str, barrier, out) -> None:
    barrier.wait()
    try:
        out.put(unique_folder(Path(base), "20261204-000000-users-kvcache").name)
    except OSError as exc:
        out.put(f"error: {exc}")


def test_processes_making_the_same_folder_at_once_each_get_one(tmp_path: Path) -> None:
    """Another process (a second table finishing its first row in the same second) made
    the folder between this one's look and its mkdir: FileExistsError ended the table, its
    rows unsaved, instead of a folder of its own with a suffix. Real processes, released at
    once (before the fix, about half of such pairs collided)."""
    import multiprocessing as mp

    n = 6
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(n), ctx.Queue()
    for _ in range(5):
        base = tmp_path / f"round{_}"
        base.mkdir()
        procs = [ctx.Process(target=_make_at_once, args=(str(base), barrier, out))
                 for _ in range(n)]
        for p in procs:
            p.start()
        names = sorted(out.get(timeout=60) for _ in procs)
        for p in procs:
            p.join()
        assert not [x for x in names if x.startswith("error")], names
        assert len(set(names)) == n and all((base / x).is_dir() for x in names), names


def test_a_table_a_storage_error_stops_is_saved_failed_not_left_running(
        target: Path, results: Path, monkeypatch) -> None:
    """The second count's run measured, then removing its files met EIO (a network file
    system's lost server): the OSError went past the table's stop handling, so the table
    saved after the first row stayed "running", and once the process is gone it reads
    "interrupted ... process gone", not failed with the error the process knew."""
    import errno
    import json

    from aiio.phases.kvcache import KvcachePhase
    from aiio.sweep import users_sweep as us

    from .conftest import tiny_workload
    from .test_kvcache import TINY

    real, calls = KvcachePhase.cleanup, []

    def cleanup(self, rc, args, status):  # the real removal, then the storage's error
        real(self, rc, args, status)
        calls.append(status)
        if len(calls) == 2:
            raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(KvcachePhase, "cleanup", cleanup)
    w = tiny_workload(**{**TINY, "run__clients": 2, "kvcache__duration": "300ms"})
    req = us.TableRequest("kvcache", w, str(target), [1, 2, 4], "lenient",
                          results_dir=str(results))
    with pytest.raises(us.TableStopped) as stopped:
        us.users_table(req)
    assert stopped.value.exit_code == 1
    (folder,) = results.glob("*-users-kvcache")
    table = json.loads((folder / "result.json").read_text())
    assert table["status"] == "failed" and "Input/output error" in table["error"]
    assert [r["users"] for r in table["rows"]] == [1]


@pytest.mark.parametrize("flags", [("--users", "1,100000"),
                                   ("--find-max", "--max-users", "100000")])
def test_a_count_no_run_could_hold_is_refused_before_the_first_run(
        target: Path, results: Path, flags: tuple) -> None:
    """100,000 users a client need far more memory than the host has: the table ran its
    first count, then stopped failed at the second (exit 2, a table of one row), where a
    clients sweep refuses its largest point before its first."""
    from .conftest import call_cli
    got = call_cli("scale", "-p", "kvcache", "-t", str(target), "--results", str(results),
                   "--clients", "2", "--duration", "1s", *SETS, *flags, "--no-report")
    assert got.returncode == 2, got.stderr
    (line,) = got.stderr.strip().splitlines()
    assert "memory" in line and "Traceback" not in got.stderr, line
    assert line.startswith("aiio: kvcache.users = 100000: "), line
    assert not list(results.glob("*/result.json")), "a run or table was saved"
