"""`aiio run`: one phase at one client count."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from aiio.cache_methods import AUTO, METHOD_NULL, RUN_REQUESTS
from aiio.cli.common import (
    check_engine,
    emit_json,
    engine_option,
    resolve_workload,
    workload_options,
)
from aiio.cli.history import history_options, record_runs
from aiio.cli.s3opts import access_for, part_size_option, part_size_sets, s3_options
from aiio.errors import ConfigError
from aiio.phases import REGISTRY

if TYPE_CHECKING:
    from aiio.workload import Workload

DEFAULT_TARGET = "./aiio-target"


@click.command()
@click.option("--phase", "-p", default="train", show_default=True,
              help=f"phase: {', '.join(REGISTRY)} (all: prep, train with checkpoints, "
                   "load; randrw: fio's random read/write mix, also prep.mode=randrw)")
@workload_options
@click.option("--target", "-t", default=DEFAULT_TARGET, show_default=True,
              help="directory on the filesystem under test (aiio writes only in TARGET/aiio), "
                   "or s3://BUCKET/PREFIX (aiio writes only below PREFIX/aiio/)")
@click.option("--results", default="reports", show_default=True, help="folder for results")
@click.option("--reader", type=click.Choice(["raw", "native"]), default=None,
              help="raw: aligned reads; native: the format's own library (vector: "
              "diskannpy)")
@click.option("--cache", "method", type=click.Choice(RUN_REQUESTS), default=AUTO,
              show_default=True, help="how the page cache is defeated; null: no read or write "
                                      "system call at all, to measure aiio's own overhead")
@engine_option
@click.option("--scale", default=None, metavar="F",
              help="multiply checkpoint and model-weight bytes by F (small test systems)")
@click.option("--checkpoints", default=None, metavar="K",
              help="checkpoint phase: write (and restore) K checkpoints in a row")
@click.option("--checkpoint-every", default=None, metavar="N[epochs|steps]",
              help="train phase: checkpoint every N epochs (default unit) or steps, e.g. 50steps")
@click.option("--stagger", default=None, metavar="DURATION",
              help="load phase: replica i starts i x DURATION after the first, e.g. 0.5s")
@click.option("--verify", is_flag=True,
              help="check the per-block checksums of data aiio wrote as it reads it back")
@click.option("--no-space-check", "no_space_check", is_flag=True, hidden=True,
              help="for tests only: skip the free-space check so a full disk can be provoked")
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON on stdout")
@click.option("--quiet", "-q", is_flag=True, help="no progress bar")
@click.option("--no-report", is_flag=True, help="do not write report.html beside result.json")
@history_options
@s3_options
@part_size_option
def run(phase: str, target: str, results: str, reader: str | None, method: str,
        engine: str | None, scale: str | None, checkpoints: str | None,
        checkpoint_every: str | None, stagger: str | None, verify: bool, no_space_check: bool,
        as_json: bool, quiet: bool,
        history_path: str | None, no_history: bool, no_report: bool,
        endpoint: str | None, profile: str | None, part_size: str | None, **kwargs) -> None:
    """Run one phase of the AI lifecycle against TARGET and measure every client."""
    from aiio.errors import RunFailed
    from aiio.fio import hero
    from aiio.options import RunOptions
    from aiio.phases import get_phase
    from aiio.results.result import model
    from aiio.run import runner
    from aiio.term.console import RichUI, phase_tables, print_result

    get_phase(phase)  # unknown phases fail before anything else happens
    check_engine(target, method, engine)  # likewise an engine that cannot be had
    extra = phase_sets(phase, scale=scale, checkpoints=checkpoints,
                       checkpoint_every=checkpoint_every, stagger=stagger)
    if reader:  # the vector phase's queries, or training's samples
        extra.append(f"{'vector' if phase == 'vector' else 'train'}.reader={reader}")
    extra += part_size_sets(target, part_size)
    kwargs["sets"] = (*kwargs.get("sets", ()), *extra)
    duration = kwargs.pop("duration", None)
    if duration is not None:  # before --set, so an explicit --set still wins
        kwargs["sets"] = (duration_set(phase, dict(kwargs), duration), *kwargs["sets"])
    workload = resolve_workload(kwargs)
    if target == DEFAULT_TARGET:
        _make_default_target(target)
    access = access_for(target, endpoint, profile)
    check_null(method, verify, access is not None, workload)
    options = RunOptions(verify=verify, space_check=not no_space_check, s3=access)
    ui = RichUI(quiet=quiet or as_json)
    written: list = []
    saved: list = []

    def on_saved(res: dict, folder) -> None:
        saved.append(res)
        if not no_report:
            written.extend(write_report(res, folder))

    req = runner.RunRequest(phase, workload, target, results, method, options,
                            on_saved=on_saved, hero=hero.Pairing(results), engine=engine)
    try:
        res, folder = runner.run(req, ui)
    finally:  # a failed or interrupted run is saved too, and its trend must show it
        if not no_history:
            record_runs(saved[-1:], results, history_path)
    if as_json:
        emit_json(res)
    else:
        print_result(res, folder, phase_tables(res))
        for path in written:
            click.echo(f"report: {path}")
    checked = model(res).summary.verify
    if checked is not None and checked.mismatches:
        first = checked.corrupt[0]
        raise RunFailed(f"--verify found {checked.mismatches} corrupt block(s), the first in "
                        f"{first.file} at offset {first.offset} ({first.problem}); "
                        f"result in {folder}")


def check_null(method: str, verify: bool, on_s3: bool, workload: Workload) -> None:
    """The null method reads nothing: nothing to verify; object storage, io_uring and the
    formats' own libraries make calls it cannot leave out."""
    if method != METHOD_NULL:
        return
    if workload.prep.iodepth > 1:
        raise ConfigError(f"prep.iodepth = {workload.prep.iodepth} reads through io_uring, "
                          "which --cache null cannot leave out: use prep.iodepth = 1")
    if workload.train.reader == "native":
        raise ConfigError("--cache null leaves out aiio's own read calls; the native reader "
                          "reads through the format's library: use --reader raw")
    if verify:
        raise ConfigError("--verify checks the data aiio reads back, and --cache null reads "
                          "none: drop one of them")
    if on_s3:
        raise ConfigError("--cache null leaves out file system calls; an s3:// target has "
                          "none: use a directory target")


