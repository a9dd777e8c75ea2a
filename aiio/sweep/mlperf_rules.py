"""MLPerf Storage v3.0's rules and figures, computed from aiio results (nothing here measures).

Training: the dataset size rule, AU per epoch and its mean as DLIO computes it (each epoch's
first step out), samples/s over every step, and the "read B/W" MLPerf publishes: samples/s x
the nominal record size, not bytes measured. Checkpointing: MLPerf's mean of per-checkpoint
rates (size / the slowest rank's duration) beside aiio's total bytes over total time.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from aiio.results.parts import as_result, host_ram_bytes
from aiio.results.result import ClientFigures, Result
from aiio.units import GiB

RULES = "mlperf-3.0"
KIND = "mlperf"        # a summary's kind: `aiio report` draws its page from it
SCORED_RUNS = 5        # after one warm-up run, consecutive
STEPS_PER_EPOCH = 500  # the dataset gives every accelerator at least this many batches
RAM_MULTIPLE = 5       # and is at least 5 x the client hosts' memory
CHECKPOINTS = 10       # writes (then reads) of one checkpoint invocation


def dataset_rule(batch: int, accelerators: int, hosts: int, ram_bytes: int,
                 record_bytes: int, samples: int) -> dict[str, Any]:
    """At least max(500 x batch x accelerators, hosts x RAM x 5 / record size) samples."""
    by_steps = STEPS_PER_EPOCH * batch * accelerators
    by_memory = math.ceil(hosts * ram_bytes * RAM_MULTIPLE / record_bytes)
    needed = max(by_steps, by_memory)
    return {"samples": samples, "needed": needed, "by_steps": by_steps,
            "by_memory": by_memory, "met": samples >= needed}


def epoch_aus(client: ClientFigures) -> dict[int, float] | None:
    """One client's AU per epoch as DLIO computes it: the compute time of the steps after the
    first it took over the epoch's wall time (first step's start to last step's end) less that
    first step's wait and compute. The loop's own time between steps is wall time, as in
    DLIO's. None when the log was thinned (a long run keeps every other step) or is empty."""
    if client.step_log_stride != 1 or not client.step_log:
        return None
    compute: dict[int, float] = defaultdict(float)
    start: dict[int, float] = {}
    end: dict[int, float] = defaultdict(float)
    for step in client.step_log:
        done = step.start_s + step.wait_s + step.compute_s
        end[step.epoch] = max(end[step.epoch], done)
        if step.epoch not in start:  # warm-up: its wait is the loader's start, not the storage's
            start[step.epoch] = done
            continue
        compute[step.epoch] += step.compute_s
    return {e: compute[e] / (end[e] - start[e]) for e in sorted(start)
            if end[e] > start[e]}


def training_run(res: Result | Mapping[str, Any]) -> dict[str, Any]:
    """One run's figures as MLPerf computes them, with aiio's measured ones beside."""
    run = as_result(res)
    per_client = [epoch_aus(c) for c in run.clients]
    summary, reads = run.summary, run.summary.top
    samples_s = summary.samples_per_s or 0.0
    au = summary.au.mean if summary.au else None
    out: dict[str, Any] = {
        "id": run.id, "status": run.status, "samples_per_s": samples_s,
        "read_gib_s_nominal": samples_s * run.workload.sample_size / GiB,
        "read_mib_s_measured": reads.first_done.mib_s if reads.first_done else None,
        "au_aiio": au,
    }
    if any(p is None for p in per_client):
        out.update(au_per_epoch=None, au=au,
                   au_note="a client's step log was thinned: AU over all its steps")
        return out
    by_epoch: dict[int, list[float]] = defaultdict(list)
    for aus in per_client:
        for epoch, au in aus.items():
            by_epoch[epoch].append(au)
    every = [au for aus in per_client for au in aus.values()]
    out["au_per_epoch"] = [sum(v) / len(v) for _, v in sorted(by_epoch.items())]
    out["au"] = sum(every) / len(every) if every else None
    return out


def training_summary(warmup: Mapping[str, Any], scored: list[Mapping[str, Any]],
                     rule: Mapping[str, Any]) -> dict[str, Any]:
    """The warm-up (shown, not scored), the scored runs, and the published row."""
    first = scored[0]
    w = first["workload"]
    runs = [training_run(r) for r in scored]
    floor = w["train"]["au_goal"]
    aus = [r["au"] for r in runs]
    passed = all(a is not None and a >= floor for a in aus)
    hosts = _hosts(as_result(first))
    return {
        "rules": RULES, "phase": "train", "workload": w["workload"]["name"],
        "warmup": training_run(warmup), "runs": runs, "au_floor": floor,
        "au_pass": passed, "dataset_rule": rule,
        "published": {
            "accelerator_type": w["train"]["accelerator"], "client_nodes": hosts,
            "simulated_accelerators": len(first["clients"]),
            "read_gib_s": _mean([r["read_gib_s_nominal"] for r in runs]),
            "samples_per_s": _mean([r["samples_per_s"] for r in runs]),
        },
        "aiio": {
            "read_mib_s_measured": _mean([r["read_mib_s_measured"] for r in runs]),
            "read_mib_s_per_client": _mean([r["read_mib_s_measured"] for r in runs])
            / len(first["clients"]) if runs else None,
        },
    }


