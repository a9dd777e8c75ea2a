"""Every chart aiio draws, with one look and one matplotlib setup: the report's charts as
inline SVG, and a sweep's chart files (PNG and SVG) written beside its result.

matplotlib is used through its object API (no pyplot, no global backend) and imported inside
the functions that draw, so nothing else in aiio pays for it. Text stays text in an SVG
(searchable, small); every axis names its unit.

A sweep's files:
aggregate:  aggregate MiB/s (the judged figure, with the repeats' range) against clients on log-log
            axes, beside the ideal linear line through the baseline (slope 1: straight) and the
            threshold share of it; below, E(N) per count against the threshold.
per_client: per-client MiB/s (mean, with the slowest and fastest client) against clients, and
            for training a second panel with AU (mean and lowest client) and the AU goal.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import functools
import inspect
import io
import itertools
import math
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from aiio.results.layout import layout_of
from aiio.results.markup import Html, esc, tag
from aiio.results.result import SweepRow, model
from aiio.units import format_latency_ns, format_rate

WIDTH_IN, HEIGHT_IN = 6.4, 3.3
MAX_LABELS = 12       # client counts labelled on an axis at most (more would overlap)
MANY_LINES = 8        # beyond this many clients, lines go grey and only the extremes get colour
BLUE, RED, GREEN, ORANGE = "#0969da", "#cf222e", "#1a7f37", "#d4a72c"
GREY, LIGHT_GREY, GRID = "#57606a", "#9aa4ae", "#e3e6ea"
_ids = itertools.count(1)


# Whether the page's charts are drawn: off for `aiio report --no-charts`, which keeps every
# table and names each chart where it would be (the charts are most of a page's time).
_drawn = contextvars.ContextVar("aiio_charts_drawn", default=True)
LEFT_OUT = "chart not drawn (--no-charts)"


@contextlib.contextmanager
def left_out() -> Iterator[None]:
    """Inside: every page chart is its caption alone, marked as not drawn."""
    token = _drawn.set(False)
    try:
        yield
    finally:
        _drawn.reset(token)


def _page_chart(draw: Callable[..., Html]) -> Callable[..., Html]:
    """A chart of the page: drawn, or (inside `left_out`) its caption and a note in its place."""
    signature = inspect.signature(draw)

    @functools.wraps(draw)
    def chart(*args: Any, **kwargs: Any) -> Html:
        if _drawn.get():
            return draw(*args, **kwargs)
        caption = signature.bind(*args, **kwargs).arguments.get("caption", "")
        return tag("figure", tag("figcaption", f"{caption} [{LEFT_OUT}]"))
    return chart


def _style(ax: Any) -> None:
    """The look every axes shares: a light grid behind the data, no top or right frame."""
    ax.grid(True, color=GRID, linewidth=0.6)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _new(width: float = WIDTH_IN, height: float = HEIGHT_IN) -> tuple[Any, Any]:
    """A figure with one axes, not attached to any GUI or global state."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    # Fixed margins sized for these labels: automatic layout triples the drawing time.
    fig.subplots_adjust(left=0.75 / width, right=1 - 0.15 / width, bottom=0.55 / height,
                        top=1 - 0.3 / height)
    ax = fig.add_subplot()
    _style(ax)
    return fig, ax


def to_svg(fig: Any, caption: str, alt: str | None = None) -> Html:
    """The figure as an inline <svg> in a <figure> with a caption."""
    from matplotlib import rc_context

    buf = io.StringIO()
    # A salt per chart keeps the ids of clip paths unique when many SVGs share one page.
    salt = f"aiio-chart-{next(_ids)}"
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": salt}):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    text = text.replace("<svg ", f'<svg role="img" aria-label="{esc(alt or caption)}" ', 1)
    return tag("figure", Html(text) + tag("figcaption", caption))


