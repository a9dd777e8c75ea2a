"""aiio.fio.job against the real fio: job files it runs, and JSON parsed the way fio writes it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from aiio.errors import RunFailed
from aiio.fio import job
from aiio.units import MiB

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")


def _job(folder: Path, rw: str = "read", bs: str = "64k", jobs: int = 3,
         runtime: str = "300ms", **extra) -> str:
    glob = {"directory": str(folder), "ioengine": "psync", "direct": 1, "size": "4m",
            "time_based": 1, "runtime": runtime, "bs": bs, **extra}
    return job.render(glob, [("t", {"rw": rw, "numjobs": jobs})], ["test job"])


def _raw(jobtext: str, folder: Path, *args: str) -> str:
    """fio's own stdout for a job, untouched."""
    jobfile = folder / "job.fio"
    jobfile.write_text(jobtext)
    out = subprocess.run(["fio", *args, str(jobfile)], capture_output=True, text=True,
                         check=True, timeout=60)
    return out.stdout


def test_one_entry_per_job_and_figures_are_fios_own(tmp_path):
    text = _raw(_job(tmp_path, jobs=3), tmp_path, "--output-format=json+")
    raw_jobs = json.loads(text)["jobs"]
    clients = job.clients_of(job.final_report(text))
    assert [c["client"] for c in clients] == [0, 1, 2]  # same jobname: told apart by position
    assert {c["jobname"] for c in clients} == {"t"}
    for c, raw in zip(clients, raw_jobs, strict=True):
        r = raw["read"]
        assert c["bytes"] == r["io_bytes"] > 0
        assert c["ios"] == r["total_ios"] == r["io_bytes"] // (64 * 1024)
        assert c["elapsed_s"] == r["runtime"] / 1000
        assert c["mib_s"] == pytest.approx(r["io_bytes"] / MiB / (r["runtime"] / 1000))
        assert c["ops"]["read"]["latency"]["count"] == r["clat_ns"]["N"]
        assert "write" not in c["ops"]
    agg = job.aggregate(clients)
    assert agg["bytes"] == sum(j["read"]["io_bytes"] for j in raw_jobs)
    slowest = max(j["read"]["runtime"] for j in raw_jobs) / 1000
    assert agg["mib_s"] == pytest.approx(agg["bytes"] / MiB / slowest)
    assert agg["sum_client_mib_s"] == pytest.approx(sum(c["mib_s"] for c in clients))
    assert agg["per_client_mib_s"]["n"] == 3
    assert agg["latency"]["count"] == sum(j["read"]["clat_ns"]["N"] for j in raw_jobs)


def _read_latency(folder: Path, ios: int) -> dict:
    """fio's json+ completion latency of a 4 KiB random read of exactly `ios` I/Os."""
    text = _raw(_job(folder, rw="randread", bs="4k", jobs=1, time_based=0, runtime="120s",
                     io_size=ios * 4096), folder, "--output-format=json+")
    clat = json.loads(text)["jobs"][0]["read"]["clat_ns"]
    assert clat["N"] == ios
    return clat


def test_latency_from_bins_agrees_with_fio_percentiles(tmp_path):
    # A fixed count of I/Os, not a time-based run: at 1,024 no percentile's rank is a whole
    # number, where fio moves it one up (next test), so both take the same order statistic.
    clat = _read_latency(tmp_path, 1024)
    hist = job.histogram_from(clat)
    assert hist.count == clat["N"] and hist.min == clat["min"] and hist.max == clat["max"]
    summary = hist.summary()
    # the same log-linear buckets: both report a bucket's middle, so they agree within 1 %
    for key, name in job.PERCENTILES.items():
        assert summary[name] == pytest.approx(clat["percentile"][key], rel=0.01)


def test_percentile_at_a_whole_rank_is_that_order_statistic(tmp_path):
    """p99.9 of 1,000 I/Os is the 999th smallest (nearest rank). fio reports the 1,000th: it
    compares the count so far with 99.9 / 100 x N in long double, and the double nearest 99.9
    is a little above it. In a sparse tail the two differ by far more than a bucket; a
    time-based run that happened to make 1,000 x k I/Os failed the comparison above with fio
    (1,515,519.5 against 2,146,304 ns)."""
    clat = _read_latency(tmp_path, 1000)
    values = sorted(int(v) for v, n in clat["bins"].items() for _ in range(n))
    summary = job.histogram_from(clat).summary()
    for key, name in job.PERCENTILES.items():
        rank = round(float(key) * 1000 / 100)  # whole at 1,000 I/Os: 500, 900, 990, 999
        assert summary[name] == pytest.approx(values[rank - 1], rel=0.01), name


