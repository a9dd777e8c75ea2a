"""Sweep charts at the edges of what a sweep can be: one client count, and every count from 1
to 64. Every count label drawn must be readable (no two overlap), the first and last count
are always labelled, and a lone point is drawn inside the plot, clear of the legend."""

from __future__ import annotations

from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg

from aiio.results import charts
from aiio.results.result import SweepRow

MANY = list(range(1, 65))


def _rows(counts: list[int]) -> list[SweepRow]:
    return [SweepRow.of({"clients": n, "aggregate_mib_s": 100.0 * n, "last_done_mib_s": 100.0 * n,
                         "aggregate_spread": {"mean": 100.0 * n, "min": 100.0 * n,
                                              "max": 100.0 * n}, "efficiency": 1.0,
                         "per_client_mib_s": {"mean": 100.0, "min": 100.0, "max": 100.0}})
            for n in counts]


def _labels(ax: Any) -> list[Any]:
    """The x tick labels that show text, after the figure is drawn."""
    return [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]


def _readable(ax: Any, counts: list[int]) -> None:
    renderer = ax.figure.canvas.get_renderer()
    shown = _labels(ax)
    boxes = [t.get_window_extent(renderer) for t in shown]
    for a, b in zip(boxes, boxes[1:], strict=False):
        assert a.x1 < b.x0, [t.get_text() for t in shown]
    texts = [t.get_text() for t in shown]
    assert texts[0] == str(counts[0]) and texts[-1] == str(counts[-1]), texts


def test_every_count_label_of_a_64_count_sweep_is_readable() -> None:
    fig = charts.aggregate_figure(_rows(MANY), 0.9, "t")
    FigureCanvasAgg(fig).draw()
    for ax in fig.axes:  # the aggregate and the E(N) panel
        _readable(ax, MANY)


def test_the_report_client_axis_of_a_64_count_sweep_is_readable() -> None:
    fig, ax = charts._new()
    ax.plot(MANY, [100.0 * n for n in MANY])
    charts._client_axis(ax, MANY)
    FigureCanvasAgg(fig).draw()
    _readable(ax, MANY)


def test_a_one_count_sweep_draws_its_point_clear_of_the_legend() -> None:
    fig = charts.aggregate_figure(_rows([4]), 0.9, "t")
    FigureCanvasAgg(fig).draw()
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    _, y_share = ax.transAxes.inverted().transform(ax.transData.transform((4, 400.0)))
    assert 0.05 < y_share < 0.95, (lo, hi)  # inside the plot, not on its edge
    x, y = ax.transData.transform((4, 400.0))
    legend = ax.get_legend().get_window_extent(fig.canvas.get_renderer()).padded(10)
    assert not legend.contains(x, y)
    assert len([v for v in ax.get_yticks() if lo <= v <= hi]) >= 2  # a readable scale


def test_a_sweep_that_moved_no_byte_draws_without_a_warning(recwarn) -> None:
    # a phase of metadata only: every aggregate 0; the log axis warned on stderr
    # ("Data has no positive values, and therefore cannot be log-scaled")
    rows = [SweepRow.of({"clients": n, "aggregate_mib_s": 0.0, "last_done_mib_s": 0.0,
                         "aggregate_spread": {"mean": 0.0, "min": 0.0, "max": 0.0},
                         "efficiency": 0.0}) for n in (1, 2)]
    FigureCanvasAgg(charts.aggregate_figure(rows, 0.9, "t")).draw()
    assert not [str(w.message) for w in recwarn.list]