@_page_chart
def time_lines(lines: Sequence[tuple[str, Sequence[float], Sequence[float]]], *, title: str,
               ylabel: str, caption: str, xlabel: str = "time since the common start (s)",
               marks: Sequence[tuple[float, str]] = (), highlight: Sequence[str] = (),
               steps: bool = False) -> Html:
    """One line per (label, x, y); many lines are drawn grey with the highlighted ones coloured.
    With steps, x holds interval edges (one more than y) and each rate is held over its
    interval, as it was measured."""
    fig, ax = _new()
    many = len(lines) > MANY_LINES
    for label, xs, ys in lines:
        grey = many and label not in highlight
        style = {"color": LIGHT_GREY, "linewidth": 0.7, "alpha": 0.7} if grey else \
            {"linewidth": 1.6, "label": label}
        if steps:
            ax.stairs(ys, xs, baseline=None, **style)
        else:
            ax.plot(xs, ys, marker=None if grey or len(xs) > 12 else "o", markersize=3,
                    **style)
    _marks(ax, marks)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="lower left", ncols=min(4, len(lines)))
    return to_svg(fig, caption)


def _marks(ax: Any, marks: Sequence[tuple[float, str]]) -> None:
    """Dashed vertical lines at events; labels of events too close to read apart are joined."""
    span = max((x for x, _ in marks), default=0) or 1.0
    merged: list[tuple[float, str]] = []
    for x, label in sorted(marks):
        if merged and x - merged[-1][0] < 0.04 * span:
            merged[-1] = (merged[-1][0], f"{merged[-1][1]} / {label}")
        else:
            merged.append((x, label))
    for x, _ in marks:
        ax.axvline(x, color=RED, linestyle="--", linewidth=1)
    for x, label in merged:
        ax.annotate(label, (x, 1), xycoords=("data", "axes fraction"), fontsize=8,
                    color=RED, ha="right", va="top", rotation=90)


@_page_chart
def latency_histogram(op: str, bins: Sequence[tuple[float, float, int]],
                      percentiles: dict[str, float], caption: str) -> Html:
    """Operations per latency bin on a log latency axis in ns, every tick labelled with its
    unit (ns, us, ms, s), with percentiles marked."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    fig, ax = _new()
    ax.bar([low for low, _, _ in bins], [n for _, _, n in bins],
           width=[high - low for low, high, _ in bins], align="edge",
           color=BLUE, edgecolor="white", linewidth=0.4)
    ax.set_xscale("log")
    # Whole decades at both ends, so even a narrow spread of latencies has labelled ticks.
    lo, hi = min(low for low, _, _ in bins), max(high for _, high, _ in bins)
    ax.set_xlim(10 ** math.floor(math.log10(max(lo, 1.0))), 10 ** math.ceil(math.log10(hi)))
    ax.xaxis.set_major_locator(LogLocator(base=10))
    # Plain labels with units instead of 10^k: readable, and mathtext is slow to lay out.
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _latency_tick(v)))
    ax.minorticks_off()  # unlabelled minor ticks cost more to draw than they tell
    styles = iter(("--", ":", "-."))
    for name, value in percentiles.items():
        if value and value > 0:
            ax.axvline(value, color=RED, linestyle=next(styles, "--"), linewidth=1,
                       label=f"{name} {format_latency_ns(value)}")
    ax.set(title=f"{op} latency", xlabel=f"latency per {op} call (log scale)",
           ylabel="operations per bin")
    ax.legend(fontsize=8)
    return to_svg(fig, caption)


def _latency_tick(ns: float) -> str:
    """'10 us', '1 ms': tick labels without the trailing zeros of format_latency_ns."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:g} {unit}"
    return f"{ns:g} ns"


