"""The named headline figures of a result: what acceptance checks judge and the history keeps.

A figure is one float pulled out of a saved result (never measured here), with a unit and a
direction (is more better or worse?), so thresholds, trends and regressions all read the same
numbers under the same names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from aiio.phases import get_phase, layout_of
from aiio.result import IoFigures, Result, RunSummary, Spread, dig, model, number
from aiio.units import format_rate

if TYPE_CHECKING:
    from aiio.phases.base import Phase

HIGHER, LOWER = "higher", "lower"


@dataclass(frozen=True)
class Figure:
    name: str
    label: str
    unit: str       # "MiB/s", "s", "ms", "%" (a 0..1 fraction shown as a percentage), ""
    better: str     # HIGHER or LOWER

    def format(self, value: float) -> str:
        """The value with its unit, as tables and failure messages show it."""
        if self.unit == "%":
            return f"{value:.1%}"
        if self.unit == "MiB/s":
            return format_rate(value)
        if self.unit in ("s", "ms"):
            return _seconds(value if self.unit == "s" else value / 1e3)
        return f"{value:.3f}"


def _seconds(s: float) -> str:
    """A time with a unit that keeps three significant digits: 12.3 s, 45.6 ms, 7.00 us."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(s) >= scale or unit == "us":
            v = s / scale
            return f"{v:,.0f} {unit}" if abs(v) >= 100 else f"{v:#.3g} {unit}"
    raise AssertionError("unreachable")


FIGURES = {f.name: f for f in (
    Figure("aggregate_mib_s", "aggregate MiB/s (first done)", "MiB/s", HIGHER),
    Figure("last_done_mib_s", "aggregate MiB/s (last done)", "MiB/s", HIGHER),
    Figure("client_mib_s_min", "slowest client MiB/s", "MiB/s", HIGHER),
    Figure("client_mib_s_mean", "mean client MiB/s", "MiB/s", HIGHER),
    Figure("cv", "per-client coefficient of variation", "", LOWER),
    Figure("jain", "Jain fairness index", "", HIGHER),
    Figure("au_min", "AU of the least busy client", "%", HIGHER),
    Figure("au_mean", "mean AU", "%", HIGHER),
    Figure("samples_per_s", "samples/s", "", HIGHER),
    Figure("p99_ms", "p99 latency", "ms", LOWER),
    Figure("checkpoint_s", "checkpoint time (slowest client, worst checkpoint)", "s", LOWER),
    Figure("restore_s", "checkpoint restore time (slowest client, worst)", "s", LOWER),
    Figure("load_s", "model load time (until the last replica is ready)", "s", LOWER),
    Figure("hero_fraction", "fraction of the fio hero number", "%", HIGHER),
    Figure("scaling_efficiency", "scaling efficiency at the largest count", "%", HIGHER),
    Figure("scaling_efficiency_min", "lowest scaling efficiency of the sweep", "%", HIGHER),
)}



def headline(res: Mapping[str, Any]) -> tuple[IoFigures | None, IoFigures | RunSummary]:
    """The I/O section a run's headline figures come from, and the figures recorded beside it
    (AU, samples/s): the first section the phase declares (the reads of training, model
    loading and any phase with the common aggregate), a lifecycle run's training reads, a
    checkpoint run's slowest write burst; prep and randrw have no single stream (their
    aggregate only)."""
    run = res if isinstance(res, Result) else model(res)
    phase, stage = _judged(run)
    if phase.judged_on == "read_plus_write":  # two streams, judged as one
        read = run.section(f"{stage}read")
        if read is None:
            return None, run.summary
        both = _read_write(run.summary.top, read, run.section(f"{stage}write"))
        return both, both
    if phase.judged_on == "persist":
        bursts = [s for s in run.sections(f"{stage}checkpoint.") if s.name.endswith(".write")]
        worst = max(bursts, key=lambda b: b.last_done_s or 0.0, default=None)
        return worst, worst if worst else IoFigures.of("none", (), {})
    section = run.first(stage)
    return section, section if section else run.summary


def _judged(run: Result) -> tuple[Phase, str]:
    """The phase whose figures are the headline, and the prefix of its sections' names: a
    lifecycle run's headline is its train stage's ('train.')."""
    phase = layout_of(run)
    if phase.headline_stage:
        return get_phase(phase.headline_stage), f"{phase.headline_stage}."
    return phase, ""


