"""`aiio run`: one phase at one client count."""

from __future__ import annotations

import click

from aiio.cli.common import emit_json, resolve_workload, workload_options
from aiio.errors import ConfigError

DEFAULT_TARGET = "./aiio-target"


@click.command()
@click.option("--phase", "-p", default="train", show_default=True,
              help="lifecycle phase: train")
@workload_options
@click.option("--target", "-t", default=DEFAULT_TARGET, show_default=True,
              help="directory on the filesystem under test (aiio writes only in TARGET/aiio)")
@click.option("--results", default="reports", show_default=True, help="folder for results")
@click.option("--reader", type=click.Choice(["raw", "native"]), default=None,
              help="raw: aligned reads; native: the format's own library")
@click.option("--cache", "method", type=click.Choice(["auto", "o_direct", "fadvise_dontneed",
                                                      "none"]), default="auto",
              show_default=True, help="how the page cache is defeated")
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON on stdout")
@click.option("--quiet", "-q", is_flag=True, help="no progress bar")
def run(phase: str, target: str, results: str, reader: str | None, method: str,
        as_json: bool, quiet: bool, **kwargs) -> None:
    """Run one phase of the AI lifecycle against TARGET and measure every client."""
    from aiio import runner
    from aiio.console import RichUI, print_result, train_tables
    from aiio.phases import get_phase

    get_phase(phase)  # unknown phases fail before anything else happens
    if reader:
        kwargs.setdefault("sets", ())
        kwargs["sets"] = (*kwargs["sets"], f"train.reader={reader}")
    workload = resolve_workload(kwargs)
    if target == DEFAULT_TARGET:
        _make_default_target(target)
    ui = RichUI(quiet=quiet or as_json)
    res, folder = runner.run(runner.RunRequest(phase, workload, target, results, method), ui)
    if as_json:
        emit_json(res)
    else:
        print_result(res, folder, train_tables(res))


def _make_default_target(path: str) -> None:
    """The default target is a folder of the current directory, created on first use."""
    import os
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create default target {path}: {exc.strerror}") from exc
