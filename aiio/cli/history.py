"""`aiio history`: the trend of every check, run and sweep in the history, regressions marked."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import click

from aiio.cli.common import emit_json
from aiio.errors import ConfigError
from aiio.results.history import differences, watched
from aiio.units import format_rate

SPARKS = "▁▂▃▄▅▆▇█"
EDGES = 2  # the table's left and right edge
SPARK_MAX = 12  # records in the overview's sparkline; --check lists them all


def default_history(results: str, history: str | None) -> str:
    """--history, or history.sqlite in the results folder (reports/history.sqlite)."""
    import os
    return history or os.path.join(results, "history.sqlite")


def history_options(func):
    """--history PATH and --no-history, for the commands that record what they measured."""
    func = click.option("--no-history", is_flag=True,
                        help="do not record this in the history")(func)
    return click.option("--history", "history_path", default=None, metavar="PATH",
                        help="history database  [default: RESULTS/history.sqlite]")(func)


def warn(message: str) -> None:
    """A history problem, on stderr: a warning, never a lost result."""
    click.echo(f"aiio: warning: {message}", err=True)


def record_in_history(records: list, results: str, history_path: str | None,
                      warn: Callable[[str], None] = warn) -> None:
    """Add saved results' records to the history; a history problem is a warning (`warn`,
    on stderr by default), never a lost result (the result is saved before this is
    called)."""
    from aiio.errors import AiioError
    from aiio.results.history import History

    path = default_history(results, history_path)
    try:
        with History(path) as h:
            for rec in records:
                h.add(rec)
    except (AiioError, OSError) as exc:
        warn(f"not recorded in the history: {exc}")


def record_runs(saved: list[dict], results: str, history_path: str | None,
                warn: Callable[[str], None] = warn) -> None:
    """Saved run results as history records, whatever their status (a failed or interrupted
    run's trend must show it); a run of the null method did no I/O and is left out, saying
    so on stderr."""
    from aiio.cache_methods import METHOD_NULL
    from aiio.results.history import run_record

    kept = [res for res in saved if res.get("method") != METHOD_NULL]
    if len(kept) < len(saved):
        click.echo("aiio: the null method did no I/O: not recorded in history", err=True)
    if kept:
        record_in_history([run_record(res) for res in kept], results, history_path, warn)


@click.command()
@click.option("--history", "history_path", default=None, metavar="PATH",
              help="history database  [default: RESULTS/history.sqlite]")
@click.option("--results", default="reports", show_default=True,
              help="results folder holding the default history")
@click.option("--check", "name", default=None, metavar="NAME",
              help="one check (or run series) over time, every record; its series timed by another "
              "read loop ([python loop]) in tables of their own")
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
@click.option("--prometheus", "prom_path", default=None, metavar="FILE.prom",
              help="write the latest record of every series for node_exporter's textfile "
              "collector, instead of the tables")
def history(history_path: str | None, results: str, name: str | None, target: str | None,
            figure: str | None, last: int, fraction: float | None, baseline_runs: int | None,
            as_json: bool, prom_path: str | None) -> None:
    """Show the history: each check's trend, or one check over time with --check."""
    import os

    from aiio.results import history as hist
    from aiio.results import monitoring
    from aiio.results.figures import FIGURES

    path = default_history(results, history_path)
    if not os.path.exists(path):
        raise ConfigError(f"no history at {path}; `aiio run` and `aiio accept` create it "
                          "(or pass --history PATH)")
    if figure is not None and figure not in FIGURES:
        raise ConfigError(f"--figure {figure}: unknown; figures: {', '.join(FIGURES)}")
    if prom_path:
        monitoring.check_path(prom_path)
    with hist.History(path) as h:
        records = h.records(target=hist.target_key(target) if target else None)
    judged = hist.with_regressions(records, fraction or hist.DEFAULT_FRACTION,
                                   baseline_runs or hist.DEFAULT_BASELINE_RUNS)
    if name is not None:
        # a name finds its series timed by other read loops too, each shown as its own
        judged = [(r, regs) for r, regs in judged if hist.of_check(r.name, name)]
        if not judged:
            names = sorted({r.name for r in records})
            raise ConfigError(f"no records of {name!r} in {path}; known: "
                              f"{', '.join(names) or 'none'}")
    if prom_path:
        latest = monitoring.latest(judged)
        monitoring.write(prom_path, latest)
        click.echo(f"prometheus: {prom_path} ({len(latest)} series)")
        return
    if as_json:
        emit_json([_as_dict(r, regs) for r, regs in judged])
        return
    from aiio.term.screen import out_console

    console = out_console()
    runs = baseline_runs or hist.DEFAULT_BASELINE_RUNS
    tables = (trend_tables(judged, figure, last, runs) if name is None
              else check_tables(judged, figure, last, console.width))
    console.print(f"history: {path}", highlight=False, soft_wrap=True)
    if not judged:
        console.print("no records yet", highlight=False)
        return
    for table in tables:
        console.print(table)
    for line in regression_lines(judged, every=name is not None, last=last):
        console.print(line, highlight=False)
    console.print("! regression: a figure more than "
                  f"{fraction or hist.DEFAULT_FRACTION:.0%} worse than the median of its last "
                  f"{runs} passing records of its series, once it has "
                  f"{min(runs, hist.MIN_BASELINE_RUNS)} (figure names carry units)",
                  highlight=False)


def _as_dict(rec: Any, regs: list) -> dict[str, Any]:
    import dataclasses
    d = dataclasses.asdict(rec)
    d["time"] = _when(rec.ts)
    d["regressions"] = [dataclasses.asdict(r) | {"message": r.describe()} for r in regs]
    return d


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _value(figure: str, value: float | None) -> str:
    """A figure's value without its unit (the figure's name says it): 812.3, 91.2%."""
    from aiio.results.figures import FIGURES

    if value is None:
        return "-"
    if FIGURES[figure].unit == "%":
        return f"{value:.1%}"
    if FIGURES[figure].unit == "MiB/s":
        return format_rate(value, unit=False)
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.3g}"


