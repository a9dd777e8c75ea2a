"""`aiio size`: worked examples with the arithmetic written out, train results read from
hand-written JSON in the shape the measuring side writes, checkpoint results from a real run,
and the CLI run as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aiio import sizing
from aiio.errors import ConfigError
from aiio.sizing import SizingInputs, size
from aiio.units import GiB, MiB
from aiio.workload import load_workload

from .conftest import REPO, call_cli, flat

# unet3d on h100: 7 samples of 146,600,628 B every 0.323 s
UNET3D_H100_DEMAND = 7 * 146_600_628 / MiB / 0.323  # = 1,026,204,396 B / 0.323 s = 3,029.9 MiB/s
UNET3D_A100_DEMAND = 7 * 146_600_628 / MiB / 0.636  # = 1,538.8 MiB/s


# --- hand-written results, in the shape docs/RESULTS.md describes ---------------------------

def train_run(clients: int, au: float, first_done_mib_s: float, *, accelerator: str = "h100",
              name: str = "unet3d", au_pass: bool | None = None,
              warnings: list | None = None) -> dict:
    """A train run result with only the fields sizing reads."""
    aggregate = {"first_done": {"mib_s": first_done_mib_s, "seconds": 60.0,
                                "bytes": int(first_done_mib_s * 60 * MiB)},
                 "last_done": {"mib_s": first_done_mib_s * 0.97, "seconds": 62.0,
                               "bytes": int(first_done_mib_s * 60 * MiB)},
                 "au_min": au, "au_mean": au}
    if au_pass is not None:
        aggregate["au_pass"] = au_pass
    return {"schema": "aiio.result/1", "kind": "run", "phase": "train",
            "workload": {"workload": {"name": name},
                         "train": {"accelerator": accelerator,
                                   "compute_time": {"a100": 0.636, "h100": 0.323},
                                   "batch_size": 7, "au_goal": 0.9},
                         "dataset": {"sample_size": 146_600_628, "num_files": 168}},
            "clients": [{"client": i, "mib_s": first_done_mib_s / clients, "au": au}
                        for i in range(clients)],
            "aggregate": aggregate,
            "warnings": warnings or []}


def sweep(points: list[tuple[int, float, float]], **kw) -> dict:
    """A train sweep: (clients, AU of every client, first-done aggregate MiB/s) per point."""
    return {"schema": "aiio.result/1", "kind": "sweep", "phase": "train",
            "points": [{"clients": n, "result": train_run(n, au, mib_s, au_pass=au >= 0.9, **kw)}
                       for n, au, mib_s in points]}


# 1, 2, 4 and 8 clients kept every accelerator at least 90 % busy; at 16 the storage topped out
# at 30,000 MiB/s (1,875 MiB/s per client, AU 0.62) and the goal failed.
SATURATED = [(1, 0.99, 3_000.0), (2, 0.98, 5_940.0), (4, 0.97, 11_760.0),
             (8, 0.95, 23_000.0), (16, 0.62, 30_000.0)]


@pytest.fixture(scope="module")
def checkpoint_result(tmp_path_factory) -> Path:
    """A real checkpoint run: llama3-70b's checkpoint shrunk to 9.8 MB, written by 2 clients."""
    area = tmp_path_factory.mktemp("ckpt")
    (area / "target").mkdir()
    proc = subprocess.run([sys.executable, "-m", "aiio", "run", "--phase", "checkpoint",
                           "--workload", "llama3-70b", "--scale", "0.00001", "--clients", "2",
                           "-t", str(area / "target"), "--results", str(area / "reports"),
                           "--no-history", "--no-report", "-q"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (found,) = (area / "reports").glob("*/result.json")
    return found.parent


def measured_write_mib_s(folder: Path) -> float:
    return json.loads((folder / "result.json").read_text())["aggregate"]["write_mib_s"]


def write_result(folder: Path, doc: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "result.json").write_text(json.dumps(doc))
    return folder


def run_size(*args: str) -> subprocess.CompletedProcess:
    """`aiio size ARGS`, in this process: sizing only computes, so nothing here needs a process
    of its own (test_entry_point runs the real one)."""
    return call_cli("size", *args)


# --- the accelerator table and the model presets -------------------------------------------

def test_accelerator_table_has_the_five_with_sources():
    table = sizing.load_accelerators()
    for key in ("a100", "h100", "h200", "b200", "mi300x"):
        acc = table[key]
        assert acc.memory_gib > 0 and acc.bf16_tflops > 0
        assert acc.source.strip()
    # dense, not the doubled "with sparsity" datasheet figure
    assert table["h100"].bf16_tflops == 989
    assert table["a100"].bf16_tflops == 312


def test_accelerator_table_rejects_unknown_keys(tmp_path):
    bad = tmp_path / "accelerators.toml"
    bad.write_text('[x1]\nname = "X"\nmemory_gib = 1\nbf16_tflops = 1\nsource = "s"\nspeed = 2\n')
    with pytest.raises(ConfigError, match="unknown key 'speed'"):
        sizing.load_accelerators(bad)
    bad.write_text('[x1]\nname = "X"\nmemory_gib = -1\nbf16_tflops = 1\nsource = "s"\n')
    with pytest.raises(ConfigError, match="memory_gib"):
        sizing.load_accelerators(bad)


def test_unknown_accelerator_names_the_known_ones():
    with pytest.raises(ConfigError, match="unknown accelerator 'tpu9'.*h100"):
        sizing.find_accelerator("tpu9", sizing.load_accelerators())
    assert sizing.find_accelerator("H100", sizing.load_accelerators()).key == "h100"


# DLIO's parameter counts for MLPerf Storage's llama3 shapes (the 1T shape holds 1.183e12)
P8, P70, P405 = 8_030_261_248, 69_882_617_856, 405_853_388_800


@pytest.mark.parametrize("name,params,ranks", [("llama3-8b", P8, 8), ("llama3-70b", P70, 64),
                                               ("llama3-405b", P405, 512),
                                               ("llama3-1t", 1_183_035_102_480, 1024)])
def test_llama3_presets(name, params, ranks):
    model = load_workload(name).model
    assert (model.parameters, model.bytes_per_parameter, model.ranks) == (params, 14, ranks)


# --- compute side ---------------------------------------------------------------------------

def test_memory_per_replica_llama3_70b_bf16_adam():
    # bf16 weights 2 + bf16 gradients 2 + fp32 master 4 + Adam m 4 + Adam v 4 = 16 B/param
    parts = sizing.memory_parts("bf16", "adam")
    assert [b for _, _, b in parts] == [2, 2, 4, 4, 4]
    s = size(SizingInputs(model="llama3-70b", accelerator="h100"))
    # 69.88e9 x 16 B = 1.118e12 B = 1,041.3 GiB; / 80 GiB per h100 = 13.02 -> 14 accelerators
    assert s.value("state_gib") == pytest.approx(P70 * 16 / GiB)
    assert s.value("state_gib") == pytest.approx(1041.33, abs=0.01)
    assert s.value("fits_one") is False
    assert s.value("shards") == 14
    # on a 192 GiB MI300X: 1,041.3 / 192 = 5.42 -> 6
    assert size(SizingInputs(model="llama3-70b", accelerator="mi300x")).value("shards") == 6


def test_memory_fp32_sgd():
    # fp32 weights 4 + fp32 gradients 4 + momentum 4 = 12 B/param; 8.03e9 x 12 B = 89.7 GiB
    s = size(SizingInputs(model="llama3-8b", accelerator="h200", precision="fp32",
                          optimizer="sgd"))
    assert s.value("state_bytes_per_parameter") == 12
    assert s.value("state_gib") == pytest.approx(P8 * 12 / GiB)
    assert s.value("fits_one") is True  # 89.7 GiB in an H200's 141 GiB
    # without gradients the state is 4 + 4 = 8 B/param, not the workload's 14: said in a note
    assert any("8 B/param" in n for n in s.notes)


def test_accelerators_for_llama3_70b_2T_tokens_in_30_days():
    # work: 6 x 69.88e9 x 2e12 = 8.386e23 FLOP = 8.386e11 TFLOP
    # one h100 at MFU 0.4: 0.4 x 989e12 = 395.6e12 FLOP/s
    # 8.386e23 / 395.6e12 = 2.1198e9 accelerator-seconds = 588,832 accelerator-hours
    # 30 days = 2,592,000 s; 2.1198e9 / 2.592e6 = 817.8 -> 818 h100
    flops = 6 * P70 * 2e12
    assert sizing.training_flops(P70, 2e12) == pytest.approx(flops)
    s = size(SizingInputs(model="llama3-70b", accelerator="h100", tokens=2e12, days=30,
                          mfu=0.4))
    assert s.value("flops_tflop") == pytest.approx(flops / 1e12)
    assert s.value("effective_tflops") == pytest.approx(395.6)
    assert s.value("accelerator_hours") == pytest.approx(flops / 395.6e12 / 3600)
    assert s.value("accelerator_hours") == pytest.approx(588_832, abs=1)
    assert s.value("accelerators_needed") == 818
    assert s.value("accelerators") == 818
    # at MFU 0.5 the same work needs 817.8 x 0.4 / 0.5 = 654.3 -> 655
    half = size(SizingInputs(model="llama3-70b", accelerator="h100", tokens=2e12, days=30,
                             mfu=0.5))
    assert half.value("accelerators_needed") == 655


def test_given_gpus_against_the_budget():
    # 588,832 accelerator-hours on 512 h100 = 1,150 h = 47.9 days: over a 30-day budget
    s = size(SizingInputs(model="llama3-70b", accelerator="h100", tokens=2e12, days=30,
                          gpus=512))
    assert s.value("hours_with_gpus") == pytest.approx(588_832.304 / 512, abs=0.01)
    assert any("over the 30-day budget (818 needed)" in v for v in s.verdict)


def test_memory_sets_the_count_when_time_needs_fewer():
    # llama3-405b on 1e9 tokens: 6 x 405.9e9 x 1e9 = 2.435e21 FLOP / 395.6e12 FLOP/s = 6.16e6 s;
    # 30 days = 2.592e6 s, so ceil(2.37) = 3 h100 would finish in time,
    # but 405.9e9 x 16 B = 6,048 GiB needs ceil(6,048 / 80) = 76 h100 to hold
    s = size(SizingInputs(model="llama3-405b", accelerator="h100", tokens=1e9, days=30))
    assert s.value("accelerators_needed") == 3
    assert s.value("shards") == 76
    assert s.value("accelerators") == 76


def test_unet3d_compute_from_measured_batch_time():
    # 5 epochs x 168 samples / 7 per batch = 120 batches; x 0.323 s = 38.76 s of compute;
    # at the 90 % AU goal the accelerators take 38.76 / 0.9 = 43.07 s
    s = size(SizingInputs(workload="unet3d", accelerator="h100"))
    assert s.value("steps") == 120
    assert s.value("compute_hours") == pytest.approx(38.76 / 3600)
    assert s.value("accelerator_hours") == pytest.approx(43.0667 / 3600, rel=1e-4)
    # 1,000 epochs in 1 hour: 24,000 batches x 0.323 s / 0.9 = 8,613 s -> ceil(2.39) = 3 h100
    s = size(SizingInputs(workload="unet3d", accelerator="h100", epochs=1000, days=1 / 24))
    assert s.value("accelerators_needed") == 3


# --- storage side ---------------------------------------------------------------------------

CK70 = 978_406_572_032  # llama3-70b's checkpoint by DLIO's layout: 128 files, 911.2 GiB


def test_llama3_70b_checkpoint_is_911_GiB():
    # DLIO's layout, as MLPerf Storage v3.0 writes it: 911.2 GiB (not 69.88e9 x 14 B = 911.17:
    # each optimizer shard adds 3 x 5 x hidden values)
    s = size(SizingInputs(model="llama3-70b", accelerator="h100", retention=3))
    assert s.value("checkpoint_gib") == pytest.approx(CK70 / GiB)
    assert s.value("checkpoint_gib") == pytest.approx(911.2, abs=0.05)
    assert s.value("checkpoints_gib") == pytest.approx(3 * CK70 / GiB)
    # --parameters sizes another model: parameters x bytes per parameter
    other = size(SizingInputs(model="llama3-70b", parameters=70e9))
    assert other.value("checkpoint_gib") == pytest.approx(980e9 / GiB)


def test_llama3_8b_checkpoint_matches_mlperf():
    # DLIO's layout: 112,425,623,552 B = 104.7 GiB in 16 files (MLPerf Storage: 104.7 GiB)
    s = size(SizingInputs(model="llama3-8b"))
    assert s.value("checkpoint_gib") == pytest.approx(104.70, abs=0.01)


def test_checkpoint_write_bandwidth_for_a_stall_budget():
    # 5 % of a 1 h interval = 180 s per checkpoint; 978.4e9 B / 180 s = 5.436e9 B/s
    # / 1,048,576 = 5,183.8 MiB/s
    s = size(SizingInputs(model="llama3-70b", checkpoint_interval=3600, stall_budget=0.05))
    assert s.value("checkpoint_stall_s") == pytest.approx(180)
    assert s.value("checkpoint_write_mib_s") == pytest.approx(CK70 / 180 / MiB)
    assert s.value("checkpoint_write_mib_s") == pytest.approx(5183.8, abs=0.1)


def test_load_bandwidth_for_replicas():
    # bf16 weights: 69.88e9 x 2 B = 139.8e9 B each; 4 replicas in 60 s: 559.1e9 B / 60 s
    # = 9.318e9 B/s / 1,048,576 = 8,886.0 MiB/s
    s = size(SizingInputs(model="llama3-70b", replicas=4, load_time=60))
    assert s.value("weights_gib") == pytest.approx(P70 * 2 / GiB)
    assert s.value("load_mib_s") == pytest.approx(4 * P70 * 2 / 60 / MiB)
    assert s.value("load_mib_s") == pytest.approx(8886.0, abs=0.1)


def test_llama3_dataset_and_read_demand():
    # 2e12 tokens x 4 B = 8e12 B = 7,450.6 GiB; prep output one more copy; 3 checkpoints
    s = size(SizingInputs(model="llama3-70b", accelerator="h100", tokens=2e12, days=30))
    assert s.value("dataset_gib") == pytest.approx(8e12 / GiB)
    assert s.value("prep_output_gib") == pytest.approx(8e12 / GiB)
    assert s.value("capacity_gib") == pytest.approx((16e12 + 3 * CK70) / GiB)
    # one h100 trains 395.6e12 / (6 x 69.88e9) = 943.5 tokens/s x 4 B = 3,774 B/s: tiny
    assert s.value("tokens_per_s") == pytest.approx(943.487, abs=0.001)
    assert s.value("demand_mib_s") == pytest.approx(943.487 * 4 / MiB, rel=1e-5)
    assert s.value("read_mib_s") == pytest.approx(818 * 943.487 * 4 / MiB, rel=1e-5)


def test_unet3d_demand_on_h100_is_3030_MiB_s():
    # 7 x 146,600,628 B = 1,026,204,396 B per batch; / 0.323 s = 3,177,103,393 B/s
    # / 1,048,576 = 3,029.9 MiB/s per accelerator
    assert sizing.demand_mib_s(7, 146_600_628, 0.323) == pytest.approx(3029.9, abs=0.05)
    s = size(SizingInputs(workload="unet3d", accelerator="h100", gpus=64))
    assert s.value("demand_mib_s") == pytest.approx(UNET3D_H100_DEMAND)
    assert s.value("demand_mib_s") == pytest.approx(load_workload("unet3d").demand_mib_s())
    # 64 accelerators: 64 x 3,029.9 = 193,915 MiB/s; at least 0.9 x that to hold the AU goal
    assert s.value("read_mib_s") == pytest.approx(64 * UNET3D_H100_DEMAND)
    assert s.value("read_mib_s") == pytest.approx(193_915, abs=1)
    assert s.value("read_floor_mib_s") == pytest.approx(0.9 * 64 * UNET3D_H100_DEMAND)
    # 168 x 146,600,628 B = 24,628,905,504 B = 22.94 GiB of dataset
    assert s.value("dataset_gib") == pytest.approx(24_628_905_504 / GiB)
    # 64 x 7 = 448 samples per step but the dataset holds 168: say so
    assert any("at most 24 accelerators" in n for n in s.notes)


def test_dataset_size_sets_the_sample_count():
    # 1 TiB / 146,600,628 B = 7,500 samples (rounded down); 1 epoch / 7 = 1,071.4 batches
    s = size(SizingInputs(workload="unet3d", accelerator="h100", epochs=1,
                          dataset_size=1024**4))
    assert s.value("samples") == 1024**4 // 146_600_628 == 7500
    assert s.value("steps") == pytest.approx(7500 / 7)
    assert s.value("dataset_gib") == 1024


# --- against measurements --------------------------------------------------------------------

def test_measured_verdict_from_a_sweep(tmp_path):
    folder = write_result(tmp_path / "sweep-1", sweep(SATURATED))
    s = size(SizingInputs(workload="unet3d", accelerator="h100", gpus=64,
                          results=(str(folder),)))
    assert s.value("largest_passing") == 8  # 16 clients missed the AU goal
    assert s.value("peak_mib_s") == 30_000
    assert s.value("fed_measured") == 8  # same accelerator, no scaling
    # 30,000 / 3,029.9 = 9.90 -> 9 h100 at full demand
    assert s.value("fed_estimate") == 9
    # 30,000 / (3,029.9 x 0.9) = 11.0 -> 11 h100 if prefetch hid every read
    assert s.value("fed_floor") == 11
    # 64 h100 need 64 x 3,029.9 = 193,915 MiB/s; 193,915 / 30,000 = 6.5x short
    verdict = " ".join(s.verdict)
    assert "up to 8 h100 (of 16 measured)" in verdict
    assert "193,915 MiB/s" in verdict and "short by 6.5x" in verdict


def test_measured_verdict_enough(tmp_path):
    folder = write_result(tmp_path / "sweep-1", sweep(SATURATED))
    s = size(SizingInputs(workload="unet3d", accelerator="h100", gpus=8,
                          results=(str(folder / "result.json"),)))
    # 8 x 3,029.9 = 24,239 MiB/s <= the 30,000 delivered, and 8 clients passed as measured
    assert any("24,239 MiB/s" in v and "enough, as measured" in v for v in s.verdict)


def test_measured_on_another_accelerator_is_scaled(tmp_path):
    # measured with h100 clients (3,029.9 MiB/s each); an a100 needs 1,538.8 MiB/s, so
    # 8 h100 read as much as 8 x 3,029.9 / 1,538.8 = 15.75 -> 15 a100
    folder = write_result(tmp_path / "sweep-1", sweep(SATURATED))
    s = size(SizingInputs(workload="unet3d", accelerator="a100", results=(str(folder),)))
    assert s.value("fed_measured") == 15
    # 30,000 / 1,538.8 = 19.5 -> 19 a100
    assert s.value("fed_estimate") == 19
    assert any("measured with h100 clients" in n and "scaled" in n for n in s.notes)


def test_unsaturated_sweep_is_a_lower_bound(tmp_path):
    points = [(n, 0.97, n * 0.97 * UNET3D_H100_DEMAND) for n in (1, 2, 4)]
    folder = write_result(tmp_path / "sweep-1", sweep(points))
    s = size(SizingInputs(workload="unet3d", accelerator="h100", results=(str(folder),)))
    assert s.value("largest_passing") == 4
    # 4 x 0.97 x 3,029.9 / 3,029.9 = 3.88 -> at least 3
    assert s.value("fed_estimate") == 3
    # 4 clients passed, which proves more than the peak at full demand: at least 4
    assert any("not saturated, so it feeds at least 4 h100" in v for v in s.verdict)
    # 64 h100 need more than the sweep asked of the storage: unknown, not "short"
    s = size(SizingInputs(workload="unet3d", accelerator="h100", gpus=64,
                          results=(str(folder),)))
    assert any("not shown" in v for v in s.verdict)
    assert not any("short by" in v for v in s.verdict)


def test_largest_count_at_the_goal_is_the_sweeps_own(tmp_path):
    """One rule with the sweep's AU sentence and --find-max: a count holds when every repeat
    passed, and the answer is the largest count up to which every count held. 4 clients
    passing once in two repeats, after 2 failed both, is not an answer of 4."""
    points = [(1, 0.97, 3_000.0), (1, 0.96, 2_990.0), (2, 0.80, 4_000.0), (2, 0.81, 4_050.0),
              (4, 0.93, 9_000.0), (4, 0.70, 7_000.0)]
    folder = write_result(tmp_path / "sweep-1", sweep(points))
    s = size(SizingInputs(workload="unet3d", accelerator="h100", gpus=64,
                          results=(str(folder),)))
    assert s.value("largest_passing") == 1
    assert s.value("fed_measured") == 1
    assert "up to 1 h100 (of 4 measured)" in " ".join(s.verdict)


def test_au_pass_from_clients_when_the_run_has_none(tmp_path):
    run = train_run(4, 0.85, 10_000.0)  # no aggregate.au_pass; every client at AU 0.85 < 0.9
    folder = write_result(tmp_path / "run-1", run)
    s = size(SizingInputs(workload="unet3d", accelerator="h100", results=(str(folder),)))
    assert s.value("largest_passing") is None
    assert s.value("fed_measured") == 0
    assert any("no count up to 4 h100 kept every client at the AU goal" in v for v in s.verdict)


def test_result_warnings_become_notes(tmp_path):
    run = train_run(2, 0.99, 6_000.0, au_pass=True,
                    warnings=[{"code": "memory_backed", "message": "target is on tmpfs"}])
    folder = write_result(tmp_path / "run-1", run)
    s = size(SizingInputs(workload="unet3d", accelerator="h100", results=(str(folder),)))
    assert "the train result warns: target is on tmpfs" in s.notes


def test_checkpoint_time_on_measured_storage(checkpoint_result):
    # the rate the checkpoint phase measured (its aggregate write_mib_s, all ranks durable)
    rate = measured_write_mib_s(checkpoint_result)
    s = size(SizingInputs(model="llama3-70b", results=(str(checkpoint_result),)))
    assert s.value("checkpoint_measured_mib_s") == rate
    # the 911.2 GiB checkpoint at that rate, against a 1 h interval
    assert s.value("checkpoint_time_s") == pytest.approx(CK70 / (rate * MiB))
    assert s.value("checkpoint_stall_pct") == pytest.approx(CK70 / (rate * MiB) / 36)
    assert any("2 writers" in n and "64 ranks" in n for n in s.notes)


def test_checkpoint_result_without_write_rate(tmp_path, checkpoint_result):
    # a real result as a run interrupted before its first checkpoint leaves it: no rate
    doc = json.loads((checkpoint_result / "result.json").read_text())
    del doc["aggregate"]["write_mib_s"]
    folder = write_result(tmp_path / "ckpt-1", doc)
    s = size(SizingInputs(model="llama3-70b", results=(str(folder),)))
    assert [n for n in s.notes if "no aggregate.write_mib_s" in n]
    with pytest.raises(KeyError):
        s.value("checkpoint_time_s")


def test_train_and_checkpoint_results_together(tmp_path, checkpoint_result):
    train = write_result(tmp_path / "sweep-1", sweep(SATURATED))
    rate = measured_write_mib_s(checkpoint_result)
    s = size(SizingInputs(workload="unet3d", accelerator="h100", parameters=19e6,
                          results=(str(train), str(checkpoint_result))))
    # 19e6 x 14 B = 266e6 B at the measured rate
    assert s.value("checkpoint_time_s") == pytest.approx(266e6 / (rate * MiB))
    assert s.value("largest_passing") == 8


@pytest.mark.parametrize("doc,message", [
    ({"schema": "other/9"}, "not an aiio result"),
    ({"schema": "aiio.result/1", "kind": "run", "phase": "prep"}, "sizing reads train"),
    ({"schema": "aiio.result/1", "kind": "sweep", "phase": "train", "points": []}, "no points"),
    ({"schema": "aiio.result/1", "kind": "run", "phase": "train", "clients": [],
      "workload": {}}, "no workload.train.accelerator"),
])
def test_bad_results_are_one_line_errors(tmp_path, doc, message):
    folder = write_result(tmp_path / "bad", doc)
    with pytest.raises(ConfigError, match=message):
        size(SizingInputs(workload="unet3d", results=(str(folder),)))


def test_result_of_another_workload_is_refused(tmp_path):
    folder = write_result(tmp_path / "sweep-1", sweep(SATURATED))
    with pytest.raises(ConfigError, match="measured workload 'unet3d'"):
        size(SizingInputs(workload="resnet50", results=(str(folder),)))


# --- bad and contradictory inputs -----------------------------------------------------------

@pytest.mark.parametrize("inputs,message", [
    (SizingInputs(), "give --model"),
    (SizingInputs(model="llama3-70b", workload="unet3d"), "not both"),
    (SizingInputs(model="llama3-70b", gpus=8, days=30), "--days needs --tokens"),
    (SizingInputs(model="llama3-70b", accelerator="tpu9"), "unknown accelerator"),
    (SizingInputs(model="llama3-70b", gpus=-4), "--gpus = -4 must be greater than 0"),
    (SizingInputs(model="llama3-70b", tokens=-1.0), "--tokens"),
    (SizingInputs(model="llama3-70b", mfu=1.5), "--mfu"),
    (SizingInputs(model="llama3-70b", replicas=-1), "--replicas"),
    (SizingInputs(model="llama3-70b", epochs=3), "--epochs applies to --workload"),
    (SizingInputs(workload="unet3d", tokens=2e12), "--tokens applies to --model"),
    (SizingInputs(workload="dlrm", accelerator="h100"), "only for b200"),
    (SizingInputs(workload="llama3-70b"), "no \\[train\\] section"),
    (SizingInputs(model="unet3d"), "no model.parameters"),
    (SizingInputs(model="nosuch"), "unknown workload"),
])
def test_bad_inputs(inputs, message):
    with pytest.raises(ConfigError, match=message):
        size(inputs)


# --- the command line -------------------------------------------------------------------------

def test_cli_model_with_tokens_and_days():
    proc = run_size("--model", "llama3-70b", "--accelerator", "h100", "--tokens", "2T",
                    "--days", "30")
    assert proc.returncode == 0, proc.stderr
    assert "818 h100 finish the work in 30 days" in flat(proc.stdout)
    assert "911.2" in proc.stdout and "GiB" in proc.stdout and "MiB/s" in proc.stdout


def test_cli_workload_with_gpus():
    proc = run_size("--workload", "unet3d", "--accelerator", "h100", "--gpus", "64")
    assert proc.returncode == 0, proc.stderr
    assert "3,030" in proc.stdout and "193,915" in proc.stdout


def test_cli_from_a_sweep_folder(tmp_path):
    folder = write_result(tmp_path / "20261130-000000-sweep-unet3d", sweep(SATURATED))
    proc = run_size("--workload", "unet3d", "--accelerator", "h100", "--from", str(folder))
    assert proc.returncode == 0, proc.stderr
    assert "every client met the AU goal up to 8 h100" in flat(proc.stdout)


def test_cli_json_matches_the_library(tmp_path):
    proc = run_size("--model", "llama3-70b", "--tokens", "2T", "--days", "30", "--mfu", "40%",
                    "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["schema"] == "aiio.sizing/1"
    assert data["values"]["accelerators_needed"] == 818
    assert data["values"]["checkpoint_gib"] == pytest.approx(CK70 / GiB)
    units = {row["key"]: row["unit"] for rows in data["sections"].values() for row in rows}
    assert units["checkpoint_write_mib_s"] == "MiB/s" and units["flops_tflop"] == "TFLOP"


@pytest.mark.parametrize("args,message", [
    ((), "give --model"),
    (("--model", "llama3-70b", "--gpus", "8", "--days", "30"), "--days needs --tokens"),
    (("--model", "llama3-70b", "--accelerator", "tpu9"), "unknown accelerator"),
    (("--model", "llama3-70b", "--tokens", "-2T"), "must not be negative"),
    (("--model", "llama3-70b", "--gpus", "-4"), "must be greater than 0"),
    (("--model", "llama3-70b", "--stall-budget", "lots"), "--stall-budget"),
    (("--workload", "unet3d", "--from", "/nonexistent/run"), "no result at"),
])
def test_cli_errors_are_one_line_exit_2(args, message):
    proc = run_size(*args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_verdict_names_the_rule_that_passed_the_count(tmp_path):
    # MLPerf's mean rule passed 4 clients whose lowest client read AU 0.80: "every client met
    # the AU goal up to 4" said what no client count showed
    run = train_run(4, 0.95, 10_000.0, au_pass=True)
    run["aggregate"].update(au_rule="mean", au_min=0.80)
    run["clients"][0]["au"] = 0.80
    folder = write_result(tmp_path / "run-1", run)
    s = size(SizingInputs(workload="unet3d", accelerator="h100", results=(str(folder),)))
    said = " ".join(s.verdict)
    assert s.value("largest_passing") == 4
    assert "every client met" not in said and "the mean AU met the AU goal" in said, said
