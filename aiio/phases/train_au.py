"""Accelerator utilization over clients: mean and minimum, the pass rule, and the cases in
which AU cannot be given (compute 0, no measured step), each said in words."""

from __future__ import annotations

from typing import Any

from aiio import stats
from aiio.workload import Workload


def au_verdict(aus: list[float], goal: float, rule: str) -> bool:
    """Pass when the mean (MLPerf's rule) or the minimum over clients reaches the goal."""
    value = sum(aus) / len(aus) if rule == "mean" else min(aus)
    return bool(value >= goal)


def samples_needed(batch_size: int, clients: int) -> dict[str, int]:
    """The smallest shard that gives a measured step: one warm-up batch, then one sample more."""
    per_client = batch_size + 1
    return {"au_samples_per_client_needed": per_client,
            "au_dataset_samples_needed": per_client * clients}


def au_aggregate(clients: list[dict], goal: float, rule: str, compute_s: float,
                 batch_size: int, dataset_samples: int,
                 samples_per_file: int = 1) -> dict[str, Any]:
    """AU mean and min over the clients that measured it, the verdict under `rule`, and a note
    whenever a client (or all of them) could not measure it."""
    measured = [c for c in clients if c.get("au") is not None]
    aus = [c["au"] for c in measured]
    out: dict[str, Any] = {"au_goal": goal, "au_rule": rule, "au_clients_measured": len(aus)}
    if not aus:
        out.update(au_mean=None, au_min=None, au_pass=None, au_spread=None,
                   clients_below_goal=[])
        out["au_note"] = _no_au_note(compute_s, batch_size, len(clients), dataset_samples,
                                     samples_per_file)
        if compute_s > 0:
            out.update(samples_needed(batch_size, len(clients)))
        return out
    out.update(au_mean=sum(aus) / len(aus), au_min=min(aus), au_spread=stats.spread(aus),
               au_pass=au_verdict(aus, goal, rule),
               clients_below_goal=[c["client"] for c in measured if c["au"] < goal])
    if len(aus) < len(clients):
        missing = [c["client"] for c in clients if c.get("au") is None]
        out["au_note"] = (f"AU over {len(aus)} of {len(clients)} clients: client(s) "
                          f"{missing[:20]} had no measured step (each step was an epoch's "
                          "first)")
    return out


def _no_au_note(compute_s: float, batch_size: int, clients: int, dataset_samples: int,
                samples_per_file: int = 1) -> str:
    if compute_s <= 0:
        return ("compute time is 0 s per batch: AU is not meaningful (the accelerators never "
                "compute); the run measures how fast the storage feeds the loaders")
    need = samples_needed(batch_size, clients)
    fewest = dataset_samples // clients  # shards differ by at most one sample
    if fewest >= need["au_samples_per_client_needed"]:
        # every shard holds a measured step: the run stopped before any client took one
        # (`--duration 1ms` was told to use a bigger dataset, which it had)
        return (f"not measurable: the run ended before any client finished a step past its "
                f"epoch's first (warm-up, excluded); AU needs at least 2 steps of "
                f"{compute_s:g} s per client: run longer (--duration)")
    share = f"{fewest:,}" if dataset_samples % clients == 0 else f"{fewest:,} to {fewest + 1:,}"
    files = files_for(need["au_dataset_samples_needed"], samples_per_file)
    return (f"not measurable: every step was the first of its epoch (warm-up, excluded), as "
            f"{clients} clients share {dataset_samples:,} samples ("
            f"{share} per client, batch {batch_size}); AU needs at least "
            f"{need['au_samples_per_client_needed']:,} samples per client, a dataset of "
            f"{need['au_dataset_samples_needed']:,} samples or more (MLPerf asks 500 steps per "
            f"epoch): --set dataset.num_files={files} or more")


def files_for(samples: int, samples_per_file: int) -> int:
    """Files that hold at least `samples` samples."""
    return -(-samples // samples_per_file)


def demand(w: Workload) -> dict[str, Any]:
    """Per-client demand in application bytes: batch x mean sample size / compute time."""
    if w.compute_time <= 0:
        return {"demand_mib_s_per_client": None,
                "demand_note": "compute time is 0 s per batch: demand is unbounded (each "
                               "accelerator takes data as fast as it arrives)"}
    return {"demand_mib_s_per_client": w.demand_mib_s()}
