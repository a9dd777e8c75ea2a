"""`aiio mlperf`: MLPerf Storage v3.0's rules on real runs at small sizes: a warm-up and the
scored runs, AU per epoch and its mean from the runs' own step logs, the dataset size rule
stated when not met, checkpoints' two rate definitions, and the submission checks."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from aiio.results import result
from aiio.results.history import run_record
from aiio.sweep import mlperf_checks as checks
from aiio.sweep import mlperf_rules as rules
from aiio.workload import load_workload

from .conftest import TINY_DATA, flat, run_cli

GiB = 1 << 30


def mlperf(target: Path, results: Path, *args: str) -> dict:
    proc = run_cli("mlperf", "-t", str(target), "--results", str(results), "--json", "-q",
                   *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def saved_runs(results: Path) -> list[dict]:
    """The runs' own results, oldest first."""
    found = [json.loads(p.read_text()) for p in results.glob("*-mlperf-*/runs/*/result.json")]
    return sorted(found, key=lambda r: r["saved_at"])  # one after another: saved in order


def au_by_hand(res: dict) -> list[float]:
    """Every (client, epoch) AU as DLIO's statscounter computes it: the compute time of the
    steps after the first over the epoch's wall time (its first step's start to its last
    step's end) less the first step's load and compute; the loop's own time between steps
    is in the wall time, as it is in DLIO's."""
    out = []
    for c in res["clients"]:
        epochs: dict[int, list] = {}
        for epoch, _step, t0, wait, busy, _n in c["step_log"]:
            epochs.setdefault(epoch, []).append((t0, wait, busy))
        for steps in epochs.values():
            (t_first, w_first, b_first), rest = steps[0], steps[1:]
            wall = max(t + w + b for t, w, b in steps) - t_first - (w_first + b_first)
            out.append(sum(b for _, _, b in rest) / wall)
    return out


def test_training_warmup_then_scored_runs_with_mlperf_au(target: Path, results: Path) -> None:
    s = mlperf(target, results, *TINY_DATA, "--epochs", "3", "--batch-size", "2",
               "--clients", "2", "--runs", "2")
    runs = saved_runs(results)
    assert len(runs) == 3 and all(r["status"] == "ok" for r in runs)
    assert s["warmup"]["id"] == runs[0]["id"]  # the first run is shown, not scored
    assert [r["id"] for r in s["runs"]] == [r["id"] for r in runs[1:]]
    for scored, res in zip(s["runs"], runs[1:], strict=True):
        by_hand = au_by_hand(res)
        assert len(by_hand) == 2 * 3  # clients x epochs
        assert scored["au"] == pytest.approx(sum(by_hand) / len(by_hand))
        assert len(scored["au_per_epoch"]) == 3
        # MLPerf's "MB/s" is samples/s x the nominal record size, not measured bytes
        record = res["workload"]["dataset"]["sample_size"]
        assert scored["read_gib_s_nominal"] == pytest.approx(
            res["aggregate"]["samples_per_s"] * record / GiB)
    published = s["published"]
    assert (published["simulated_accelerators"], published["client_nodes"]) == (2, 1)
    assert published["accelerator_type"] == "h100"
    assert published["read_gib_s"] == pytest.approx(
        sum(r["read_gib_s_nominal"] for r in s["runs"]) / 2)


def test_dataset_rule_not_met_is_stated_and_the_result_not_valid(target: Path,
                                                                  results: Path) -> None:
    s = mlperf(target, results, *TINY_DATA, "--epochs", "2", "--batch-size", "2",
               "--clients", "2", "--runs", "1")
    rule = s["dataset_rule"]
    res = saved_runs(results)[1]
    assert rule["by_steps"] == 500 * 2 * 2
    ram = max(h["environment"]["ram_bytes"] for h in res["hosts"])
    assert rule["by_memory"] == math.ceil(ram * 5 / res["workload"]["dataset"]["sample_size"])
    assert rule["samples"] == 24 and rule["met"] is False
    assert s["valid"] is False
    proc = run_cli("mlperf", "-t", str(target), "--results", str(results), "-q", *TINY_DATA,
                   "--epochs", "2", "--batch-size", "2", "--clients", "2", "--runs", "1")
    assert proc.returncode == 0, proc.stderr
    assert "NOT A VALID RESULT" in flat(proc.stdout) and "DATASET RULE NOT MET" in flat(proc.stdout)


