"""`aiio mlperf`: one workload by MLPerf Storage v3.0's rules, laid out as MLPerf publishes it,
with aiio's measured figures beside."""

from __future__ import annotations

import shutil
import textwrap

import click

from aiio.cache_methods import AUTO, REQUESTS
from aiio.cli.common import emit_json, resolve_workload, workload_options
from aiio.cli.run import DEFAULT_TARGET, _make_default_target
from aiio.errors import ConfigError
from aiio.sweep.mlperf_rules import au_verdict, confirmed

WIDTH = 80  # the summary's lines at most, on any terminal


@click.command()
@workload_options
@click.option("--runs", type=click.IntRange(min=1), default=5, show_default=True,
              help="scored training runs after the warm-up (MLPerf: 5; fewer is no valid "
                   "result)")
@click.option("--find-max", type=click.IntRange(min=1), default=None, metavar="N",
              help="first search (doubling, then bisecting) for the most accelerators, up to "
                   "N, at the AU floor; then the rules' runs at that count")
@click.option("--scale", default=None, metavar="F",
              help="a model's checkpoint x F, every file scaled (small test systems)")
@click.option("--target", "-t", default=DEFAULT_TARGET, show_default=True,
              help="directory on the filesystem under test (aiio writes only in TARGET/aiio)")
@click.option("--results", default="reports", show_default=True, help="folder for results")
@click.option("--cache", "method", type=click.Choice(REQUESTS), default=AUTO,
              show_default=True, help="how the page cache is defeated")
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
@click.option("--quiet", "-q", is_flag=True, help="no progress bars")
def mlperf(runs: int, find_max: int | None, scale: str | None, target: str, results: str,
           method: str, as_json: bool, quiet: bool, **kwargs) -> None:
    """Run a training workload (a warm-up and 5 scored runs) or a model's checkpoints (10
    writes, then 10 reads) by MLPerf Storage v3.0's rules; print MLPerf's columns and aiio's."""
    from aiio import report
    from aiio.sweep import mlperf as mp
    from aiio.term.console import RichUI

    if find_max and (kwargs.get("clients") or kwargs.get("clients_per_host")):
        raise ConfigError("--find-max searches for the accelerator count: give it or "
                          "--clients (--clients-per-host), not both")
    if scale is not None:  # before --set, so an explicit --set still wins
        kwargs["sets"] = (f"checkpoint.scale={scale}", *kwargs.get("sets", ()))
    workload = resolve_workload(kwargs)
    if scale is not None and mp.phase_of(workload) != "checkpoint":
        raise ConfigError("--scale shrinks a model's checkpoint; "
                          f"{workload.name} is a training workload")
    if find_max and mp.phase_of(workload) != "train":
        raise ConfigError("--find-max searches for the AU floor: a training workload's")
    if target == DEFAULT_TARGET:
        _make_default_target(target)
    req = mp.MlperfRequest(workload, target, results, method, runs=runs,
                           find_max=find_max or 0)
    try:
        summary, folder = mp.run(req, RichUI(quiet=quiet or as_json))
    except mp.Stopped as stop:  # the runs done are summed up: their page too
        report.write(stop.summary, stop.folder)
        raise
    page = report.write(summary, folder)
    if as_json:
        emit_json(summary)
        return
    width = min(WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns)
    for line in summary_lines(summary):
        # a line over the width goes on indented, so each figure stays under its heading
        click.echo(textwrap.fill(line, width, subsequent_indent="      ",
                                 break_on_hyphens=False))
    click.echo(f"summary: {folder / 'mlperf.json'}")
    click.echo(f"report: {page}")


def summary_lines(s: dict) -> list[str]:
    """The published row, aiio's figures and the rule checks, a line each."""
    if s["phase"] == "checkpoint":
        return _checkpoint_lines(s) + _key_lines(s) + _check_lines(s["checks"])
    p, a, rule = s["published"], s["aiio"], s["dataset_rule"]
    lines = [f"MLPerf Storage v3.0, training {s['workload']}: {_validity(s)}",
             f"  accelerator {p['accelerator_type']}, client nodes {p['client_nodes']}, "
             f"simulated accelerators {p['simulated_accelerators']}, read B/W "
             f"{p['read_gib_s']:.3f} GiB/s (samples/s x record size, as MLPerf publishes)"]
    for i, r in enumerate(s["runs"], 1):
        epochs = ", ".join(f"{au:.1%}" for au in r["au_per_epoch"] or [])
        lines.append(f"  run {i}: AU {_pct(r['au'])} (epochs: {epochs or '-'}), "
                     f"{r['samples_per_s']:,.1f} samples/s")
    lines.append(f"  AU floor {s['au_floor']:.0%}: {au_verdict(s)}")
    lines.append(f"  aiio measured: {_num(a['read_mib_s_measured'])} MiB/s, "
                 f"{_num(a['read_mib_s_per_client'])} MiB/s per accelerator")
    if not rule["met"]:
        lines.append(f"  DATASET RULE NOT MET: {rule['samples']:,} samples, MLPerf asks "
                     f"{rule['needed']:,} (500 x batch x accelerators = {rule['by_steps']:,}; "
                     f"5 x host memory / record = {rule['by_memory']:,})")
    if "search" in s:
        f = s["search"]
        probed = ", ".join(f"{p['accelerators']} {_pct(p['au'])}" for p in f["probes"])
        lines.append(f"  accelerators supported: {f['supported']} (find-max up to "
                     f"{f['upper']}, MLPerf's AU per probe: {probed}); the scored runs "
                     f"above {confirmed(s)}")
    if len(s["runs"]) < 5:
        lines.append(f"  {len(s['runs'])} scored run(s): MLPerf scores 5")
    return lines + _key_lines(s) + _check_lines(s["checks"])


def _checkpoint_lines(s: dict) -> list[str]:
    p = s["published"]
    lines = [f"MLPerf Storage v3.0, checkpointing {p['model']}: {_validity(s)}",
             f"  {p['processes']} processes on {p['client_nodes']} client node(s), "
             f"checkpoint {_num(p['checkpoint_size_gib'])} GiB"]
    for op, name in (("write", "save"), ("read", "load")):
        r = s[op]
        if r is None:
            continue
        lines.append(f"  {name}: {r['mlperf_gib_s']:.3f} GiB/s (MLPerf: mean of "
                     f"{r['checkpoints']} per-checkpoint rates), {r['aiio_gib_s']:.3f} GiB/s "
                     f"(aiio: bytes over time), {r['difference_pct']:+.1f} %; mean duration "
                     f"{r['mean_duration_s']:.3f} s (the slowest process)")
    return lines


def _validity(s: dict) -> str:
    return "valid" if s["valid"] else "NOT A VALID RESULT"


def _key_lines(s: dict) -> list[str]:
    """MLPerf's comparability key (the workload-defining settings) and aiio's."""
    keys = s.get("settings") or {}
    return [f"  MLPerf key {keys.get('mlperf_key', '-')} (the workload-defining settings), "
            f"aiio settings key {keys.get('aiio_key') or '-'}"]


def _check_lines(checks: list[dict]) -> list[str]:
    return [f"  check {c['check']}: {'ok' if c['ok'] else 'NOT OK'} ({c['value']})"
            for c in checks]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:,.3f}"
