"""The first three sections of `aiio size`: inputs, memory per replica, compute. Each is a pure
function of the basis (and what an earlier section found) that returns its rows."""

from __future__ import annotations

from dataclasses import dataclass

from aiio.sizing.basis import Basis
from aiio.sizing.format import fmt, fmt_count
from aiio.sizing.formulas import (
    SECONDS_PER_DAY,
    accelerators_for,
    memory_parts,
    shards_for,
    steps,
    tokens_per_second,
    training_flops,
    transformer_accelerator_seconds,
    workload_accelerator_seconds,
)
from aiio.sizing.rows import Part
from aiio.units import GiB


def inputs_part(b: Basis) -> Part:
    """Every input, where it came from."""
    part, inp, w, acc = Part("inputs"), b.inp, b.w, b.acc
    add = part.add
    add("name", "model" if b.is_model else "workload", w.name, "", w.source)
    add("accelerator", "accelerator", acc.key, "", acc.name)
    add("accelerator_memory_gib", "accelerator memory", acc.memory_gib, "GiB",
        "accelerators.toml")
    add("accelerator_bf16_tflops", "accelerator bf16 dense peak", acc.bf16_tflops, "TFLOP/s",
        "accelerators.toml")
    add("accelerator_source", "accelerator figures from", "accelerators.toml", "", acc.source)
    add("parameters", "parameters", b.params, "parameters",
        "--parameters" if inp.parameters else ("model.parameters" if b.params
                                               else "not given (--parameters)"))
    if b.is_model:
        add("tokens", "training tokens", inp.tokens, "tokens", "--tokens")
        add("mfu", "model FLOPs utilization (MFU)", b.mfu, "",
            "--mfu" if inp.mfu is not None else "default")
        add("bytes_per_token", "dataset bytes per token", inp.bytes_per_token, "B",
            "--bytes-per-token (32-bit token ids by default)")
    else:
        _workload_inputs(b, part)
    add("days", "time budget", inp.days, "days", "--days")
    add("gpus", "accelerators given", inp.gpus, "accelerators", "--gpus")
    add("precision", "training precision", inp.precision, "", "--precision")
    add("optimizer", "optimizer", inp.optimizer, "", "--optimizer")
    add("checkpoint_bytes_per_parameter", "checkpoint bytes per parameter",
        w.model.bytes_per_parameter, "B", "model.bytes_per_parameter")
    add("retention", "checkpoints kept", inp.retention, "", "--retention")
    add("checkpoint_interval_h", "checkpoint interval", inp.checkpoint_interval / 3600, "hours",
        "--checkpoint-interval")
    add("stall_budget_pct", "checkpoint stall budget", inp.stall_budget * 100,
        "% of training time", "--stall-budget")
    add("prep_copies", "prep output", inp.prep_copies, "dataset copies", "--prep-copies")
    add("replicas", "inference replicas", inp.replicas, "", "--replicas")
    add("load_time_s", "load time target", inp.load_time, "s", "--load-time")
    return part


def _workload_inputs(b: Basis, part: Part) -> None:
    add, w = part.add, b.w
    add("epochs", "epochs", b.epochs, "", "--epochs" if b.inp.epochs else "train.epochs")
    add("samples", "samples in the dataset", b.samples, "samples",
        f"{w.dataset.num_files:,} files x {w.dataset.samples_per_file:,} samples"
        if b.inp.dataset_size is None else "--dataset-size / mean sample size")
    add("sample_size_b", "mean sample size", w.dataset.sample_size, "B", "dataset.sample_size")
    add("batch_size", "batch per accelerator", w.train.batch_size, "samples",
        "train.batch_size")
    add("compute_time_s", f"compute time per batch on {b.acc.key}", w.compute_time, "s",
        f"train.compute_time.{b.acc.key}")
    add("au_goal_pct", "AU goal", w.train.au_goal * 100, "%", "train.au_goal")
    if b.inp.mfu is not None:
        part.notes.append("--mfu is not used for a workload: its compute time per batch "
                          "is measured time; the AU goal is the utilization")