def test_dataset_rule_boundary() -> None:
    rule = rules.dataset_rule(batch=7, accelerators=8, hosts=1, ram_bytes=1 << 30,
                              record_bytes=1 << 20, samples=28_000)
    assert (rule["by_steps"], rule["by_memory"], rule["needed"]) == (28_000, 5120, 28_000)
    assert rule["met"] is True
    assert rules.dataset_rule(7, 8, 2, 8 << 30, 1 << 20, 28_000)["needed"] == 81_920


def test_checkpoints_both_rate_definitions(target: Path, results: Path) -> None:
    s = mlperf(target, results, "-w", "llama3-8b", "--scale", "1e-5", "--clients", "2")
    (res,) = saved_runs(results)
    per = res["aggregate"]["checkpoints"]
    assert len(per) == 10
    # MLPerf's order: 10 writes, then 10 reads, the reads within 30 s of the writes' end
    assert all(p["write"]["end_s"] <= per[0]["read"]["start_s"] for p in per)
    assert 0 <= res["aggregate"]["restore_gap_s_max"] < 30
    for op in ("write", "read"):
        bursts = [p[op] for p in per]
        rates = [b["bytes"] / b["last_done_s"] / GiB for b in bursts]
        got = s[op]
        assert got["mlperf_gib_s"] == pytest.approx(sum(rates) / 10)
        total = sum(b["bytes"] for b in bursts) / sum(b["last_done_s"] for b in bursts) / GiB
        assert got["aiio_gib_s"] == pytest.approx(total)
        # aiio's own headline is the same bytes-over-time figure
        assert got["aiio_gib_s"] * 1024 == pytest.approx(res["aggregate"][f"{op}_mib_s"])
        assert got["difference_pct"] == pytest.approx((got["mlperf_gib_s"] / total - 1) * 100)
    assert s["published"]["processes"] == 2
    assert res["aggregate"]["plan"]["scale"] == 1e-5
    # 10 x a small checkpoint is far under 3 x the host's memory: only O_DIRECT keeps the reads
    # off the page cache
    (cache,) = [c for c in s["checks"] if c["check"] == "restore_not_from_cache"]
    assert cache["ok"] is (res["method"] == "o_direct")
    assert s["published"]["save_gib_s"] == s["write"]["mlperf_gib_s"]
    # 2 processes writing the files of llama3-8b's 8 ranks: MLPerf runs one process a rank
    (procs,) = [c for c in s["checks"] if c["check"] == "processes"]
    assert procs["ok"] is False and "8 ranks" in procs["value"], procs


def test_a_checkpoint_of_one_process_a_rank_passes_the_process_check(target: Path,
                                                                     results: Path) -> None:
    s = mlperf(target, results, "-w", "llama3-8b", "--scale", "1e-5", "--clients", "8")
    (procs,) = [c for c in s["checks"] if c["check"] == "processes"]
    assert procs["ok"] is True, procs
    assert s["published"]["processes"] == 8


def test_mean_of_rates_is_not_bytes_over_time() -> None:
    """1 GiB in 1 s and 1 GiB in 3 s: MLPerf's mean of rates 0.667 GiB/s, bytes over time
    0.5 GiB/s: a slow checkpoint weighs less in the mean of rates."""
    res = {"phase": "checkpoint", "aggregate": {"checkpoints": [
        {"write": {"bytes": GiB, "last_done_s": 1.0}},
        {"write": {"bytes": GiB, "last_done_s": 3.0}}]}}
    r = rules.checkpoint_rates(res, "write")
    assert r["mlperf_gib_s"] == pytest.approx(2 / 3)
    assert r["aiio_gib_s"] == pytest.approx(0.5)
    assert r["difference_pct"] == pytest.approx(100 / 3)


def test_submission_checks(target: Path, results: Path) -> None:
    s = mlperf(target, results, "-w", "retinanet-b200", *TINY_DATA, "--epochs", "2",
               "--batch-size", "2", "--clients", "1", "--runs", "1")
    res = saved_runs(results)[1]
    found = {c["check"]: c for c in s["checks"]}
    assert s["settings"]["aiio_key"] == run_record(res).key[2]
    assert s["settings"]["mlperf_key"] == checks.mlperf_settings(res["workload"], "train")[0]
    # retinanet with its batch and record size changed is not MLPerf's CLOSED retinanet
    assert found["closed"]["ok"] is False
    assert "train.batch_size 24 -> 2" in found["closed"]["value"]
    assert "dataset.sample_size 322957 -> 65536" in found["closed"]["value"]
    assert "dataset.num_files" not in found["closed"]["value"]  # MLPerf lets it change
    assert found["o_direct"]["ok"] is (res["method"] == "o_direct")
    # the test's data and results are on one filesystem: MLPerf's validator refuses that
    assert found["results_apart_from_data"]["ok"] is False
    assert s["valid"] is False
    assert s["marks"] == rules.marks(s) and len(s["marks"]) >= 4  # rule, runs, two checks


