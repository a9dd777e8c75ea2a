"""The terminal side of a run: live progress bar, notes, and the summary tables (rich)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
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

from aiio.cache_methods import METHOD_NULL, METHOD_S3
from aiio.errors import AiioError
from aiio.honesty import NO_IO
from aiio.phases import get_phase, phase_of
from aiio.result import (
    AuFigures,
    Burst,
    ClientFigures,
    IoFigures,
    Result,
    RunSummary,
    Spread,
    VerifyFigures,
    model,
)
from aiio.term.fit import may_leave_out
from aiio.term.live import SHOW_AFTER_S, ClientRates, Hero, live_table
from aiio.term.screen import err_console, out_console
from aiio.units import MiB, format_duration, format_latency_ns, format_rate, format_size


def bare_rate(mib_s: float) -> str:
    """A rate without its unit, under a MiB/s heading or before " / x MiB/s"."""
    return format_rate(mib_s, unit=False)


class LiveProgress(Progress):
    """The progress bar, with the live per-client table under it once the run is long enough."""

    extra: Any = None

    def get_renderables(self):
        yield from super().get_renderables()
        if self.extra is not None:
            yield self.extra


class RichUI:
    """Progress bar with live aggregate MiB/s, and on a terminal the live per-client view;
    notes go to stderr so --json stays clean."""

    def __init__(self, quiet: bool = False) -> None:
        self.console = err_console()
        self.quiet = quiet
        self.bar: LiveProgress | None = None
        self.task = None
        self.total: int | None = None
        self._last = (0, 0.0)
        self.rates: ClientRates | None = None
        self.hero: Hero | None = None

    def note(self, message: str) -> None:
        if not self.quiet:
            self.console.print(message, highlight=False)

    def alert(self, message: str) -> None:
        """Said under --quiet too, as one line however narrow the terminal (a log keeps it
        whole)."""
        self.console.print(f"aiio: {message}", highlight=False, soft_wrap=True)

    def _new_bar(self) -> LiveProgress:
        return LiveProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
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

    def start(self, label: str, total: int | None, clients: int, *,
              compute_s: float | None = None, hero: dict[str, Any] | None = None) -> None:
        """A run begins; compute_s (training) gives live AU, hero (hero.hero_for) the fio
        figure to hold the aggregate against."""
        self.bar = self._new_bar()
        self.bar.start()
        self.total = total
        self._last = (0, 0.0)  # a sweep reuses this UI for every point
        # only where someone watches: a log would get every frame, or the last one
        live = self.console.is_terminal and not self.quiet
        self.rates = ClientRates(compute_s) if live else None
        self.hero = Hero(hero["test"], hero["fio_mib_s"]) if hero else None
        noun = "client" if clients == 1 else "clients"
        self.task = self.bar.add_task(f"{label} ({clients} {noun})", total=total, rate="")

    def tick(self, nbytes: list[int], units: list[int], elapsed: float) -> None:
        if self.bar is None:
            return
        total_bytes = sum(nbytes)
        last_bytes, last_t = self._last
        rate = (total_bytes - last_bytes) / MiB / (elapsed - last_t) if elapsed > last_t else 0
        self._last = (total_bytes, elapsed)
        if self.rates is not None:
            self.rates.add(elapsed, nbytes, units)
            if elapsed >= SHOW_AFTER_S:
                self.bar.extra = live_table(self.rates, self.hero)
        self.bar.update(self.task, completed=sum(units), rate=format_rate(rate))

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.extra = None  # the summary follows; the last frame would repeat it
            total_bytes, elapsed = self._last
            if elapsed > 0 and self.task is not None:  # the last tick saw the clients done
                self.bar.update(self.task, rate=f"{format_rate(total_bytes / MiB / elapsed)} mean")
            self.bar.stop()
            self.bar = None


def print_warnings(console: Console, warnings: list[dict[str, str]]) -> None:
    for w in warnings:
        console.print(f"[bold yellow]warning[/] ({w['code']}): {w['message']}", highlight=False)


def train_tables(res: dict[str, Any]) -> list[Table]:
    """Headline table and per-client table for a training run."""
    run = _typed(res)
    agg, io = run.summary, _main(run)
    head = Table(title=f"train: {res['workload']['workload']['name']} on "
                 f"{res['target']['path']} ({res['target']['fstype']}, {res['method']})")
    head.add_column("figure")
    head.add_column("value", justify="right")
    fd, ld, spread = io.first_done, io.last_done, io.per_client_mib_s
    lat = io.latency.get(run.main_op, {})
    rows = [
        ("clients", f"{len(run.clients)}"),
        ("consumed, first done", f"{format_rate(fd.mib_s)} over {fd.seconds:.2f} s"),
        ("consumed, last done", f"{format_rate(ld.mib_s)} over {ld.seconds:.2f} s"),
        *_delivered_rows(run),
        ("per client consumed MiB/s (mean / min / max)", _spread3(spread)),
        ("per client CV / Jain fairness", f"{spread.cv:.3f} / {io.jain:.3f}"),
        ("samples/s", f"{agg.samples_per_s:,.1f}"),
        *_au_rows(io.au),
        (f"{run.main_op} latency p50 / p99 / max",
         " / ".join(format_latency_ns(lat.get(k)) for k in ("p50_ns", "p99_ns", "max_ns"))),
        ("demand per client (sample bytes)", _demand(agg)),
    ]
    for name, value in rows:
        head.add_row(name, value)
    if run.checkpoint is not None:
        return [head, train_checkpoint_table(run), client_table(res)]
    return [head, client_table(res)]


def _delivered_rows(run: Result) -> list[tuple[str, str]]:
    """What the storage delivered to the loaders, beside what the accelerators consumed."""
    agg, d = run.summary, run.section("delivered")
    if d is None:  # a result from before the two were told apart
        return [("bytes read", format_size(agg.bytes))]
    return [("bytes consumed (samples)", f"{format_size(agg.consumed_bytes)} "
             f"({agg.samples:,} samples)"),
            ("bytes delivered (samples / device)",
             f"{format_size(d.app_bytes)} / {format_size(d.device_bytes)}"),
            ("delivered, first done / last done",
             f"{bare_rate(d.first_done.mib_s)} / {format_rate(d.last_done.mib_s)}")]


def _au_rows(au: AuFigures | None) -> list[tuple[str, str]]:
    """AU mean and min, and the verdict under the rule that decides, or why there is none."""
    if au is None or au.mean is None:
        return [("AU", au.note if au is not None and au.note is not None else "not measured")]
    verdict = ("[green]PASS[/]" if au.passed else
               f"[red]FAIL[/] ({len(au.below_goal)} clients below goal)")
    rows = [("AU mean / min (goal)", f"{au.mean:.1%} / {au.min:.1%} ({au.goal:.0%})"),
            (f"AU verdict ({au.rule} over clients)", verdict)]
    if au.note:
        rows.append(("AU note", au.note))
    return rows


def _pct(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}%}"


def _demand(agg: RunSummary) -> str:
    value = agg.demand_mib_s_per_client
    if value is not None:
        return format_rate(value)
    return "-" if agg.demand_note is None else agg.demand_note


# where the figures of a per-client table's columns left out at a narrow width are read
SPARE_WHERE = "in result.json and report.html"


def client_table(res: dict[str, Any], limit: int = 16) -> Table:
    """Per-client figures; long lists show the slowest and fastest clients. Training sorts and
    leads with consumed MiB/s (its headline) and shows the delivered MiB/s beside it."""
    run = _typed(res)
    train = any(c.consumed_mib_s is not None for c in run.clients)
    def speed(c: ClientFigures) -> float:
        return _rates(c, train)[0] or 0

    shown, some = _ends(sorted(run.clients, key=speed), speed, limit)
    table = Table(title=f"per client{some}")
    rates = ("consumed MiB/s", "delivered MiB/s") if train else ("MiB/s",)
    for col in ("client", *rates, "bytes consumed" if train else "bytes", "AU", "wait s", "p50",
                "p99", "elapsed"):
        table.add_column(col, justify="right")
    ranked = run.ranks > 1  # under MPI: each client with its rank
    for c in shown:
        main = _own(c)
        lat = main.main_latency if main is not None else {}
        moved = c.consumed_bytes if train else main.bytes if main is not None else None
        table.add_row(f"{c.client}{f' @{c.rank}' if ranked else ''}",
                      *(bare_rate(r) for r in _rates(c, train)), format_size(moved or 0),
                      f"{c.au:.1%}" if c.au is not None else "-",
                      f"{c.wait_s:.2f}" if c.wait_s is not None else "-",
                      format_latency_ns(lat.get("p50_ns")),
                      format_latency_ns(lat.get("p99_ns")),
                      format_duration(c.elapsed_s or 0))
    spare = ("elapsed", "bytes consumed", "bytes", "wait s", "delivered MiB/s")
    return may_leave_out(table, spare, SPARE_WHERE)


def _ends(clients: list[ClientFigures], speed: Callable[[ClientFigures], float],
          limit: int = 16) -> tuple[list[ClientFigures], str]:
    """Every client when there are at most `limit`; else the slowest and the fastest by
    `speed`, slowest first, and the title's words saying so (as `client_table` shows)."""
    if len(clients) <= limit:
        return clients, ""
    ranked = sorted(clients, key=speed)
    return (ranked[: limit // 2] + ranked[-limit // 2:],
            f" (slowest and fastest {limit // 2} of {len(clients)})")


def _own(c: ClientFigures) -> IoFigures | None:
    """A client's main stream: the section it declares first (its entry itself when the
    phase keeps it flat: training, model loading)."""
    return next(iter(c.io.values()), None)


def _rates(c: ClientFigures, train: bool) -> list[float]:
    """The client's MiB/s columns: consumed and delivered for training, else its main
    stream's (0 for one it did not record)."""
    main = _own(c)
    mib_s = (main.mib_s if main is not None else None) or 0
    return [c.consumed_mib_s or 0, mib_s] if train else [mib_s]


def host_table(res: dict[str, Any]) -> Table:
    """Per host (MPI rank): its clients and what they moved together."""
    hosts = _typed(res).hosts
    table = Table(title=f"per host ({len(hosts)} ranks)")
    for col in ("rank", "host", "clients", "bytes", "first done MiB/s", "last done MiB/s",
                "status"):
        table.add_column(col, justify="right")
    for h in hosts:
        fd, ld = h.io.first_done, h.io.last_done
        table.add_row(str(h.rank), h.host, str(h.clients or 0), format_size(h.io.bytes or 0),
                      bare_rate(fd.mib_s if fd else 0), bare_rate(ld.mib_s if ld else 0),
                      h.status or "")
    return table


def print_result(res: dict[str, Any], folder: Any, tables: list[Table]) -> None:
    console = out_console()
    run = _typed(res)
    if run.method == METHOD_NULL:
        console.print(f"[bold red]{NO_IO}[/]", highlight=False)
    for t in tables:
        console.print(t)
    if len(run.hosts) > 1:
        console.print(host_table(run))
    print_warnings(console, res.get("warnings", []))
    console.print(f"result: {folder}/result.json", highlight=False)


# --- the other phases -----------------------------------------------------------------------

def _table(title: str, rows: list[tuple[str, str]]) -> Table:
    table = Table(title=title)
    table.add_column("figure")
    table.add_column("value", justify="right")
    for name, value in rows:
        table.add_row(name, value)
    return table


def _grid(title: str, columns: tuple[str, ...], rows: list[list[str]]) -> Table:
    table = Table(title=title)
    for col in columns:
        table.add_column(col, justify="right")
    for row in rows:
        table.add_row(*row)
    return table


def _lat(summary: Mapping[str, Any] | None, keys: tuple[str, ...] = ("p50_ns", "p99_ns")) -> str:
    summary = summary or {}
    return " / ".join(format_latency_ns(summary.get(k)) for k in keys)


def _spread3(s: Spread | Mapping[str, Any], fmt: Callable[[float], str] = bare_rate) -> str:
    """Mean / min / max, rates by default."""
    s = s if isinstance(s, Spread) else Spread.of(s)
    return " / ".join(fmt(v) for v in (s.mean, s.min, s.max))


def _typed(res: Mapping[str, Any]) -> Result:
    """The result as the typed model (the runner hands over the document it saved)."""
    return res if isinstance(res, Result) else model(res)


def _main(run: Result) -> IoFigures:
    """The phase's main stream: the section it declares first (training's reads)."""
    io = run.first()
    if io is None:
        raise AiioError(f"this {run.phase} result holds no I/O figures to show")
    return io


def _where(res: dict[str, Any], phase: str) -> str:
    return (f"{phase}: {res['workload']['workload']['name']} on {res['target']['path']} "
            f"({res['target']['fstype']}, {res['method']})")


def _verify_rows(v: VerifyFigures | None) -> list[tuple[str, str]]:
    if v is None:
        return []
    verdict = "[green]no corruption[/]" if not v.mismatches else \
        f"[red]{v.mismatches:,} corrupt block(s)[/]"
    rows = [("verify", f"{v.blocks_checked:,} blocks checked: {verdict}")]
    if v.cost_share is not None:
        rows.append(("verify cost", f"{v.checksum_s:.2f} s of checksum work, "
                     f"{v.cost_share:.1%} of the clients' I/O time"))
    for c in v.corrupt[:5]:
        rows.append(("corrupt", f"{c.file} at offset {c.offset:,}: {c.problem}"))
    return rows


def io_tables(res: dict[str, Any]) -> list[Table]:
    """The tables of a phase whose aggregate is the common one (phases.base.io_aggregate):
    both windows, the per-client spread and fairness, the main operation's latency."""
    run, phase = _typed(res), phase_of(res)
    io = _main(run)
    fd, ld, spread = io.first_done, io.last_done, io.per_client_mib_s
    rows = [
        ("clients", str(len(run.clients))),
        ("bytes", format_size(io.bytes)),
        ("aggregate, first / last done", f"{bare_rate(fd.mib_s)} / {format_rate(ld.mib_s)}"),
        ("per client MiB/s (mean / min / max)", _spread3(spread)),
        ("per client CV / Jain fairness", f"{spread.cv:.3f} / {io.jain:.3f}"),
        (f"{run.main_op} latency p50 / p99", _lat(io.latency.get(run.main_op))),
    ]
    return [_table(_where(res, phase.name), rows), client_table(res)]


def prep_tables(res: dict[str, Any]) -> list[Table]:
    """Data preparation in shards mode: read, write, metadata."""
    run = _typed(res)
    agg, rd, wr, meta = run.summary, run.section("read"), run.section("write"), run.metadata
    rows = [
        ("clients", str(len(run.clients))),
        ("samples read", f"{agg.samples:,} ({agg.samples_per_s:,.0f} samples/s)"),
        ("read, first / last done", _windows(rd)),
        ("read IOPS", f"{rd.iops:,.0f}"),
        ("write, first / last done", _windows(wr)),
        ("bytes read / written", f"{format_size(rd.bytes)} / {format_size(wr.bytes)}"),
        ("shards written", f"{agg.shards:,}"),
        ("metadata ops/s", f"{meta.ops_s:,.0f} ({meta.total:,} ops)"),
        ("read latency p50 / p99", _lat(rd.latency.get("read"))),
        ("write latency p50 / p99", _lat(wr.latency.get("write"))),
    ]
    ops = _grid("metadata operations", ("op", "count", "ops/s", "p50", "p99", "max"),
                [[op, f"{m.count:,}", f"{m.ops_s:,.0f}",
                  *_lat(m.latency, ("p50_ns", "p99_ns", "max_ns")).split(" / ")]
                 for op, m in meta.ops.items()])
    shown, some = _ends(run.clients, lambda c: c.samples_per_s)
    per = _grid(f"per client{some}", ("client", "samples/s", "read MiB/s", "read IOPS",
                                      "write MiB/s", "meta ops/s", "elapsed"),
                [[str(c.client), f"{c.samples_per_s:,.0f}",
                  bare_rate(c.io["read"].mib_s), f"{c.io['read'].iops:,.0f}",
                  bare_rate(c.io["write"].mib_s), f"{c.metadata.ops_s:,.0f}",
                  format_duration(c.elapsed_s)] for c in shown])
    may_leave_out(per, ("elapsed", "read IOPS", "meta ops/s"), SPARE_WHERE)
    return [_table(_where(res, "prep"), rows), ops, per]


def _windows(io: IoFigures) -> str:
    """'first / last done' MiB/s of one stream."""
    return f"{bare_rate(io.first_done.mib_s)} / {format_rate(io.last_done.mib_s)}"


def randrw_tables(res: dict[str, Any]) -> list[Table]:
    """The random mix: IOPS and latency of reads and writes."""
    run = _typed(res)
    agg, rd, wr = run.summary, run.section("read"), run.section("write")
    rows = [
        ("clients", str(len(run.clients))),
        ("mix", f"{format_size(agg.block_size)} blocks, {agg.read_share:.0%} reads, "
                f"{format_size(agg.file_size)} per client"),
        ("IOPS (read + write)", f"{agg.iops:,.0f} ({rd.iops:,.0f} + {wr.iops:,.0f})"),
        ("read / write MiB/s", f"{bare_rate(agg.read_mib_s)} / {bare_rate(agg.write_mib_s)}"),
        ("read latency p50 / p99", _lat(rd.latency.get("read"))),
        ("write latency p50 / p99", _lat(wr.latency.get("write"))),
        ("per client IOPS (mean / min / max)", _spread3(agg.per_client_iops, "{:,.0f}".format)),
    ] + _verify_rows(agg.verify) + ([("read loop", agg.read_loop)] if agg.read_loop else [])
    shown, some = _ends(run.clients, lambda c: c.io["read"].iops + c.io["write"].iops)
    per = _grid(f"per client{some}", ("client", "read IOPS", "write IOPS", "read p99",
                                      "write p99", "elapsed"),
                [[str(c.client), f"{c.io['read'].iops:,.0f}", f"{c.io['write'].iops:,.0f}",
                  _lat(c.io["read"].main_latency, ("p99_ns",)),
                  _lat(c.io["write"].main_latency, ("p99_ns",)),
                  format_duration(c.elapsed_s)] for c in shown])
    may_leave_out(per, ("elapsed", "write p99", "read p99"), SPARE_WHERE)
    # run as the phase these tables belong to, or as prep's mode (alone or as a stage)
    itself = get_phase(run.phase).console == "randrw_tables"
    title = "randrw" if itself else "prep randrw"
    return [_table(_where(res, title), rows), per]


def checkpoint_tables(res: dict[str, Any]) -> list[Table]:
    """Checkpoint bursts: per checkpoint, and per client."""
    run = _typed(res)
    ck = run.checkpoint
    plan = ck.plan
    scale = f" (scale {plan.scale:g} of {format_size(plan.base_bytes)})" \
        if plan.scale != 1 else ""
    rows = [
        ("checkpoint", f"{format_size(plan.total_bytes)}{scale} from {plan.source}"),
        ("clients x files", f"{plan.clients} x {plan.files_per_client}"),
        ("checkpoints done", f"{ck.completed} of {plan.count} (keep {plan.keep})"),
    ]
    if ck.completed:
        rows += [
            ("write (every shard durable)", format_rate(ck.write_mib_s)),
            ("time to persist, first / last done (mean)",
             f"{ck.persist_first_done_s.mean:.2f} / {ck.persist_last_done_s.mean:.2f} s"),
            (f"accelerator stall per checkpoint ({ck.stall_model}; mean / max)",
             f"{ck.stall_s.mean:.2f} / {ck.stall_s.max:.2f} s"),
        ]
    if ck.read_mib_s is not None:
        rows += [
            ("restore", format_rate(ck.read_mib_s)),
            ("time to restore, first / last done (mean)",
             f"{ck.restore_first_done_s.mean:.2f} / {ck.restore_last_done_s.mean:.2f} s"),
            ("restore started after the write (max)", f"{ck.restore_gap_s_max:.2f} s"),
        ]
    rows += _verify_rows(ck.verify)
    bursts = _grid("per checkpoint", ("n", "write MiB/s", "persist first", "persist last",
                                      "fsync p99", "gap", "read MiB/s", "restore last"),
                   [_burst_row(p, run) for p in ck.bursts])
    shown, some = _ends(run.clients, lambda c: c.totals["write"].mib_s or 0)
    per = _grid(f"per client (all checkpoints){some}", (
                    "client", "write MiB/s", "write s", "read MiB/s", "read s", "elapsed"),
                [[str(c.client), bare_rate(c.totals["write"].mib_s),
                  f"{c.totals['write'].elapsed_s:.2f}", bare_rate(c.totals["read"].mib_s),
                  f"{c.totals['read'].elapsed_s:.2f}", format_duration(c.elapsed_s)]
                 for c in shown])
    may_leave_out(per, ("elapsed", "write s", "read s"), SPARE_WHERE)
    return [_table(_where(res, "checkpoint"), rows), bursts, per]


def _burst_row(p: Burst, run: Result) -> list[str]:
    """One checkpoint: its write burst and, when it was restored, its read burst."""
    w, r = (run.section(f"checkpoint.{p.n}.{side}") for side in ("write", "read"))
    return [str(p.n), bare_rate(w.mib_s), f"{w.first_done_s:.2f} s",
            f"{w.last_done_s:.2f} s", _lat(w.latency.get("fsync"), ("p99_ns",)),
            f"{p.restore_gap_s:.2f} s" if r else "-",
            bare_rate(r.mib_s) if r else "-", f"{r.last_done_s:.2f} s" if r else "-"]


def load_tables(res: dict[str, Any]) -> list[Table]:
    """Model loading: when the first and the last replica were ready, per-replica MiB/s."""
    run = _typed(res)
    ld, io = run.model_load, _main(run)
    weights = ld.weights
    scale = f" (scale {weights.scale:g} of {format_size(weights.base_bytes)})" \
        if weights.scale != 1 else ""
    rows = [
        ("model weights", f"{format_size(weights.total_bytes)}{scale} in "
                          f"{weights.files} file(s), from {weights.source}"),
        ("replicas", f"{ld.replicas}" + (f", staggered {weights.stagger_s:g} s apart"
                                         if weights.stagger_s else "")),
        ("first replica ready", f"{ld.first_ready_s:.2f} s"),
        ("all replicas ready", f"{ld.last_ready_s:.2f} s"),
        ("aggregate, first / last done", _windows(io)),
        ("per replica MiB/s (mean / min / max)", _spread3(ld.per_replica_mib_s)),
        ("time to load (mean / min / max)", _spread3(ld.load_s, "{:.2f} s".format)),
        ("read latency p50 / p99", _lat(io.latency.get("read"))),
    ] + _verify_rows(ld.verify)
    shown, some = _ends(run.clients, lambda c: -c.load_s)  # the longest load is the slowest
    per = _grid(f"per replica{some}", ("replica", "start", "load time", "MiB/s", "p99",
                                       "ready at"),
                [[str(c.client), f"{c.start_s:.2f} s",
                  f"{c.load_s:.2f} s", bare_rate(c.io["read"].mib_s),
                  _lat(c.io["read"].main_latency, ("p99_ns",)),
                  f"{c.elapsed_s:.2f} s"] for c in shown])
    may_leave_out(per, ("start", "p99", "ready at"), SPARE_WHERE)
    return [_table(_where(res, "load"), rows), per]


def train_checkpoint_table(run: Result) -> Table:
    """What each checkpoint during training cost: stall, read dip, AU lost."""
    ck, au = run.checkpoint, _main(run).au
    return _grid(
        f"checkpoints during training ({format_size(ck.plan.total_bytes)} each, "
        f"{ck.stall_model.replace('_', '-')} stall; AU "
        f"{_pct(au.mean)} with them, {_pct(ck.au_without_checkpoints_mean)} without)",
        ("n", "window", "accel. s lost", "write MiB/s", "read MiB/s during / rest", "read dip",
         "AU during / rest", "AU lost"),
        [[str(p.n), f"{p.window_s:.2f} s", f"{p.accelerator_s_lost:.2f}",
          bare_rate(run.section(f"checkpoint.{p.n}.write").mib_s),
          f"{bare_rate(p.read_mib_s_during)} / {bare_rate(p.read_mib_s_baseline)}",
          f"{p.read_dip:.0%}", f"{_pct(p.au_during, 0)} / {_pct(p.au_baseline, 0)}",
          _pct(p.au_lost, 0)] for p in ck.bursts])


def all_tables(res: dict[str, Any]) -> list[Table]:
    """The lifecycle: one headline per stage, then what checkpoints cost during training."""
    run, tables = _typed(res), []
    for name in phase_of(res).stages:
        stage = run.stage(name)  # laid out as that phase
        tables.append(phase_tables(stage, name)[0])
        if stage.checkpoint is not None:  # training with checkpoints
            tables.append(train_checkpoint_table(stage))
    if run.summary.verify is not None:
        tables.append(_table("verify", _verify_rows(run.summary.verify)))
    return tables


def phase_tables(res: dict[str, Any], stage: str | None = None) -> list[Table]:
    """The summary tables for a result of any phase (`stage`: one stage of a lifecycle
    result), drawn by the function the phase names (`Phase.console`)."""
    phase = phase_of(res, stage)
    tables = getattr(sys.modules[__name__], phase.console)(res)
    if "hero" in res and not phase.stages:  # the lifecycle shows it per stage
        tables[0].add_row("% of fio hero", res["hero"].get("text", ""))
    return tables


def fio_table(res: dict[str, Any]) -> Table:
    """One row per hero test: aggregate, per-job spread, fairness and latency."""
    opts = res["options"]
    mode = ("requests, one object each" if res.get("method") == METHOD_S3
            else "O_DIRECT" if opts["direct"] else "buffered")
    table = Table(title=f"fio hero suite ({res.get('fio_version')}): {res['target']['path']} "
                  f"({res['target']['fstype']}, {mode}, "
                  f"{opts['clients']} jobs, {opts['ioengine']} iodepth {opts['iodepth']})")
    for col in ("test", "MiB/s", "IOPS", "per job MiB/s min / max", "Jain", "p50", "p99"):
        table.add_column(col, justify="left" if col == "test" else "right")
    for name, test in _typed(res).io.items():
        low, high = (s.min, s.max) if (s := test.per_client_mib_s) else (0, 0)
        table.add_row(name, bare_rate(test.mib_s), f"{test.figures['iops']:,.0f}",
                      f"{bare_rate(low)} / {bare_rate(high)}",
                      f"{test.jain or 0:.3f}", format_latency_ns(test.main_p("p50")),
                      format_latency_ns(test.main_p("p99")))
    return table
