"""Options and helpers shared by several commands."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from aiio.errors import ConfigError
from aiio.workload import Workload, load_workload, split_override


def workload_options(func):
    """--workload, the named overrides and --set, applied in that order."""
    options = [
        click.option("--workload", "-w", default="demo", show_default=True,
                     help="shipped workload name or path to a TOML file"),
        click.option("--clients", "-n", type=str, default=None,
                     help="emulated accelerators (one process each); under MPI the total "
                          "over all hosts"),
        click.option("--clients-per-host", type=click.IntRange(min=1), default=None,
                     help="under MPI: this many clients on every host (instead of --clients)"),
        click.option("--accelerator", default=None, help="accelerator type, e.g. a100, h100"),
        click.option("--epochs", default=None, help="passes over the dataset"),
        click.option("--duration", default=None, help="run for this long instead, e.g. 30s"),
        click.option("--batch-size", default=None, help="samples per batch per client"),
        click.option("--read-threads", default=None, help="loader threads per client"),
        click.option("--transfer-size", default=None, help="bytes per read call, e.g. 1MiB"),
        click.option("--au-rule", default=None, metavar="mean|min",
                     help="AU pass rule: mean over clients (MLPerf, the default) or min"),
        click.option("--set", "sets", multiple=True, metavar="SECTION.KEY=VALUE",
                     help="override any workload key; repeatable"),
    ]
    for option in reversed(options):
        func = option(func)
    return func


NAMED_OVERRIDES = {
    "clients": ("run", "clients"),
    "accelerator": ("train", "accelerator"),
    "epochs": ("train", "epochs"),
    "duration": ("train", "duration"),
    "batch_size": ("train", "batch_size"),
    "read_threads": ("train", "read_threads"),
    "transfer_size": ("train", "transfer_size"),
    "au_rule": ("train", "au_rule"),
}


def engine_option(func):
    """--engine: the storage engine every run of the command uses (aiio.engines)."""
    return click.option(
        "--engine", default=None, metavar="NAME",
        help="storage engine: posix, io_uring, s3, or external:MODULE (an engine module of "
             "your own) [default: the target's; --cache null: null]")(func)


def check_engine(target: str, method: str, engine: str | None) -> None:
    """Refuse, before anything is created, an engine that is unknown, does not load or
    cannot serve the target or the cache method (one line, exit 2)."""
    if engine:
        from aiio import engines
        engines.choose(target, method, engine)


def resolve_workload(kwargs: dict[str, Any]) -> Workload:
    """Build the workload from --workload plus named options plus --set (last wins)."""
    overrides = []
    per_host = kwargs.pop("clients_per_host", None)
    if per_host is not None:
        if kwargs.get("clients") is not None:
            raise ConfigError("give --clients (the total) or --clients-per-host, not both")
        from aiio.run.comm import world
        kwargs["clients"] = str(per_host * world().size)
    for option, (section, key_name) in NAMED_OVERRIDES.items():
        value = kwargs.pop(option, None)
        if value is not None:
            overrides.append((section, key_name, value))
    for text in kwargs.pop("sets", ()):
        overrides.append(split_override(text))
    return load_workload(kwargs.pop("workload"), overrides)


def emit_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def print_notices(res: Any) -> None:
    """The fields of a loaded result that were damaged and read as missing, one line each."""
    for line in res.notices:
        click.echo(f"aiio: notice: {line}", err=True)


def require(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)
