"""Many hosts: runs under real MPI processes (mpiexec -n 2 and -n 3 on one machine).

On one machine every rank reports the same hostname, so hosts are told apart by rank.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiio.results import result
from aiio.run.comm import launched_size, version_mismatch
from aiio.run.hosts import split_clients
from aiio.storage.target import Target

from .conftest import REPO, TINY_DATA, call_cli, client_processes, is_root, saved_results
from .mpi import (
    end_job,
    find_mpiexec,
    launch,
    left_behind,
    mpi_env,
    mpi_run,
    mpi_start,
    needs_mpi,
    ranks_of,
    tree_pids,
    wait_measuring,
)

TINY = (*TINY_DATA, "--batch-size", "2")


def _run_args(target, results, *extra: str, report: bool = False) -> tuple[str, ...]:
    """A tiny run across the ranks, without its page unless asked: test_report.py draws a
    finished MPI run's, and one test here a failed one's."""
    return ("run", "--target", str(target), "--results", str(results),
            *(() if report else ("--no-report",)), *TINY, *extra)


# --- pure functions ----------------------------------------------------------------------

def test_split_is_as_even_as_possible():
    assert split_clients(5, 2) == [3, 2]
    assert split_clients(6, 3) == [2, 2, 2]
    assert split_clients(2, 3) == [1, 1, 0]
    assert sum(split_clients(64, 7)) == 64 and max(split_clients(64, 7)) == 10


def test_launcher_detection():
    assert launched_size({}) == 1
    assert launched_size({"OMPI_COMM_WORLD_SIZE": "3"}) == 3
    assert launched_size({"PMI_SIZE": "8"}) == 8
    assert launched_size({"SLURM_STEP_NUM_TASKS": "4"}) == 4
    assert launched_size({"PMIX_RANK": "0"}) == 0  # ask MPI itself
    # a Slurm batch script (no job step) is not a launch
    assert launched_size({"SLURM_NTASKS": "8", "SLURM_JOB_ID": "1"}) == 1


def test_version_mismatch_names_the_host():
    same = {"aiio": "1.0", "python": "3.11.7"}
    ids = [{"host": "a", **same}, {"host": "b", **same, "aiio": "0.9"}]
    assert version_mismatch(ids[:1] * 2) is None
    msg = version_mismatch(ids)
    assert "host b (rank 1)" in msg and "0.9" in msg and "same versions" in msg


def test_without_mpi_aiio_never_imports_mpi4py(target, results):
    code = ("import sys\nfrom aiio.cli import main\n"
            f"try:\n    main({list(_run_args(target, results, '-q', '--epochs', '1'))!r})\n"
            "except SystemExit as e:\n    assert e.code == 0, e.code\n"
            "assert 'mpi4py' not in sys.modules, 'mpi4py imported'\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (res,) = saved_results(results)
    assert res["ranks"] == 1 and len(res["hosts"]) == 1 and res["hosts"][0]["clients"] == 2


def test_clients_and_clients_per_host_exclude_each_other(target):
    done = call_cli("run", "--target", str(target), "--clients", "4", "--clients-per-host", "2")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "--clients-per-host" in done.stderr


# --- real MPI runs -----------------------------------------------------------------------

@needs_mpi
def test_three_ranks_give_one_result_with_every_host_and_client(target, results):
    done = mpi_run(3, *_run_args(target, results, "--clients", "6", "--epochs", "2", "--json"))
    assert done.returncode == 0, done.stderr
    res = json.loads(done.stdout)  # one JSON document: only rank 0 printed
    assert [r["id"] for r in saved_results(results)] == [res["id"]]  # only rank 0 wrote
    assert res["status"] == "ok" and res["ranks"] == 3 and res["split"] == [2, 2, 2]
    assert [h["rank"] for h in res["hosts"]] == [0, 1, 2]
    clients = res["clients"]
    assert [c["client"] for c in clients] == list(range(6))
    assert [c["rank"] for c in clients] == [0, 0, 1, 1, 2, 2]
    assert all(c["bytes"] > 0 and c["host"] for c in clients)
    for h in res["hosts"]:
        assert h["status"] == "ok" and h["clients"] == 2
        assert h["client_numbers"] == [2 * h["rank"], 2 * h["rank"] + 1]
        # training's aggregate bytes are the consumed sample bytes; read_bytes the device's
        assert h["aggregate"]["bytes"] == sum(c["consumed_bytes"] for c in clients
                                              if c["rank"] == h["rank"])
        assert h["aggregate"]["read_bytes"] == sum(c["bytes"] for c in clients
                                                   if c["rank"] == h["rank"])
        assert h["monitor"]["seconds"] > 0 and h["target"]["path"] == str(target)
    # bytes add up across hosts, and the aggregate is over every client of every host
    assert sum(h["aggregate"]["bytes"] for h in res["hosts"]) == res["aggregate"]["bytes"]
    assert res["aggregate"]["per_client_mib_s"]["n"] == 6
    assert not [w for w in res["warnings"] if w["code"] == "rank_cpu_bound"]
    # two epochs over the whole dataset, shared by all hosts: every sample read twice
    data = json.loads((target / "aiio/datasets/demo/manifest.json").read_text())
    assert res["aggregate"]["samples"] == 2 * data["num_samples"]
    # the dataset was written by all three ranks, each its own range of files
    assert [g["files"] for g in data["generated_by"]] == [[0, 8], [8, 16], [16, 24]]


@needs_mpi
def test_uneven_split_five_clients_on_two_ranks(target, results):
    done = mpi_run(2, *_run_args(target, results, "--clients", "5", "--epochs", "1", "-q"))
    assert done.returncode == 0, done.stderr
    assert "per host (2 ranks)" in done.stdout  # rank 0 printed the host table, once
    assert done.stdout.count("result: ") == 1
    (res,) = saved_results(results)
    assert res["split"] == [3, 2]
    assert [(h["clients"], h["client_numbers"]) for h in res["hosts"]] == \
        [(3, [0, 1, 2]), (2, [3, 4])]
    assert sum(h["aggregate"]["bytes"] for h in res["hosts"]) == res["aggregate"]["bytes"]


@needs_mpi
def test_clients_per_host_and_the_launchers_cpu_binding(target, results):
    # Open MPI binds each of two ranks to a core by default: their clients share it.
    done = mpi_run(2, *_run_args(target, results, "--clients-per-host", "2", "--epochs", "1",
                                 "-q"), bind=True)
    assert done.returncode == 0, done.stderr
    (res,) = saved_results(results)
    assert res["split"] == [2, 2] and len(res["clients"]) == 4
    bound = [h for h in res["hosts"]
             if h["environment"]["cpu_affinity"] < h["environment"]["cpus"]]
    warned = [w["rank"] for w in res["warnings"] if w["code"] == "rank_cpu_bound"]
    assert warned == [h["rank"] for h in bound]


@needs_mpi
@pytest.mark.parametrize("extra, said", [
    (0, "(rank 1): its clients ended before barrier 2 of the run, where the clients of host"),
    (1, "(rank 1): its clients wait at barrier 2 of the run, which the clients of host"),
])
def test_hosts_that_disagree_on_the_barriers_end_the_run_naming_the_host(target, results,
                                                                        extra, said):
    """Client `extra` meets one barrier more than the other (tests/uneven_phase.py): whichever
    host waits for the other, the run fails at once naming the host, never hangs."""
    args = ["run", "--phase", "uneven", "--target", str(target), "--results", str(results),
            "--clients", "2", "-q", "--no-report"]
    code = ("import sys\nfrom aiio.phases import REGISTRY\n"
            "REGISTRY['uneven'] = 'tests.uneven_phase'\n"
            f"from aiio.cli import main\nmain({args!r})\n")
    cmd = [find_mpiexec(), "--oversubscribe", "--bind-to", "none", "-n", "2", sys.executable,
           "-c", code]
    done = launch(cmd, mpi_env({"AIIO_TEST_EXTRA_BARRIER": str(extra)}), 120)
    assert done.returncode != 0
    assert said in done.stderr and "partial result saved" in done.stderr, done.stderr
    (res,) = saved_results(results)
    assert res["status"] == "failed" and said in res["error"]


@needs_mpi
def test_killed_client_on_another_host_ends_the_run_naming_it(target, results):
    proc = mpi_start(3, *_run_args(target, results, "--clients", "6", "--duration", "30s",
                                   "-q", report=True))
    pids = []
    try:
        kids = wait_measuring(proc, 6)
        pids = tree_pids(proc)
        next(k for k in kids if k.name() == "aiio-client-5").kill()  # rank 2's second client
        _, err = proc.communicate(timeout=60)
        left = left_behind(pids)  # before the clean-up below kills whatever is left
    finally:
        end_job(proc, pids)
    assert proc.returncode != 0
    assert "(rank 2): client 5" in err and "SIGKILL" in err and "partial result saved" in err
    (res,) = saved_results(results)
    assert res["status"] == "failed" and "(rank 2): client 5" in res["error"]
    assert sorted(c["client"] for c in res["clients"]) == [0, 1, 2, 3, 4]  # all others kept
    assert all(h["status"] == "failed" for h in res["hosts"])
    assert not left
    # the page of a failed run across hosts: the one a test reads (test_report.py's MPI run
    # finished)
    assert "report.html not written" not in err
    (folder,) = [p for p in results.iterdir() if p.is_dir()]
    page = (folder / "report.html").read_text()
    assert "did not finish: it was failed" in page and 'id="hosts"' in page
    assert "could not be drawn" not in page


@needs_mpi
def test_killed_rank_ends_the_run_without_a_hang(target, results):
    proc = mpi_start(3, *_run_args(target, results, "--clients", "6", "--duration", "30s",
                                   "-q"))
    pids = []
    try:
        wait_measuring(proc, 6)
        pids = tree_pids(proc)
        ranks_of(proc)[1].send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=60)  # bounded: a hang fails here
        left = left_behind(pids)
    finally:
        end_job(proc, pids)
    assert proc.returncode != 0
    assert "rank 1" in err  # the launcher names the rank and its node
    assert not left  # no rank and no client left behind
    # Open MPI sends SIGKILL 250 ms after SIGTERM (a fixed pause in its launcher, no setting).
    # The run saved itself as "running" before measuring: either rank 0 rewrote it in that
    # time as the failed run naming the dead rank, or it stays as SIGKILL left it and reads
    # as interrupted, its process gone.
    (path,) = results.glob("*/result.json")
    saved = result.load(path)
    if saved.status == "failed":
        assert "(rank 1)" in saved["error"], saved["error"]
    else:
        assert saved.status == "interrupted" and "process gone" in saved["error"], \
            (saved.status, saved["error"])


@pytest.mark.long
@needs_mpi
def test_hung_rank_is_named_and_the_partial_result_saved(target, results):
    proc = mpi_start(3, *_run_args(target, results, "--clients", "6", "--duration", "30s",
                                   "-q"), env={"AIIO_MPI_SILENCE_S": "3"})
    pids = []
    try:
        wait_measuring(proc, 6)
        pids = tree_pids(proc)
        ranks_of(proc)[1].send_signal(signal.SIGSTOP)  # alive, but silent
        _, err = proc.communicate(timeout=60)
        left = left_behind(pids)  # before the clean-up below kills whatever is left
    finally:
        end_job(proc, pids)
    assert proc.returncode != 0
    assert "host" in err and "(rank 1) stopped answering" in err
    (res,) = saved_results(results)
    assert res["status"] == "failed" and "(rank 1) stopped answering" in res["error"]
    assert [h["status"] for h in res["hosts"]] == ["failed", "lost", "failed"]
    assert sorted(c["client"] for c in res["clients"]) == [0, 1, 4, 5]
    assert all(c["bytes"] > 0 for c in res["clients"])
    assert not left


def _run_rank_1_seeing(other: Path, over: Path, target: Path,
                       results: Path) -> subprocess.CompletedProcess:
    """A 2-rank run whose rank 1 runs in its own mount namespace, `other` bound over `over`:
    the same path, a different filesystem view, as on a host without the shared mount."""
    args = [sys.executable, "-m", "aiio", *_run_args(target, results, "--clients", "2",
                                                       "--epochs", "1", "-q")]
    inner = " ".join(f"'{a}'" for a in args)
    rank1 = ["unshare", "-m", "--propagation", "private", "sh", "-c",
             f"mount --bind '{other}' '{over}' && exec {inner}"]
    cmd = [find_mpiexec(), "--oversubscribe", "--bind-to", "none", "-n", "1", *args, ":",
           "-n", "1", *rank1]
    return launch(cmd, mpi_env(), 120)


@needs_mpi
@pytest.mark.root
@pytest.mark.skipif(not is_root(), reason="needs root for a private mount namespace")
def test_rank_seeing_another_dataset_stops_the_run(target, results, tmp_path):
    """Rank 1 runs in its own mount namespace, where TARGET/aiio/datasets is another folder:
    the same path, a different filesystem view, as on a host without the shared mount."""
    datasets = Target(target).claim() / "datasets"
    datasets.mkdir()
    other = tmp_path / "elsewhere"
    other.mkdir()
    done = _run_rank_1_seeing(other, datasets, target, results)
    assert done.returncode != 0
    assert "(rank 1): sees no dataset" in done.stderr and "shared" in done.stderr
    (res,) = saved_results(results)
    assert res["status"] == "failed" and "(rank 1)" in res["error"]
    assert not list(other.iterdir())  # rank 1's share was removed from its view too
    assert not (datasets / "demo").exists()  # and the half dataset from rank 0's


@needs_mpi
@pytest.mark.root
@pytest.mark.skipif(not is_root(), reason="needs root for a private mount namespace")
def test_rank_not_seeing_rank_0s_files_stops_the_run_before_anything_is_made(
        target, results, tmp_path):
    """Rank 1 runs in its own mount namespace, where TARGET/aiio is another folder: it does
    not see the file rank 0 writes there to check the target is one shared filesystem."""
    mine = Target(target).claim()
    other = tmp_path / "elsewhere"
    other.mkdir()
    done = _run_rank_1_seeing(other, mine, target, results)
    assert done.returncode == 2, done.stderr
    assert "(rank 1): does not see the files rank 0 writes" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not (mine / "datasets").exists()  # nothing made before the check
    assert not [p for p in mine.iterdir() if p.name.startswith(".hosts-")]
    assert saved_results(results) == []  # a refused target: nothing ran, no result


@pytest.mark.long
@needs_mpi
def test_scale_sweep_across_three_ranks(target, results):
    done = mpi_run(3, "scale", "--target", str(target), "--results", str(results), *TINY,
                   "--clients", "1,3,6", "--duration", "2s", "--no-charts", "-q", "--no-report")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("verdict") == 1  # rank 0 alone printed
    sweeps = [r for r in saved_results(results) if r["kind"] == "sweep"]
    assert len(sweeps) == 1
    points = {p["clients"]: p["result"] for p in sweeps[0]["points"]}
    for n, split in ((1, [1, 0, 0]), (3, [1, 1, 1]), (6, [2, 2, 2])):
        run = points[n]
        assert run["split"] == split and [h["rank"] for h in run["hosts"]] == [0, 1, 2]
        assert [h["clients"] for h in run["hosts"]] == split
        assert sum(h["aggregate"].get("bytes", 0) for h in run["hosts"]) == \
            run["aggregate"]["bytes"] > 0


HOST_START_SKEW_S = 0.02  # the hosts' start instants, apart by far less on one machine


@pytest.mark.long
@needs_mpi
def test_synchronous_checkpoints_during_training_across_ranks(target, results):
    """The barrier of a synchronous checkpoint spans every host; a duration-bound run still
    ends when the deadline falls while some clients wait at it."""
    for bound in (("--epochs", "2"), ("--duration", "2s")):
        done = mpi_run(2, *_run_args(target, results, "--clients", "3", *bound,
                                     "--set", "checkpoint.size=3MiB", "--checkpoint-every",
                                     "2steps", "-q"))
        assert done.returncode == 0, done.stderr
    saved = saved_results(results)
    assert len(saved) == 2, f"{len(saved)} results saved for two runs"
    for res in saved:
        ck = res["aggregate"]["checkpoint"]
        assert ck["stall_model"] == "synchronous" and ck["completed"] >= 1
        for k, p in enumerate(ck["checkpoints"]):
            for c in res["clients"]:
                r = c["checkpoints"][k]
                opened = r["start_s"] + r["own_shard_s"] + r["wait_for_others_s"]
                # On its host's clock: after every shard written on that host was durable.
                own_host = [o["checkpoints"][k]["write"]["end_s"] for o in res["clients"]
                            if o["rank"] == c["rank"]]
                assert opened >= max(own_host), (k, c["client"])
                # Each host counts from its own start, and the hosts start within rank 0's
                # message latency and a 1 ms poll of each other (aiio/run/hosts.py): against the
                # other host's shards the order holds up to that. Compared exactly, a barrier
                # opened 0.3 ms "before" the other host's last shard, once in six runs.
                assert opened >= p["write"]["end_s"] - HOST_START_SKEW_S, (k, c["client"])


def _signal_all(procs: list, sig: int) -> None:
    for p in procs:
        p.send_signal(sig)


def _first_checkpoint(proc: subprocess.Popen, target, timeout: float = 120) -> None:
    """Wait until the run has written its first checkpoint folder (it has started)."""
    deadline = time.monotonic() + timeout
    while not list((target / "aiio" / "checkpoints").glob("*/ckpt-*")):
        if proc.poll() is not None:
            raise AssertionError(f"run ended early: {proc.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError("no checkpoint written")
        time.sleep(0.05)


@pytest.mark.long
@needs_mpi
def test_barrier_released_late_on_one_host_across_the_deadline(target, results):
    """A synchronous checkpoint's barrier opens before the deadline, and its release reaches
    the other host only after it (a host paused, as a loaded one may be). Each host used to
    judge on its own clock whether a barrier was still to meet after the deadline: host 0's
    clients waited at one that host 1's client never came to, and the run hung."""
    proc = mpi_start(2, *_run_args(target, results, "--clients", "3", "--duration", "10s",
                                   "--set", "checkpoint.size=3MiB", "--checkpoint-every",
                                   "1steps", "-q"))
    pids = []
    try:
        _first_checkpoint(proc, target)
        started = time.monotonic()  # within a step of the start: a step takes ~10 ms
        pids = tree_pids(proc)
        ranks = ranks_of(proc)
        host0 = client_processes(ranks[0].pid)
        assert len(host0) == 2
        _signal_all(host0, signal.SIGSTOP)
        time.sleep(1.5)  # host 1's client reaches the next barrier; rank 1 awaits its release
        ranks[1].send_signal(signal.SIGSTOP)
        _signal_all(host0, signal.SIGCONT)  # host 0 opens that barrier, long before 10 s
        time.sleep(max(0.0, started + 12 - time.monotonic()))
        ranks[1].send_signal(signal.SIGCONT)  # rank 1 learns of it after the deadline
        try:
            _, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            pytest.fail("the run hung after the deadline")
    finally:
        end_job(proc, pids)
    # A host paused for seconds may leave too few consumed batches for a training headline
    # within 5 %: the run then says so and exits 1 with its partial result. Either way it ended
    # and its checkpoints are counted.
    unmeasured = proc.returncode == 1 and "cannot be measured" in err
    assert proc.returncode == 0 or unmeasured, err
    (res,) = saved_results(results)
    assert res["status"] == ("failed" if unmeasured else "ok")
    assert res["aggregate"]["checkpoint"]["completed"] >= 1