def memory_part(b: Basis) -> tuple[Part, int | None]:
    """Training state per replica, and the accelerators that hold one (None without
    parameters)."""
    part, p = Part("memory"), b.params
    parts = memory_parts(b.inp.precision, b.inp.optimizer)
    for key, label, nbytes in parts:
        part.add(f"{key}_bytes_per_parameter", label, nbytes, "B/param")
    per_param = sum(n for _, _, n in parts)
    part.add("state_bytes_per_parameter", "training state per parameter", per_param,
             "B/param", " + ".join(str(n) for _, _, n in parts))
    if not p:
        part.add("state_gib", "training state per replica", None, "GiB",
                 "needs --parameters (the workload has no model.parameters)")
        return part, None
    state = p * per_param
    part.add("state_gib", "training state per replica", state / GiB, "GiB",
             f"{fmt_count(p)} x {per_param} B / 2^30")
    shards = shards_for(state, b.acc.memory_bytes)
    part.add("fits_one", f"fits one {b.acc.key}", shards == 1, "",
             f"{fmt(state / GiB)} GiB vs {fmt(b.acc.memory_gib)} GiB")
    part.add("shards", "accelerators to hold one replica", shards, "accelerators",
             f"ceil({fmt(state / GiB)} / {fmt(b.acc.memory_gib)} GiB), activations not counted")
    part.verdict.extend(_memory_verdict(b, state, shards))
    part.notes.extend(_checkpoint_agreement(b, per_param, parts))
    return part, shards


def _memory_verdict(b: Basis, state: float, shards: int) -> list[str]:
    acc, gib = b.acc.key, fmt(b.acc.memory_gib)
    if shards == 1:
        out = [f"one replica's training state ({fmt(state / GiB)} GiB) fits one {acc} "
               f"({gib} GiB) before activations"]
    else:
        out = [f"one replica's training state ({fmt(state / GiB)} GiB) must be sharded over "
               f"at least {shards} {acc} ({gib} GiB each) before activations"]
    if b.inp.gpus is not None and b.inp.gpus < shards:
        out.append(f"{b.inp.gpus} {acc} cannot hold one replica: at least {shards} are needed")
    return out


def _checkpoint_agreement(b: Basis, per_param: int,
                          parts: list[tuple[str, str, int]]) -> list[str]:
    # a checkpoint holds the training state without the gradients
    saved = per_param - dict((k, n) for k, _, n in parts)["gradients"]
    if saved == b.w.model.bytes_per_parameter:
        return []
    return [f"{b.inp.precision} + {b.inp.optimizer} state without gradients is {saved} "
            f"B/param; checkpoints use the workload's {fmt(b.w.model.bytes_per_parameter)}"
            " B/param (model.bytes_per_parameter)"]


@dataclass(frozen=True)
class Compute:
    """What the compute section found that later sections use."""

    accelerator_seconds: float | None
    accelerators: int | None     # accelerators the storage must serve
    tokens_per_s: float | None   # a model's, per accelerator


def compute_part(b: Basis, shards: int | None) -> tuple[Part, Compute]:
    """The work in accelerator time, and how many accelerators finish it in the budget."""
    part = Part("compute")
    if b.is_model:
        seconds, tokens = _transformer_compute(b, part)
    else:
        seconds, tokens = _workload_compute(b, part), None
    n = _accelerators(b, part, seconds, shards)
    return part, Compute(seconds, n, tokens)


