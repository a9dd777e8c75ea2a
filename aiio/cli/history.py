"""`aiio history`: the trend of every check, run and sweep in the history, regressions marked."""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from aiio.cli.common import emit_json
from aiio.errors import ConfigError

SPARKS = "▁▂▃▄▅▆▇█"


@click.command()
@click.option("--history", "history_path", default=None, metavar="PATH",
              help="history database  [default: RESULTS/history.sqlite]")
@click.option("--results", default="reports", show_default=True,
              help="results folder holding the default history")
@click.option("--check", "name", default=None, metavar="NAME",
              help="one check (or run series) over time, every record")
@click.option("--target", "-t", default=None, help="only records of this target")
@click.option("--figure", default=None,
              help="figure to trend  [default: aggregate_mib_s, or the first judged figure]")
@click.option("--last", default=20, show_default=True, type=click.IntRange(min=1),
              help="records shown per check")
@click.option("--fraction", default=None, type=click.FloatRange(min=0, max=1, min_open=True),
              help="regression: this much worse than the baseline  [default: 0.10]")
@click.option("--baseline-runs", default=None, type=click.IntRange(min=1),
              help="baseline: median of this many last passing records  [default: 5]")
@click.option("--json", "as_json", is_flag=True, help="print records and regressions as JSON")
def history(history_path: str | None, results: str, name: str | None, target: str | None,
            figure: str | None, last: int, fraction: float | None, baseline_runs: int | None,
            as_json: bool) -> None:
    """Show the history: each check's trend, or one check over time with --check."""
    import os

    from aiio import history as hist
    from aiio.cli.accept import default_history
    from aiio.figures import FIGURES

    path = default_history(results, history_path)
    if not os.path.exists(path):
        raise ConfigError(f"no history at {path}; `aiio run` and `aiio accept` create it "
                          "(or pass --history PATH)")
    if figure is not None and figure not in FIGURES:
        raise ConfigError(f"--figure {figure}: unknown; figures: {', '.join(FIGURES)}")
    with hist.History(path) as h:
        records = h.records(target=os.path.abspath(target) if target else None)
    judged = hist.with_regressions(records, fraction or hist.DEFAULT_FRACTION,
                                   baseline_runs or hist.DEFAULT_BASELINE_RUNS)
    if name is not None:
        judged = [(r, regs) for r, regs in judged if r.name == name]
        if not judged:
            names = sorted({r.name for r in records})
            raise ConfigError(f"no records of {name!r} in {path}; known: "
                              f"{', '.join(names) or 'none'}")
    if as_json:
        emit_json([_as_dict(r, regs) for r, regs in judged])
        return
    from rich.console import Console

    console = Console(file=sys.stdout)
    if name is None:
        console.print(trend_table(judged, path, figure, last,
                                  baseline_runs or hist.DEFAULT_BASELINE_RUNS))
    else:
        for table in check_tables(judged, name, figure, last):
            console.print(table)
    console.print("regression: a figure more than "
                  f"{fraction or hist.DEFAULT_FRACTION:.0%} worse than the median of its last "
                  f"{baseline_runs or hist.DEFAULT_BASELINE_RUNS} passing records",
                  highlight=False)


def _as_dict(rec: Any, regs: list) -> dict[str, Any]:
    import dataclasses
    d = dataclasses.asdict(rec)
    d["time"] = _when(rec.ts)
    d["regressions"] = [dataclasses.asdict(r) | {"message": r.describe()} for r in regs]
    return d


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def headline(rec: Any, figure: str | None) -> str | None:
    """The figure a series is trended by: the asked one, else aggregate MiB/s when a threshold
    judges it, else the first judged figure, else aggregate MiB/s."""
    judged = sorted(rec.required, key=lambda f: f != "aggregate_mib_s")
    for name in (figure, *judged, "aggregate_mib_s"):
        if name and name in rec.figures:
            return name
    return None


def spark(values: list[float]) -> str:
    """A sparkline of values, scaled between their own min and max."""
    if not values:
        return ""
    lo, hi = min(values), max(values)
    if hi == lo:
        return SPARKS[3] * len(values)
    return "".join(SPARKS[round((v - lo) / (hi - lo) * (len(SPARKS) - 1))] for v in values)


STATUS = {"pass": "[green]pass[/]", "ok": "[green]ok[/]", "fail": "[red]fail[/]",
          "error": "[red]error[/]"}


def trend_table(judged: list, path: str, figure: str | None, last: int, runs: int) -> Any:
    """One row per series (check, run or sweep on one target): latest figure and its trend."""
    from rich.table import Table

    from aiio.figures import FIGURES
    from aiio.history import baseline

    series: dict[tuple[str, str], list] = {}
    for rec, regs in judged:
        series.setdefault(rec.series, []).append((rec, regs))
    table = Table(title=f"history: {path}")
    for col in ("check", "kind", "target", "records", "last run", "status", "figure", "last",
                "baseline", "trend", "regression"):
        table.add_column(col, justify="right" if col in ("records", "last", "baseline")
                         else "left")
    for (name, target), items in series.items():
        rec, regs = items[-1]
        fig = headline(rec, figure)
        shown = [r.figures[fig] for r, _ in items[-last:] if fig in r.figures] if fig else []
        base = baseline([r for r, _ in items[:-1]], fig, runs) if fig else None
        fmt = FIGURES[fig].format if fig else str
        table.add_row(name, rec.kind, target, str(len(items)), _when(rec.ts),
                      STATUS.get(rec.status, rec.status), fig or "-",
                      fmt(rec.figures[fig]) if fig else "-", fmt(base[0]) if base else "-",
                      spark(shown),
                      "[yellow]" + ", ".join(f"{r.figure} {r.change:+.0%}" for r in regs) + "[/]"
                      if regs else "")
    return table


def check_tables(judged: list, name: str, figure: str | None, last: int) -> list[Any]:
    """One table per target: every record of the check, with its watched figures."""
    from rich.table import Table

    from aiio.figures import FIGURES
    from aiio.history import watched

    by_target: dict[str, list] = {}
    for rec, regs in judged:
        by_target.setdefault(rec.target, []).append((rec, regs))
    tables = []
    for target, items in by_target.items():
        items = items[-last:]
        figs: list[str] = [figure] if figure else []
        for rec, _ in items:
            figs += [f for f in watched(rec) if f not in figs]
        table = Table(title=f"{name} on {target} ({len(items)} shown)")
        for col in ("#", "time", "status", "host", "aiio", *figs, "regression"):
            table.add_column(col, justify="right" if col in figs or col == "#" else "left")
        for rec, regs in items:
            marks = {r.figure: r for r in regs}
            cells = []
            for f in figs:
                value = rec.figures.get(f)
                text = "-" if value is None else FIGURES[f].format(value)
                if f in marks:
                    text = f"[yellow]{text} ({marks[f].change:+.0%})[/]"
                cells.append(text)
            table.add_row(str(rec.id), _when(rec.ts), STATUS.get(rec.status, rec.status),
                          rec.host, rec.version, *cells,
                          "[yellow]REGRESSION[/]" if regs else "")
        tables.append(table)
    return tables