@needs_mpi
def test_an_engine_module_missing_on_one_host_is_named_not_a_hang(target, results, tmp_path):
    """The engine's module is on rank 0's path only (copied to one node): the other rank
    cannot unpickle the call that carries the engine. It said so in a traceback and rank 0
    waited 30 s for it, then called it hung; now the run fails naming the host and the module."""
    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "rank0_engine.py").write_text(
        "from tests.sleepy_engine import SleepyEngine\n"
        "class Rank0Engine(SleepyEngine):\n    pass\n"
        "def make(target, method):\n    return Rank0Engine(method)\n")
    args = [*_run_args(target, results), "--phase", "load", "--set", "load.size=1MiB", "-q",
            "--engine", "external:rank0_engine"]
    cmd = [find_mpiexec(), "--oversubscribe", "--bind-to", "none",
           "-n", "1", "env", f"PYTHONPATH={mods}", sys.executable, "-m", "aiio", *args, ":",
           "-n", "1", sys.executable, "-m", "aiio", *args]
    env = {k: v for k, v in mpi_env().items() if k != "PYTHONPATH"}
    done = launch(cmd, env, 120)
    assert done.returncode != 0
    assert "(rank 1)" in done.stderr and "No module named 'rank0_engine'" in done.stderr, \
        done.stderr[-3000:]
    assert "stopped answering" not in done.stderr and "Traceback" not in done.stderr
    assert "sent no reply" not in done.stderr  # it answered at once, with its error
