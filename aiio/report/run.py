"""The report of one run: the verdict and headline figures first, then warnings, what was
measured, clients, time series, latency, accelerator utilization, and anything else the phase
recorded."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aiio.cache_methods import METHOD_NULL
from aiio.honesty import NO_IO
from aiio.report import html as h
from aiio.report import series as sr
from aiio.report.bandwidth import bandwidth_section, timeline_section
from aiio.report.common import (
    guarded,
    header,
    measured_section,
    missing_notice,
    other_section,
    warnings_section,
)
from aiio.report.hosts import hosts_section
from aiio.report.kvcache import kvcache_section
from aiio.report.latency import latency_section
from aiio.report.parts import aggregate_sections, client_subsections
from aiio.report.placement import run_section as placement_section
from aiio.report.verdict import run_verdict
from aiio.results import charts
from aiio.results.beside import HeroFigures, MonitorFigures, damaged_parts
from aiio.results.markup import Html
from aiio.results.result import (
    ClientFigures,
    IoFigures,
    Result,
    RunSummary,
    Window,
    dig,
    model,
    recorded_clients,
)

EXPECTED = {
    "target": "the target and its filesystem",
    "workload": "the workload's parameters",
    "environment": "the client machine (host, CPUs, RAM, kernel, versions)",
    "method": "how the page cache was defeated",
    "clients": "per-client figures, time series and latency (no client reported)",
    "aggregate": "aggregate figures (the run ended before they were computed)",
    "monitor": "CPU, block-device and network use during the run",
}
KNOWN = {"schema", "io", "kind", "id", "phase", "status", "error", "started", "finished",
         "workload", "options", "clients_requested", "environment", "target", "method", "clients",
         "aggregate", "warnings", "monitor", "saved_at", "hero", "hosts", "split",
         "engine", "ranks", "timing"}  # shown in "What was measured"
TOP_CLIENTS = 16  # per-step wait chart: more clients than this would be unreadable


def title(res: Mapping[str, Any]) -> str:
    res = clean(res)
    name = dig(res, "workload", "workload", "name", default="?")
    n = len(res.get("clients") or [])
    where = dig(res, "target", "path")
    on = f" on {where} ({dig(res, 'target', 'fstype', default='?')})" if where else ""
    return f"aiio {res.get('phase', '?')} run: {name}, {n} client{'s' * (n != 1)}{on}"


def clean(res: Mapping[str, Any]) -> dict[str, Any]:
    """The result with clients and warnings as lists (anything else counts as missing)."""
    out = dict(res)
    got = res.get("clients")
    out["clients"] = [c for c in got if isinstance(c, Mapping)] if isinstance(got, list) else []
    got = res.get("warnings")
    out["warnings"] = got if isinstance(got, list) else []
    return out


def no_io_notice(res: Mapping[str, Any]) -> Html:
    """A null-method run moved no byte: said before any figure."""
    return h.notice("fail", NO_IO) if res.get("method") == METHOD_NULL else Html("")


def render_body(res: Mapping[str, Any]) -> list[Html]:
    """Every section of a run report: the answer, the reasons to doubt it and the headline
    figures first, the configuration after them; each survives damage to the others."""
    res = model(clean(res))  # typed once: every section reads the same model
    return [
        header(res, title(res)),
        no_io_notice(res),
        guarded("verdict", run_verdict, res),
        warnings_section(res.get("warnings") or [], "run", res.get("status") == "ok"),
        missing_notice(res, EXPECTED),
        # the KV cache's answer (steady, overloaded, not judged) before its figures
        guarded("kv cache", kvcache_section, res),
        guarded("headline", headline_section, res),
        guarded("vector inserts", vector_inserts_section, res),
        guarded("hero", hero_section, res),
        guarded("measured", measured_section, res, clients_line(res)),
        guarded("hosts", hosts_section, res),
        guarded("placement", placement_section, res),
        guarded("clients", clients_section, res),
        guarded("bandwidth", bandwidth_section, res),
        guarded("timeline", timeline_section, res),
        guarded("latency", latency_section, res),
        guarded("accelerator utilization", training_section, res),
        guarded("monitor", monitor_section, res),
        guarded("other", other_section, res, KNOWN),
    ]


def clients_line(res: Mapping[str, Any]) -> str:
    got = len(res.get("clients") or [])
    asked = recorded_clients(res)  # none recorded: the page names no count asked for
    hosts = sorted({str(c.get("host")) for c in res.get("clients") or [] if c.get("host")})
    text = f"{got} reported" + (f" of {asked} requested" if asked not in (None, got) else "")
    return text + (f" on {len(hosts)} host(s): {', '.join(hosts[:8])}" if hosts else "")


# --- headline -----------------------------------------------------------------------------

def _window(w: Window | None) -> str:
    if w is None:
        return h.MISSING
    return f"{h.mib_s(w.mib_s)} over {h.seconds(w.seconds)} ({h.size(w.bytes)})"


def io_pairs(io: IoFigures, label: str = "") -> list[tuple[str, str]]:
    """First done, last done, spread and fairness of one kind of I/O."""
    damaged = damaged_parts(io)
    if damaged:
        raise ValueError(f"its {' and '.join(damaged)} recorded no object of figures")
    spread = io.per_client_mib_s
    label = f"{label} " if label else ""
    rows = [
        (f"{label}aggregate, first done (all clients running)", _window(io.first_done)),
        (f"{label}aggregate, last done (whole run)", _window(io.last_done)),
        (f"{label}bytes moved / operations", f"{h.size(io.bytes)} / {h.number(io.ops)} ops"),
        (f"{label}per client mean / min / max", " / ".join(
            h.mib_s(v) for v in ((spread.mean, spread.min, spread.max) if spread else
                                 (None,) * 3))),
        (f"{label}per client coefficient of variation",
         h.number(spread.cv if spread else None, 3)),
    ]
    if io.jain is not None:
        rows.append((f"{label}Jain's fairness index (1 = all equal)", h.number(io.jain, 3)))
    for op in io.latency:
        rows.append((f"{label}{op} latency p50 / p99 / max", " / ".join(
            h.latency(io.p(op, q)) for q in ("p50", "p99", "max"))))
    return rows


def training_pairs(beside: IoFigures | RunSummary, label: str = "") -> list[tuple[str, Any]]:
    """Samples per second, AU against its goal and its verdict, the demand per client: the
    figures recorded beside training's reads (or in the run's aggregate)."""
    au = beside.au
    if au is None:
        return []
    label = f"{label} " if label else ""
    below = list(au.below_goal)
    if au.passed is None and au.note:  # compute 0, or no measured step
        verdict = h.join([h.badge("n/a"), f" {au.note}"])
    else:
        verdict = h.join([h.badge("pass" if au.passed else "fail"),
                          "" if au.passed else
                          f" {len(below)} client(s) below the goal: {h.plain(below[:20])}"])
    return [
        (f"{label}samples per second", h.number(beside.samples_per_s, 1, "samples/s")),
        (f"{label}AU mean / min (goal)", f"{h.pct(au.mean)} / {h.pct(au.min)} "
                                         f"({h.pct(au.goal, 0)})"),
        (f"{label}AU verdict", h.Cell(verdict)),
        (f"{label}demand per client (batch x sample / compute time)",
         h.mib_s(beside.demand_mib_s_per_client)),
    ]


IO_KEYS = {"first_done", "last_done", "per_client_mib_s", "jain", "latency", "histograms",
           "series_mib_s", "bytes", "ops"}
TRAIN_KEYS = {"samples_per_s", "au_mean", "au_min", "au_goal", "au_pass", "clients_below_goal",
              "demand_mib_s_per_client", "au_spread"}


def headline_section(res: Mapping[str, Any]) -> Html:
    run = res if isinstance(res, Result) else model(res)
    if not run.has_aggregate:
        return h.section("Headline figures", h.notice(
            "warn", "No aggregate figures in this result; see the per-client table below."),
            anchor="headline")
    sections, summary = aggregate_sections(run), run.summary
    rows: list[tuple[str, Any]] = []
    for sec in sections:
        rows += io_pairs(sec.section, sec.label)
        rows += training_pairs(sec.section, sec.label)
    if not any(sec.figures is summary.figures for sec in sections):
        rows += training_pairs(summary)
    parts = [h.kv_table(rows)] if rows else console_tables(res)
    extra = _rest(summary.figures, sections)
    if extra and rows:
        parts.append(h.tag("h3", "Other aggregate figures of this phase"))
        parts.append(h.nested_table(extra))
    elif extra:  # the console's tables lead; the aggregate as recorded stays one click away
        parts.append(h.details("every aggregate figure as recorded", h.nested_table(extra)))
    return h.section("Headline figures", *parts, anchor="headline")


# The console's row that the page answers in a section of its own (hero_section).
HERO_ROW = "% of fio hero"
PLACEMENT_TABLE = "where the bytes went"


def console_tables(res: Mapping[str, Any]) -> list[Html]:
    """The tables the console printed for this result (its phase's headline, per burst, per
    client), as the page's: for a phase whose figures are no first/last-done section (a
    checkpoint's bursts), the console's names and values are the headline."""
    from aiio.term.console import phase_tables

    return as_html(phase_tables(dict(res)))


def vector_inserts_section(res: Mapping[str, Any]) -> Html:
    """The vector insert stream's tables, as the console's (nothing for a run without one):
    the headline's read figures are the queries', the aggregate's raw keys no answer."""
    from aiio.term.console import insert_tables

    tables = insert_tables(dict(res))
    return h.section("Vector inserts", *as_html(tables), anchor="inserts") if tables \
        else Html("")


