"""The measured section of `aiio size`: the sized demand against results given with --from.
Pure functions of the basis and what the compute and storage sections found."""

from __future__ import annotations

import math

from aiio.sizing.basis import Basis
from aiio.sizing.format import fmt
from aiio.sizing.measured import MeasuredCheckpoint, MeasuredTrain
from aiio.sizing.rows import Part
from aiio.sizing.sections import Compute
from aiio.sizing.storage import Storage
from aiio.units import GiB, MiB


def measured_part(b: Basis, compute: Compute, storage: Storage) -> Part:
    part = Part("measured")
    if b.train is not None:
        _train(b, part, b.train, compute.accelerators, storage.demand_mib_s)
    if b.checkpoint is not None:
        _checkpoint(b, part, b.checkpoint, storage.checkpoint_bytes)
    return part


def _train(b: Basis, part: Part, m: MeasuredTrain, n: int | None, demand: float) -> None:
    add, acc = part.add, b.acc.key
    add("train_source", f"train {m.kind}", "--from", "", m.source)
    add("train_accelerator", "measured with", m.accelerator, "",
        f"demand {fmt(m.demand_mib_s)} MiB/s per {m.accelerator}")
    add("train_clients", "client counts measured", ", ".join(str(p.clients) for p in m.points),
        "clients")
    passing = m.largest_passing
    add("largest_passing", "largest count at the AU goal", passing,
        "clients", f"AU goal {fmt(m.au_goal * 100)} %, {m.au_rule} rule")
    peak = m.peak
    add("peak_mib_s", "peak aggregate read (first done)", peak.first_done_mib_s, "MiB/s",
        f"at {peak.clients} clients")
    scale = m.demand_mib_s / demand
    fed_measured = math.floor(passing * scale + 1e-9) if passing else 0
    if m.accelerator != acc:
        part.notes.append(
            f"measured with {m.accelerator} clients ({fmt(m.demand_mib_s)} MiB/s each); "
            f"one {acc} needs {fmt(demand)} MiB/s, so counts are scaled by {fmt(scale)}")
    add("fed_measured", f"{acc} fed at the AU goal, as measured", fed_measured,
        "accelerators", f"{passing or 0} x {fmt(m.demand_mib_s)} / {fmt(demand)} MiB/s")
    fed_peak = math.floor(peak.first_done_mib_s / demand + 1e-9)
    add("fed_estimate", f"{acc} the peak feeds at full demand", fed_peak, "accelerators",
        f"{fmt(peak.first_done_mib_s)} / {fmt(demand)} MiB/s")
    # with reads fully overlapped, AU = rate / demand, so the goal holds down to goal x demand
    goal = b.w.train.au_goal if not b.is_model else m.au_goal
    add("fed_floor", f"{acc} the peak feeds at the AU-goal floor",
        math.floor(peak.first_done_mib_s / (demand * goal) + 1e-9), "accelerators",
        f"{fmt(peak.first_done_mib_s)} / ({fmt(demand)} MiB/s x AU {fmt(goal)}), "
        "if prefetch hides all I/O")
    part.verdict.append(_train_verdict(b, m, demand, fed_measured, fed_peak))
    if n:
        part.verdict.append(_fleet_verdict(b, m, n * demand, n, fed_measured))
    # a number that may not be the storage's must not pass silently into a verdict
    part.notes.extend(f"the train result warns: {warning}" for warning in m.warnings)


def _train_verdict(b: Basis, m: MeasuredTrain, demand: float, fed_measured: int,
                   fed_peak: int) -> str:
    acc, peak, most = b.acc.key, m.peak.first_done_mib_s, max(p.clients for p in m.points)
    passed = m.largest_passing or 0
    scaled = f", as much data as {fed_measured} {acc}" if m.accelerator != acc else ""
    if not passed:
        kept = "the mean AU" if m.au_rule == "mean" else "every client"
        return (f"measured: no count up to {most} {m.accelerator} kept {kept} at the AU"
                f" goal; the peak {fmt(peak)} MiB/s feeds {fed_peak} {acc} at "
                f"{fmt(demand)} MiB/s each")
    if not m.saturated:
        # the storage never ran out, so the peak is a floor of its capacity, not the capacity
        return (f"measured: {m.met} the AU goal at every count up to {most} "
                f"{m.accelerator}{scaled}; the storage was not saturated, so it feeds at "
                f"least {max(fed_measured, fed_peak)} {acc} (sweep further for its limit)")
    return (f"measured: {m.met} the AU goal up to {passed} {m.accelerator} "
            f"(of {most} measured){scaled}; the peak {fmt(peak)} MiB/s feeds {fed_peak} "
            f"{acc} at {fmt(demand)} MiB/s each")


def _fleet_verdict(b: Basis, m: MeasuredTrain, need: float, n: int, fed_measured: int) -> str:
    """Can the measured storage feed the accelerators being sized?"""
    peak = m.peak.first_done_mib_s
    if peak >= need:
        enough = ("enough, as measured" if n <= fed_measured
                  else "enough by the peak, beyond the counts measured at the AU goal")
    elif m.saturated:
        enough = f"short by {fmt(need / peak)}x"
    else:
        enough = "not shown: the sweep did not load the storage that far (sweep further)"
    return (f"{n} {b.acc.key} need {fmt(need)} MiB/s; the storage delivered at most "
            f"{fmt(peak)} MiB/s: {enough}")


def _checkpoint(b: Basis, part: Part, m: MeasuredCheckpoint, ckpt: float | None) -> None:
    inp = b.inp
    part.add("checkpoint_source", "checkpoint result", "--from", "", m.source)
    part.notes.extend(f"the checkpoint result warns: {w}" for w in m.warnings)
    if m.write_mib_s is None:
        part.notes.append(m.note)
        return
    part.add("checkpoint_measured_mib_s", "aggregate checkpoint write (last done)",
             m.write_mib_s, "MiB/s", f"at {m.clients} clients")
    ranks = b.w.model.ranks
    if ranks and m.clients != ranks:
        part.notes.append(f"the checkpoint was measured with {m.clients} writers; "
                          f"{b.w.name} is checkpointed by {ranks} ranks "
                          "(model.ranks), which may write faster or slower")
    if not ckpt:
        part.notes.append("a checkpoint result was given but no model parameters: "
                          "give --parameters to time a checkpoint")
        return
    seconds = ckpt / MiB / m.write_mib_s
    part.add("checkpoint_time_s", "checkpoint time on this storage", seconds, "s",
             f"{fmt(ckpt / GiB)} GiB x 1024 / {fmt(m.write_mib_s)} MiB/s")
    share = seconds / inp.checkpoint_interval
    part.add("checkpoint_stall_pct", "stall share of the interval", share * 100, "%",
             f"{fmt(seconds)} s / {fmt(inp.checkpoint_interval)} s")
    within = "within" if share <= inp.stall_budget else "over"
    part.verdict.append(
        f"a {fmt(ckpt / GiB)} GiB checkpoint takes {fmt(seconds)} s at the "
        f"measured {fmt(m.write_mib_s)} MiB/s: {fmt(share * 100)} % of a "
        f"{fmt(inp.checkpoint_interval / 3600)} h interval, {within} the "
        f"{fmt(inp.stall_budget * 100)} % budget")