@_page_chart
def bars(labels: Sequence[str], values: Sequence[float], *, title: str, ylabel: str,
         caption: str, xlabel: str, goal: float | None = None, goal_label: str = "",
         percent: bool = False, log: bool = False) -> Html:
    """Vertical bars, bars under the goal in red; the goal as a dashed line. With log, the
    value axis is logarithmic (for ratios that span orders of magnitude)."""
    from matplotlib.ticker import FuncFormatter

    fig, ax = _new()
    k = 100.0 if percent else 1.0
    colours = [RED if goal is not None and v < goal else GREEN for v in values]
    ax.bar(range(len(values)), [v * k for v in values], color=colours)
    if len(labels) <= 32:
        long = sum(len(x) + 2 for x in labels) > 60  # labels that would run into each other
        ax.set_xticks(range(len(labels)), labels, fontsize=8, rotation=30 if long else 0,
                      ha="right" if long else "center")
        if long:  # room for the slanted labels
            longest = max(len(x) for x in labels)
            fig.set_figheight(HEIGHT_IN + min(longest, 40) * 0.045)
            fig.subplots_adjust(bottom=(0.55 + min(longest, 40) * 0.045) / fig.get_figheight(),
                                left=max(0.75, min(longest, 40) * 0.04) / WIDTH_IN)
    if goal is not None:
        ax.axhline(goal * k, color=GREY, linestyle="--", linewidth=1)
        ax.annotate(goal_label, (0, goal * k), xycoords=("axes fraction", "data"), fontsize=8,
                    color="#1b1f24", va="bottom", xytext=(3, 2), textcoords="offset points",
                    zorder=5, bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8,
                                    "pad": 1})
    top = max([v * k for v in values] + [goal * k if goal is not None else 0])
    if log:
        ax.set_yscale("log")
        low = min([v * k for v in values if v > 0] + [goal * k if goal else top])
        ax.set_ylim(low / 2, top * 2)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,g}"))
        ax.minorticks_off()
    else:
        ax.set_ylim(0, max(top * 1.08, 100.0 if percent else 0.0) or 1.0)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    return to_svg(fig, caption)


@_page_chart
def scaling(clients: Sequence[int], lines: Sequence[tuple[str, Sequence[float], str]], *,
            title: str, ylabel: str, caption: str,
            band: tuple[Sequence[float], Sequence[float], str] | None = None,
            loglog: bool = False) -> Html:
    """Figures against client count; style '--' draws a reference line (ideal, goal). With
    loglog both axes are logarithmic, so proportional growth (linear scaling) is a straight
    line of slope 1; otherwise the value axis is linear from zero (for flat ideals)."""
    fig, ax = _new()
    if band is not None:
        lo, hi, label = band
        ax.fill_between(clients, lo, hi, color=BLUE, alpha=0.15, label=label)
    for label, ys, style in lines:
        # a log axis has no zero: a missing (0) value is left out, not drawn at the bottom
        pts = [(c, y) for c, y in zip(clients, ys, strict=True) if y > 0 or not loglog]
        xs, ys = [c for c, _ in pts], [y for _, y in pts]
        if style == "--":
            ax.plot(xs, ys, linestyle="--", color=GREY, linewidth=1.2, label=label)
        else:
            ax.plot(xs, ys, marker="o", linewidth=1.8, label=label)
    _client_axis(ax, clients)
    ax.set(title=title, ylabel=ylabel,
           xlabel=f"clients (emulated accelerators, log scale{', both axes' if loglog else ''})")
    values = [y for _, ys, _ in lines for y in ys] + (list(band[1]) if band else [])
    if loglog:
        log_values(ax, [v for v in values if v > 0])
    else:
        ax.set_ylim(0, max(values, default=0) * 1.12 or 1.0)  # room for the legend
    ax.legend(fontsize=8)
    return to_svg(fig, caption)


def _client_axis(ax: Any, clients: Sequence[int]) -> None:
    ax.set_xscale("log", base=2)
    client_ticks(ax, clients)
    ax.minorticks_off()


def count_labels(counts: Sequence[int], log: bool) -> list[str]:
    """A label per client count, blank where it would crowd the one before it (closer than
    1/MAX_LABELS of the axis, on a log-2 axis or between evenly spaced bars); the first and
    last count are always labelled, so a sweep of 1..64 stays readable."""
    if len(counts) < 2:
        return [str(c) for c in counts]
    pos = [math.log2(c) for c in counts] if log else list(range(len(counts)))
    gap = (pos[-1] - pos[0]) / MAX_LABELS
    keep = [0]
    for i in range(1, len(counts)):
        if pos[i] - pos[keep[-1]] >= gap:
            keep.append(i)
    if keep[-1] != len(counts) - 1:
        if len(keep) > 1:
            keep.pop()  # the last count's label wins over its crowding neighbour
        keep.append(len(counts) - 1)
    return [str(c) if i in keep else "" for i, c in enumerate(counts)]