def test_a_shipped_workload_as_defined_is_closed() -> None:
    for name, phase in (("retinanet-mi355", "train"), ("llama3-70b", "checkpoint")):
        check = checks.closed_check(load_workload(name).to_dict(), phase)
        assert check["ok"] is True, check
    demo = checks.closed_check(load_workload("demo").to_dict(), "train")
    assert demo["ok"] is False and "not an MLPerf Storage workload" in demo["value"]


def test_mlperf_key_holds_the_workload_defining_keys_only() -> None:
    """MLPerf's CLOSED division lets a submission change the dataset's size and folders, the
    reader's threads, transfer and prefetch sizes, O_DIRECT and the storage: runs differing in
    those (or in their accelerator count, the answer) compare; any other change does not."""
    def key(*sets: tuple[str, str, object]) -> str:
        return checks.mlperf_settings(load_workload("retinanet-b200", list(sets)).to_dict(),
                                     "train")[0]
    shipped = key()
    for tunable in (("dataset", "num_files", 5000), ("dataset", "files_per_dir", 10),
                    ("train", "read_threads", 16), ("train", "transfer_size", "4MiB"),
                    ("train", "prefetch", 8), ("run", "clients", 64), ("run", "seed", 7)):
        assert key(tunable) == shipped, tunable
    for defining in (("train", "batch_size", 25), ("train", "compute_time", {"b200": 0.05}),
                     ("dataset", "sample_size", 322958), ("train", "epochs", 6),
                     ("train", "au_goal", 0.8), ("dataset", "samples_per_file", 2),
                     ("train", "duration", "30s")):
        assert key(defining) != shipped, defining
    ckpt = load_workload("llama3-8b").to_dict()
    assert checks.mlperf_settings(ckpt, "checkpoint")[0] != shipped
    scaled = load_workload("llama3-8b", [("checkpoint", "scale", 0.5)]).to_dict()
    assert checks.mlperf_settings(scaled, "checkpoint")[0] != \
        checks.mlperf_settings(ckpt, "checkpoint")[0]


def test_o_direct_on_memory_is_not_o_direct_in_effect(ram_target: Path, results: Path) -> None:
    """tmpfs takes O_DIRECT and serves it from memory: the flag was set, the storage never
    read; data in RAM and results on disk are on different filesystems."""
    if ram_target.parent != Path("/dev/shm"):
        pytest.skip("no /dev/shm here")
    s = mlperf(ram_target, results, *TINY_DATA, "--epochs", "2", "--batch-size", "2",
               "--clients", "1", "--runs", "1", "--cache", "o_direct")
    checks = {c["check"]: c for c in s["checks"]}
    assert checks["o_direct"]["ok"] is False
    assert "memory" in checks["o_direct"]["value"]
    assert checks["results_apart_from_data"]["ok"] is True


def test_o_direct_confirmed_by_the_block_device(target: Path, results: Path) -> None:
    """On a local block filesystem the device's own counters show the reads reached it."""
    s = mlperf(target, results, *TINY_DATA, "--epochs", "2", "--batch-size", "2",
               "--clients", "1", "--runs", "1")
    res = saved_runs(results)[1]
    device = (res.get("monitor") or {}).get("device")
    if res["method"] != "o_direct" or not device:
        pytest.skip("no O_DIRECT or no block device to confirm it under the temp folder")
    (check,) = [c for c in s["checks"] if c["check"] == "o_direct"]
    assert check["ok"] is True
    assert f"block device {device['name']}" in check["value"]


