"""The named headline figures of a result: what acceptance checks judge and the history keeps.

A figure is one float pulled out of a saved result (never measured here), with a unit and a
direction (is more better or worse?), so thresholds, trends and regressions all read the same
numbers under the same names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from aiio import honesty
from aiio.results.layout import Layout, layout_of, legacy
from aiio.results.result import (
    IoFigures,
    Result,
    RunSummary,
    Spread,
    SweepRow,
    dig,
    model,
    number,
)
from aiio.stats import Histogram
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
        return _count(value)


def _count(value: float) -> str:
    """A figure without a unit: a ratio (CV, Jain) with three decimals; a rate of thousands
    (tokens/s, samples/s) grouped, in whole units; a huge one (a threshold no run meets) in
    exponent form, which fits a table's column."""
    if abs(value) >= 1e12:
        return f"{value:.3g}"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3f}"


def _seconds(s: float) -> str:
    """A time with a unit that keeps three significant digits: 12.3 s, 45.6 ms, 7.00 us."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(s) >= scale or unit == "us":
            v = s / scale
            return f"{v:,.0f} {unit}" if abs(v) >= 100 else f"{v:#.3g} {unit}"
    raise AssertionError("unreachable")


FIGURES = {f.name: f for f in (
    Figure("aggregate_mib_s", "aggregate MiB/s (first done; a checkpoint's: until every "
           "shard is durable)", "MiB/s", HIGHER),
    Figure("last_done_mib_s", "aggregate MiB/s (last done)", "MiB/s", HIGHER),
    Figure("client_mib_s_min", "slowest client MiB/s", "MiB/s", HIGHER),
    Figure("client_mib_s_mean", "mean client MiB/s", "MiB/s", HIGHER),
    Figure("cv", "per-client coefficient of variation", "", LOWER),
    Figure("jain", "Jain fairness index", "", HIGHER),
    Figure("au_min", "AU of the least busy client", "%", HIGHER),
    Figure("au_mean", "mean AU", "%", HIGHER),
    Figure("samples_per_s", "samples/s", "", HIGHER),
    Figure("p99_ms", "p99 latency", "ms", LOWER),
    # a vector search's headline: its queries', each query many dependent node reads
    Figure("query_p99_ms", "query p99 latency (pooled over clients)", "ms", LOWER),
    Figure("queries_per_s", "queries/s (done in the duration)", "", HIGHER),
    # a KV-cache run's: tokens served, and the storage part of each request's time to first
    # token (its blocks read and written), as the phase's console and report show them
    Figure("tokens_per_s", "tokens/s served (done in the duration)", "", HIGHER),
    Figure("storage_p95_ms", "request storage time p95 (pooled over clients)", "ms", LOWER),
    # what the latency goals judge: the storage time plus the wait in the client's queue
    Figure("request_p95_ms", "request latency p95 (pooled over clients)", "ms", LOWER),
    Figure("checkpoint_s", "checkpoint time (slowest client, worst checkpoint)", "s", LOWER),
    Figure("restore_s", "checkpoint restore time (slowest client, worst)", "s", LOWER),
    Figure("load_s", "model load time (until the last replica is ready)", "s", LOWER),
    Figure("hero_fraction", "fraction of the fio hero number", "%", HIGHER),
    Figure("scaling_efficiency", "scaling efficiency at the largest count", "%", HIGHER),
    Figure("scaling_efficiency_min", "lowest scaling efficiency of the sweep", "%", HIGHER),
)}


# The headline aggregate of a phase judged on another window than first done, in its words.
HEADLINE_LABELS = {"persist": "write MiB/s (every shard durable)"}


def label(name: str, phase: str | Layout | Mapping[str, Any] | None = None) -> str:
    """A figure's label; the headline aggregate's as `phase` judges it (a lifecycle run: its
    headline stage's): a result (its own layout), a phase's layout, or a phase's name (the
    layout results of that phase were saved with before /3, else the defaults)."""
    if name == "aggregate_mib_s" and phase:
        judged = phase if isinstance(phase, Layout) else layout_of(phase) \
            if isinstance(phase, Mapping) else legacy(phase)
        if judged.headline_stage:
            judged = judged.stage(judged.headline_stage)
        return HEADLINE_LABELS.get(judged.judged_on, "aggregate MiB/s (first done)")
    return FIGURES[name].label


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


def _judged(run: Result) -> tuple[Layout, str]:
    """The layout whose figures are the headline, and the prefix of its sections' names: a
    lifecycle run's headline is its train stage's ('train.')."""
    layout = layout_of(run)
    if layout.headline_stage:
        return layout.stage(layout.headline_stage), f"{layout.headline_stage}."
    return layout, ""


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
    first, last = _aggregates(run, section)
    out: dict[str, float | None] = {
        "aggregate_mib_s": first,
        "last_done_mib_s": last,
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
        "query_p99_ms": _query_p99(run),
        "queries_per_s": run.vector.queries_per_s if run.vector else None,
        "tokens_per_s": run.kvcache.tokens_per_s if run.kvcache else None,
        "storage_p95_ms": run.kvcache.storage_time.pooled.p95_ms if run.kvcache else None,
        "request_p95_ms": run.kvcache.latency.pooled.p95_ms if run.kvcache else None,
    }
    op = _latency_op(section, run, latency_op)
    if op is not None:
        p99 = section.p(op) if section else None
        out["p99_ms"] = p99 / 1e6 if p99 is not None else None
    return {k: v for k, v in out.items() if v is not None}


def _query_p99(run: Result) -> float | None:
    """A vector search's p99 query latency, every client's queries in one histogram."""
    v = run.vector
    return v.latency_ms.p99 if v is not None else None


def _aggregates(run: Result, section: IoFigures | None) -> tuple[float | None, float | None]:
    """(headline, last done) MiB/s of a run. A checkpoint's are both its write rate until
    every shard is durable (checkpoint bytes over the summed times to persist, as the console,
    the sweep and the fio pairing read it): a checkpoint is of use only once every shard is,
    and the durable bytes at the fastest client's end (first done) are a step function of
    the order in which the clients' fsyncs return."""
    if _judged(run)[0].judged_on == "persist":
        rate = run.checkpoint.write_mib_s if run.checkpoint and section else None
        return rate, rate
    if section is None:
        return None, None
    return (section.first_done.mib_s if section.first_done else None,
            section.last_done.mib_s if section.last_done else None)


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
    table = model(sweep).table
    if table and table[-1].repeats > 1:
        kept = _means_over_repeats(table[-1])
        out.update(kept)
        out.update(_rest_over_repeats(sweep, top, latency_op, kept))
    efficiency = [row.efficiency for row in table if row.efficiency is not None]
    if len(efficiency) > 1:  # the first count is the baseline, 1.0 by definition
        out["scaling_efficiency"] = float(efficiency[-1])
        out["scaling_efficiency_min"] = float(min(efficiency[1:]))
    return out