def _read_write(top: IoFigures, read: IoFigures, write: IoFigures | None) -> IoFigures:
    """Reads and writes at once (prep, randrw), seen as their sweep judges them: bandwidth is
    read plus write; the per-client spread and fairness are the reads' (every client reads)
    in shards mode, each client's reads plus writes for randrw (beside them at the top of its
    aggregate); latency holds both directions' operations."""
    windows = {}
    for window in ("first_done", "last_done"):
        got, also = getattr(read, window), getattr(write, window, None)
        if got is not None:
            windows[window] = replace(got, mib_s=got.mib_s + (also.mib_s if also else 0.0))
    last = windows.get("last_done")
    return replace(read, name="read+write", path=top.path, **windows,
                   mib_s=last.mib_s if last else read.mib_s,
                   per_client_mib_s=top.per_client_mib_s or read.per_client_mib_s,
                   jain=top.jain if top.jain is not None else read.jain,
                   latency={**(write.latency if write else {}), **read.latency})


def _latency_op(section: IoFigures | None, run: Result, op: str | None) -> str | None:
    """The operation the p99 figure is taken from: `op`, else the phase's main operation."""
    latency = section.latency if section else {}
    if op:
        return op if op in latency else None
    return run.main_op if run.main_op in latency else next(iter(latency), None)


def run_figures(res: Mapping[str, Any], latency_op: str | None = None) -> dict[str, float]:
    """Every figure a run result holds; a figure the result lacks is simply absent."""
    run = res if isinstance(res, Result) else model(res)
    section, beside = headline(run)
    ckpt, load = run.checkpoint, run.model_load
    spread = section.per_client_mib_s if section else None
    au = beside.au
    out: dict[str, float | None] = {
        "aggregate_mib_s": section.first_done.mib_s if section and section.first_done else None,
        "last_done_mib_s": section.last_done.mib_s if section and section.last_done else None,
        "client_mib_s_min": spread.min if spread else None,
        "client_mib_s_mean": spread.mean if spread else None,
        "cv": spread.cv if spread else None,
        "jain": section.jain if section else None,
        "au_min": au.min if au else None,
        "au_mean": au.mean if au else None,
        "samples_per_s": beside.samples_per_s,
        # the worst checkpoint: every accelerator waits until the last shard is durable
        "checkpoint_s": _max(ckpt.persist_last_done_s) if ckpt else None,
        "restore_s": _max(ckpt.restore_last_done_s) if ckpt else None,
        # from the common start until the last replica has every byte: the fleet is serving
        "load_s": load.last_ready_s if load else None,
        "hero_fraction": _hero_fraction(res),
    }
    op = _latency_op(section, run, latency_op)
    if op is not None:
        p99 = section.p(op) if section else None
        out["p99_ms"] = p99 / 1e6 if p99 is not None else None
    return {k: v for k, v in out.items() if v is not None}


def _max(spread: Spread | None) -> float | None:
    return spread.max if spread else None


def _hero_fraction(res: dict[str, Any]) -> float | None:
    """The run's headline as a fraction of the fio hero number (a lifecycle run: its train
    stage's)."""
    hero = res.get("hero") or {}
    stage = layout_of(res).headline_stage
    if stage:
        hero = (hero.get("stages") or {}).get(stage) or {}
    percent = number(dig(hero, "percent"))
    return percent / 100.0 if percent is not None else None


def top_result(sweep: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The run of a sweep's largest client count (its last repeat), the sweep's headline."""
    points = [p for p in sweep.get("points") or () if isinstance(dig(p, "result"), Mapping)
              and number(dig(p, "clients")) is not None]  # a damaged point counts as missing
    if not points:
        return None
    return max(points, key=lambda p: (p["clients"], number(p.get("repeat")) or 0))["result"]


def sweep_figures(sweep: dict[str, Any], latency_op: str | None = None) -> dict[str, float]:
    """A sweep's figures: those of its run at the largest client count (the headline), plus
    scaling efficiency at that count and the lowest over the sweep."""
    top = top_result(sweep)
    if top is None:
        return {}
    out = run_figures(top, latency_op)
    efficiency = [row.efficiency for row in model(sweep).table if row.efficiency is not None]
    if len(efficiency) > 1:  # the first count is the baseline, 1.0 by definition
        out["scaling_efficiency"] = float(efficiency[-1])
        out["scaling_efficiency_min"] = float(min(efficiency[1:]))
    return out