@pytest.mark.root
def test_data_on_a_bind_mount_of_the_results_filesystem_is_not_apart(target: Path,
                                                                     results: Path) -> None:
    """A bind mount is a mount point of its own on the same filesystem: MLPerf's check is
    about the filesystem, so the mount points' paths tell nothing."""
    if subprocess.run(["mount", "--bind", str(target), str(target)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot bind-mount here")
    try:
        s = mlperf(target, results, *TINY_DATA, "--epochs", "2", "--batch-size", "2",
                   "--clients", "1", "--runs", "1")
    finally:
        subprocess.run(["umount", str(target)], check=True)
    (check,) = [c for c in s["checks"] if c["check"] == "results_apart_from_data"]
    assert check["ok"] is False, check


def test_a_thinned_step_log_gives_no_epoch_au() -> None:
    client = {"step_log_stride": 2, "step_log": [[0, 0, 0.0, 0.1, 0.1, 1]]}
    [typed] = result.model({"phase": "train", "clients": [client]}).clients
    assert rules.epoch_aus(typed) is None


def test_find_max_searches_then_confirms_at_the_count_found(target: Path,
                                                            results: Path) -> None:
    """Every count up to 3 holds the floor on this storage (a tiny dataset at 10 ms a batch):
    the search probes 1, 2, 3 and the warm-up and scored runs run at 3."""
    s = mlperf(target, results, *TINY_DATA, "--epochs", "2", "--batch-size", "2",
               "--find-max", "3", "--runs", "1")
    search = s["search"]
    assert [p["accelerators"] for p in search["probes"]] == [1, 2, 3]
    assert all(p["holds"] for p in search["probes"])
    assert (search["supported"], search["first_failing"]) == (3, None)
    assert s["published"]["simulated_accelerators"] == 3
    runs = saved_runs(results)
    assert [len(r["clients"]) for r in runs] == [1, 2, 3, 3, 3]  # probes, warm-up, scored
    # the page shows the search: every probe's count and result beside "accelerators supported"
    (page,) = results.glob("*-mlperf-*/report.html")
    text = page.read_text()
    assert "Accelerators supported" in text and "3 accelerators hold the AU floor" in text
    assert all(p["id"] in text for p in search["probes"])


@pytest.mark.parametrize("refused", [("-t", "{missing}"), ("--clients", "100000000"),
                                     ("--find-max", "100000000")])
def test_refused_input_leaves_no_result_folder(target: Path, results: Path,
                                               refused: tuple[str, str]) -> None:
    """Input refused before any run (exit 2, one line) leaves no empty summary folder behind:
    a results folder holds only what was measured."""
    option, value = refused
    args = [option, value.format(missing=target / "missing")]
    if option != "-t":
        args += ["-t", str(target)]
    proc = run_cli("mlperf", "--results", str(results), "-q", *TINY_DATA, *args)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not list(results.glob("*-mlperf-*"))


def test_epochs_of_one_step_give_no_au_and_say_so(target: Path, results: Path) -> None:
    """24 samples, 2 accelerators of batch 12: each epoch is one step, its first, which
    MLPerf's AU leaves out. No AU was measured: the result is not valid, and it says why,
    not that a run fell below the floor."""
    s = mlperf(target, results, *TINY_DATA, "--epochs", "2", "--batch-size", "12",
               "--clients", "2", "--runs", "1")
    assert s["runs"][0]["au"] is None and s["au_pass"] is False
    assert not any("under the floor" in m for m in s["marks"])
    assert any("AU not measured" in m for m in s["marks"]), s["marks"]
    proc = run_cli("mlperf", "-t", str(target), "--results", str(results), "-q", *TINY_DATA,
                   "--epochs", "2", "--batch-size", "12", "--clients", "2", "--runs", "1")
    assert proc.returncode == 0, proc.stderr
    assert "fell below" not in proc.stdout and "AU not measured" in flat(proc.stdout)


def test_a_run_stopped_by_duration_is_not_closed() -> None:
    """MLPerf runs its epochs to the end; a run cut at a duration is another workload."""
    w = load_workload("retinanet-b200", [("train", "duration", "30s")]).to_dict()
    check = checks.closed_check(w, "train")
    assert check["ok"] is False and "train.duration" in check["value"], check


def test_scale_on_a_training_workload_is_refused(target: Path, results: Path) -> None:
    """--scale shrinks a model's checkpoint; a training run would ignore it silently."""
    proc = run_cli("mlperf", "-t", str(target), "--results", str(results), "-q",
                   *TINY_DATA, "--scale", "0.5")
    assert proc.returncode == 2 and "--scale" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not list(results.glob("*"))


@pytest.mark.parametrize("name", ["unet3d", "resnet50", "cosmoflow"])
def test_v2_training_workloads_are_not_v3_closed(name: str) -> None:
    """v3.0's CLOSED division trains unet3d and retinanet on b200 and mi355 only; a100 and h100
    runs (v2.0's workloads) are what-if figures, not a CLOSED result."""
    check = checks.closed_check(load_workload(name).to_dict(), "train")
    assert check["ok"] is False and "v2.0" in check["value"], check


def test_find_max_with_a_client_count_is_refused(target: Path, results: Path) -> None:
    """The search sets the count; a --clients beside it would be ignored without a word."""
    proc = run_cli("mlperf", "-t", str(target), "--results", str(results), "-q", *TINY_DATA,
                   "--find-max", "4", "--clients", "2")
    assert proc.returncode == 2 and "--find-max" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not list(results.glob("*"))
