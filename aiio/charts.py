"""A sweep's two charts, PNG and SVG, drawn from its table (matplotlib, Agg, no pyplot).

aggregate:  aggregate MiB/s (the judged figure, with the repeats' range) against clients on log-log
            axes, beside the ideal linear line through the baseline (slope 1: straight) and the
            threshold share of it; below, E(N) per count against the threshold.
per_client: per-client MiB/s (mean, with the slowest and fastest client) against clients, and
            for training a second panel with AU (mean and lowest client) and the AU goal.

This module is imported only when charts are drawn, so nothing else pays for matplotlib.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, never a window; must precede any figure

from matplotlib.figure import Figure  # noqa: E402  (after the backend is chosen)

from aiio.report.charts import client_ticks, count_labels, log_values  # noqa: E402

FORMATS = ("png", "svg")


def draw(sweep: dict[str, Any], folder: Path) -> list[str]:
    """Write aggregate.{png,svg} and per_client.{png,svg}; returns the file names."""
    rows = sweep["table"]
    if not rows:
        return []
    title = _title(sweep)
    names = _save(aggregate_figure(rows, sweep["sweep"]["threshold"], title,
                                   JUDGED.get(sweep["phase"], "first done")), folder,
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


def _save(fig: Figure, folder: Path, stem: str) -> list[str]:
    names = []
    for fmt in FORMATS:
        name = f"{stem}.{fmt}"
        fig.savefig(folder / name, format=fmt, dpi=120, bbox_inches="tight")
        names.append(name)
    return names


# What the plotted aggregate is, for phases not judged on first done (see sweep_figures).
JUDGED = {"checkpoint": "write, over the time to persist", "prep": "read + write, first done"}


def _axes_for_clients(ax: Any, counts: list[int]) -> None:
    """Client counts on a log-2 axis, labelled where the labels do not crowd."""
    ax.set_xscale("log", base=2)
    ax.minorticks_off()  # only the counts measured are labelled
    client_ticks(ax, counts)
    ax.set_xlabel("clients (emulated accelerators)")
    ax.grid(True, alpha=0.3)


def aggregate_figure(rows: list[dict[str, Any]], threshold: float, title: str,
                     judged: str = "first done") -> Figure:
    """Measured aggregate (the figure the verdict judges) against the ideal linear line on
    log-log axes, where linear scaling is a straight line of slope 1; below it, E(N) per
    count against the threshold."""
    counts = [r["clients"] for r in rows]
    agg = [r["aggregate_mib_s"] for r in rows]
    lo = [r["aggregate_mib_s"] - r["aggregate_spread"]["min"] for r in rows]
    hi = [r["aggregate_spread"]["max"] - r["aggregate_mib_s"] for r in rows]
    base_n, base = counts[0], agg[0]
    ideal = [base * n / base_n for n in counts]
    fig = Figure(figsize=(7, 6.2))
    ax, eff = fig.subplots(2, 1, gridspec_kw={"height_ratios": [3, 1.2]})
    ax.plot(counts, ideal, "--", color="grey", label=f"ideal linear ({base:,.1f} MiB/s "
            f"x N/{base_n}), slope 1")
    ax.fill_between(counts, [threshold * i for i in ideal], ideal, color="grey", alpha=0.12,
                    label=f"within {threshold:.0%} of linear")
    ax.errorbar(counts, agg, yerr=[lo, hi], fmt="o-", color="C0", capsize=3,
                label=f"measured ({judged})")
    ax.plot(counts, [r["last_done_mib_s"] for r in rows], ".:", color="C0", alpha=0.6,
            label="measured (last done)")
    _axes_for_clients(ax, counts)
    ax.set_xlabel("clients (emulated accelerators, log scale)")
    # the measured and ideal values with room above for the legend: a lone point too
    log_values(ax, [v for v in (*agg, *ideal, *(threshold * i for i in ideal)) if v > 0])
    ax.set_ylabel("aggregate bandwidth (MiB/s, log scale)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8, loc="upper left")
    _efficiency_axes(eff, counts, [r["efficiency"] for r in rows], threshold)
    fig.subplots_adjust(hspace=0.45)
    return fig


def _efficiency_axes(ax: Any, counts: list[int], efficiency: list[float],
                     threshold: float) -> None:
    """E(N) as bars per count (red below the threshold) with the threshold dashed."""
    ax.bar(range(len(counts)), [100 * e for e in efficiency], width=0.6,
           color=["C3" if e < threshold else "C2" for e in efficiency])
    ax.set_xticks(range(len(counts)), count_labels(counts, log=False))
    ax.axhline(100 * threshold, ls="--", color="grey", label=f"threshold {threshold:.0%}")
    ax.set_ylim(0, 110 * max(1.0, *efficiency))
    ax.set_xlabel("clients (emulated accelerators)")
    ax.set_ylabel("E(N) (%)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")


def per_client_figure(rows: list[dict[str, Any]], title: str) -> Figure:
    """Per-client bandwidth (and AU for training) against clients."""
    counts = [r["clients"] for r in rows]
    has_au = all("au_mean" in r for r in rows)
    fig = Figure(figsize=(7, 7 if has_au else 4.5))
    ax = fig.add_subplot(2 if has_au else 1, 1, 1)
    pc = [r["per_client_mib_s"] for r in rows]
    ax.fill_between(counts, [p["min"] for p in pc], [p["max"] for p in pc], color="C1",
                    alpha=0.2, label="slowest to fastest client")
    ax.plot(counts, [p["mean"] for p in pc], "o-", color="C1", label="per-client mean")
    ax.axhline(pc[0]["mean"], ls="--", color="grey",
               label=f"at {counts[0]} client{'s' if counts[0] > 1 else ''} (constant is ideal)")
    _axes_for_clients(ax, counts)
    ax.set_ylabel("per-client bandwidth (MiB/s)")
    ax.set_ylim(0, 1.3 * max(p["max"] for p in pc) or 1)  # room for the legend above
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8, loc="upper right", ncols=3)
    if has_au:
        au = fig.add_subplot(2, 1, 2)
        au.plot(counts, [100 * r["au_mean"] for r in rows], "o-", color="C2", label="AU mean")
        au.plot(counts, [100 * r["au_min"] for r in rows], "v:", color="C3",
                label="AU of the lowest client")
        au.axhline(100 * rows[0]["au_goal"], ls="--", color="grey",
                   label=f"AU goal {rows[0]['au_goal']:.0%}")
        _axes_for_clients(au, counts)
        au.set_ylabel("accelerator utilization (%)")
        au.set_ylim(0, 125)
        au.set_yticks(range(0, 101, 20))
        au.legend(fontsize=8, loc="upper right", ncols=3)
    return fig
