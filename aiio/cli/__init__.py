"""The command line. The one error boundary: AiioError -> one line, its exit code (2 for bad
input, 1 for a failed run, 130 for Ctrl-C); failed checks exit 1.

Each command lives in its own module (aiio/cli/<name>.py) and is imported only when it runs,
so `aiio run` does not pay for matplotlib or fio parsing at start-up.
"""

from __future__ import annotations

import importlib
import sys

import click

from aiio import __version__
from aiio.errors import AiioError

# command name -> module under aiio.cli holding a click command of that name
COMMANDS = {
    "run": "run",
    "datagen": "datagen",
    "workloads": "workloads",
    "clean": "clean",
    "size": "size",
    "scale": "scale",
}


class LazyGroup(click.Group):
    """A group that imports a command's module only when that command is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        module = COMMANDS.get(name)
        if module is None:
            return None
        return getattr(importlib.import_module(f"aiio.cli.{module}"), name.replace("-", "_"))


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="aiio")
def cli() -> None:
    """aiio: emulate the I/O of the AI lifecycle against a filesystem and measure it."""


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI and map errors to one line and an exit code."""
    try:
        cli.main(args=argv, prog_name="aiio", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aiio: interrupted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        click.echo("aiio: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        # click's own usage errors: one line, exit 2
        click.echo(f"aiio: {exc.format_message()}", err=True)
        sys.exit(2 if exc.exit_code == 2 else exc.exit_code)
    except AiioError as exc:
        click.echo(f"aiio: {exc}", err=True)
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.exit(1)
    sys.exit(0)
