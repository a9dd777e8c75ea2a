"""The terminal side of a run: live progress bar, notes, and the summary tables (rich)."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from aiio.units import MiB, format_duration, format_latency_ns, format_size


class RichUI:
    """Progress bar with live aggregate MiB/s; notes go to stderr so --json stays clean."""

    def __init__(self, quiet: bool = False) -> None:
        self.console = Console(stderr=True)
        self.quiet = quiet
        self.bar: Progress | None = None
        self.task = None
        self.total: int | None = None
        self._last = (0, 0.0)

    def note(self, message: str) -> None:
        if not self.quiet:
            self.console.print(message, highlight=False)

    def _new_bar(self) -> Progress:
        return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                        TimeRemainingColumn(), console=self.console, transient=False,
                        disable=self.quiet)

    def progress(self, label: str, done: int, total: int) -> None:
        """Progress of a preparation step (dataset generation)."""
        if self.bar is None:
            self.bar = self._new_bar()
            self.bar.start()
            self.task = self.bar.add_task(label, total=total, rate="")
        self.bar.update(self.task, completed=done, description=label)
        if done >= total:
            self.bar.stop()
            self.bar = None

    def start(self, label: str, total: int | None, clients: int) -> None:
        self.bar = self._new_bar()
        self.bar.start()
        self.total = total
        self._last = (0, 0.0)  # a sweep reuses this UI for every point
        self.task = self.bar.add_task(f"{label} ({clients} clients)", total=total, rate="")

    def tick(self, nbytes: list[int], units: list[int], elapsed: float) -> None:
        if self.bar is None:
            return
        total_bytes = sum(nbytes)
        last_bytes, last_t = self._last
        rate = (total_bytes - last_bytes) / MiB / (elapsed - last_t) if elapsed > last_t else 0
        self._last = (total_bytes, elapsed)
        self.bar.update(self.task, completed=sum(units), rate=f"{rate:,.0f} MiB/s")

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def print_warnings(console: Console, warnings: list[dict[str, str]]) -> None:
    for w in warnings:
        console.print(f"[bold yellow]warning[/] ({w['code']}): {w['message']}", highlight=False)


def _fmt_mib(value: float) -> str:
    return f"{value:,.1f}"


def train_tables(res: dict[str, Any]) -> list[Table]:
    """Headline table and per-client table for a training run."""
    agg = res["aggregate"]
    head = Table(title=f"train: {res['workload']['workload']['name']} on "
                 f"{res['target']['path']} ({res['target']['fstype']}, {res['method']})")
    head.add_column("figure")
    head.add_column("value", justify="right")
    fd, ld = agg["first_done"], agg["last_done"]
    spread = agg["per_client_mib_s"]
    lat = agg["latency"].get("read", {})
    rows = [
        ("clients", f"{len(res['clients'])}"),
        ("aggregate, first done", f"{_fmt_mib(fd['mib_s'])} MiB/s over {fd['seconds']:.2f} s"),
        ("aggregate, last done", f"{_fmt_mib(ld['mib_s'])} MiB/s over {ld['seconds']:.2f} s"),
        ("bytes read", format_size(agg["bytes"])),
        ("per client MiB/s (mean / min / max)",
         f"{spread['mean']:,.1f} / {spread['min']:,.1f} / {spread['max']:,.1f}"),
        ("per client CV / Jain fairness", f"{spread['cv']:.3f} / {agg['jain']:.3f}"),
        ("samples/s", f"{agg['samples_per_s']:,.1f}"),
        ("AU mean / min (goal)",
         f"{agg['au_mean']:.1%} / {agg['au_min']:.1%} ({agg['au_goal']:.0%})"),
        ("AU verdict", "[green]PASS[/]" if agg["au_pass"] else
         f"[red]FAIL[/] ({len(agg['clients_below_goal'])} clients below goal)"),
        ("read latency p50 / p99 / max",
         " / ".join(format_latency_ns(lat.get(k, 0)) for k in ("p50_ns", "p99_ns", "max_ns"))),
        ("demand per client", f"{agg['demand_mib_s_per_client']:,.1f} MiB/s"),
    ]
    if "hero" in res:
        rows.append(("% of fio hero", res["hero"].get("text", "")))
    for name, value in rows:
        head.add_row(name, value)
    return [head, client_table(res)]


def client_table(res: dict[str, Any], limit: int = 16) -> Table:
    """Per-client figures; long lists show the slowest and fastest clients."""
    clients = sorted(res["clients"], key=lambda c: c.get("mib_s", 0))
    shown = clients if len(clients) <= limit else clients[: limit // 2] + clients[-limit // 2:]
    title = "per client" + ("" if len(clients) <= limit else
                            f" (slowest and fastest {limit // 2} of {len(clients)})")
    table = Table(title=title)
    for col in ("client", "MiB/s", "bytes", "AU", "wait s", "p50", "p99", "elapsed"):
        table.add_column(col, justify="right")
    for c in shown:
        lat = c.get("latency", {})
        table.add_row(str(c["client"]), _fmt_mib(c.get("mib_s", 0)),
                      format_size(c.get("bytes", 0)),
                      f"{c['au']:.1%}" if "au" in c else "-",
                      f"{c.get('wait_s', 0):.2f}",
                      format_latency_ns(lat.get("p50_ns", 0)),
                      format_latency_ns(lat.get("p99_ns", 0)),
                      format_duration(c.get("elapsed_s", 0)))
    return table


def print_result(res: dict[str, Any], folder: Any, tables: list[Table]) -> None:
    console = Console(file=sys.stdout)
    for t in tables:
        console.print(t)
    print_warnings(console, res.get("warnings", []))
    console.print(f"result: {folder}/result.json", highlight=False)
