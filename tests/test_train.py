"""The training phase: sharding, AU arithmetic, and whole runs through the CLI."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from aiio.phases.train import client_batches, shard_bounds
from aiio.phases.train_steps import StepTotals
from aiio.storage import dataset as ds
from aiio.storage.target import Target

from .conftest import TINY_ARGS, TINY_DATA, call_cli, run_cli, tiny_workload


@pytest.mark.parametrize("shuffle", ["sample", "file", "off"])
@pytest.mark.parametrize("clients", [1, 3, 7])
def test_every_sample_read_exactly_once_per_epoch(target, shuffle, clients):
    w = tiny_workload(dataset__format="raw", dataset__samples_per_file=10,
                      dataset__sample_size_stdev=0, dataset__sample_size=4096)
    data, _ = ds.ensure(Target(target), w)
    for epoch in range(2):
        seen = []
        for c in range(clients):
            for b in client_batches(data, shuffle, 7, epoch, clients, c, 4):
                for f, off, n in zip(b.files, b.offsets, b.lengths, strict=False):
                    first = off // 4096
                    seen += [int(f) * 10 + int(first) + k for k in range(n // 4096)]
        assert sorted(seen) == list(range(data.num_samples))


def test_shuffle_changes_per_epoch_and_is_seeded(target):
    data, _ = ds.ensure(Target(target), tiny_workload())
    order = [[int(f) for b in client_batches(data, "sample", 1, e, 1, 0, 4) for f in b.files]
             for e in (0, 1)]
    again = [int(f) for b in client_batches(data, "sample", 1, 0, 1, 0, 4) for f in b.files]
    assert order[0] != order[1] and order[0] == again


def test_shards_differ_by_at_most_one():
    sizes = [np.subtract(*shard_bounds(100, 7, i)[::-1]) for i in range(7)]
    assert sum(sizes) == 100 and max(sizes) - min(sizes) <= 1


def test_au_excludes_first_step_of_each_epoch():
    # (epoch, step, start, end of wait, end of compute, samples): each epoch's first step
    # waits long (cold start) and is excluded.
    steps = [(0, 0, 0.0, 5.0, 6.0, 2), (0, 1, 6.0, 7.0, 8.0, 2), (0, 2, 8.0, 8.0, 9.0, 2),
             (1, 0, 9.0, 18.0, 19.0, 2), (1, 1, 19.0, 19.0, 20.0, 2)]
    totals = StepTotals(0.1, log_cap=10, in_flight=2)
    for epoch, step, t0, t1, t2, samples in steps:
        totals.record(epoch, step, t0, t1, t2, samples, 100)
    au = totals.figures(compute_asked_s=1.0, batch_size=2)
    # measured: three steps, compute 3 s, wall 3 + 1 s of waiting -> 0.75
    assert au["au"] == pytest.approx(0.75)
    assert au["measured_steps"] == 3 and au["samples"] == 10 and au["epochs"] == 2
    assert au["consumed_bytes"] == 500 and au["steps"] == 5


def test_run_result_holds_every_client(target, results):
    proc = run_cli("run", "--no-report",
                   "--target", str(target), "--results", str(results), "--json",
                   *TINY_ARGS, "--clients", "3")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["status"] == "ok" and res["schema"] == "aiio.result/3"
    assert [c["client"] for c in res["clients"]] == [0, 1, 2]
    data_bytes = json.loads((target / "aiio/datasets/demo/manifest.json").read_text())
    # every client read its share: 2 epochs of the whole dataset, widened to 4 KiB blocks
    total = sum(c["bytes"] for c in res["clients"])
    assert 2 * data_bytes["total_bytes"] <= total <= 2 * data_bytes["total_bytes"] + 2 * 24 * 8192
    assert res["aggregate"]["read_bytes"] == total
    assert res["aggregate"]["delivered"]["last_done"]["bytes"] == total
    # epoch-bound: every sample read was consumed, two epochs of the dataset's sample bytes
    consumed = sum(c["consumed_bytes"] for c in res["clients"])
    assert consumed == res["aggregate"]["last_done"]["bytes"] == res["aggregate"]["bytes"]
    for c in res["clients"]:
        assert c["mib_s"] > 0 and 0 <= c["au"] <= 1 and c["latency"]["p50_ns"] > 0
    assert res["method"] in ("o_direct", "fadvise_dontneed")
    assert (results / res["id"] / "result.json").is_file()


def test_native_reader_reads_through_the_library(target, results):
    proc = run_cli("run", "--no-report",
                   "--target", str(target), "--results", str(results), "--json",
                   *TINY_ARGS, "--reader", "native")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["method"] == "fadvise_dontneed"
    assert res["aggregate"]["bytes"] > 0
    assert any(w["code"] == "no_o_direct" or w["code"] == "dataset_fits_in_ram"
               for w in res["warnings"])


def test_duration_mode_stops_on_time(target, results):
    proc = run_cli("run", "--no-report",
                   "--target", str(target), "--results", str(results), "--json",
                   *TINY_ARGS, "--duration", "1s")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["aggregate"]["last_done"]["seconds"] < 3
    assert all(c["epochs"] >= 1 for c in res["clients"])


def test_memory_backed_target_is_flagged(tmp_path, results):
    import os
    shm = "/dev/shm"
    if not os.path.isdir(shm):
        pytest.skip("no /dev/shm tmpfs here")
    tgt = tmp_path.name + "-aiio-test"
    path = os.path.join(shm, tgt)
    os.makedirs(path)
    try:
        proc = run_cli("run", "--no-report",
                       "--target", path, "--results", str(results), "--json", *TINY_ARGS)
        assert proc.returncode == 0, proc.stderr
        codes = {w["code"] for w in json.loads(proc.stdout)["warnings"]}
        assert "memory_backed" in codes
    finally:
        import shutil
        shutil.rmtree(path)


@pytest.mark.parametrize("args, fragment", [
    (("--phase", "bogus"), "unknown phase"),
    (("--workload", "nosuch"), "unknown workload"),
    (("--accelerator", "tpu9"), "unknown accelerator"),
    (("--clients", "0"), "at least 1"),
    # 0 is the workload's "no time limit": from the command line it ran by epochs unsaid
    (("--duration", "0s"), "leave --duration out"),
    (("--batch-size", "-3"), "at least 1"),
    (("--clients", "100000"), "memory"),
    (("--set", "train.nope=1"), "unknown key"),
    (("--set", "garbage"), "section.key=value"),
    # sizes clipped at 1 B rather than mean - 2 stdev lose their mean: the free-space check
    # must hold for the sizes really drawn (10 GiB on the demo wrote 21 GB in a minute)
    (("--set", "dataset.sample_size_stdev=10GiB"), "free"),
])
def test_bad_input_is_one_line_exit_2(target, args, fragment):
    proc = call_cli("run", "--target", str(target), "--quiet", *args)
    assert proc.returncode == 2, proc.stderr
    assert fragment in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not (target / "aiio" / "datasets").exists()  # not even the dataset's lock file


def test_compute_that_ran_long_is_flagged():
    from aiio.phases.train import compute_warnings
    clients = [{"client": 0, "measured_steps": 10, "compute_s": 0.10},   # 10 ms: as asked
               {"client": 1, "measured_steps": 10, "compute_s": 0.15}]   # 15 ms: 1.5x
    (warning,) = compute_warnings(clients, 0.010)
    assert warning["code"] == "compute_ran_long" and "15.0 ms" in warning["message"]
    assert compute_warnings(clients[:1], 0.010) == []


def test_compute_that_ran_long_claims_no_au_where_none_was_measured():
    # a run too short or a dataset too small for AU: the warning said "AU reads high" of a
    # figure the run never gave
    from aiio.phases.train import compute_warnings
    slow = {"client": 0, "measured_steps": 10, "compute_s": 0.15}
    (warning,) = compute_warnings([slow], 0.010)
    assert "AU reads high" not in warning["message"] and "no AU" in warning["message"]
    (warning,) = compute_warnings([slow | {"au": 0.97}], 0.010)
    assert "AU reads high" in warning["message"]


def test_compute_more_than_2_percent_long_is_flagged():
    # At 1,024 clients the client host's wake-ups run late; the run must say so once the
    # emulated compute is off by more than 2 % (here cosmoflow's 3.5 ms measured as 3.6 ms).
    from aiio.phases.train import compute_warnings
    clients = [{"client": 0, "measured_steps": 100, "compute_s": 0.3505},
               {"client": 1, "measured_steps": 100, "compute_s": 0.360}]
    (warning,) = compute_warnings(clients, 0.0035)
    assert "3.6 ms" in warning["message"] and "1 client(s)" in warning["message"]


def test_a_client_without_samples_ends_instead_of_spinning(target):
    # 1,024 clients on the demo's 512 samples: half of them get no batch in any epoch. In a
    # duration-bound run their batch source looped over empty epochs forever, holding a CPU.
    import signal
    import types

    from aiio.phases.train import TrainArgs, _all_batches
    w = tiny_workload()
    data, _ = ds.ensure(Target(target), w)
    args = TrainArgs(w, data, "none", 0.0, None, 5.0)
    ctx = types.SimpleNamespace(count=2 * data.num_samples, index=0)  # share [0, 0)

    def stuck(*_):
        raise AssertionError("the batch source never ended")
    old = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(10)
    try:
        assert list(_all_batches(args, ctx)) == []
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_compute_is_checked_on_clients_with_only_warm_up_steps():
    # With more clients than batches per epoch every step is an epoch's first (warm-up) step;
    # their emulated compute must still be checked.
    from aiio.phases.train import compute_warnings
    log = [[e, 0, 0.1 * e, 0.001, 0.020, 2] for e in range(5)]  # 20 ms each, 10 ms asked
    clients = [{"client": 0, "measured_steps": 0, "compute_s": 0.0, "step_log": log}]
    (warning,) = compute_warnings(clients, 0.010)
    assert "20.0 ms" in warning["message"]


@pytest.mark.parametrize("cache", ["o_direct", "none"])
def test_a_sample_file_shorter_than_planned_fails_the_run_naming_it(target, results, cache):
    # A dataset file cut short after generation (another job, a partial copy) left its samples
    # partly unread; each still counted as a whole sample in the steps and AU, and the run
    # passed without a word.
    args = ("run", "--no-report", "--target", str(target), "--results", str(results),
            "--json", *TINY_ARGS, "--clients", "1", "--cache", cache)
    assert run_cli(*args).returncode == 0  # generates the dataset
    cut = sorted((target / "aiio/datasets/demo").glob("d*/f*"))[5]
    os.truncate(cut, cut.stat().st_size // 2)
    proc = run_cli(*args)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert str(cut) in proc.stderr and "shorter than" in proc.stderr, proc.stderr
    assert json.loads(proc.stdout or "{}").get("status", "failed") == "failed"


def test_clients_without_a_sample_are_said_and_do_not_close_the_first_done_window(target,
                                                                                   results):
    # More clients than samples: a client with no batch ends at once, and the first-done
    # window (until the first client finished) closed with it, near 0 s: "16.4 MiB/s over
    # 0.00 s" as the aggregate, and nothing said of the idle clients.
    proc = run_cli("run", "--no-report", "--target", str(target), "--results", str(results),
                   "--json", *TINY_DATA, "--set", "dataset.num_files=2", "--epochs", "1",
                   "--batch-size", "1", "--clients", "3")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    working = [c for c in res["clients"] if c["samples"]]
    assert len(working) == 2  # 2 samples over 3 clients
    agg = res["aggregate"]
    # consumed bytes over each client's consumed window (to its last step), delivered bytes
    # over its whole window
    window = min(c["consumed_elapsed_s"] for c in working)
    assert agg["first_done"]["seconds"] == pytest.approx(window)
    window = min(c["elapsed_s"] for c in working)
    assert agg["delivered"]["first_done"]["seconds"] == pytest.approx(window)
    (said,) = [w for w in res["warnings"] if w["code"] == "clients_without_samples"]
    assert "1 of 3 clients" in said["message"] and "2 samples" in said["message"]


def test_a_smaller_sample_keeps_the_workloads_stdev(target, results):
    """`--set dataset.sample_size=64KiB` on the demo (stdev 64 KiB) is a run, as the README's
    small examples give it, not a refusal."""
    proc = call_cli("run", "--phase", "train", "--target", str(target), "--results",
                    str(results), "--clients", "1", "--epochs", "1", "--batch-size", "2",
                    "--set", "dataset.num_files=8", "--set", "dataset.sample_size=64KiB",
                    "--quiet", "--no-report", "--no-history")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("stdev", [32 * 1024, 64 * 1024, 256 * 1024])
def test_free_space_check_covers_the_sizes_really_drawn(stdev):
    """The bytes the space check asks for are at least the bytes the sizes add up to, also
    where the lower clip at 1 B lifts their mean above sample_size."""
    w = tiny_workload(dataset__num_files=64, dataset__sample_size="64KiB",
                      dataset__sample_size_stdev=stdev)
    params = ds.DatasetParams.from_workload(w)
    drawn = sum(int(params.sample_sizes(i).sum()) for i in range(params.num_files))
    assert params.expected_bytes() >= drawn


def test_a_full_step_log_keeps_every_kth_step_over_the_whole_run():
    # The log kept the first `log_cap` steps and dropped the rest: an hour-long run's
    # wait-per-step chart ended where the cap was reached, with nothing saying so. Full, it
    # now drops every other record and keeps every second step from then on: an even sample
    # of the whole run, never more than the cap, with its stride in the figures.
    totals = StepTotals(0.1, log_cap=4, in_flight=2)
    for step in range(20):
        totals.record(0, step, step * 1.0, step + 0.5, step + 1.0, 2, 100)
    got = totals.figures(compute_asked_s=0.5, batch_size=2)
    assert [r[1] for r in got["step_log"]] == [0, 8, 16]
    assert got["step_log_stride"] == 8
    assert got["steps"] == 20  # totals never come from the log


def test_a_short_step_log_is_every_step():
    totals = StepTotals(0.1, log_cap=10, in_flight=2)
    for step in range(7):
        totals.record(0, step, step * 1.0, step + 0.5, step + 1.0, 2, 100)
    got = totals.figures(compute_asked_s=0.5, batch_size=2)
    assert [r[1] for r in got["step_log"]] == list(range(7))
    assert got["step_log_stride"] == 1


def test_the_step_records_of_a_run_are_shared_among_its_clients():
    # Every client kept up to 200,000 records (544 B each in the client and the parent): a
    # one-hour run of 1,024 clients at 10 ms a batch could hold 100 GiB of them, and its
    # result.json 10 GB. The run shares one budget; each client keeps a floor for its chart.
    from aiio.phases.train import MAX_STEP_RECORDS, MIN_STEP_RECORDS, RUN_STEP_RECORDS, step_log_cap
    assert step_log_cap(1) == MAX_STEP_RECORDS
    assert step_log_cap(1024) == max(MIN_STEP_RECORDS, RUN_STEP_RECORDS // 1024)
    assert all(step_log_cap(n) * n <= max(RUN_STEP_RECORDS, n * MIN_STEP_RECORDS)
               for n in (1, 2, 5, 64, 1000, 4096))


def test_a_step_log_thins_only_when_a_record_would_not_fit():
    # The log thinned as soon as it reached its cap: a client with as many steps as its
    # share of the run's records kept half of them, and every thinned log ended with between
    # half its cap and one less than it.
    totals = StepTotals(0.1, log_cap=4, in_flight=2)
    for step in range(4):
        totals.record(0, step, step * 1.0, step + 0.5, step + 1.0, 2, 100)
    got = totals.figures(compute_asked_s=0.5, batch_size=2)
    assert [r[1] for r in got["step_log"]] == [0, 1, 2, 3] and got["step_log_stride"] == 1
    totals.record(0, 4, 4.0, 4.5, 5.0, 2, 100)  # one more: no room, every other step kept
    got = totals.figures(compute_asked_s=0.5, batch_size=2)
    assert [r[1] for r in got["step_log"]] == [0, 2, 4] and got["step_log_stride"] == 2


def test_the_duration_named_for_a_run_too_short_is_longer_than_the_run():
    """A client that stalled (a starved CPU, a slow bucket) can leave more bytes between its
    last step and the run's than a batch per loader thread: the duration aiio names must then
    come from what this run held, not only from that bound. A 1 s run that held 6 % of 20 MiB
    named "a run of 1 s" (a CI run of the bucket sweep)."""
    from aiio.phases.train import not_measured
    mib = 1 << 20
    agg = {"consumed_bytes": 18.8 * mib, "partly_read_bytes": 0.2 * mib,
           "ended_early_bytes": 1.0 * mib,
           "delivered": {"last_done": {"mib_s": 20.0}}, "last_done": {"seconds": 1.0}}
    said = not_measured(agg, batch_bytes=128 << 10, read_threads=1, clients=2)
    named = int(said.split("a run of ")[1].split(" s (--duration)")[0].replace(",", ""))
    # 1.2 MiB held beside 18.8 consumed at 1 s: within 5 % needs 1.2 x 19 / 18.8 x 1 s
    assert named == 2
