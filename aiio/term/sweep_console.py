"""The terminal side of a sweep: two tables (aggregate, per client), then the verdict (rich).

Two narrow tables rather than one wide one, so an 80-column terminal shows every figure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from aiio.results.result import main_op, model
from aiio.sweep import per_point
from aiio.sweep.verdict import NOT_MEASURABLE, efficiency_text
from aiio.term.console import print_hanging, print_warnings
from aiio.term.screen import out_console
from aiio.units import format_latency_ns, format_rate


def _title(sweep: dict[str, Any], what: str) -> str:
    t = sweep["target"]
    return (f"scale {sweep['phase']} {sweep['workload']['workload']['name']} on {t['path']} "
            f"({t['fstype']}, {sweep['method']}): {what}")


def aggregate_table(sweep: dict[str, Any]) -> Table:
    """Per client count: both aggregates, E(N), C(N), AU and the client machine's CPU."""
    rows = model(sweep).table
    repeats = max(r.repeats for r in rows)
    has_au = all(r.au is not None for r in rows)
    table = Table(title=_title(sweep, "aggregate MiB/s"))
    cols = ["clients", "first done", "last done", "E(N)", "C(N)"]
    if repeats > 1:
        cols.insert(2, f"range over {repeats}")
    cols += ["AU mean", "AU min"] if has_au else []
    extras = [(key, title) for key, title, _ in per_point.extras(sweep["phase"])
              if all(key in r.extras for r in rows)]
    cols += [title for _, title in extras] + ["CPU %"]
    for c in cols:
        table.add_column(c, justify="right")
    t = sweep["sweep"]["threshold"]
    for r in rows:
        cells = [str(r.clients), _rate(r.first_done_mib_s), _rate(r.last_done_mib_s),
                 _ratio(r.efficiency, t), _ratio(r.consistency, t)]
        if repeats > 1:
            s = r.aggregate_spread
            cells.insert(2, f"{_rate(s.min)}..{_rate(s.max)}")
        if has_au:
            cells += [f"{r.au.mean:.1%}", _mark(r.au.min, r.au.goal, text=f"{r.au.min:.1%}")]
        cells += [_figure(r.extras[key].mean) for key, _ in extras]
        cells.append(f"{r.cpu_percent:.0f}")
        table.add_row(*cells)
    return table


def _rate(mib_s: float) -> str:
    """A rate under a MiB/s heading, as every table shows one."""
    return format_rate(mib_s, unit=False)


def _figure(value: float) -> str:
    """Seconds and rates alike: three significant figures, thousands separated."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def client_table(sweep: dict[str, Any]) -> Table:
    """Per client count: what each client got, its spread and fairness, and latency."""
    table = Table(title=_title(sweep, "per client"))
    for c in ("clients", "mean MiB/s", "min", "max", "CV", "Jain", "op", "p50", "p99"):
        table.add_column(c, justify="right")
    main = main_op(sweep)
    for r in model(sweep).table:
        pc = r.per_client_mib_s
        # the phase's data operation (read for training, write for checkpoints), not its
        # metadata calls
        op = main if main in r.latency else next(iter(r.latency), "-")
        lat = r.latency.get(op, {})
        table.add_row(str(r.clients), _rate(pc.mean), _rate(pc.min),
                      _rate(pc.max), f"{pc.cv:.3f}", f"{r.jain:.3f}", op,
                      format_latency_ns(lat.get("p50_ns", 0)),
                      format_latency_ns(lat.get("p99_ns", 0)))
    return table


def _ratio(value: float | None, threshold: float) -> str:
    """E(N) or C(N) marked against the threshold; '-' where the baseline moved nothing."""
    if value is None:
        return "-"
    return _mark(value, threshold, text=efficiency_text(value, threshold))


def _mark(value: float, goal: float, text: str) -> str:
    return f"[{'green' if value >= goal else 'red'}]{text}[/]"


def print_sweep(sweep: dict[str, Any], folder: Path) -> None:
    """Tables, verdict sentences, caveats, warnings, and where the files are."""
    console = out_console()
    if not sweep["table"]:
        return
    console.print(aggregate_table(sweep))
    console.print(client_table(sweep))
    v = sweep["verdict"]
    if v["shape"] == NOT_MEASURABLE:  # no E(N) to define: the statement says why
        console.print("[bold]verdict[/]: not measurable", highlight=False)
    else:
        n0 = v["baseline_clients"]
        print_hanging(console, "verdict: ", f"{v['shape']} (linear means E(N) >= "
                      f"{v['threshold']:.2f}; E(N) = agg(N) / (N/{n0} x agg({n0})), C(N) = "
                      f"per-client mean(N) / per-client mean({n0}))", "bold")
    for line in v["statements"]:
        print_hanging(console, "  - ", line)
    if sweep.get("search", {}).get("statement"):
        print_hanging(console, "find-max: ", sweep["search"]["statement"], "bold")
    for line in v["caveats"]:
        print_hanging(console, "  caveat: ", line, "yellow")
    print_warnings(console, [{"code": w["code"], "message": f"{w['message']} (at "
                              f"{', '.join(map(str, w['clients']))} clients)"}
                             for w in sweep.get("warnings", [])])
    # paths whole on one line, to be copied: a terminal folds them, never a word wrap
    for name in sweep.get("charts", []):
        console.print(f"chart: {folder / name}", highlight=False, soft_wrap=True)
    console.print(f"result: {folder}/result.json", highlight=False, soft_wrap=True)
