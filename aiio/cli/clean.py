"""`aiio clean`: remove aiio's own data from a target, nothing else."""

from __future__ import annotations

import click

from aiio.cli.run import DEFAULT_TARGET


@click.command()
@click.option("--target", "-t", default=DEFAULT_TARGET, show_default=True)
def clean(target: str) -> None:
    """Remove TARGET/aiio (only if it carries aiio's ownership marker)."""
    from aiio.target import Target
    from aiio.units import format_size

    tgt = Target(target)
    tgt.check_usable()
    if not tgt.root.exists():
        click.echo(f"nothing to clean: {tgt.root} does not exist")
        return
    freed = tgt.clean()
    click.echo(f"removed {tgt.root} ({format_size(freed)})")
