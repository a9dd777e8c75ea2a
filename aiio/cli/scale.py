"""`aiio scale`: one phase over a list of client counts, and the linear-scaling verdict."""

from __future__ import annotations

import click

from aiio.cache_methods import AUTO, REQUESTS
from aiio.cli.common import emit_json, resolve_workload, workload_options
from aiio.cli.history import history_options, record_in_history
from aiio.cli.run import DEFAULT_TARGET, _make_default_target, write_report
from aiio.cli.s3opts import access_for, part_size_option, part_size_sets, s3_options
from aiio.errors import ConfigError
from aiio.phases import REGISTRY

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
@click.option("--no-charts", is_flag=True, help="skip the PNG/SVG charts")
@click.option("--no-report", is_flag=True, help="do not write report.html beside result.json")
@click.option("--json", "as_json", is_flag=True, help="print the sweep result as JSON")
@click.option("--quiet", "-q", is_flag=True, help="no progress bars")
@history_options
@s3_options
@part_size_option
def scale(phase: str, clients_text: str | None, max_clients: int | None, find_max: bool,
          duration: str | None, repeat: int, threshold: float, target: str, results: str,
          method: str, no_charts: bool, no_report: bool, as_json: bool, quiet: bool,
          history_path: str | None, no_history: bool, endpoint: str | None,
          profile: str | None, part_size: str | None, **kwargs) -> None:
    """Sweep a phase over client counts: does the aggregate grow linearly while each client
    keeps its bandwidth? Prints the table and the verdict; writes the result and charts."""
    from aiio.options import RunOptions
    from aiio.phases import get_phase
    from aiio.sweep import find_max as fm
    from aiio.sweep import run as sc
    from aiio.term.console import RichUI
    from aiio.term.sweep_console import print_sweep
    from aiio.units import parse_duration

    get_phase(phase)
    if clients_text is not None and max_clients is not None:
        raise ConfigError("give either --clients 1,2,4,... or --max-clients N, not both")
    if find_max:
        counts = [1, fm.check(phase, max_clients)]
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
                          find_max=find_max)
    sc.plan(req)  # every input error before anything is created
    if target == DEFAULT_TARGET:
        _make_default_target(target)
    try:
        out, folder = sc.sweep(req, RichUI(quiet=quiet or as_json),
                               fm.driver if find_max else sc.every_count)
    except sc.SweepStopped as stopped:
        if not no_history:
            _record(stopped.sweep, results, history_path)
        _show(stopped.sweep, stopped.folder, as_json, print_sweep, no_report)
        raise
    if not no_history:
        _record(out, results, history_path)
    _show(out, folder, as_json, print_sweep, no_report)


def _record(out: dict, results: str, history_path: str | None) -> None:
    """The sweep and each finished point, in the history (a failed sweep never sets a
    baseline: its record is not passing)."""
    from aiio.history import run_record, sweep_record

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