def client_ticks(ax: Any, clients: Sequence[int]) -> None:
    """Ticks and labels at the labelled client counts of a log-2 client axis."""
    shown = [(c, label) for c, label in zip(clients, count_labels(clients, log=True),
                                             strict=True) if label]
    ax.set_xticks([c for c, _ in shown], [label for _, label in shown])


def log_values(ax: Any, values: Sequence[float]) -> None:
    """A log-2 value axis over the values with plain number labels and room for the legend."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    if not values:  # nothing above zero (a sweep that moved no byte): the axis stays linear
        return
    lo, hi = min(values), max(values)
    ax.set_yscale("log", base=2)
    ax.set_ylim(lo / 1.5, hi * 2.5)
    ax.yaxis.set_major_locator(LogLocator(base=2))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.4g}"))
    ax.minorticks_off()


@_page_chart
def efficiency(clients: Sequence[int], values: Sequence[float], threshold: float | None, *,
               caption: str, paced: Sequence[bool] = ()) -> Html:
    """Scaling efficiency E(N) at each client count against its threshold, as bars (red
    below it): a small chart of its own, since a ratio near 1 is lost on a bandwidth axis."""
    fig, ax = _new(height=2.6)
    _efficiency_bars(ax, clients, values, threshold, paced)
    ax.set_title("scaling efficiency E(N) against the threshold")
    return to_svg(fig, caption)


PACED = "paced by compute: not the storage's"


def _efficiency_bars(ax: Any, clients: Sequence[int], values: Sequence[float | None],
                     threshold: float | None, paced: Sequence[bool] = ()) -> None:
    """E(N) as bars per count (red below the threshold) with the threshold dashed; no bar
    where E(N) is undefined (a baseline that moved nothing). A count whose clients met their
    AU goal (`paced`) is grey: it measured the accelerators' demand, which scales by itself."""
    values = [0.0 if v is None else v for v in values]
    paced = list(paced) + [False] * (len(values) - len(paced))
    colours = [LIGHT_GREY if p else RED if threshold is not None and v < threshold else GREEN
               for v, p in zip(values, paced, strict=True)]
    ax.bar(range(len(values)), [v * 100 for v in values], color=colours, width=0.6)
    ax.set_xticks(range(len(clients)), count_labels(clients, log=False))
    handles = []
    if threshold is not None:
        handles.append(ax.axhline(threshold * 100, color=GREY, linestyle="--", linewidth=1.2,
                                  label=f"threshold {threshold:.0%}"))
    if any(paced):
        from matplotlib.patches import Patch
        handles.append(Patch(color=LIGHT_GREY, label=PACED))
    if handles:
        ax.legend(handles=handles, fontsize=8, loc="lower left")
    ax.set_ylim(0, max([v * 100 for v in values] + [100.0]) * 1.1)
    ax.set(xlabel="clients (emulated accelerators)", ylabel="E(N) (%)")


@_page_chart
def trend(times: Sequence[Any], values: Sequence[float], passed: Sequence[bool | None],
          regression: Sequence[bool], *, title: str, ylabel: str, caption: str,
          failed_at: Sequence[Any] = ()) -> Html:
    """A figure over time: passing runs green, failing red, regressions circled; runs that
    failed with no value (failed_at) as red x on the time axis."""
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

    fig, ax = _new(height=2.8)
    if failed_at:
        ax.scatter(failed_at, [0.04] * len(failed_at), transform=ax.get_xaxis_transform(),
                   color=RED, marker="x", s=40, zorder=3, clip_on=False,
                   label="failed, no value")
    ax.plot(times, values, color=GREY, linewidth=1)
    for cond, colour, label, marker in (
            (lambda p: p is True, GREEN, "pass", "o"),
            (lambda p: p is False, RED, "fail", "X"),
            (lambda p: p is None, GREY, "no verdict", "s")):
        pts = [(t, v) for t, v, p in zip(times, values, passed, strict=True) if cond(p)]
        if pts:
            ax.scatter(*zip(*pts, strict=True), color=colour, marker=marker, s=28, zorder=3,
                       label=label)
    reg = [(t, v) for t, v, r in zip(times, values, regression, strict=True) if r]
    if reg:
        ax.scatter(*zip(*reg, strict=True), s=170, facecolors="none", edgecolors=RED,
                   linewidths=1.8, zorder=4, label="regression")
    every = [*times, *failed_at]
    if len(set(every)) == 1:  # one run: a day around it, not the locator's years
        ax.set_xlim(every[0] - dt.timedelta(hours=12), every[0] + dt.timedelta(hours=12))
    locator = AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))
    ax.set(title=title, xlabel="time of the run (local time)", ylabel=ylabel)
    ax.legend(fontsize=8)
    return to_svg(fig, caption)


