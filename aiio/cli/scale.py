"""`aiio scale`: one phase over a list of client counts, and the linear-scaling verdict."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from aiio import interrupts
from aiio.cache_methods import AUTO, REQUESTS
from aiio.cli.common import (
    check_engine,
    emit_json,
    engine_option,
    resolve_workload,
    workload_options,
)
from aiio.cli.history import history_options, record_in_history, record_runs, warn
from aiio.cli.run import DEFAULT_TARGET, _make_default_target, write_report
from aiio.cli.s3opts import access_for, part_size_option, part_size_sets, s3_options
from aiio.errors import ConfigError
from aiio.phases import REGISTRY

if TYPE_CHECKING:
    from aiio.options import RunOptions
    from aiio.workload import Workload

DEFAULT_CLIENTS = "1,2,4,8"


def sweep_workload_options(func):
    """The shared workload options, less --clients, --duration and --epochs, which mean
    something else in a sweep (a list, a length per point, nothing), and --clients-per-host
    (a sweep's counts are totals over every host)."""
    before = len(getattr(func, "__click_params__", []))
    func = workload_options(func)
    params = func.__click_params__  # click appends each decorator's option here
    dropped = ("clients", "duration", "epochs", "clients_per_host")
    added = [p for p in params[before:] if p.name not in dropped]
    func.__click_params__ = params[:before] + added
    return func


@click.command()
@click.option("--phase", "-p", default="train", show_default=True,
              help=f"phase to sweep: {', '.join(REGISTRY)}")
@sweep_workload_options
@click.option("--clients", "-n", "clients_text", default=None,
              help=f"increasing client counts, e.g. 1,2,4,8 [default: {DEFAULT_CLIENTS}]")
@click.option("--max-clients", type=int, default=None,
              help="powers of two up to N (and N itself), instead of --clients")
@click.option("--find-max", is_flag=True,
              help="search (doubling, then bisecting) for the largest client count at the "
              "AU goal, up to --max-clients")
@click.option("--max-users", type=int, default=None,
              help="with --find-max on a phase whose clients serve users (kvcache): search "
              "users per client up to N, at the workload's client count")
@click.option("--users", "users_text", default=None,
              help="on a phase whose clients serve users (kvcache): a table over users per "
              "client, e.g. 8,16,32,64, at the workload's client count")
@click.option("--rates", "rates_text", default=None,
              help="on a phase with an open loop (kvcache, with kvcache.load=open): a table "
              "over the offered request rate, in requests/s offered per client (as "
              "kvcache.request_rate), e.g. 1,2,4,8, at the workload's client count and users")
@click.option("--goal", default=None,
              help="with --users, --rates or --max-users: the request class whose latency "
              "goal must hold (a key of kvcache.goals; default: the first, interactive)")
@click.option("--goal-ms", type=float, default=None,
              help="with --find-max --phase vector: the p99 query latency, in ms, the runs "
              "must keep (and not be overloaded); the search finds the most clients and their "
              "queries/s within it")
@click.option("--duration", default=None,
              help="length of each point of a time-based phase, e.g. 30s "
              "[default: the workload's, else 10s]")
@click.option("--repeat", type=int, default=1, show_default=True,
              help="run every point R times; the table shows mean and spread")
@click.option("--threshold", type=float, default=0.9, show_default=True,
              help="scaling efficiency that still counts as linear")
@click.option("--target", "-t", default=DEFAULT_TARGET, show_default=True,
              help="directory on the filesystem under test (aiio writes only in TARGET/aiio), "
                   "or s3://BUCKET/PREFIX")
@click.option("--results", default="reports", show_default=True, help="folder for results")
@click.option("--cache", "method", type=click.Choice(REQUESTS), default=AUTO,
              show_default=True, help="how the page cache is defeated")
@engine_option
@click.option("--no-charts", is_flag=True, help="skip the PNG/SVG charts")
@click.option("--no-report", is_flag=True, help="do not write report.html beside result.json")
@click.option("--json", "as_json", is_flag=True, help="print the sweep result as JSON")
@click.option("--quiet", "-q", is_flag=True, help="no progress bars")
@history_options
@s3_options
@part_size_option
def scale(phase: str, clients_text: str | None, max_clients: int | None, find_max: bool,
          max_users: int | None, users_text: str | None, rates_text: str | None,
          goal: str | None,
          goal_ms: float | None, duration: str | None, repeat: int, threshold: float,
          target: str, results: str, method: str, engine: str | None, no_charts: bool,
          no_report: bool, as_json: bool, quiet: bool,
          history_path: str | None, no_history: bool, endpoint: str | None,
          profile: str | None, part_size: str | None, **kwargs) -> None:
    """Sweep a phase over client counts: does the aggregate grow linearly while each client
    keeps its bandwidth? Prints the table and the verdict; writes the result and charts."""
    from aiio.options import RunOptions
    from aiio.phases import get_phase
    from aiio.sweep import find_latency as fl
    from aiio.sweep import find_max as fm
    from aiio.sweep import run as sc
    from aiio.term.console import RichUI
    from aiio.term.sweep_console import print_sweep
    from aiio.units import parse_duration

    get_phase(phase)
    check_engine(target, method, engine)
    if goal_ms is not None and (users_text, max_users, rates_text) != (None, None, None):
        raise ConfigError("--goal-ms is a p99 query latency for --find-max over clients; "
                          "a table or search over users or rates takes --goal")
    goal_ms = fl.check(phase, find_max, goal_ms)
    if rates_text is not None:
        if find_max or (users_text, max_users, max_clients) != (None, None, None):
            raise ConfigError("--rates is a table over the rate at one client count and the "
                              "workload's users; leave out --users, --find-max, --max-users "
                              "and --max-clients")
        return _rates_table(phase, rates_text, goal, duration, repeat, target, results,
                            method, as_json, endpoint, profile, part_size,
                            {**kwargs, "clients_text": clients_text}, engine,
                            (no_history, history_path), no_report)
    if users_text is not None:
        if find_max or max_users is not None or max_clients is not None:
            raise ConfigError("--users is a table of the counts given at one client count; "
                              "leave out --find-max, --max-users and --max-clients")
        return _users_table(phase, users_text, goal, duration, repeat, target, results,
                            method, as_json, endpoint, profile, part_size,
                            {**kwargs, "clients_text": clients_text}, engine,
                            (no_history, history_path), no_report)
    if max_users is not None or goal is not None:
        return _find_users(phase, find_max, max_users, goal, duration, repeat, target,
                           results, method, as_json, endpoint, profile, part_size,
                           {**kwargs, "clients_text": clients_text}, engine,
                           (no_history, history_path), no_report)
    if clients_text is not None and max_clients is not None:
        raise ConfigError("give either --clients 1,2,4,... or --max-clients N, not both")
    if find_max:
        counts = [1, fm.check(phase, max_clients, goal_ms)]
    elif max_clients is not None:
        counts = sc.powers_of_two(max_clients)
    else:
        counts = sc.parse_clients(DEFAULT_CLIENTS if clients_text is None else clients_text)
    seconds = parse_duration(duration) if duration is not None else None
    kwargs["sets"] = (*kwargs.get("sets", ()), *part_size_sets(target, part_size))
    workload = resolve_workload(kwargs)
    access = access_for(target, endpoint, profile)
    options = RunOptions(s3=access)
    req = sc.SweepRequest(phase, workload, target, counts, seconds, repeat, threshold,
                          results, method, options, charts=not no_charts,
                          find_max=find_max, goal_ms=goal_ms, engine=engine)
    sc.plan(req)  # every input error before anything is created
    if target == DEFAULT_TARGET:
        _make_default_target(target)
    try:
        out, folder = sc.sweep(req, RichUI(quiet=quiet or as_json),
                               _driver(find_max, goal_ms))
    except sc.SweepStopped as stopped:
        with interrupts.held(_SHOWING):  # a Ctrl-C again lost the line naming the result
            if not no_history:
                _record(stopped.sweep, results, history_path)
            _show(stopped.sweep, stopped.folder, as_json, print_sweep, no_report)
        raise
    if not no_history:
        _record(out, results, history_path)
    _show(out, folder, as_json, print_sweep, no_report)


# what a stopped sweep, table or search does before its line, a Ctrl-C meanwhile held
_SHOWING = "recording what was done and writing its page"


def _driver(find_max: bool, goal_ms: float | None):
    """The sweep's driver: every count, or a search by the AU goal or by a p99 goal."""
    from aiio.sweep import find_latency as fl
    from aiio.sweep import find_max as fm
    from aiio.sweep import run as sc

    if not find_max:
        return sc.every_count
    return fm.driver if goal_ms is None else fl.driver


def _find_users(phase: str, find_max: bool, max_users: int | None, goal: str | None,
                duration: str | None, repeat: int, target: str, results: str, method: str,
                as_json: bool, endpoint: str | None, profile: str | None,
                part_size: str | None, kwargs: dict, engine: str | None,
                history: tuple[bool, str | None], no_report: bool) -> None:
    """--find-max over users per client (aiio.sweep.find_users); each probe's run recorded
    in the history, as a table's are."""
    from aiio.sweep import find_users as fu

    if not find_max:
        raise ConfigError("--max-users and --goal go with --find-max")
    workload = _users_workload(phase, duration, target, part_size, kwargs, "--max-users",
                               "searches users")
    upper, goal = fu.check(phase, workload, max_users, goal)
    req = fu.UsersSearch(phase, workload, target, upper, goal, repeat, results, method,
                         _users_options(target, endpoint, profile), engine)
    try:
        with _recorded(history, results, no_report) as on_saved:
            found, folder = fu.find_users(replace(req, on_saved=on_saved))
    except fu.Stopped as stopped:  # the probes done, shown and saved; then the one line
        with interrupts.held(_SHOWING):
            _show_table(stopped.doc, stopped.folder, as_json, lambda _: (), no_report)
        raise
    _show_table(found, folder, as_json, lambda _: (), no_report)


def _users_table(phase: str, users_text: str, goal: str | None, duration: str | None,
                 repeat: int, target: str, results: str, method: str, as_json: bool,
                 endpoint: str | None, profile: str | None, part_size: str | None,
                 kwargs: dict, engine: str | None, history: tuple[bool, str | None],
                 no_report: bool = False) -> None:
    """--users 8,16,32: a table over users per client (aiio.sweep.users_sweep); each run
    recorded in the history (`history`: --no-history, --history)."""
    from aiio.sweep import find_users as fu
    from aiio.sweep import users_sweep as us
    from aiio.sweep.run import parse_counts

    counts = parse_counts(users_text, "--users", "user")
    workload = _users_workload(phase, duration, target, part_size, kwargs, "--users",
                               "sweeps users")
    goal = fu.check_goal(phase, workload, goal, "--users")
    req = us.TableRequest(phase, workload, target, counts, goal, repeat, results, method,
                          _users_options(target, endpoint, profile), engine)
    _tabled(lambda on_saved: us.users_table(replace(req, on_saved=on_saved)), history,
            results, as_json, us.text_table, no_report)


def _tabled(table: Callable[[Callable[[dict, Path], None]], Any],
            history: tuple[bool, str | None], results: str, as_json: bool,
            text: Callable[[dict], list[str]], no_report: bool) -> None:
    """Run a table over users or rates (`table`, given the hook each run's saved result
    passes), record each of its runs in the history (its value is in their settings key: a
    series of its own) and show it. Every run saved is recorded however the table stops,
    as `aiio run` records its run: those finished (a stop within the first value's repeats
    leaves no row, yet runs done) and the one a Ctrl-C or failure stopped; a stopped
    table's rows done are shown."""
    from aiio.sweep import users_sweep as us

    try:
        with _recorded(history, results, no_report) as on_saved:
            out, folder, _ = table(on_saved)
    except us.TableStopped as stopped:
        with interrupts.held(_SHOWING):
            _show_table(stopped.table, stopped.folder, as_json, text, no_report)
        raise
    _show_table(out, folder, as_json, text, no_report)


@contextmanager
def _recorded(history: tuple[bool, str | None], results: str,
              no_report: bool) -> Iterator[Callable[[dict, Path], None]]:
    """The hook a table's or search's runs pass their saved results to: each run recorded
    in the history as it is saved (so however the caller ends, a SIGKILL too, every run
    saved is recorded) and its report written (`history`: --no-history, --history)."""
    from aiio.cache_methods import METHOD_NULL

    no_history, history_path = history
    nulls: list[dict[str, Any]] = []  # runs of the null method: said once, never recorded
    warned: list[str] = []  # a history that cannot be written is said once, not each run

    def warn_once(message: str) -> None:
        if not warned:
            warn(message)
        warned.append(message)

    def on_saved(res: dict, folder: Path) -> None:
        if not no_history:
            if res.get("method") == METHOD_NULL:
                nulls.append(res)
            else:
                record_runs([res], results, history_path, warn_once)
        if not no_report:
            _write_run_report(res, folder)
    try:
        yield on_saved
    finally:
        if nulls:
            record_runs(nulls, results, history_path)  # says why they are not recorded


def _rates_table(phase: str, rates_text: str, goal: str | None, duration: str | None,
                 repeat: int, target: str, results: str, method: str, as_json: bool,
                 endpoint: str | None, profile: str | None, part_size: str | None,
                 kwargs: dict, engine: str | None,
                 history: tuple[bool, str | None], no_report: bool = False) -> None:
    """--rates 1,2,4: a table over the open loop's offered rate (aiio.sweep.rates_sweep);
    each run recorded in the history (`history`: --no-history, --history)."""
    from aiio.sweep import find_users as fu
    from aiio.sweep import rates_sweep as rs
    from aiio.sweep import users_sweep as us

    rates = rs.parse_rates(rates_text)
    workload = _users_workload(phase, duration, target, part_size, kwargs, "--rates",
                               "sweeps the rate")
    rs.check(phase, workload, rates, rates_text)
    goal = fu.check_goal(phase, workload, goal, "--rates")
    req = us.TableRequest(phase, workload, target, rates, goal, repeat, results, method,
                          _users_options(target, endpoint, profile), engine)
    _tabled(lambda on_saved: rs.rates_table(replace(req, on_saved=on_saved)), history,
            results, as_json, rs.text_table, no_report)


def _write_run_report(res: dict, folder: Path) -> None:
    """A table's run's report.html, which the table's page links to."""
    write_report(res, folder)


def _show_table(out: dict, folder: Path, as_json: bool, text_table, no_report: bool) -> None:
    """A table's or search's result: its page written, then as JSON, or its lines,
    statement and the paths of its result and page."""
    written = [] if no_report else write_report(out, folder)
    _show_users(out, folder, as_json, () if as_json else text_table(out))
    if not as_json:
        for path in written:
            click.echo(f"report: {path}")


def _users_options(target: str, endpoint: str | None, profile: str | None) -> RunOptions:
    """The run options of a search or table over users, once its inputs are checked (the
    default target is made then)."""
    from aiio.options import RunOptions

    if target == DEFAULT_TARGET:
        _make_default_target(target)
    return RunOptions(s3=access_for(target, endpoint, profile))


def _show_users(out: dict, folder: Path, as_json: bool,
                table: list[str] | tuple = ()) -> None:
    """A search's or table's result: as JSON, or its table, statement and result path."""
    if as_json:
        emit_json(out)
        return
    for line in table:
        click.echo(line)
    click.echo(textwrap.fill(out["statement"], 80))
    click.echo(f"result: {folder}/result.json")


def _users_workload(phase: str, duration: str | None, target: str, part_size: str | None,
                    kwargs: dict, flag: str, verb: str) -> Workload:
    """The workload a search or table over users runs: at most one --clients count, and
    --duration as each run's length."""
    from aiio.sweep.run import time_limit_key, with_clients, with_value
    from aiio.units import parse_duration

    clients_text = kwargs.pop("clients_text")
    kwargs["sets"] = (*kwargs.get("sets", ()), *part_size_sets(target, part_size))
    workload = resolve_workload(kwargs)
    if clients_text is not None:  # one count: the users are searched at it
        if not clients_text.strip().isdigit() or int(clients_text) < 1:
            raise ConfigError(f"--clients {clients_text!r}: {flag} {verb} at one client "
                              "count, e.g. --clients 4")
        workload = with_clients(workload, int(clients_text))
    if duration is not None:
        workload = with_value(workload, *time_limit_key(phase, workload),
                              parse_duration(duration))
    return workload


def _record(out: dict, results: str, history_path: str | None) -> None:
    """The sweep and each finished point, in the history (a failed sweep never sets a
    baseline: its record is not passing)."""
    from aiio.results.history import run_record, sweep_record

    records = [run_record(p["result"]) for p in out["points"]]
    record_in_history([*records, sweep_record(out)], results, history_path)


def _show(out: dict, folder, as_json: bool, printer, no_report: bool = False) -> None:
    written = [] if no_report else write_report(out, folder)
    if as_json:
        emit_json(out)
    else:
        printer(out, folder)
        for path in written:
            click.echo(f"report: {path}")
