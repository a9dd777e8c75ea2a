"""Training figures: exact totals past the step-log cap, bytes delivered against bytes
consumed, application against device bytes, the AU rule, warm-up, compute 0, and AU that
cannot be measured. Real runs on the temp filesystem."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import REPO, TINY_ARGS, call_cli, flat, run_cli, saved_result

RAW = ("--set", "dataset.format=raw", "--set", "dataset.sample_size_stdev=0")
SAMPLES = 24  # TINY_ARGS: 24 files of one sample each


def _run(target, results, *args: str, report: bool = False) -> dict:
    proc = run_cli("run", "--target", str(target), "--results", str(results), "--json",
                   *TINY_ARGS, *args, *(() if report else ("--no-report",)))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)


def _run_with_cap(target, results, cap: int, *args: str) -> dict:
    """A run in a process whose step-log cap is lowered (clients are forked, so they see it)."""
    argv = ["run", "--target", str(target), "--results", str(results), "--json", *TINY_ARGS,
            *args, "--no-report"]
    code = ("import aiio.phases.train as t\n"
            f"t.MAX_STEP_RECORDS = {cap}\n"
            "from aiio.cli import main\n"
            f"main({argv!r})\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_totals_stay_exact_past_the_step_log_cap(target, results):
    res = _run_with_cap(target, results, 3, *RAW)
    steps_per_epoch = SAMPLES // 2 // 2  # 2 clients, batch 2
    for c in res["clients"]:
        assert c["steps"] == 2 * steps_per_epoch
        assert c["measured_steps"] == 2 * (steps_per_epoch - 1)
        assert c["epochs"] == 2
        assert c["samples"] == 2 * SAMPLES // 2
        assert c["compute_s"] >= c["measured_steps"] * 0.010  # a sleep never ends early
        assert c["compute_all_s"] >= c["steps"] * 0.010  # every step's, past the cap too
        assert len(c["step_log"]) <= 3
    agg = res["aggregate"]
    assert agg["samples"] == 2 * SAMPLES
    elapsed = max(c["consumed_elapsed_s"] for c in res["clients"])  # to the last step's end
    assert agg["samples_per_s"] == pytest.approx(2 * SAMPLES / elapsed)


def test_a_thinned_step_log_spans_the_run_and_the_report_says_which_steps(target, results):
    # Past its cap a client's log kept the first steps alone; it now keeps an even sample of
    # them all, and the wait-per-step chart names the share of steps it draws.
    from aiio.report import render
    res = _run_with_cap(target, results, 3, *RAW)
    for c in res["clients"]:
        assert c["step_log_stride"] >= 2 and len(c["step_log"]) <= 3
        # the last record is one of the client's last steps, not of its first three
        last = c["step_log"][-1]
        assert (last[0], last[1]) > (c["step_log"][0][0], 2)
    assert "one step in " in render(res)


def test_au_during_checkpoints_counts_every_step_past_the_cap(target, results):
    res = _run_with_cap(target, results, 2, *RAW, "--checkpoint-every", "2steps",
                        "--set", "checkpoint.size=1MiB")
    ck = res["aggregate"]["checkpoint"]
    n = len(res["clients"])
    end = max(c["elapsed_s"] for c in res["clients"])
    inside = sum(p["au_during"] * n * p["window_s"] for p in ck["checkpoints"])
    outside = end - sum(p["window_s"] for p in ck["checkpoints"])
    busy = inside + ck["checkpoints"][0]["au_baseline"] * n * outside
    # every step computed for at least the asked 10 ms, warm-up steps included
    steps = sum(c["steps"] for c in res["clients"])
    assert steps == 2 * SAMPLES // 2
    assert busy >= steps * 0.010 * 0.999


def test_read_ahead_is_delivered_but_not_consumed(target, results):
    # compute 50 ms per batch for 1 s: the loaders read ahead of what is consumed
    res = _run(target, results, *RAW, "--duration", "1s", "--set", "train.compute_time.h100=0.05",
               "--set", "train.prefetch=4")
    agg = res["aggregate"]
    consumed = 0
    for c in res["clients"]:
        assert c["consumed_bytes"] == c["samples"] * 64 * 1024  # sample bytes, exactly
        assert c["app_bytes"] >= c["consumed_bytes"]  # delivered includes the read-ahead
        assert c["bytes"] >= c["app_bytes"]  # device bytes: never fewer than the samples'
        consumed += c["consumed_bytes"]
    # the headline is what the accelerators consumed; the storage's delivery stays visible
    assert agg["consumed_bytes"] == consumed
    assert agg["last_done"]["bytes"] == consumed
    assert agg["first_done"]["bytes"] <= consumed
    delivered = agg["delivered"]
    assert delivered["device_bytes"] == sum(c["bytes"] for c in res["clients"])
    assert delivered["app_bytes"] == sum(c["app_bytes"] for c in res["clients"])
    assert delivered["app_bytes"] > consumed  # 8 batches per client read ahead, never used
    assert delivered["last_done"]["bytes"] == delivered["device_bytes"]
    assert agg["read_bytes"] == delivered["device_bytes"]


def test_widened_bytes_are_kept_apart_from_sample_bytes(target, results):
    # 4,000-byte samples, ten to a file: O_DIRECT reads widen each to 4 KiB boundaries
    res = _run(target, results, *RAW, "--set", "dataset.sample_size=4000",
               "--set", "dataset.samples_per_file=10", "--set", "dataset.num_files=12",
               "--batch-size", "4")
    agg = res["aggregate"]
    sample_bytes = 2 * 120 * 4000  # two epochs of 120 samples
    assert agg["consumed_bytes"] == sample_bytes
    assert agg["delivered"]["app_bytes"] == sample_bytes  # epoch-bound: all consumed
    assert agg["last_done"]["bytes"] == sample_bytes
    if res["method"] == "o_direct":
        assert agg["delivered"]["device_bytes"] > 1.5 * sample_bytes  # most span two pages
    consumed = agg["per_client_mib_s"]["mean"]
    assert consumed == pytest.approx(
        sum(c["consumed_mib_s"] for c in res["clients"]) / len(res["clients"]))


def test_au_rule_is_mlperf_mean_by_default_and_min_on_request(target, results):
    res = _run(target, results, *RAW)
    agg = res["aggregate"]
    assert agg["au_rule"] == "mean"
    assert agg["au_pass"] == (agg["au_mean"] >= agg["au_goal"])
    strict = _run(target, results, *RAW, "--set", "train.au_rule=min")["aggregate"]
    assert strict["au_rule"] == "min"
    assert strict["au_pass"] == (strict["au_min"] >= strict["au_goal"])


def test_au_verdict_rules():
    from aiio.phases.train_au import au_verdict
    aus = [0.96, 0.85]
    assert au_verdict(aus, 0.9, "mean") is True    # mean 0.905: MLPerf passes
    assert au_verdict(aus, 0.9, "min") is False    # one client below: the strict rule fails


def test_warm_up_is_the_first_step_consumed_not_batch_zero():
    from aiio.phases.train_steps import StepTotals
    totals = StepTotals(bucket_s=0.1, log_cap=10, in_flight=4)
    # batch 1 arrives first after a 5 s start-up wait; batch 0 follows at once
    totals.record(epoch=0, step=1, t0=0.0, t1=5.0, t2=6.0, samples=2, nbytes=8)
    totals.record(epoch=0, step=0, t0=6.0, t1=6.0, t2=7.0, samples=2, nbytes=8)
    totals.record(epoch=0, step=2, t0=7.0, t1=8.0, t2=9.0, samples=2, nbytes=8)
    fig = totals.figures(compute_asked_s=1.0, batch_size=2)
    assert fig["measured_steps"] == 2
    assert fig["au"] == pytest.approx(2 / 3)  # the start-up wait is excluded, batch 0 kept


def test_a_batch_is_consumed_over_its_step_not_at_one_instant():
    # Two clients each taking 48 MiB batches every 2.4 s, their steps 1.2 s apart: the
    # first-done window closing at one client's step end cut the other between two steps,
    # and a staircase counted the other's batch wholly or not at all (up to a batch low)
    from aiio.phases.train_steps import StepTotals
    from aiio.stats import ByteSeries
    totals = StepTotals(bucket_s=0.1, log_cap=10, in_flight=2, computes=False)
    batch = 48 * 2**20
    totals.record(epoch=0, step=0, t0=0.0, t1=2.4, t2=2.4, samples=2, nbytes=batch)
    totals.record(epoch=0, step=1, t0=2.4, t1=4.8, t2=4.8, samples=2, nbytes=batch + 1)
    totals.close_step(4.8, 0)
    fig = json.loads(json.dumps(totals.figures(compute_asked_s=0.0, batch_size=2)))
    series = ByteSeries.from_dict(fig["consumed_series"])
    assert series.total == 2 * batch + 1  # every byte, once
    assert series.bytes_before(2.4) == pytest.approx(batch)  # exact at a step's end
    assert series.bytes_before(3.6) == pytest.approx(1.5 * batch, rel=1e-6)  # linear inside
    assert series.bytes_before(1.2) == pytest.approx(0.5 * batch, rel=1e-6)
    assert fig["consumed_elapsed_s"] == 4.8  # its window ends with its last step
    # with two loader threads a batch is read over more than its step: from its read's start
    late = StepTotals(bucket_s=0.1, log_cap=10, in_flight=4, computes=False)
    late.record(epoch=0, step=0, t0=0.0, t1=4.8, t2=4.8, samples=2, nbytes=batch)
    late.record(epoch=0, step=1, t0=4.8, t1=5.0, t2=5.0, samples=2, nbytes=batch, read_s=1.0)
    series = ByteSeries.from_dict(late.figures(0.0, 2)["consumed_series"])
    assert series.bytes_before(4.8) == pytest.approx(batch + batch * 3.8 / 4.0, rel=1e-6)
    assert series.bytes_before(5.0) == pytest.approx(2 * batch)


def test_busy_series_splits_compute_exactly_across_buckets():
    from aiio.phases.train_steps import BusySeries
    s = BusySeries(0.1)
    s.add(0.05, 0.25)
    assert s.seconds_between(0.0, 0.1) == pytest.approx(0.05)
    assert s.seconds_between(0.1, 0.2) == pytest.approx(0.1)
    assert s.seconds_between(0.2, 0.3) == pytest.approx(0.05)
    assert s.total == pytest.approx(0.2)
    again = BusySeries.from_dict(json.loads(json.dumps(s.to_dict())))
    assert again.seconds_between(0.0, 1.0) == pytest.approx(0.2)


def test_compute_zero_runs_and_says_au_is_not_meaningful(target, results):
    res = _run(target, results, *RAW, "--set", "train.compute_time.h100=0")
    agg = res["aggregate"]
    assert agg["au_mean"] is None and agg["au_min"] is None and agg["au_pass"] is None
    assert "compute time is 0" in agg["au_note"]
    assert agg["demand_mib_s_per_client"] is None and "unbounded" in agg["demand_note"]
    assert all(c["au"] is None for c in res["clients"])
    assert agg["consumed_bytes"] == 2 * SAMPLES * 64 * 1024


def test_compute_zero_console_has_no_traceback(target, results):
    proc = run_cli("run", "--no-report",
                   "--target", str(target), "--results", str(results), *TINY_ARGS,
                   *RAW, "--set", "train.compute_time.h100=0")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "not meaningful" in flat(proc.stdout)


def test_au_not_measurable_when_every_step_is_an_epochs_first(target, results):
    # 12 clients x batch 2 over 24 samples: one step per client per epoch, all warm-up
    res = _run(target, results, *RAW, "--clients", "12", report=True)
    agg = res["aggregate"]
    assert agg["au_mean"] is None and agg["au_pass"] is None
    assert "not measurable" in agg["au_note"]
    assert agg["au_samples_per_client_needed"] == 3  # one batch of warm-up, then one measured
    assert agg["au_dataset_samples_needed"] == 36
    assert "3 samples per client" in agg["au_note"]
    page = (results / res["id"] / "report.html").read_text()
    assert "not measurable" in page and ">FAIL<" not in page
    proc = run_cli("run", "--target", str(target), "--results", str(results), *TINY_ARGS,
                   *RAW, "--clients", "12", "--no-report")
    assert proc.returncode == 0, proc.stderr
    assert "not measurable" in flat(proc.stdout) and "FAIL" not in proc.stdout
    assert "consumed MiB/s" in flat(proc.stdout) and "delivered MiB/s" in flat(proc.stdout)


def test_au_rule_option_and_a_bad_rule(target, results):
    res = _run(target, results, *RAW, "--epochs", "1", "--au-rule", "min")
    assert res["aggregate"]["au_rule"] == "min"
    proc = call_cli("run", "--target", str(target), "--quiet", *TINY_ARGS, "--au-rule", "median")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "au_rule" in proc.stderr


def test_compute_zero_with_checkpoints_gives_no_au_in_windows(target, results):
    # every checkpoint kept: clients that drift apart never retire a folder another still fills
    res = _run(target, results, *RAW, "--set", "train.compute_time.h100=0",
               "--checkpoint-every", "2steps", "--set", "checkpoint.size=1MiB",
               "--set", "checkpoint.keep=100")
    ck = res["aggregate"]["checkpoint"]
    assert ck["checkpoints"] and ck["au_lost_mean"] is None
    for p in ck["checkpoints"]:
        assert p["au_during"] is None and p["au_baseline"] is None and p["au_lost"] is None
    assert all(c["busy"]["seconds"] == [] for c in res["clients"])


def test_the_no_au_note_gives_the_share_each_client_really_had():
    # Shards differ by at most one sample: 8 clients on 6 samples hold 0 or 1 each, which the
    # note gave as "0 per client".
    from aiio.phases.train_au import _no_au_note
    assert "(0 to 1 per client, batch 2)" in _no_au_note(0.01, 2, 8, 6)
    assert "(2 per client, batch 2)" in _no_au_note(0.01, 2, 256, 512)


def test_the_no_au_note_names_the_setting_that_gives_enough_samples():
    # 256 demo clients on 512 files: the note said how many samples AU needs, not how to get
    # them; files hold samples_per_file samples each
    from aiio.phases.train_au import _no_au_note
    assert "--set dataset.num_files=1280" in _no_au_note(0.01, 4, 256, 512, 1)
    assert "--set dataset.num_files=320" in _no_au_note(0.01, 4, 256, 512, 4)


def test_a_run_too_short_for_a_step_is_not_blamed_on_the_dataset(target, results):
    # `aiio run --duration 1ms` on the demo: 256 samples per client, and the note said AU
    # needs "a dataset of 6 samples or more", which it has; the run ended before a step
    proc = call_cli("run", "-t", str(target), "--results", str(results), "--duration", "1ms",
                    "--json", "-q", "--no-report", "--no-history")
    # no batch taken, none begun: its headline is no rate, not 0 MiB/s "ok" (it was)
    assert proc.returncode == 1, proc.stderr
    assert "cannot be measured" in proc.stderr and "--duration" in proc.stderr
    res = saved_result(results)
    assert res["status"] == "failed"
    note = res["aggregate"]["au_note"]
    assert "dataset of" not in note and "--duration" in note, note


def test_a_result_whose_step_log_stride_is_not_a_count_still_renders(target, results):
    # a result edited by hand or written by another program: the stride only names the share
    # of steps the wait chart draws, and a value int() refused ended the report in a traceback
    from aiio.report import render
    from aiio.report.run import clean, model, training_section
    res = _run_with_cap(target, results, 3, *RAW)
    for n, bad in enumerate(("two", [2], float("nan"), float("inf"), 0, -4, 2.5, True)):
        for c in res["clients"]:
            c["step_log_stride"] = bad
        # the whole page once; the section that draws the chart, as the page reads it, for
        # each value (a page with its charts is seconds of CPU)
        html = render(res) if n == 0 else str(training_section(model(clean(res))))
        assert "time each step waited for data" in html, bad
    for c in res["clients"]:
        del c["step_log_stride"]  # a result written before the log was thinned
    assert "one step in " not in render(res)


def test_a_checkpoint_after_the_loaders_finished_has_no_read_dip(target, results):
    # 2 epochs, a checkpoint after each: the last comes once the loaders have read the whole
    # dataset, so nothing is left to read during it. It showed a 100 % read dip and lifted
    # read_dip_mean.
    proc = run_cli("run", "--target", str(target), "--results", str(results), *TINY_ARGS,
                   *RAW, "--set", "checkpoint.size=4MiB", "--checkpoint-every", "1",
                   "--no-report", "--no-history")
    assert proc.returncode == 0, proc.stderr
    # a table title wraps where its columns' widths put it
    assert "loaders had finished" in flat(proc.stdout)  # where the dip is shown, it says why not
    res = saved_result(results)
    ck = res["aggregate"]["checkpoint"]
    first, last = ck["checkpoints"]
    done = max(c["loaders_done_s"] for c in res["clients"])
    assert last["start_s"] >= done
    assert last["read_dip"] is None
    assert first["read_dip"] is not None
    assert ck["read_dip_mean"] == first["read_dip"]  # the mean over checkpoints with reads