def write_report(res: dict, folder) -> list:
    """Write report.html beside the saved result; a report problem only costs a warning."""
    try:
        from aiio import report
        return [report.write(res, folder)]
    except Exception as exc:  # noqa: BLE001 - the result is saved; never lose the run for a page
        click.echo(f"aiio: warning: report.html not written ({type(exc).__name__}: {exc}); "
                   f"the result is saved, retry with `aiio report {folder}`", err=True)
        return []


def duration_set(phase: str, kwargs: dict, duration: str) -> str:
    """--duration as an override of the run-time limit of the phase that runs the workload
    (`Phase.duration_key`: prep.duration for the random mix under either name)."""
    from aiio.sweep.run import time_limit_key
    from aiio.units import parse_duration
    if parse_duration(duration) <= 0:  # the workload's 0 is "no limit": epochs, unsaid
        raise ConfigError(f"--duration {duration}: a run needs more than 0 s; leave "
                          "--duration out to run by the workload's epochs")
    section, name = time_limit_key(phase, resolve_workload(kwargs))
    return f"{section}.{name}={duration}"


# The phase-specific options; each phase names those that mean something to it (Phase.cli_options).
PHASE_OPTIONS = ("scale", "checkpoints", "checkpoint_every", "stagger")


def option_phases(option: str) -> list[str]:
    """The phases an option applies to, in the order `--phase` lists them."""
    from aiio.phases import REGISTRY, get_phase
    return [p for p in REGISTRY if option in get_phase(p).cli_options]


def phase_sets(phase: str, **values: str | None) -> list[str]:
    """The phase options as workload overrides; refuse one the phase would ignore."""
    from aiio.phases import get_phase
    out = []
    for name, value in values.items():
        if value is None:
            continue
        if name not in get_phase(phase).cli_options:
            flag = "--" + name.replace("_", "-")
            raise ConfigError(f"{flag} does not apply to the {phase} phase; it is for: "
                              f"{', '.join(option_phases(name))}")
        if name == "scale":
            out += [f"checkpoint.scale={value}", f"load.scale={value}"]
        elif name == "checkpoints":
            out.append(f"checkpoint.count={value}")
        elif name == "stagger":
            out.append(f"load.stagger={value}")
        else:
            out += _every(value)
    return out


def _every(text: str) -> list[str]:
    """'2' -> every 2 (the workload's unit); '2epochs', '50steps' -> count and unit."""
    import re
    m = re.fullmatch(r"\s*(\d+)\s*(epochs?|steps?)?\s*", text)
    if not m:
        raise ConfigError(f"--checkpoint-every {text!r}: expected N, Nepochs or Nsteps, "
                          "e.g. 1 or 50steps")
    out = [f"checkpoint.every={m.group(1)}"]
    if m.group(2):
        out.append(f"checkpoint.every_unit={m.group(2).rstrip('s')}s")
    return out


def _make_default_target(path: str) -> None:
    """The default target is a folder of the current directory, created on first use."""
    import os
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create default target {path}: {exc.strerror}") from exc
