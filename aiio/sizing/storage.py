"""The storage section of `aiio size`: capacity, read demand, checkpoint and model-load
bandwidth. A pure function of the basis and what the compute section found."""

from __future__ import annotations

from dataclasses import dataclass

from aiio.phases.checkpoint_layout import shape_of, totals
from aiio.sizing.basis import Basis
from aiio.sizing.format import fmt, fmt_count, gib
from aiio.sizing.formulas import checkpoint_write_mib_s, load_mib_s, weight_bytes_per_parameter
from aiio.sizing.rows import Part
from aiio.sizing.sections import Compute
from aiio.units import GiB, MiB


@dataclass(frozen=True)
class Storage:
    """What the storage section found that the measured section uses."""

    demand_mib_s: float               # read demand per accelerator
    checkpoint_bytes: float | None


def storage_part(b: Basis, compute: Compute) -> tuple[Part, Storage]:
    part = Part("storage")
    ckpt = _capacity(b, part)
    demand = _read_rate(b, part, compute)
    _checkpoint_rate(b, part, ckpt)
    _load_rate(b, part)
    return part, Storage(demand, ckpt)


def _dataset_bytes(b: Basis) -> tuple[float | None, str]:
    inp = b.inp
    if inp.dataset_size is not None:
        return inp.dataset_size, "--dataset-size"
    if not b.is_model:
        return b.w.dataset_bytes, (f"{b.w.num_samples:,} samples x "
                                   f"{b.w.dataset.sample_size:,} B")
    if inp.tokens is not None:
        return inp.tokens * inp.bytes_per_token, (f"{fmt_count(inp.tokens)} tokens x "
                                                  f"{fmt(inp.bytes_per_token)} B")
    return None, "needs --tokens or --dataset-size"


def _capacity(b: Basis, part: Part) -> float | None:
    """Dataset, prep output and kept checkpoints; returns one checkpoint's bytes."""
    inp = b.inp
    dataset, how = _dataset_bytes(b)
    part.add("dataset_gib", "dataset", gib(dataset), "GiB", how)
    prep = dataset * inp.prep_copies if dataset is not None else None
    part.add("prep_output_gib", "prep output", gib(prep), "GiB",
             f"dataset x {fmt(inp.prep_copies)}")
    ckpt, how = _checkpoint_bytes(b)
    part.add("checkpoint_gib", "one checkpoint", gib(ckpt), "GiB", how)
    kept = ckpt * inp.retention if ckpt else None
    part.add("checkpoints_gib", "checkpoints kept", gib(kept), "GiB",
             f"one checkpoint x {inp.retention}")
    total = sum(x for x in (dataset, prep, kept) if x)
    part.add("capacity_gib", "capacity", total / GiB, "GiB",
             "dataset + prep output + checkpoints kept")
    return ckpt


def _checkpoint_bytes(b: Basis) -> tuple[float | None, str]:
    """One checkpoint: the workload's file layout (DLIO's formula, as MLPerf writes it) unless
    --parameters gives another model, else parameters x bytes per parameter."""
    shape = shape_of(b.w)
    if shape is not None and not b.inp.parameters:
        nbytes, files = totals(shape)
        return float(nbytes), f"DLIO's layout: {files:,} files over {shape.ranks} ranks"
    if not b.params:
        return None, "needs --parameters"
    per = b.w.model.bytes_per_parameter
    return b.params * per, f"{fmt_count(b.params)} x {fmt(per)} B"


def _read_rate(b: Basis, part: Part, compute: Compute) -> float:
    if b.is_model:
        demand = compute.tokens_per_s * b.inp.bytes_per_token / MiB
        how = f"{fmt(compute.tokens_per_s)} tokens/s x {fmt(b.inp.bytes_per_token)} B"
    else:
        w = b.w
        demand = w.demand_mib_s()
        how = f"{w.train.batch_size} x {w.dataset.sample_size:,} B / {fmt(w.compute_time)} s"
    part.add("demand_mib_s", "read demand per accelerator", demand, "MiB/s", how)
    n = compute.accelerators
    total = n * demand if n else None
    part.add("read_mib_s", "read bandwidth", total, "MiB/s",
             f"{n} x {fmt(demand)} MiB/s" if n else "needs --gpus or --days")
    if not b.is_model:
        floor = total * b.w.train.au_goal if total else None
        part.add("read_floor_mib_s", "least read bandwidth at the AU goal", floor, "MiB/s",
                 f"read bandwidth x AU {fmt(b.w.train.au_goal)} (below it the goal fails)")
        part.notes.extend(_batch_note(b, n))
    return demand


def _batch_note(b: Basis, n: int | None) -> list[str]:
    batch = b.w.train.batch_size
    if not (n and n * batch > b.samples):
        return []
    return [f"{n} x {batch} samples per step is more than the dataset's {b.samples:,} "
            f"samples: at most {b.samples // batch} accelerators get a batch each step "
            "(--dataset-size sizes a larger dataset)"]


def _checkpoint_rate(b: Basis, part: Part, ckpt: float | None) -> None:
    inp = b.inp
    rate = checkpoint_write_mib_s(ckpt, inp.checkpoint_interval, inp.stall_budget) \
        if ckpt else None
    stall = inp.checkpoint_interval * inp.stall_budget
    part.add("checkpoint_stall_s", "longest stall per checkpoint", stall, "s",
             f"{fmt(inp.checkpoint_interval)} s x {fmt(inp.stall_budget)}")
    part.add("checkpoint_write_mib_s", "checkpoint write bandwidth", rate, "MiB/s",
             f"{fmt(gib(ckpt))} GiB x 1024 / {fmt(stall)} s" if ckpt else "needs --parameters")


def _load_rate(b: Basis, part: Part) -> None:
    inp = b.inp
    if not b.params:
        part.add("load_mib_s", "model load bandwidth", None, "MiB/s", "needs --parameters")
        return
    per = weight_bytes_per_parameter(inp.precision)
    weights = b.params * per
    part.add("weights_gib", "weights one replica loads", weights / GiB, "GiB",
             f"{fmt_count(b.params)} x {per} B ({inp.precision})")
    part.add("load_mib_s", "model load bandwidth", load_mib_s(inp.replicas, weights,
                                                              inp.load_time), "MiB/s",
             f"{inp.replicas} x {fmt(weights / GiB)} GiB x 1024 / {fmt(inp.load_time)} s")