def as_html(tables: list) -> list[Html]:
    """Console tables as the page's: a figure/value table as one, any other as a grid."""
    from rich.text import Text

    def plain(cell: Any) -> str:  # the console's colours are markup the page would print
        return cell.plain if isinstance(cell, Text) else Text.from_markup(str(cell)).plain

    out = []
    for table in tables:
        headers = [str(c.header) for c in table.columns]
        cells = ([plain(v) for v in c.cells] for c in table.columns)
        rows = [row for row in zip(*cells, strict=True) if row[0] != HERO_ROW]
        title = str(table.title or "")
        if title.startswith(PLACEMENT_TABLE):  # the page's own section shows it
            continue
        out.append(h.kv_table(rows, caption=title) if headers == ["figure", "value"]
                   else h.table(headers, rows, caption=title))
    return out


# Aggregate figures another section of the page shows: "What was measured" names the loop.
SHOWN_ELSEWHERE = {"read_loop", "placement"}


def _rest(agg: Mapping[str, Any], sections: list) -> dict[str, Any]:
    """The aggregate without what the headline rows show, empty parts dropped."""
    shown = {sec.path for sec in sections}

    def prune(d: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
        out = {}
        for key, value in d.items():
            if (path in shown and key in IO_KEYS | TRAIN_KEYS) or sr.is_series(value) or \
                    (not path and key in SHOWN_ELSEWHERE):
                continue
            if isinstance(value, Mapping) and len(path) < 2:
                value = prune(value, (*path, key))
                if not value:
                    continue
            out[key] = value
        return out

    return prune(agg, ())


def hero_section(res: Result) -> Html:
    """% of the fio hero number: this run's aggregate against fio's on the same target."""
    hero = HeroFigures.of_run(res)
    if hero is None:
        return h.tag("p", "No fio hero number was attached to this result, so there is no % of "
                     "hero; run `aiio fio` on the same target to get one.", class_="note")
    pct = hero.percent
    if pct is None:
        return h.section("Against the fio hero number", h.notice(
            "info", hero.text or "no fio hero number for this target"), anchor="hero")
    test, phase = hero.test, res.get("phase", "phase")
    rows = [("% of fio hero", f"{pct:.1f} % of fio {test}"),
            (f"this {phase} run (aggregate, {h.plain(hero.window or 'last done')})",
             h.mib_s(hero.phase_mib_s)),
            (f"fio {test}, {h.plain(hero.fio_clients)} jobs", h.mib_s(hero.fio_mib_s)),
            ("fio result", h.plain(hero.fio_result_id))]
    chart = charts.bars([f"this {phase} run", f"fio {test}"],
                        [hero.phase_mib_s or 0.0, hero.fio_mib_s or 0.0],
                        title="this run against the fio hero number", xlabel="",
                        ylabel="aggregate MiB/s", caption=hero.text or
                        f"{pct:.1f} % of what fio {test} reached on the same target.")
    return h.section("Against the fio hero number", h.kv_table(rows), h.figures(chart),
                     anchor="hero")


# --- clients ------------------------------------------------------------------------------

# (heading, the client's figure, its format); a column shows when a client records it
CLIENT_COLUMNS: list[tuple[str, str, Any]] = [
    ("MiB/s", "mib_s", h.mib_s),
    ("bytes", "bytes", h.size),
    ("ops", "ops", h.number),
    ("elapsed", "elapsed_s", h.seconds),
    ("AU", "au", h.pct),
    ("waiting for data", "wait_s", h.seconds),
    ("computing", "compute_s", h.seconds),
    ("samples/s", "samples_per_s", lambda v: h.number(v, 1, "samples/s")),
    ("CPU time", "cpu_s", h.seconds),
]


def _records(c: ClientFigures, figure: str) -> bool:
    """The client records this figure (a training client its AU even when there is none)."""
    return c.ran_steps if figure == "au" else getattr(c, figure) is not None
LAT_COLUMNS = [("p50", "p50_ns"), ("p99", "p99_ns"), ("max latency", "max_ns")]


def clients_section(res: Mapping[str, Any]) -> Html:
    run = res if isinstance(res, Result) else model(res)
    clients = list(run.clients)
    if not clients:
        return h.section("Per client", h.notice("warn", "No client reported any figures."),
                         anchor="clients")
    cols = [c for c in CLIENT_COLUMNS if any(_records(x, c[1]) for x in clients)]
    latency = _flat_latency(run)
    lats = [c for c in LAT_COLUMNS if any(c[1] in latency.get(id(x), {}) for x in clients)]
    subs = client_subsections(run)  # 'read', 'write', ...
    extra = sorted({k for x in clients for k in x.other_scalars})
    headers = ["client", "host", *(c[0] for c in cols), *(c[0] for c in lats),
               *(f"{label} {w}" for label, _ in subs for w in ("MiB/s", "bytes", "p99")),
               *extra]
    speed = (lambda x: x.mib_s) if any(x.mib_s is not None for x in clients) else \
        (lambda x: h.finite(_total(x, subs[0][1]).mib_s) if subs else None)
    rows = []
    for x in sorted(clients, key=lambda x: speed(x) or 0.0):
        row: list[Any] = [h.num(str(x.client if x.client is not None else "?"), x.client),
                          x.host or "?"]
        row += [h.num(fmt(got := getattr(x, key)), got) for _, key, fmt in cols]
        lat = latency.get(id(x), {})
        row += [h.num(h.latency(lat.get(k)), lat.get(k)) for _, k in lats]
        for _, name in subs:
            total = _total(x, name)
            got, size, p99 = total.mib_s, total.bytes, total.main_p("p99")
            row += [h.num(h.mib_s(got), got), h.num(h.size(size), size),
                    h.num(h.latency(p99), p99)]
        row += [h.num(h.by_name(k, x.other_scalars.get(k)), x.other_scalars.get(k))
                for k in extra]
        rows.append(row)
    return h.section("Per client", h.table(headers, rows, sortable=True),
                     note="Slowest client first; click a column heading to sort by it. "
                          "Latency is per system call.", anchor="clients")


def _total(client: ClientFigures, name: str) -> IoFigures:
    """A client's figures of one stream its row shows; none recorded: empty."""
    return client.totals.get(name) or IoFigures.of(name, (), {})


def _flat_latency(run: Result) -> dict[int, Mapping[str, Any]]:
    """Each client's (by id) latency summary of the section it keeps flat (training's and
    model loading's reads); clients that keep their sections below get none."""
    return {id(c): s.main_latency for c in run.clients for s in c.io.values() if s.path == ()}


# --- training -----------------------------------------------------------------------------

def training_section(res: Mapping[str, Any]) -> Html:
    run = res if isinstance(res, Result) else model(res)
    clients = [c for c in run.clients if c.ran_steps]
    if not clients:
        return Html("")
    au_goal = run.summary.au.goal if run.summary.au else None
    goal = au_goal or h.finite(run.workload.au_goal)
    clients.sort(key=lambda c: h.finite(c.client) or 0)
    au = charts.bars([str(c.client if c.client is not None else "?") for c in clients],
                     [c.au or 0.0 for c in clients], percent=True,
                     title="accelerator utilization per client", xlabel="client",
                     ylabel="AU (%)", goal=goal, goal_label=f"goal {h.pct(goal, 0)}",
                     caption="Compute time / (compute + waiting for data) over measured steps; "
                             "the first step of each epoch is warm-up and excluded. Red: "
                             "below the goal.")
    return h.section("Accelerator utilization", h.figures(au, _wait_chart(clients)),
                     anchor="au")


def _wait_chart(clients: Sequence[ClientFigures]) -> Html | None:
    """How long each step waited for its batch, over time: the shape of a data stall."""
    logs = [(c, c.step_log) for c in clients if c.step_log]
    if not logs:
        return None
    logs.sort(key=lambda t: t[0].au or 0)
    shown = logs[:TOP_CLIENTS]
    lines = []
    for c, steps in shown:
        steps = sorted(steps, key=lambda s: s.start_s)
        lines.append((f"client {c.client if c.client is not None else '?'}",
                      [s.start_s for s in steps], [s.wait_s * 1000 for s in steps]))
    cut = "" if len(logs) == len(shown) else f" (the {len(shown)} lowest-AU clients of {len(logs)})"
    # a stride that is no whole count (a damaged result) names no share, and costs no chart
    strides = sorted({s for c, _ in shown if (s := c.step_log_stride) is not None} or {1})
    if strides[-1] > 1:  # a long run's log is an even sample of its steps (StepTotals)
        every = f"{strides[0]}" if len(strides) == 1 else f"{strides[0]} to {strides[-1]}"
        cut += f"; one step in {every} of each client, as its log kept"
    return charts.time_lines(lines, title="time each step waited for data",
                             xlabel="step start since the common start (s)",
                             ylabel="wait per step (ms)",
                             highlight=[lines[0][0]],
                             caption=f"Per step: how long the emulated accelerator waited for "
                                     f"its batch{cut}. Flat at zero means storage kept up.")


# --- resources ----------------------------------------------------------------------------

def monitor_section(res: Result) -> Html:
    mon = MonitorFigures.of(res)
    if mon is None:
        return Html("")
    rows: list[tuple[str, Any]] = [
        ("monitored for", h.seconds(mon.seconds)),
        ("client machine CPU busy, mean / max",
         f"{h.number(mon.cpu_percent_mean, 1, '%')} / {h.number(mon.cpu_percent_max, 1, '%')}"),
    ]
    if mon.device is not None:
        rows.append((f"block device {mon.device} read / written",
                     f"{h.size(mon.device_read_bytes)} / {h.size(mon.device_write_bytes)}"))
        rows.append(("bytes the clients moved", h.size(res.summary.bytes)))
    for nic in mon.nics:
        rows.append((f"network {nic.name} received / sent (peak share of link)",
                     f"{h.size(nic.rx_bytes)} / {h.size(nic.tx_bytes)} ({h.pct(nic.peak_use)})"))
    return h.section("Resources on the client machine", h.kv_table(rows), anchor="monitor")
