"""--endpoint and --profile: how an s3:// target is reached (refused for a directory)."""

from __future__ import annotations

import click

from aiio.errors import ConfigError


def s3_options(func):
    """Add --endpoint and --profile; the command receives them as `endpoint`, `profile`."""
    func = click.option("--profile", default=None, metavar="NAME",
                        help="s3:// targets: AWS profile for credentials (default: the AWS "
                             "environment and config chain)")(func)
    return click.option("--endpoint", default=None, metavar="URL",
                        help="s3:// targets: S3 service URL, e.g. http://host:9000 (default: "
                             "AWS_ENDPOINT_URL or the AWS config)")(func)


def access_for(target: str, endpoint: str | None, profile: str | None):
    """The S3 access of an s3:// target; None for a directory, which takes neither option."""
    from aiio.s3.connect import Access
    from aiio.s3.location import is_s3

    if is_s3(target):
        return Access(endpoint, profile)
    if endpoint or profile:
        flag = "--endpoint" if endpoint else "--profile"
        raise ConfigError(f"{flag} is for s3:// targets; {target} is a directory")
    return None