def _transformer_compute(b: Basis, part: Part) -> tuple[float | None, float]:
    p, acc, tokens = b.params, b.acc, b.inp.tokens
    effective = acc.peak_flops * b.mfu
    part.add("effective_tflops", "sustained per accelerator", effective / 1e12, "TFLOP/s",
             f"{fmt(acc.bf16_tflops)} x MFU {fmt(b.mfu)}")
    per_s = part.add("tokens_per_s", "tokens per accelerator",
                     tokens_per_second(p, acc.peak_flops, b.mfu), "tokens/s",
                     f"{fmt(effective / 1e12)} TFLOP/s / (6 x {fmt_count(p)})")
    if tokens is None:
        part.add("flops_tflop", "training work", None, "TFLOP", "needs --tokens")
        return None, per_s
    flops = training_flops(p, tokens)
    part.add("flops_tflop", "training work", flops / 1e12, "TFLOP",
             f"6 x {fmt_count(p)} x {fmt_count(tokens)} tokens")
    seconds = transformer_accelerator_seconds(flops, acc.peak_flops, b.mfu)
    part.add("accelerator_hours", "accelerator time", seconds / 3600, "accelerator-hours",
             f"{fmt(flops / 1e12)} TFLOP / {fmt(effective / 1e12)} TFLOP/s")
    return seconds, per_s


def _workload_compute(b: Basis, part: Part) -> float:
    w = b.w
    n_steps = steps(b.epochs, b.samples, w.train.batch_size)
    part.add("steps", "batches (all accelerators)", n_steps, "batches",
             f"{b.epochs} epochs x {b.samples:,} samples / {w.train.batch_size}")
    busy = n_steps * w.compute_time
    part.add("compute_hours", "accelerator compute time", busy / 3600, "accelerator-hours",
             f"{fmt(n_steps)} x {fmt(w.compute_time)} s / 3600")
    seconds = workload_accelerator_seconds(n_steps, w.compute_time, w.train.au_goal)
    part.add("accelerator_hours", "accelerator time at the AU goal", seconds / 3600,
             "accelerator-hours", f"{fmt(busy / 3600)} h / AU {fmt(w.train.au_goal)}")
    return seconds


def _accelerators(b: Basis, part: Part, seconds: float | None,
                  shards: int | None) -> int | None:
    inp, acc = b.inp, b.acc.key
    needed = None
    if seconds is not None and inp.days is not None:
        needed = accelerators_for(seconds, inp.days * SECONDS_PER_DAY)
        part.add("accelerators_needed", f"{acc} for a {fmt(inp.days)}-day budget", needed,
                 "accelerators", f"ceil({fmt(seconds / 3600)} h / ({fmt(inp.days)} x 24 h))")
        if inp.gpus is None:
            part.verdict.append(f"{needed} {acc} finish the work in {fmt(inp.days)} days"
                                f" ({fmt(seconds / 3600)} accelerator-hours)")
    if seconds is not None and inp.gpus is not None:
        hours = seconds / inp.gpus / 3600
        part.add("hours_with_gpus", f"time on {inp.gpus} {acc}", hours, "hours",
                 f"{fmt(seconds / 3600)} h / {inp.gpus}")
        if inp.days is not None:
            within = "within" if hours <= inp.days * 24 else "over"
            part.verdict.append(f"{inp.gpus} {acc} finish in {fmt(hours / 24)} days: "
                                f"{within} the {fmt(inp.days)}-day budget ({needed} needed)")
    n = _accelerators_served(b, part, needed, shards)
    if n is not None:
        part.add("accelerators", "accelerators the storage serves", n, "accelerators",
                 "--gpus" if inp.gpus else "to finish in time (and no fewer than one "
                 "replica's shards)")
    if seconds is not None and inp.days is None and inp.gpus is None:
        part.notes.append("give --days or --gpus to size the cluster and its storage")
    return n


def _accelerators_served(b: Basis, part: Part, needed: int | None,
                         shards: int | None) -> int | None:
    if b.inp.gpus is not None:
        return b.inp.gpus
    if needed is None:
        return None
    if shards and shards > needed:
        part.notes.append(f"memory, not time, sets the count: {shards} {b.acc.key}"
                          f" hold one replica, {needed} would finish in time")
        return shards
    return needed
