"""Every shipped workload held to the figures MLPerf Storage publishes: per-accelerator read
demand at 100 % AU (batch x record / compute time, MiB = 2^20) and llama3 checkpoint sizes and
file counts by DLIO's formula (fp16 model, fp32 optimizer, TP x PP x DP ranks)."""

from __future__ import annotations

import json

import pytest

from aiio.phases.checkpoint_layout import layout_of, parameters, rank_files, shape_of
from aiio.workload import load_workload, shipped_workloads

from .conftest import run_cli

GiB = 1 << 30

# (workload, accelerator) -> MiB/s one accelerator reads at 100 % AU, as published (v2.0 a100
# and h100, v3.0 b200 and mi355)
DEMAND = {
    ("unet3d", "a100"): 1538.8, ("unet3d", "h100"): 3029.9,
    ("unet3d-b200", "b200"): 6041.1,
    ("resnet50", "a100"): 100.6, ("resnet50", "h100"): 195.3,
    ("cosmoflow", "a100"): 489.6, ("cosmoflow", "h100"): 770.7,
    ("retinanet-b200", "b200"): 155.5, ("retinanet-mi355", "mi355"): 155.5,
}

# v3.0's training configurations: batch, read threads, compute s/batch, AU floor, epochs (the
# epochs as MLPerf's configuration files give them: a key its CLOSED division fixes)
V3_TRAINING = {
    "unet3d-b200": ("b200", 7, 32, 0.162, 0.90, 5),
    "retinanet-b200": ("b200", 24, 4, 0.04755, 0.85, 8),
    "retinanet-mi355": ("mi355", 32, 8, 0.0634, 0.85, 8),
}

# model -> (checkpoint GiB to 0.1, files, ranks) as MLPerf Storage v3.0 writes them
CHECKPOINTS = {
    "llama3-8b": (104.7, 16, 8), "llama3-70b": (911.2, 128, 64),
    "llama3-405b": (5292.2, 1544, 512), "llama3-1t": (15426.6, 2072, 1024),
}


def demand(name: str, accelerator: str) -> float:
    w = load_workload(name, [("train", "accelerator", accelerator)])
    return w.demand_mib_s()


@pytest.mark.parametrize(("name", "accelerator"), sorted(DEMAND))
def test_per_accelerator_demand_is_the_published_figure(name: str, accelerator: str) -> None:
    assert round(demand(name, accelerator), 1) == DEMAND[(name, accelerator)]


def test_every_shipped_training_workload_and_accelerator_is_held_to_a_figure() -> None:
    """A workload or accelerator added without its published figure fails here (demo and the
    DLRM-like and prep workloads are aiio's own, not MLPerf's)."""
    own = {"demo", "dlrm", "imagenet-prep", "staging-randrw"}
    shipped = set()
    for name in shipped_workloads():
        w = load_workload(name)
        if "dataset" in w.given and name not in own:
            shipped |= {(name, acc) for acc in w.train.compute_time}
    assert shipped == set(DEMAND)


@pytest.mark.parametrize("name", sorted(V3_TRAINING))
def test_v3_training_configurations(name: str) -> None:
    accelerator, batch, threads, compute, floor, epochs = V3_TRAINING[name]
    w = load_workload(name)
    assert w.train.accelerator == accelerator
    assert (w.train.batch_size, w.train.read_threads) == (batch, threads)
    assert w.compute_time == compute and w.train.au_goal == floor
    assert w.train.epochs == epochs


def test_retinanet_records_are_jpeg_sized() -> None:
    for name in ("retinanet-b200", "retinanet-mi355"):
        d = load_workload(name).dataset
        assert (d.sample_size, d.samples_per_file, d.sample_size_stdev) == (322957, 1, 0)
        assert d.num_files == 1_170_301  # OpenImages' MLPerf training subset, one JPEG each


@pytest.mark.parametrize("name", sorted(CHECKPOINTS))
def test_llama3_checkpoint_size_and_files_by_dlio_formula(name: str) -> None:
    gib, files, ranks = CHECKPOINTS[name]
    w = load_workload(name)
    layout = layout_of(shape_of(w))
    assert len(layout) == ranks == w.model.ranks
    assert sum(len(r) for r in layout) == files
    total = sum(size for r in layout for _, size in r)
    assert round(total / GiB, 1) == gib
    # the model's parameter count is the formula's, so loading and sizing use the same model
    assert w.model.parameters == parameters(shape_of(w))


def test_the_published_1t_checkpoint_size_to_the_gib_thousandth() -> None:
    """The published 1T run wrote checkpoint_size_GB = 15,426.589 (DLIO's GB are 2^30 B)."""
    layout = layout_of(shape_of(load_workload("llama3-1t")))
    assert round(sum(s for r in layout for _, s in r) / GiB, 3) == 15426.589


def test_405b_per_rank_files() -> None:
    """TP8 PP32 DP2, ZeRO 1: every rank an optimizer shard; data-parallel rank 0 one file per
    layer it holds (pipeline stage 0 adds the embedding, the last the head and the final norm);
    126 layers over 32 stages: the first 30 hold 4, the last 2 hold 3."""
    t = shape_of(load_workload("llama3-405b"))
    h, v = 16384, 128256
    first = dict(rank_files(t, 0))
    assert len(first) == 1 + 5  # optimizer + embedding + 4 layers
    assert first["layer_0-model_0_model_states"] == h * v // 8 * 2
    optim = first["zero_pp_rank_0_mp_rank_0_optim_states"]
    assert optim == (3 * (parameters(t) // 512) + 15 * h) * 4
    last = dict(rank_files(t, 255))  # stage 31, tensor rank 7, data-parallel rank 0
    assert len(last) == 1 + 3 + 2
    assert last["layer_128-model_255_model_states"] == h * 2  # the tiny final-norm file
    second_dp = rank_files(t, 256)  # data-parallel rank 1 writes its optimizer shard only
    assert [name for name, _ in second_dp] == ["zero_pp_rank_1_mp_rank_0_optim_states"]


def test_8b_zero3_shards_the_model_over_every_rank() -> None:
    t = shape_of(load_workload("llama3-8b"))
    files = [dict(rank_files(t, r)) for r in range(8)]
    assert all(len(f) == 2 for f in files)
    model = [f[f"zero_pp_rank_{r}_mp_rank_0_model_states"] for r, f in enumerate(files)]
    assert len(set(model)) == 1 and model[0] * 8 == pytest.approx(parameters(t) * 2, rel=1e-6)


def test_workloads_lists_the_v3_workloads_and_checkpoint_files() -> None:
    proc = run_cli("workloads", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    names = {r["name"]: r for r in out["datasets"]}
    assert {"retinanet-b200", "retinanet-mi355", "unet3d-b200"} <= set(names)
    assert round(names["retinanet-mi355"]["demand_mib_s"], 1) == 155.5
    models = {m["name"]: m for m in out["models"]}
    assert models["llama3-1t"]["checkpoint_files"] == 2072
    assert round(models["llama3-1t"]["checkpoint_bytes"] / GiB, 1) == 15426.6
