"""The terminal side of a run: live progress bar, notes, and the summary tables (rich)."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Callable, Iterable, Mapping
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
from rich.text import Text

from aiio import engines
from aiio.cache_methods import METHOD_NULL, METHOD_S3
from aiio.errors import AiioError
from aiio.honesty import NO_IO
from aiio.phases import get_phase, phase_of
from aiio.results.beside import (
    HeroFigures,
    Placement,
    shared_words,
)
from aiio.results.inserts import InsertFigures
from aiio.results.kvcache import KvFigures, Percentiles
from aiio.results.result import (
    AuFigures,
    Burst,
    ClientFigures,
    IoFigures,
    Result,
    ResultWarning,
    RunSummary,
    Spread,
    VerifyFigures,
    model,
)
from aiio.results.steadiness import Verdict
from aiio.results.vector import Quantiles, VectorFigures
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
        fio = HeroFigures.of(hero)
        self.hero = Hero(str(fio.test), fio.fio_mib_s) \
            if fio is not None and fio.fio_mib_s is not None else None
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


def print_hanging(console: Console, lead: str, text: str, style: str = "",
                  indent: int = 4) -> None:
    """`lead` then `text`, wrapped to the console's width with every continuation line
    indented: on a narrow terminal a wrapped sentence never reads as a new item. `style`
    marks the lead's first word."""
    lines = textwrap.wrap(lead + text, width=max(console.width, 40),
                          subsequent_indent=" " * indent, break_on_hyphens=False,
                          break_long_words=False)
    out = Text("\n".join(lines))
    if style:
        start = len(lead) - len(lead.lstrip())
        out.stylize(style, start, start + len(lead.split()[0]))
    console.print(out, highlight=False, soft_wrap=True)


def print_warnings(console: Console,
                   warnings: Iterable[ResultWarning | Mapping[str, Any]]) -> None:
    """Each warning as 'warning (code): message' (a result's typed, or one made on the way)."""
    for w in warnings:
        w = w if isinstance(w, ResultWarning) else ResultWarning.of(w)
        print_hanging(console, f"warning ({w.code}): ", w.message, "bold yellow")