def _means_over_repeats(row: SweepRow) -> dict[str, float]:
    """The largest count's figures as the sweep's table shows them and its verdict judges
    them, over its repeats (the aggregates' and spreads' means, the lowest client and AU of
    any repeat), not those of its last repeat alone."""
    pc, au = row.per_client_mib_s, row.au
    out = {"aggregate_mib_s": row.aggregate_mib_s, "last_done_mib_s": row.last_done_mib_s,
           "client_mib_s_min": pc.min if pc else None,
           "client_mib_s_mean": pc.mean if pc else None, "cv": pc.cv if pc else None,
           "jain": row.jain, "au_min": au.min if au else None,
           "au_mean": au.mean if au else None}
    return {k: v for k, v in out.items() if v is not None}


def _rest_over_repeats(sweep: Mapping[str, Any], top: Mapping[str, Any],
                       latency_op: str | None, kept: Mapping[str, float]) -> dict[str, float]:
    """Every other figure of the largest count over its repeats, not its last repeat's
    alone: each run's own figure (samples/s, a checkpoint's or a load's time, the fraction
    of hero, queries/s, tokens/s, the served latencies) as the mean over the repeats that
    hold it, as the table shows a phase's own figures; the p99 from every repeat's
    latencies in one histogram, as the table's latency pools them. `kept`: the figures
    the table's row already gave (`_means_over_repeats`)."""
    clients = next(p["clients"] for p in sweep["points"] if p.get("result") is top)
    runs = [p["result"] for p in sweep["points"]
            if isinstance(dig(p, "result"), Mapping) and p.get("clients") == clients]
    each = [run_figures(r, latency_op) for r in runs]
    out = {name: sum(f[name] for f in each) / len(each) for name in each[-1]
           if name not in kept and all(name in f for f in each)}
    pooled = _pooled_p99(runs, latency_op)
    if pooled is not None:
        out["p99_ms"] = pooled
    return out