def headline(rec: Any, figure: str | None) -> str | None:
    """The figure a series is trended by: the asked one, else aggregate MiB/s when a threshold
    judges it, else the first judged figure, else its phase's (`Phase.trend_figure`: a vector
    search's queries/s), else aggregate MiB/s."""
    judged = sorted(rec.required, key=lambda f: f != "aggregate_mib_s")
    for name in (figure, *judged, _trend_figure(rec.phase), "aggregate_mib_s"):
        if name and name in rec.figures:
            return name
    return None


def _trend_figure(phase: str) -> str | None:
    """The figure the phase's series are trended by; None for a phase not registered here (a
    record written by a phase this aiio does not have)."""
    from aiio.phases import get_phase

    try:
        return get_phase(phase).trend_figure
    except ConfigError:
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
          "error": "[red]error[/]", "failed": "[red]failed[/]",
          "interrupted": "[yellow]interrupted[/]"}
FAILED_MARK = "×"  # in a sparkline: a record that failed without the trended figure


def trend(records: list, figure: str | None) -> str:
    """The sparkline of `figure` over records, failures in red: a failed check's bar, or
    FAILED_MARK for a failed or interrupted run that has no value to draw."""
    values = [r.figures[figure] for r in records if figure in r.figures]
    bars = iter(spark(values))
    out = []
    for rec in records:
        mark = next(bars) if figure in rec.figures else FAILED_MARK if not rec.passed else ""
        out.append(f"[red]{mark}[/]" if mark and not rec.passed else mark)
    return "".join(out)


def _count(series: list) -> str:
    """'(12)', or '(12, 3 failed)' when records of the series did not pass."""
    failed = sum(not rec.passed for rec, _ in series)
    return f"({len(series)}{f', {failed} failed' if failed else ''})"


def escape(text: str) -> str:
    """A series name or path as the literal text of a cell: a read loop's "[python loop]"
    is no markup, and printed as such it vanished."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def _by(items: list, key: Any) -> dict[Any, list]:
    out: dict[Any, list] = {}
    for item in items:
        out.setdefault(key(item), []).append(item)
    return out


def trend_tables(judged: list, figure: str | None, last: int, runs: int) -> list[Any]:
    """Per target, one row per series (a check, or runs/sweeps of one shape) with its number
    of records: its trended figure's last value, baseline and sparkline; `!` marks a
    regression (after the sparkline: of another watched figure)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from aiio.results.history import baseline

    tables = []
    for target, items in _by(judged, lambda j: j[0].target).items():
        table = Table(title=f"history on {escape(target)}", box=box.SIMPLE_HEAD, pad_edge=False,
                      padding=(0, 1, 0, 0))
        for col in ("series", "last run", "status", "figure", "last", "baseline", "trend"):
            table.add_column(col, justify="right" if col in ("last", "baseline") else "left",
                             no_wrap=col != "series", min_width=10 if col == "series" else None,
                             overflow="fold" if col == "series" else "ellipsis")
        differ = _differ(items)
        for key, series in _by(items, lambda j: j[0].key).items():
            rec, regs = series[-1]
            name = key[0]
            # a failed last record may lack the figure: trend by what the series measured
            fig = next(filter(None, (headline(r, figure) for r, _ in reversed(series))), None)
            base = baseline([r for r, _ in series[:-1]], fig, runs) if fig else None
            shown = [r for r, _ in series[-min(last, SPARK_MAX):]]
            value = _value(fig, rec.figures.get(fig)) if fig else "-"
            if any(r.figure == fig for r in regs):
                value = f"[bold yellow]!{value}[/]"
            # one settings key of several: its hash here, what sets it apart below the table
            differs = f"\nsettings {key[2] or '(none)'}" if key in differ else ""
            table.add_row(f"{escape(name)} [dim]{_count(series)}{differs}[/]",
                          time.strftime("%m-%d %H:%M", time.localtime(rec.ts)),
                          STATUS.get(rec.status, rec.status), fig or "-", value,
                          _value(fig, base[0]) if base else "-", trend(shown, fig))
        tables.append(table)
        tables += [Text.from_markup(f"settings {key[2] or '(none)'} of {escape(key[0])}: "
                                    f"{text}") for key, text in differ.items()]
    return tables


