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
    from aiio.options import Access
    from aiio.s3.location import is_s3

    if is_s3(target):
        return Access(endpoint, profile)
    if endpoint or profile:
        flag = "--endpoint" if endpoint else "--profile"
        raise ConfigError(f"{flag} is for s3:// targets; {target} is a directory")
    return None


def part_size_option(func):
    """Add --part-size; the command receives it as `part_size`."""
    return click.option("--part-size", default=None, metavar="SIZE",
                        help="s3:// targets: multipart part size of uploads, 5MiB..5GiB "
                             "(s3.part_size; default 8MiB)")(func)


def part_size_sets(target: str, part_size: str | None) -> list[str]:
    """--part-size as a workload override; refused for a directory."""
    from aiio.s3.location import is_s3

    if part_size is None:
        return []
    if not is_s3(target):
        raise ConfigError(f"--part-size is for s3:// targets; {target} is a directory")
    return [f"s3.part_size={part_size}"]