@_page_chart
def timeline(rows: Sequence[tuple[str, Sequence[tuple[str, float, float]]]], *, title: str,
             caption: str) -> Html:
    """One row per client; each kind of event in its own colour and lane inside the row."""
    kinds = list(dict.fromkeys(k for _, evs in rows for k, _, _ in evs))
    height = min(HEIGHT_IN + 0.22 * max(len(rows) - 4, 0), 9.0)
    fig, ax = _new(height=height)
    colours = (BLUE, ORANGE, RED, GREEN, "#8250df", GREY)
    lane = 0.8 / max(len(kinds), 1)
    for i, (_, evs) in enumerate(rows):
        for j, kind in enumerate(kinds):
            spans = [(s, max(e - s, 1e-9)) for k, s, e in evs if k == kind]
            if spans:
                ax.broken_barh(spans, (i - 0.4 + j * lane, lane * 0.9),
                               facecolors=colours[j % len(colours)],
                               label=kind if i == _first_row(rows, kind) else None)
    ax.set_yticks(range(len(rows)), [label for label, _ in rows],
                  fontsize=8 if len(rows) <= 16 else 6)
    ax.invert_yaxis()
    ax.set_xlim(left=0)
    ax.set(title=title, xlabel="time since the common start (s)")
    ax.grid(True, axis="x", color=GRID, linewidth=0.6)
    ax.grid(False, axis="y")
    ax.legend(fontsize=8, loc="lower right")
    return to_svg(fig, caption)


def _first_row(rows: Sequence[tuple[str, Sequence[tuple[str, float, float]]]], kind: str) -> int:
    """The first row holding an event of this kind: its bar carries the legend entry."""
    return next(i for i, (_, evs) in enumerate(rows) if any(k == kind for k, _, _ in evs))


# --- a sweep's chart files -------------------------------------------------------------------

FORMATS = ("png", "svg")
# What the plotted aggregate is, by how the phase is judged (Phase.judged_on, sweep.per_point).
JUDGED = {"first_done": "first done", "persist": "write, over the time to persist",
          "read_plus_write": "read + write, first done"}


def draw(sweep: dict[str, Any], folder: Path) -> list[str]:
    """Write aggregate.{png,svg} and per_client.{png,svg}; returns the file names."""
    rows = list(model(sweep).table)
    if not rows:
        return []
    title = _title(sweep)
    names = _save(aggregate_figure(rows, sweep["sweep"]["threshold"], title,
                                   JUDGED[layout_of(sweep).judged_on]), folder,
                  "aggregate")
    names += _save(per_client_figure(rows, title), folder, "per_client")
    return names


def _title(sweep: dict[str, Any]) -> str:
    w, t = sweep["workload"], sweep["target"]
    text = (f"{sweep['phase']} {w['workload']['name']} on {t['path']} ({t['fstype']}, "
            f"{sweep['method']})")
    if sweep["status"] != "ok":
        text += f" — {sweep['status']}, partial"
    return text


def _save(fig: Any, folder: Path, stem: str) -> list[str]:
    names = []
    for fmt in FORMATS:
        name = f"{stem}.{fmt}"
        fig.savefig(folder / name, format=fmt, dpi=120, bbox_inches="tight")
        names.append(name)
    return names