def check_tables(judged: list, figure: str | None, last: int, width: int = 80) -> list[Any]:
    """Per series and target (a check's, and its own timed by another read loop), every
    record of one check with its watched figures; `!` marks a regressed
    figure (regression_lines says by how much). The figures are split over as many tables
    as it takes to fit `width` columns, each led by the record's number, time and status;
    host and aiio version follow in a table of their own."""
    tables = []
    differ = _differ(judged)
    for (name, target, key), items in _by(judged, lambda j: j[0].key).items():
        items = items[-last:]
        figs: list[str] = [figure] if figure else []
        for rec, _ in items:
            figs += [f for f in watched(rec) if f not in figs]
        cells = {f: [_cell(f, rec, regs) for rec, regs in items] for f in figs}
        lead = [("#", [str(rec.id) for rec, _ in items]),
                ("time", [_when(rec.ts) for rec, _ in items]),
                ("status", [STATUS.get(rec.status, rec.status) for rec, _ in items])]
        title = f"{escape(name)} on {escape(target)} (last {len(items)})"
        if (name, target, key) in differ:  # one key of several: its hash and what differs
            title += f"\nsettings {key or '(none)'}: {differ[(name, target, key)]}"
        for chunk in _chunks([(f, cells[f]) for f in figs], width - EDGES - _width(lead)):
            tables.append(_record_table(title, [*lead, *chunk], right={"#", *figs}))
            title = ""
        tables.append(_record_table(title, [lead[0], ("host", [r.host for r, _ in items]),
                                            ("aiio", [r.version for r, _ in items])],
                                    right={"#"}))
    return tables


def _differ(judged: list) -> dict[tuple[str, str, str], str]:
    """For a series whose records ran with other settings (each a key of its own, never
    compared across), each key's line: its hash and the settings where they differ."""
    out = {}
    for (name, target), items in _by(judged, lambda j: j[0].series).items():
        kept = {j[0].compared: None for j in items}
        if len(kept) < 2:
            continue
        for key, text in differences(list(kept)).items():
            out[(name, target, key)] = escape(text)
    return out


def _cell(fig: str, rec: Any, regs: list) -> str:
    value = _value(fig, rec.figures.get(fig))
    return f"[bold yellow]!{value}[/]" if any(r.figure == fig for r in regs) else value


def _width(columns: list[tuple[str, list[str]]]) -> int:
    """Columns' width on screen: the widest of heading and cells (markup not counted), plus
    the padding and the separator each column takes."""
    from rich.text import Text

    return sum(max(len(head), *(Text.from_markup(c).cell_len for c in cells)) + 2
               for head, cells in columns)


def _chunks(columns: list[tuple[str, list[str]]], room: int) -> list[list]:
    """Consecutive columns grouped so that each group fits `room` (at least one column each)."""
    groups: list[list] = [[]]
    for column in columns:
        if groups[-1] and _width([*groups[-1], column]) > room:
            groups.append([])
        groups[-1].append(column)
    return [g for g in groups if g]


def _record_table(title: str, columns: list[tuple[str, list[str]]], right: set[str]) -> Any:
    from rich import box
    from rich.table import Table

    table = Table(title=title or None, box=box.SIMPLE_HEAD, pad_edge=False,
                  padding=(0, 1, 0, 0))
    for head, _ in columns:
        table.add_column(head, justify="right" if head in right else "left",
                         overflow="fold", no_wrap=head not in ("host", "aiio"))
    for row in zip(*(cells for _, cells in columns), strict=True):
        table.add_row(*row)
    return table


def regression_lines(judged: list, every: bool, last: int) -> list[str]:
    """One line per regression: of each series' last record, or (`every`) of every record
    shown."""
    lines = []
    for _, items in _by(judged, lambda j: j[0].key).items():
        for rec, regs in (items[-last:] if every else items[-1:]):
            for r in regs:
                lines.append(f"[bold yellow]![/] #{rec.id} {escape(rec.name)} {_when(rec.ts)}: "
                             f"{r.describe()}")
    return lines