def _pooled_p99(runs: list[Mapping[str, Any]], latency_op: str | None) -> float | None:
    """The p99 in ms of the runs' headline sections' latencies of the p99's operation, in
    one histogram; None when a run kept no histogram of it (a result saved without)."""
    merged = Histogram()
    for res in runs:
        run = model(res)
        section = headline(run)[0]
        op = _latency_op(section, run, latency_op)
        hist = section.histograms.get(op) if section is not None and op else None
        if not isinstance(hist, Mapping):
            return None
        merged.merge(Histogram.from_dict(hist))
    return merged.percentile(99) / 1e6 if merged.count else None


# Whether a run measured anything, and what a cache could have served: read off the model,
# so they live here, above the phases, and the runner asks (aiio.honesty stays below them).

def unique_bytes(res: dict[str, Any], dataset_bytes: int) -> int:
    """The distinct bytes a run's reads could be served from, each once, as a cache would
    hold them: the dataset (read every epoch, by every stage that reads it), the model
    weights (however many replicas load them), the checkpoints kept when they are restored,
    a random mix's files (one per client, revisited all run long)."""
    run = model(res)
    total = dataset_bytes
    load = run.model_load
    if load is not None and load.weights.total_bytes:
        total += load.weights.total_bytes
    ckpt = run.checkpoint
    # checkpoints never read back (training's) are no source of reads a cache could serve
    if ckpt is not None and ckpt.read_mib_s is not None and ckpt.plan is not None \
            and ckpt.plan.total_bytes:
        kept = min(ckpt.plan.keep or 1, max(ckpt.completed, 1))
        total += ckpt.plan.total_bytes * kept
    return total + sum(_mix_files(part) for part in (run, *map(run.stage, run.stages)))


def _mix_files(run: Result) -> int:
    """A random mix's files: one of `file_size` per client (randrw, or prep in its mode)."""
    size = run.summary.file_size
    return size * len(run.clients) if size else 0


def nothing_measured(res: dict[str, Any]) -> dict[str, str] | None:
    """A run whose headline (the figure history, acceptance and sweeps take: first done of
    the section `figures.headline` picks) rests on no byte measured nothing: 0 MiB/s there is
    the run's length or size, not the storage's rate. Only phases that move data are judged
    so; a phase of metadata alone (main operation stat) moves no bytes by design."""
    if layout_of(res).main_op not in ("read", "write"):
        return None
    if (res.get("aggregate") or {}).get("reads_by"):  # a library's reads (the vector phase's
        return None  # --reader native): aiio times its queries, not its read calls
    rate = run_figures(res).get("aggregate_mib_s")
    if rate is None or rate > 0:
        return None
    section = headline(res)[0]
    window = section.first_done if section is not None else None
    where = f"{section.name}, first done" if section is not None else "its headline"
    took = f" over {honesty.format_seconds(window.seconds)}" if window is not None else ""
    return {"code": "nothing_measured", "message": (
        f"nothing measured: no byte moved in the headline's window "
              f"({where}{took}), so its 0 MiB/s is no figure of the storage; give the run "
              "more time (--duration) or more data (larger sizes) so every client moves some")}
