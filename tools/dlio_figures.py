"""The pure half of the DLIO side-by-side (tools/dlio_side.py): the truth a read limit gives,
DLIO's own output read back, the answer "accelerators supported" and the printed table.

DLIO 2.0.0 writes `summary.json` (AU in percent, mean over epochs of the mean over ranks;
samples/s; "MB/s" = samples/s x record length / 2^20, not measured) and
`per_epoch_stats.json` (each checkpoint's start and end on rank 0, ISO times)."""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

MiB = 2**20


def demand_mib_s(batch: int, compute_s: float, record_bytes: int) -> float:
    """What one accelerator reads at 100 % AU: a batch of records every compute time."""
    return batch / compute_s * record_bytes / MiB


def truth_supported(limit_mib_s: float, demand: float, au_floor: float) -> int:
    """The most accelerators a read limit carries at the AU floor: N x demand x floor <= limit
    (a tiny epsilon so that an exact fit, 40 / (0.8 x 10) = 5, is not lost to rounding)."""
    return math.floor(limit_mib_s / (demand * au_floor) + 1e-9)


def truth_au(count: int, limit_mib_s: float, demand: float) -> float:
    """The AU a count gets when the limit is all that holds it back."""
    return min(1.0, limit_mib_s / (count * demand))


@dataclass
class Sample:
    """One run of one tool at one accelerator count."""
    tool: str
    count: int
    au: float             # 0..1
    samples_s: float
    mib_s: float          # the tool's own figure
    device_mib: float     # MiB read off the device in the whole run (aiio: warm-up too)
    peak_mem_mib: float   # PSS summed over every process of the tool
    first_io_s: float     # launch to the first byte read off the device


def dlio_training(summary_path: Path) -> dict[str, float]:
    """AU (0..1), samples/s and DLIO's "MB/s" from its summary.json."""
    metric = json.loads(Path(summary_path).read_text())["metric"]
    return {"au": metric["train_au_mean_percentage"] / 100,
            "samples_s": metric["train_throughput_mean_samples_per_second"],
            "mib_s": metric["train_io_mean_MB_per_second"]}


def dlio_checkpoint_seconds(stats_path: Path) -> list[float]:
    """Each checkpoint's duration on rank 0, in order, from per_epoch_stats.json."""
    stats = json.loads(Path(stats_path).read_text())
    out: list[float] = []
    for epoch in sorted(stats, key=int):
        blocks = [k for k in stats[epoch] if k.startswith("ckpt")]
        for block in sorted(blocks, key=lambda k: int(k[4:])):
            ck = stats[epoch][block]
            out.append((_iso(ck["end"]) - _iso(ck["start"])).total_seconds())
    return out


def _iso(text: str) -> datetime:
    return datetime.fromisoformat(text)


def rates(total_bytes_each: float, seconds: list[float]) -> tuple[float, float]:
    """(MLPerf's mean of per-checkpoint rates, bytes over summed time) in MiB/s."""
    mean_of_rates = statistics.fmean(total_bytes_each / s for s in seconds) / MiB
    over_time = total_bytes_each * len(seconds) / sum(seconds) / MiB
    return mean_of_rates, over_time


def supported(samples: list[Sample], tool: str, au_floor: float) -> int:
    """Largest count whose mean AU over its repeats is at the floor (0 if none)."""
    held = [c for c, au in mean_au(samples, tool).items() if au >= au_floor]
    return max(held, default=0)


def mean_au(samples: list[Sample], tool: str) -> dict[int, float]:
    counts = sorted({s.count for s in samples if s.tool == tool})
    return {c: statistics.fmean(s.au for s in samples if s.tool == tool and s.count == c)
            for c in counts}


def _spread(values: list[float], fmt: str) -> str:
    """mean (min-max) of the repeats."""
    mean = format(statistics.fmean(values), fmt)
    if len(values) == 1:
        return mean
    return f"{mean} ({format(min(values), fmt)}-{format(max(values), fmt)})"


def training_table(samples: list[Sample], limit: float, demand: float,
                   au_floor: float) -> list[str]:
    """One line per count and tool (mean and range of the repeats), then the answers."""
    head = (f"{'N':>2} {'tool':<5} {'truth AU':>8} {'AU %':>20} {'samples/s':>20} "
            f"{'tool MiB/s':>20} {'device MiB':>10} {'peak MiB':>10} {'1st I/O s':>9}")
    lines = [head]
    for count in sorted({s.count for s in samples}):
        for tool in ("dlio", "aiio"):
            runs = [s for s in samples if s.tool == tool and s.count == count]
            if not runs:
                continue
            lines.append(
                f"{count:>2} {tool:<5} {truth_au(count, limit, demand):>8.1%} "
                f"{_spread([100 * r.au for r in runs], '.1f'):>20} "
                f"{_spread([r.samples_s for r in runs], '.1f'):>20} "
                f"{_spread([r.mib_s for r in runs], '.1f'):>20} "
                f"{statistics.fmean(r.device_mib for r in runs):>10.0f} "
                f"{max(r.peak_mem_mib for r in runs):>10.0f} "
                f"{statistics.fmean(r.first_io_s for r in runs):>9.1f}")
    truth = truth_supported(limit, demand, au_floor)
    counts = ", ".join(str(c) for c in sorted({s.count for s in samples}))
    for tool in ("dlio", "aiio"):
        answer = supported(samples, tool, au_floor) or f"none of {counts}"
        lines.append(f"accelerators supported, {tool}: {answer} "
                     f"(truth {truth} = floor({limit:g} / ({au_floor:g} x {demand:g})))")
    return lines
