"""`aiio clean`: remove aiio's own data from a target, nothing else."""

from __future__ import annotations

import click

from aiio.cli.run import DEFAULT_TARGET
from aiio.cli.s3opts import access_for, s3_options


@click.command()
@click.option("--target", "-t", default=DEFAULT_TARGET, show_default=True)
@s3_options
def clean(target: str, endpoint: str | None, profile: str | None) -> None:
    """Remove TARGET/aiio (only if it carries aiio's ownership marker); for s3://bucket/prefix
    the objects below prefix/aiio/ (never the bucket)."""
    from aiio.storage.target import Target
    from aiio.units import format_size

    access = access_for(target, endpoint, profile)
    if access is not None:
        _clean_bucket(target, access)
        return
    tgt = Target(target)
    tgt.check_usable()
    if not tgt.root.exists():
        click.echo(f"nothing to clean: {tgt.root} does not exist")
        return
    freed = tgt.clean()
    click.echo(f"removed {tgt.root} ({format_size(freed)})")


def _clean_bucket(url: str, access) -> None:
    from aiio.s3.target import S3Target
    from aiio.units import format_size

    tgt = S3Target(url, access)
    count, nbytes, uploads = tgt.clean()
    where = f"{tgt.loc.url}/aiio/"
    if not count:
        click.echo(f"nothing to clean: no objects below {where}")
        return
    ended = f"; aborted {uploads} unfinished upload(s)" if uploads else ""
    click.echo(f"removed {count} objects below {where} ({format_size(nbytes)}){ended}")
