"""The command line. The one error boundary: AiioError -> one line, its exit code (2 for bad
input, 1 for a failed run or storage that refused, 130 for Ctrl-C); failed checks exit 1.

Each command lives in its own module (aiio/cli/<name>.py) and is imported only when it runs,
so `aiio run` does not pay for matplotlib or fio parsing at start-up.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys

import click

from aiio import __version__, interrupts
from aiio.errors import AiioError, StopSignal

# command name -> module under aiio.cli holding a click command of that name
COMMANDS = {
    "run": "run",
    "datagen": "datagen",
    "workloads": "workloads",
    "clean": "clean",
    "size": "size",
    "accept": "accept",
    "history": "history",
    "scale": "scale",
    "fio": "fio",
    "compare": "compare",
    "report": "report",
    "mlperf": "mlperf",
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
    """Entry point: run the CLI and map errors to one line and an exit code.

    Under MPI only rank 0 runs the command; the other ranks serve its requests (their share
    of the dataset and of the clients) and print nothing.
    """
    from aiio.run.comm import version_mismatch, world

    try:
        comm = world()
    except AiioError as exc:
        click.echo(f"aiio: {exc}", err=True)
        sys.exit(exc.exit_code)
    # a Ctrl-C or SIGTERM a finalizer swallowed is raised again at the next wait, on every
    # rank: a worker rank that lost the communicator's SIGTERM would measure on till SIGKILL
    interrupts.install()
    if comm.rank != 0:
        sys.exit(_serve(comm))
    if not comm.mpi:  # under MPI the communicator owns SIGTERM (it tells the other ranks)
        _end_on_sigterm()
    code = _command(argv, version_mismatch(comm.identities))
    # the command has ended and said so: a Ctrl-C from here on (pressed again while a run
    # stopped) would only turn its exit code into a death by SIGINT
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    comm.finish(code)
    sys.exit(code)


def _end_on_sigterm() -> None:
    """SIGTERM (a scheduler's timeout, systemd stop, kill) unwinds like Ctrl-C does, so the
    clients are stopped, the partial result is saved as failed and nothing stays "running"."""
    pid = os.getpid()

    def handler(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if os.getpid() != pid:  # a forked child that kept the handler: end as by default
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise StopSignal("ended by SIGTERM")  # the stage it ended adds what it stopped

    signal.signal(signal.SIGTERM, handler)


def _serve(comm) -> int:
    """A worker rank: quiet, until rank 0 says which exit code to leave with."""
    try:
        return comm.serve()
    except AiioError as exc:  # rank 0 is gone or the job is ending; rank 0 or the launcher says
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


def _command(argv: list[str] | None, mismatch: str | None) -> int:
    """Run the command; returns the exit code."""
    try:
        if mismatch:
            raise AiioError(mismatch)
        cli.main(args=argv, prog_name="aiio", standalone_mode=False)
        interrupts.pending()  # a Ctrl-C held as the command's last run ended
    except click.exceptions.Abort:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # one more would cut the line short
        click.echo("aiio: interrupted", err=True)
        return 130
    except KeyboardInterrupt as exc:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # one more would cut the line short
        # one held as a run ended says where its result is (aiio.interrupts.held)
        click.echo(f"aiio: {exc or 'interrupted'}", err=True)
        return 130
    except click.ClickException as exc:
        # click's own usage errors: one line, exit 2
        click.echo(f"aiio: {exc.format_message()}", err=True)
        return 2 if exc.exit_code == 2 else exc.exit_code
    except AiioError as exc:
        if exc.exit_code == 130:  # a Ctrl-C's line: one more would cut it short
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        click.echo(f"aiio: {exc}", err=True)
        return exc.exit_code
    except BrokenPipeError:
        return 1
    except OSError as exc:
        # what the system refused that no stage turned into its own message (a link planted
        # where aiio keeps a file, a folder another process holds): one line, not a traceback
        click.echo(f"aiio: {exc}", err=True)
        return 1
    return 0
