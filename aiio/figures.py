"""The named headline figures of a result: what acceptance checks judge and the history keeps.

A figure is one float pulled out of a saved result (never measured here), with a unit and a
direction (is more better or worse?), so thresholds, trends and regressions all read the same
numbers under the same names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiio.phases import REGISTRY, phase_of
from aiio.units import format_rate

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



def _dig(data: Any, path: tuple[str, ...]) -> float | None:
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return float(data) if isinstance(data, (int, float)) and not isinstance(data, bool) else None


def _worst_burst(agg: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint write burst that took longest: the one the stall figure comes from."""
    bursts = [c["write"] for c in agg.get("checkpoints") or [] if isinstance(c.get("write"), dict)]
    return max(bursts, key=lambda b: b.get("last_done_s", 0.0), default={})


def views(res: dict[str, Any]) -> tuple[dict, dict | None, dict | None]:
    """Where a result keeps its figures: (the I/O aggregate bandwidth, fairness, AU and latency
    are read from, the checkpoint aggregate, the model-load aggregate)."""
    agg = res.get("aggregate") or {}
    phase = res.get("phase")
    if phase == "all":  # one aggregate per stage
        train = agg.get("train") or {}
        return train, train.get("checkpoint"), agg.get("load")
    if phase == "checkpoint":
        return _worst_burst(agg), agg, None
    if phase == "load":
        return agg, None, agg
    if "first_done" not in agg and isinstance(agg.get("read"), dict):
        return _read_write_view(agg), None, None  # prep, randrw: reads and writes apart
    return agg, agg.get("checkpoint"), None  # train, with checkpoints when it wrote them


def _read_write_view(agg: dict[str, Any]) -> dict[str, Any]:
    """Reads and writes at once (prep, randrw), seen as their sweep judges them: bandwidth is
    read plus write; the per-client spread and fairness are the reads' (every client reads)
    in shards mode, each client's reads plus writes for randrw; latency holds both directions'
    operations."""
    read, write = agg["read"], agg.get("write") or {}
    # randrw keeps each client's reads plus writes beside them
    view = {**read, **{k: agg[k] for k in ("per_client_mib_s", "jain") if k in agg}}
    for window in ("first_done", "last_done"):
        mib_s = [_dig(part, (window, "mib_s")) for part in (read, write)]
        if mib_s[0] is not None:
            view[window] = {**read[window], "mib_s": mib_s[0] + (mib_s[1] or 0.0)}
    view["latency"] = {**(write.get("latency") or {}), **(read.get("latency") or {})}
    return view


def _latency_op(view: dict[str, Any], res: dict[str, Any], op: str | None) -> str | None:
    """The operation the p99 figure is taken from: `op`, else the phase's main operation."""
    latency = view.get("latency") or {}
    if op:
        return op if op in latency else None
    main = phase_of(res).main_op if res.get("phase") in REGISTRY else "read"
    return main if main in latency else next(iter(latency), None)


def run_figures(res: dict[str, Any], latency_op: str | None = None) -> dict[str, float]:
    """Every figure a run result holds; a figure the result lacks is simply absent."""
    view, ckpt, load = views(res)
    out: dict[str, float | None] = {
        "aggregate_mib_s": _dig(view, ("first_done", "mib_s")),
        "last_done_mib_s": _dig(view, ("last_done", "mib_s")),
        "client_mib_s_min": _dig(view, ("per_client_mib_s", "min")),
        "client_mib_s_mean": _dig(view, ("per_client_mib_s", "mean")),
        "cv": _dig(view, ("per_client_mib_s", "cv")),
        "jain": _dig(view, ("jain",)),
        "au_min": _dig(view, ("au_min",)),
        "au_mean": _dig(view, ("au_mean",)),
        "samples_per_s": _dig(view, ("samples_per_s",)),
        # the worst checkpoint: every accelerator waits until the last shard is durable
        "checkpoint_s": _dig(ckpt, ("persist_last_done_s", "max")),
        "restore_s": _dig(ckpt, ("restore_last_done_s", "max")),
        # from the common start until the last replica has every byte: the fleet is serving
        "load_s": _dig(load, ("last_ready_s",)),
        "hero_fraction": _hero_fraction(res),
    }
    op = _latency_op(view, res, latency_op)
    if op is not None:
        p99 = _dig(view, ("latency", op, "p99_ns"))
        out["p99_ms"] = p99 / 1e6 if p99 is not None else None
    return {k: v for k, v in out.items() if v is not None}


def _hero_fraction(res: dict[str, Any]) -> float | None:
    """The run's headline as a fraction of the fio hero number (a lifecycle run: its train
    stage's)."""
    hero = res.get("hero") or {}
    if res.get("phase") == "all":
        hero = (hero.get("stages") or {}).get("train") or {}
    percent = _dig(hero, ("percent",))
    return percent / 100.0 if percent is not None else None


def sweep_figures(sweep: dict[str, Any], latency_op: str | None = None) -> dict[str, float]:
    """A sweep's figures: those of its run at the largest client count (the headline), plus
    scaling efficiency at that count and the lowest over the sweep."""
    points = sweep.get("points") or []
    if not points:
        return {}
    top = max(points, key=lambda p: (p["clients"], p.get("repeat", 0)))["result"]
    out = run_figures(top, latency_op)
    efficiency = [row["efficiency"] for row in sweep.get("table") or [] if "efficiency" in row]
    if len(efficiency) > 1:  # the first count is the baseline, 1.0 by definition
        out["scaling_efficiency"] = float(efficiency[-1])
        out["scaling_efficiency_min"] = float(min(efficiency[1:]))
    return out