def checkpoint_rates(res: Result | Mapping[str, Any], op: str) -> dict[str, Any] | None:
    """MLPerf's figure (the mean over checkpoints of size / duration, the duration the
    slowest rank's) and aiio's (every byte over the summed durations), in GiB/s; `op` is
    the side of each checkpoint (write, or read: its restore)."""
    bursts = [b for b in as_result(res).sections("checkpoint.")
              if b.name.endswith(f".{op}") and b.last_done_s and b.bytes is not None]
    if not bursts:
        return None
    rates = [b.bytes / b.last_done_s / GiB for b in bursts]
    mean_of_rates = sum(rates) / len(rates)
    total = sum(b.bytes for b in bursts) / sum(b.last_done_s for b in bursts) / GiB
    return {"checkpoints": len(bursts), "mlperf_gib_s": mean_of_rates,
            "aiio_gib_s": total, "difference_pct": (mean_of_rates / total - 1) * 100,
            "mean_duration_s": _mean([b.last_done_s for b in bursts]),
            "size_gib": _mean([b.bytes for b in bursts]) / GiB,
            "per_checkpoint_gib_s": rates}


def checkpoint_summary(res: Mapping[str, Any]) -> dict[str, Any]:
    """Both directions, and the published row."""
    w = res["workload"]
    write, read = checkpoint_rates(res, "write"), checkpoint_rates(res, "read")
    return {
        "rules": RULES, "phase": "checkpoint", "workload": w["workload"]["name"],
        "run_id": res["id"], "write": write, "read": read,
        "published": {
            "model": w["model"]["name"] or w["workload"]["name"],
            "client_nodes": _hosts(as_result(res)),
            "processes": len(res["clients"]),
            "checkpoint_size_gib": write["size_gib"] if write else None,
            "save_gib_s": write["mlperf_gib_s"] if write else None,
            "save_duration_s": write["mean_duration_s"] if write else None,
            "load_gib_s": read["mlperf_gib_s"] if read else None,
            "load_duration_s": read["mean_duration_s"] if read else None,
        },
    }


UNMEASURED = ("AU not measured in a scored run: no epoch had a step after its first, which "
              "MLPerf's AU leaves out")


def au_failures(summary: Mapping[str, Any]) -> list[str]:
    """Why the scored runs did not all hold the AU floor (none: they did)."""
    floor, aus = summary["au_floor"], [r.get("au") for r in summary.get("runs") or []]
    found = []
    if any(a is not None and a < floor for a in aus):
        found.append(f"AU under the floor ({floor:.0%}) in a scored run")
    if any(a is None for a in aus):
        found.append(UNMEASURED)
    return found


def au_verdict(summary: Mapping[str, Any]) -> str:
    """The AU floor's line: met, or why not."""
    failures = au_failures(summary)
    return "; ".join(failures) if failures else "met in every scored run"


def confirmed(summary: Mapping[str, Any]) -> str:
    """Whether the scored runs at the count the search found held the floor too: they are
    other runs than the search's probe, and one may fall below it."""
    failures = au_failures(summary)
    return f"do not confirm it ({'; '.join(failures)})" if failures else "confirm it"


def host_memory(res: Result | Mapping[str, Any]) -> tuple[int, int]:
    """(client hosts, the largest one's memory in bytes) of a run."""
    run = as_result(res)
    return _hosts(run), max(host_ram_bytes(run), default=0)


def _hosts(run: Result) -> int:
    """The run's client hosts: its MPI ranks' entries, one without MPI."""
    return len(run.hosts) or 1


def marks(summary: Mapping[str, Any]) -> list[str]:
    """Why the result is not one MLPerf would accept, a line each (none: valid)."""
    found = []
    if summary.get("status") in ("interrupted", "failed"):
        found.append(f"{summary.get('stopped_by') or 'interrupted'} after "
                     f"{len(summary['runs'])} of {summary.get('runs_planned', SCORED_RUNS)} "
                     "scored run(s)")
    if summary["phase"] == "train":
        found += au_failures(summary)
        if not summary["dataset_rule"]["met"]:
            found.append("dataset size rule not met")
        if len(summary["runs"]) < SCORED_RUNS:
            found.append(f"{len(summary['runs'])} scored run(s), MLPerf scores {SCORED_RUNS}")
    else:
        for op in ("write", "read"):
            done = (summary.get(op) or {}).get("checkpoints", 0)
            if done < CHECKPOINTS:
                found.append(f"{done} checkpoint {op}s measured, MLPerf times {CHECKPOINTS}")
    found += [f"check {c['check']} failed: {c['value']}" for c in summary["checks"]
              if not c["ok"]]
    return found


def _mean(values: list[float | None]) -> float | None:
    real = [v for v in values if v is not None]
    return sum(real) / len(real) if real else None