def test_plain_json_without_bins_still_gives_percentiles(tmp_path):
    text = _raw(_job(tmp_path, jobs=2), tmp_path, "--output-format=json")
    clients = job.clients_of(job.final_report(text))
    lat = clients[0]["latency"]
    assert lat["p99_ns"] >= lat["p50_ns"] > 0
    assert clients[0]["ops"]["read"]["histogram"] is None
    assert job.aggregate(clients)["latency"] == {}  # no bins: no merged percentiles invented


def test_text_before_json_and_concatenated_status_reports(tmp_path):
    text = _raw(_job(tmp_path, jobs=2, runtime="1200ms"), tmp_path,
                "--output-format=json", "--status-interval=300ms")
    reports = job.parse_reports("fio: a warning printed before the report\n" + text)
    assert len(reports) >= 2
    totals = [sum(j["read"]["io_bytes"] for j in r["jobs"]) for r in reports]
    assert totals == sorted(totals)  # cumulative: the last report is the final one
    final = job.final_report("noise\n" + text)
    assert sum(j["read"]["io_bytes"] for j in final["jobs"]) == totals[-1]


def test_disk_util_missing_on_tmpfs():
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.statvfs(shm).f_blocks == 0:
        pytest.skip("no tmpfs at /dev/shm")
    folder = Path(os.path.realpath(shm)) / f"aiio-test-fio-{os.getpid()}"
    folder.mkdir()
    try:
        report = job.run_text(_job(folder, jobs=2))
    finally:
        shutil.rmtree(folder)
    assert "disk_util" not in report
    assert job.disk_util(report) == []
    assert len(job.clients_of(report)) == 2


def test_mixed_job_keeps_both_directions(tmp_path):
    report = job.run_text(_job(tmp_path, rw="randrw", bs="4k", jobs=2, rwmixread=70))
    clients = job.clients_of(report)
    for c in clients:
        assert set(c["ops"]) == {"read", "write"}
        assert c["bytes"] == c["ops"]["read"]["bytes"] + c["ops"]["write"]["bytes"]
    agg = job.aggregate(clients)
    assert agg["ops"]["read"]["bytes"] > agg["ops"]["write"]["bytes"] > 0


def test_fio_failing_raises_with_its_stderr(tmp_path):
    jobfile = tmp_path / "bad.fio"
    jobfile.write_text(_job(tmp_path, ioengine="no-such-engine"))
    with pytest.raises(RunFailed, match="no-such-engine"):
        job.run(jobfile)


def test_truncated_output_is_an_error_not_a_traceback():
    with pytest.raises(RunFailed, match="no complete JSON report"):
        job.parse_reports("fio: something went wrong\n")
    with pytest.raises(RunFailed, match="broken"):
        job.parse_reports('{"fio version" : "fio-3.33", "jobs" : [{"jobname": "x"')


def test_braces_in_text_and_a_cut_final_report(tmp_path):
    text = _raw(_job(tmp_path, jobs=2), tmp_path, "--output-format=json")
    noisy = "fio: option {x} ignored\n" + text + text[: len(text) // 2]
    [report] = job.parse_reports(noisy)  # the cut copy yields no report of its own
    assert report == json.loads(text)


def test_helpers_for_bench(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(os.urandom(4 * MiB))
    agg = job.seq_read_mib_s([str(path)], loops=2)
    assert agg["bytes"] == 8 * MiB and agg["mib_s"] > 0
    assert job.rand_read_iops(str(path), runtime_s=0.3) > 0


def test_size_opt_is_exact():
    assert job.size_opt(MiB) == "1m" and job.size_opt(4096) == "4k"
    assert job.size_opt(3 * 1024**3) == "3g" and job.size_opt(1000) == "1000"
    assert job.size_opt(1536 * 1024) == "1536k"