def _clients_panel(ax: Any, counts: list[int],
                   xlabel: str = "clients (emulated accelerators)") -> None:
    """A panel of a chart file against client count, in the shared look."""
    _style(ax)
    _client_axis(ax, counts)
    ax.set_xlabel(xlabel)


def aggregate_figure(rows: Sequence[SweepRow], threshold: float, title: str,
                     judged: str = "first done") -> Any:
    """Measured aggregate (the figure the verdict judges) against the ideal linear line on
    log-log axes, where linear scaling is a straight line of slope 1; below it, E(N) per
    count against the threshold."""
    from matplotlib.figure import Figure

    counts = [r.clients for r in rows]
    agg = [r.aggregate_mib_s for r in rows]
    lo = [r.aggregate_mib_s - r.aggregate_spread.min for r in rows]
    hi = [r.aggregate_spread.max - r.aggregate_mib_s for r in rows]
    base_n, base = counts[0], agg[0]
    ideal = [base * n / base_n for n in counts]
    fig = Figure(figsize=(7, 6.2))
    ax, eff = fig.subplots(2, 1, gridspec_kw={"height_ratios": [3, 1.2]})
    ax.plot(counts, ideal, "--", color=GREY, label=f"ideal linear ({format_rate(base)} "
            f"x N/{base_n}), slope 1")
    ax.fill_between(counts, [threshold * i for i in ideal], ideal, color=GREY, alpha=0.12,
                    label=f"within {threshold:.0%} of linear")
    ax.errorbar(counts, agg, yerr=[lo, hi], fmt="o-", color=BLUE, capsize=3,
                label=f"measured ({judged})")
    ax.plot(counts, [r.last_done_mib_s for r in rows], ".:", color=BLUE, alpha=0.6,
            label="measured (last done)")
    _clients_panel(ax, counts, "clients (emulated accelerators, log scale)")
    # the measured and ideal values with room above for the legend: a lone point too
    log_values(ax, [v for v in (*agg, *ideal, *(threshold * i for i in ideal)) if v > 0])
    ax.set_ylabel("aggregate bandwidth (MiB/s, log scale)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8, loc="upper left")
    _style(eff)
    _efficiency_bars(eff, counts, [r.efficiency for r in rows], threshold,
                     [r.au is not None and r.au.paced_by_compute for r in rows])
    fig.subplots_adjust(hspace=0.45)
    return fig


def per_client_figure(rows: Sequence[SweepRow], title: str) -> Any:
    """Per-client bandwidth (and AU for training) against clients."""
    from matplotlib.figure import Figure

    counts = [r.clients for r in rows]
    has_au = all(r.au is not None for r in rows)
    fig = Figure(figsize=(7, 7 if has_au else 4.5))
    ax = fig.add_subplot(2 if has_au else 1, 1, 1)
    pc = [r.per_client_mib_s for r in rows]
    ax.fill_between(counts, [p.min for p in pc], [p.max for p in pc], color=ORANGE,
                    alpha=0.2, label="slowest to fastest client")
    ax.plot(counts, [p.mean for p in pc], "o-", color=ORANGE, label="per-client mean")
    ax.axhline(pc[0].mean, ls="--", color=GREY,
               label=f"at {counts[0]} client{'s' if counts[0] > 1 else ''} (constant is ideal)")
    _clients_panel(ax, counts)
    ax.set_ylabel("per-client bandwidth (MiB/s)")
    ax.set_ylim(0, 1.3 * max(p.max for p in pc) or 1)  # room for the legend above
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8, loc="upper right", ncols=3)
    if has_au:
        au = fig.add_subplot(2, 1, 2)
        au.plot(counts, [100 * r.au.mean for r in rows], "o-", color=GREEN, label="AU mean")
        au.plot(counts, [100 * r.au.min for r in rows], "v:", color=RED,
                label="AU of the lowest client")
        goal = rows[0].au.goal
        au.axhline(100 * goal, ls="--", color=GREY, label=f"AU goal {goal:.0%}")
        _clients_panel(au, counts)
        au.set_ylabel("accelerator utilization (%)")
        au.set_ylim(0, 125)
        au.set_yticks(range(0, 101, 20))
        au.legend(fontsize=8, loc="upper right", ncols=3)
    return fig