def train_tables(res: dict[str, Any]) -> list[Table]:
    """Headline table and per-client table for a training run."""
    run = _typed(res)
    agg, io = run.summary, _main(run)
    head = Table(title=_where(res, "train"))
    head.add_column("figure")
    head.add_column("value", justify="right")
    fd, ld, spread = io.first_done, io.last_done, io.per_client_mib_s
    shared = run.shared_processes
    rows = [
        ("clients", f"{len(run.clients)}" if shared is None else
         f"{len(run.clients):,} in {shared[0]:,} processes, {shared[1]:,} at most"),
        ("consumed, first done", f"{format_rate(fd.mib_s)} over {fd.seconds:.2f} s"),
        ("consumed, last done", f"{format_rate(ld.mib_s)} over {ld.seconds:.2f} s"),
        *_delivered_rows(run),
        ("per client consumed MiB/s (mean / min / max)", _spread3(spread)),
        ("per client CV / Jain fairness", f"{spread.cv:.3f} / {io.jain:.3f}"),
        ("samples/s", f"{agg.samples_per_s:,.1f}"),
        *_au_rows(io.au),
        (f"{run.main_op} latency p50 / p99 / max",
         _lat(io, run.main_op, ("p50", "p99", "max"))),
        ("demand per client (sample bytes)", _demand(agg)),
    ]
    placed = Placement.of(run)
    for name, value in rows + placement_rows(placed):
        head.add_row(name, value)
    if run.checkpoint is not None:
        return [head, train_checkpoint_table(run), client_table(res), *placement_tables(placed)]
    return [head, client_table(res), *placement_tables(placed)]


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
        moved = c.consumed_bytes if train else main.bytes if main is not None else None
        table.add_row(f"{c.client}{f' @{c.rank}' if ranked else ''}",
                      *(bare_rate(r) for r in _rates(c, train)), format_size(moved or 0),
                      f"{c.au:.1%}" if c.au is not None else "-",
                      f"{c.wait_s:.2f}" if c.wait_s is not None else "-",
                      *(format_latency_ns(main.main_p(q) if main is not None else None)
                        for q in ("p50", "p99")),
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
        rates = h.rates()
        table.add_row(str(h.rank), h.host, str(h.clients or 0), format_size(h.io.bytes or 0),
                      _host_rates([(name, fd) for name, fd, _ in rates]),
                      _host_rates([(name, ld) for name, _, ld in rates]), h.status or "")
    return table


def _host_rates(windows: list[tuple[str, Any]]) -> str:
    """A host's rate over one window, or each of its streams' by name ("read 189.4 / write
    190.3"): a host of a phase that reads and writes has no window of its own."""
    return " / ".join(f"{name} {bare_rate(w.mib_s if w else 0)}".strip()
                      for name, w in windows)


def print_result(res: dict[str, Any], folder: Any, tables: list[Table]) -> None:
    console = out_console()
    run = _typed(res)
    if run.method == METHOD_NULL:
        console.print(f"[bold red]{NO_IO}[/]", highlight=False)
    for t in tables:
        console.print(t)
    if len(run.hosts) > 1:
        console.print(host_table(run))
    print_warnings(console, run.warnings)
    for what, hero in _heroes(run):
        command = _hero_text(hero)[1]
        if command:  # whole on one line, to be pasted: a terminal folds it, never a word wrap
            console.print(f"fio, to pair {what} with: {command}", highlight=False,
                          soft_wrap=True)
    console.print(f"result: {folder}/result.json", highlight=False, soft_wrap=True)


def _heroes(run: Result) -> list[tuple[str, HeroFigures | None]]:
    """The run's fio pairing, or each stage's for a lifecycle (its tables show them apart)."""
    stages = run.stages  # from the result's own layout: a fio result has no phase
    if not stages:
        return [("this run", HeroFigures.of_run(run))]
    return [(f"the {name} stage", HeroFigures.of_run(run.stage(name))) for name in stages]


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


def _lat(io: IoFigures, op: str, quantiles: tuple[str, ...] = ("p50", "p99")) -> str:
    """An operation's latency quantiles in a section, 'p50 / p99' by default."""
    return " / ".join(format_latency_ns(io.p(op, q)) for q in quantiles)


def _own_p99(io: IoFigures) -> str:
    """A client's p99 latency, of its section's main operation."""
    return format_latency_ns(io.main_p("p99"))


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
    # the engine only when asked for: its calls, not the target's own engine's, made the figures
    asked = engines.asked_of(res)
    return (f"{phase}: {res['workload']['workload']['name']} on {res['target']['path']} "
            f"({res['target']['fstype']}, {res['method']}"
            + (f", engine {asked})" if asked else ")"))


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
        (f"{run.main_op} latency p50 / p99", _lat(io, run.main_op)),
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
        ("read latency p50 / p99", _lat(rd, "read")),
        ("write latency p50 / p99", _lat(wr, "write")),
    ]
    ops = _grid("metadata operations", ("op", "count", "ops/s", "p50", "p99", "max"),
                [[op, f"{m.count:,}", f"{m.ops_s:,.0f}",
                  *(format_latency_ns(m.p(q)) for q in ("p50", "p99", "max"))]
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
        ("read latency p50 / p99", _lat(rd, "read")),
        ("write latency p50 / p99", _lat(wr, "write")),
        ("per client IOPS (mean / min / max)", _spread3(agg.per_client_iops, "{:,.0f}".format)),
    ] + _verify_rows(agg.verify) + ([("read loop", agg.read_loop)] if agg.read_loop else [])
    shown, some = _ends(run.clients, lambda c: c.io["read"].iops + c.io["write"].iops)
    per = _grid(f"per client{some}", ("client", "read IOPS", "write IOPS", "read p99",
                                      "write p99", "elapsed"),
                [[str(c.client), f"{c.io['read'].iops:,.0f}", f"{c.io['write'].iops:,.0f}",
                  _own_p99(c.io["read"]), _own_p99(c.io["write"]),
                  format_duration(c.elapsed_s)] for c in shown])
    may_leave_out(per, ("elapsed", "write p99", "read p99"), SPARE_WHERE)
    # run as the phase these tables belong to, or as prep's mode (alone or as a stage)
    itself = get_phase(run.phase).console == "randrw_tables"
    title = "randrw" if itself else "prep randrw"
    return [_table(_where(res, title), rows), per]


def _query_rate(v: VectorFigures) -> tuple[str, str]:
    """Queries/s and what it counted: those done within the duration, of every query
    answered (a run by count, or saved before: every query)."""
    if v.queries_in_duration is None or v.rate_window_s is None:
        return ("queries/s", f"{v.queries_per_s:,.1f} ({v.queries:,} queries)")
    return ("queries/s (done in duration)",
            f"{v.queries_per_s:,.1f} ({v.queries_in_duration:,} of {v.queries:,} queries)")


def _or_dash(value: float | None, spec: str) -> str:
    """A figure, or '-' where there is none (no query answered: nothing to divide by)."""
    return "-" if value is None else format(value, spec)


def _per_query_bytes(v: VectorFigures) -> str:
    if v.bytes_per_query is None:
        return "- (no query answered)"
    return (f"{format_size(v.bytes_per_query)} "
            f"({_or_dash(v.read_amplification, ',.1f')}x the vectors returned)")


def vector_tables(res: dict[str, Any]) -> list[Table]:
    """Vector search: queries/s, query latency, reads per query, beside MLPerf's columns."""
    run = _typed(res)
    v, ix, io = run.vector, run.vector_index, _main(run)
    if v is None:
        raise AiioError("this vector result holds no vector search figures to show")
    lat, inserts = v.latency_ms.ms, run.inserts
    loop = (f"open loop, {v.offered_per_s:,.1f} offered/s" if v.offered_per_s
            else "closed loop")
    rows = [
        ("index", f"{ix.vectors:,} x {ix.dimensions} x {ix.element_size} B, "
                  f"R {ix.max_degree}, {ix.graph}, {format_size(ix.file_size)}"),
        ("search", f"W {ix.beam_width}, L {ix.search_list}, top {ix.top_k}; {loop}"),
        _query_rate(v),
        *([("steady or overloaded", _steadiness(v.verdict))] if v.verdict else []),
        ("query latency p50 / p95 / p99 / p99.9",
         " / ".join("-" if lat[k] is None else f"{lat[k]:.2f} ms"
                    for k in ("p50", "p95", "p99", "p999"))),
        ("hops / reads per query", f"{_or_dash(v.hops_per_query, '.1f')} / "
                                   f"{_or_dash(v.reads_per_query, '.1f')}"),
        ("bytes read per query", _per_query_bytes(v)),
        ("storage IOPS, reads in flight", f"{v.storage_iops:,.0f}, "
                                          f"{v.reads_in_flight:.1f}"),
        ("read MiB/s, first / last done", _windows(io)),
        _node_read_latency(io, run.main_op),
    ]
    if v.requests_per_query is not None:
        rows.append(("GET requests per query", f"{v.requests_per_query:.1f}"))
    if v.offered_per_s:
        rows.append(("queries waiting at arrival (mean / max)",
                     f"{v.waiting_mean:.1f} / {v.waiting_max}"
                     # a search saved before its verdict was recorded said it here
                     + ("  OVERLOADED" if v.overloaded and not v.verdict else "")))
        rows.append(("arrived, never begun", f"{v.unanswered:,}"))
    per = _grid("per client", ("client", "queries/s", "p99"),
                [[str(c.client), f"{qps:,.1f}", "-" if p99 is None else f"{p99:.2f} ms"]
                 for c, qps, p99 in zip(run.clients, v.per_client_queries_per_s,
                                        v.per_client_p99_ms, strict=False)])
    if inserts is None:
        return [_table(_where(res, "vector"), rows), per]
    return [_table(_where(res, "vector"), rows), per, *_insert_tables(res, inserts)]


def _ms(value: float | None) -> str:
    """A latency in ms, or in s from a second (an insert's freshness takes seconds)."""
    if value is None:
        return "-"
    return f"{value:.2f} ms" if value < 1000 else f"{value / 1000:.2f} s"


def _p50_p99(pct: Quantiles) -> str:
    return " / ".join(_ms(pct.ms[q]) for q in ("p50", "p99"))


def insert_tables(res: dict[str, Any]) -> list[Table]:
    """The vector insert stream's tables (none for a run without one): the report's too."""
    inserts = _typed(res).inserts
    return [] if inserts is None else _insert_tables(res, inserts)


def _cpu_share(share: float | None) -> str:
    return "" if share is None else f"; {share * 100:.0f} % of their time on the client's CPU"


def _fresh(ins: InsertFigures) -> str:
    """The merged inserts' freshness; with inserts left unmerged, what every insert's is at
    least (an unmerged one at its age at the end): the merged ones' alone reads low."""
    merged = _p50_p99(ins.fresh_ms)
    if not ins.unmerged:
        return merged
    if all(q is None for q in ins.fresh_at_least_ms.ms.values()):  # saved before it was recorded
        return f"{merged} merged (the {ins.unmerged:,} unmerged left out)"
    return (f"{merged} merged; {_p50_p99(ins.fresh_at_least_ms)} at least with the "
            f"{ins.unmerged:,} unmerged")


def _insert_rate(ins: InsertFigures) -> tuple[str, str]:
    """Inserts/s offered and made durable, and what the durable rate counted: those made
    durable within the duration (saved before: every one, over the slowest client's window)."""
    rates = f"{ins.offered_per_s:,.1f} / {ins.done_per_s:,.1f}"
    if ins.done_in_duration is None or ins.rate_window_s is None:
        return ("inserts/s offered / durable", f"{rates} ({ins.done:,} of {ins.arrived:,} "
                "arrived, every one durable, over the slowest client's window)")
    return ("inserts/s offered / durable in duration",
            f"{rates} ({ins.done_in_duration:,} of {ins.done:,} durable in duration; "
            f"{ins.arrived:,} arrived)")


def _insert_tables(res: dict[str, Any], ins: InsertFigures) -> list[Table]:
    """The insert stream beside the queries: durability, merges, freshness, read-while-write."""
    rows = [
        _insert_rate(ins),
        *([("insert log kept up", _steadiness(ins.verdict))] if ins.verdict else []),
        ("insert durable p50 / p99", _p50_p99(ins.durable_ms)),
        ("insert log", f"{format_size(ins.log_bytes)} in {format_size(ins.record_size)} "
                       f"records, {ins.log_syncs:,} fsyncs"),
        ("merges done / cut by the end", f"{ins.merges} / {ins.merges_cut}: read "
                                         f"{format_size(ins.merge_read_bytes)}, wrote "
                                         f"{format_size(ins.merge_write_bytes)}"
                                         + _cpu_share(ins.merge_cpu_share)),
        ("write amplification", "- (no insert durable)" if ins.write_amplification is None
         else f"{ins.write_amplification:,.1f}x the inserted vectors"),
        ("query p99 merging / not", f"{_ms(ins.query_p99_merging_ms)} "
                                    f"({ins.queries_merging:,}) / "
                                    f"{_ms(ins.query_p99_calm_ms)} ({ins.queries_calm:,})"),
        ("fresh in the disk index p50 / p99", _fresh(ins)),
        ("inserts not merged at the end", f"{ins.unmerged:,}"),
        ("inserts waiting at arrival (mean / max)", f"{ins.waiting_mean:,.1f} / "
                                                    f"{ins.waiting_max:,}"),
    ]
    merges = _grid("merges", ("client", "start", "took", "inserts", "read MiB/s",
                              "write MiB/s"),
                   [[str(m.client), format_duration(m.start_s), format_duration(m.duration_s)
                     + ("" if m.done else " (cut)"), f"{m.inserts:,}",
                     f"{m.read_mib_per_s:,.1f}", f"{m.write_mib_per_s:,.1f}"]
                    for m in ins.merge_list])
    return [_table(_where(res, "vector inserts"), rows), *([merges] if ins.merge_list else [])]


def _node_read_latency(io: IoFigures, main_op: str) -> tuple[str, str]:
    """A node read's latency: on a bucket the GET's, request to body closed (its body's chunks,
    timed as "read", are a small part of it)."""
    if "get" in io.latency:
        return ("GET latency p50 / p99", _lat(io, "get"))
    return ("read latency p50 / p99", _lat(io, main_op))


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
    placed = Placement.of(run)
    tables = [_table(_where(res, "checkpoint"), rows + placement_rows(placed)), bursts, per]
    return tables + placement_tables(placed)


def placement_rows(placed: Placement | None) -> list[tuple[str, str]]:
    """A row saying why the placement is not known, where the run asked and it is not."""
    return [("placement", f"not known: {placed.reason}")] if placed and not placed.known \
        else []


def placement_tables(placed: Placement | None) -> list[Table]:
    return [placement_table(placed)] if placed and placed.known else []


def placement_table(placed: Placement) -> Table:
    """Where the bytes went: each server's bytes, files, clients and time busy; the hot one;
    how long clients shared a server while another idled."""
    return _grid(f"where the bytes went ({placed.what}; hot: {placed.hot}"
                 f"{shared_words(placed)})",
                 ("server", "bytes", "files", "clients", "busy"),
                 [[name, format_size(s.bytes), str(s.files),
                   ", ".join(map(str, s.clients)) or "-", f"{s.busy_s:.2f} s"]
                  for name, s in zip(server_names([s.server for s in placed.servers],
                                                   out_console().width),
                                     placed.servers, strict=True)])


# The placement table's columns beside the server's name, with the borders
BESIDE_SERVER = 50


def server_names(names: list[str], width: int) -> list[str]:
    """The servers' names as a `width`-column console tells them apart: where one would be
    cut, the part every name begins with, up to its last '/' or ':', is shown as '…' (brick
    folders of one volume differ near their end, which a cut at the right hides)."""
    if len(names) < 2 or max(map(len, names)) <= width - BESIDE_SERVER:
        return names
    common = os.path.commonprefix(names)
    cut = max(common.rfind("/"), common.rfind(":"))
    return names if cut <= 0 else ["…" + name[cut:] for name in names]


def _burst_row(p: Burst, run: Result) -> list[str]:
    """One checkpoint: its write burst and, when it was restored, its read burst."""
    w, r = (run.section(f"checkpoint.{p.n}.{side}") for side in ("write", "read"))
    return [str(p.n), bare_rate(w.mib_s), f"{w.first_done_s:.2f} s",
            f"{w.last_done_s:.2f} s", _lat(w, "fsync", ("p99",)),
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
        ("read latency p50 / p99", _lat(io, "read")),
    ] + _verify_rows(ld.verify)
    shown, some = _ends(run.clients, lambda c: -c.load_s)  # the longest load is the slowest
    per = _grid(f"per replica{some}", ("replica", "start", "load time", "MiB/s", "p99",
                                       "ready at"),
                [[str(c.client), f"{c.start_s:.2f} s",
                  f"{c.load_s:.2f} s", bare_rate(c.io["read"].mib_s),
                  _own_p99(c.io["read"]),
                  f"{c.elapsed_s:.2f} s"] for c in shown])
    may_leave_out(per, ("start", "p99", "ready at"), SPARE_WHERE)
    placed = Placement.of(run)
    return [_table(_where(res, "load"), rows + placement_rows(placed)), per,
            *placement_tables(placed)]


def _steadiness(v: Verdict) -> str:
    """Steady, overloaded, or not judged with its reason."""
    if v.overloaded:
        return "[red]overloaded[/] (see the warning)"
    if v.judged:
        return "[green]steady[/]"
    return "[yellow]not judged[/]: " + "; ".join(v.evidence)


def kvcache_tables(res: dict[str, Any]) -> list[Table]:
    """KV-cache offload: bandwidth both ways, tiers, request latency, goals, the verdict."""
    run = _typed(res)
    kv, rd, wr = run.kvcache, run.section("read"), run.section("write")
    if kv is None:
        raise AiioError("this kvcache result holds no KV-cache figures to show")
    st = kv.storage_time
    rows = [
        ("model", f"{kv.model}, {kv.bytes_per_token:,} B/token, blocks of "
                  f"{format_size(kv.block_bytes)}"),
        ("load", f"{kv.load}, {len(run.clients)} clients x {kv.users_per_client} users"),
        *_kv_rates(kv),
        ("read, first / last done", _windows(rd)),
        ("write, first / last done", _windows(wr)),
        ("per request read / written", f"{format_size(kv.read_bytes_per_request)} / "
                                       f"{format_size(kv.write_bytes_per_request)}"),
        ("hits GPU / host / storage", " / ".join(f"{kv.hit_rate[t]:.1%}" for t in
                                                 ("gpu", "host", "storage"))),
        ("storage time p50 / p95 / p99", _ms3(st.pooled, ("p50", "p95", "p99"))),
        ("max of client P95s (MLPerf)", format_latency_ns(_ns(st.max_client_p95_ms))),
        ("latency p50 / p95 (+ queue)", _ms3(kv.latency.pooled, ("p50", "p95"))),
        ("block read / write p95", f"{_ms3(kv.block_read.pooled, ('p95',))} / "
                                   f"{_ms3(kv.block_write.pooled, ('p95',))}"),
    ] + [(f"within {g.name} {g.goal_ms:g} ms",
          f"{g.share_within:.1%}, P95 {'met' if g.met else 'missed'}")
         for g in kv.goals]
    rows.append(("verdict", _steadiness(kv.verdict)))
    # the aggregate keeps each client's percentiles in the clients' order
    each = {id(c): p for c, p in zip(run.clients, st.per_client, strict=False)}
    shown, some = _ends(run.clients, lambda c: c.io["read"].mib_s)
    per = _grid(f"per client{some}", ("client", "read MiB/s", "write MiB/s", "storage p50 / "
                                      "p95", "elapsed"),
                [[str(c.client), bare_rate(c.io["read"].mib_s), bare_rate(c.io["write"].mib_s),
                  _ms3(each.get(id(c), Percentiles.from_dict({})), ("p50", "p95")),
                  format_duration(c.elapsed_s)] for c in shown])
    return [_table(_where(res, "kvcache"), rows), per]


def _kv_rates(kv: KvFigures) -> list[tuple[str, str]]:
    """Requests served, and the rates of those done within the duration, over it."""
    if kv.requests_in_duration is None:  # saved before the rates were the duration's
        return [("requests", f"{kv.requests:,} ({kv.requests_per_s:,.1f}/s), "
                             f"{kv.tokens_per_s:,.0f} tokens/s")]
    return [("requests served (done in duration)",
             f"{kv.requests:,} ({kv.requests_in_duration:,})"),
            ("requests/s, tokens/s (in duration)",
             f"{kv.requests_per_s:,.1f}, {kv.tokens_per_s:,.0f}")]


def _ns(ms: float | None) -> float | None:
    return None if ms is None else ms * 1e6


def _ms3(fig: Percentiles, quantiles: tuple[str, ...]) -> str:
    """Latencies recorded in ms, as the console shows every latency."""
    return " / ".join(format_latency_ns(fig.ns(q)) for q in quantiles)


def train_checkpoint_table(run: Result) -> Table:
    """What each checkpoint during training cost: stall, read dip, AU lost."""
    ck, au = run.checkpoint, _main(run).au
    # a checkpoint after the loaders read the whole dataset has no read rate to dip
    done = ("; read dip -: the loaders had finished the dataset"
            if any(p.read_dip is None for p in ck.bursts) else "")
    return _grid(
        f"checkpoints during training ({format_size(ck.plan.total_bytes)} each, "
        f"{ck.stall_model.replace('_', '-')} stall; AU "
        f"{_pct(au.mean)} with them, {_pct(ck.au_without_checkpoints_mean)} without{done})",
        ("n", "window", "accel. s lost", "write MiB/s", "read MiB/s during / rest", "read dip",
         "AU during / rest", "AU lost"),
        [[str(p.n), f"{p.window_s:.2f} s", f"{p.accelerator_s_lost:.2f}",
          bare_rate(run.section(f"checkpoint.{p.n}.write").mib_s),
          f"{bare_rate(p.read_mib_s_during)} / {bare_rate(p.read_mib_s_baseline)}",
          _pct(p.read_dip, 0), f"{_pct(p.au_during, 0)} / {_pct(p.au_baseline, 0)}",
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
    hero = HeroFigures.of_run(_typed(res))
    if hero is not None and not phase.stages:  # the lifecycle shows it per stage
        tables[0].add_row("% of fio hero", _hero_text(hero)[0])
    return tables


HERO_RUN = "; run: "  # the hero text's command to make a fio result it can pair with


def _hero_text(hero: HeroFigures | None) -> tuple[str, str]:
    """The hero's text without its fio command, and the command ('' when there is none)."""
    reason, _, command = (hero.text if hero is not None else "").partition(HERO_RUN)
    return reason, command


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
        table.add_row(name, bare_rate(test.mib_s), f"{test.iops:,.0f}",
                      f"{bare_rate(low)} / {bare_rate(high)}",
                      f"{test.jain or 0:.3f}", format_latency_ns(test.main_p("p50")),
                      format_latency_ns(test.main_p("p99")))
    return table
