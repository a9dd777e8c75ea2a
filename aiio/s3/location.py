"""`s3://bucket/prefix` target URLs and the keys aiio may write below them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from aiio.errors import ConfigError

SCHEME = "s3://"
OWN_DIR = "aiio"
MARKER = ".aiio-owned"
# The S3 rules for bucket names (3-63 lowercase letters, digits, dots, hyphens; letter or
# digit at both ends): a name outside them can never be reached, so say so before any request.
BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


def is_s3(target: str) -> bool:
    return str(target).lower().startswith(SCHEME)


@dataclass(frozen=True)
class Location:
    """A bucket and a key prefix ("" or ending without a slash)."""

    bucket: str
    prefix: str

    @property
    def url(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.prefix}".rstrip("/")

    @property
    def own(self) -> str:
        """The key prefix aiio owns: `<prefix>/aiio/`."""
        return self.key(OWN_DIR) + "/"

    @property
    def marker(self) -> str:
        return self.own + MARKER

    def key(self, *parts: str) -> str:
        """The key of `parts` below the prefix."""
        return "/".join(p.strip("/") for p in (self.prefix, *parts) if p.strip("/"))

    def own_key(self, *parts: str) -> str:
        """The key of `parts` below aiio's own prefix."""
        return self.key(OWN_DIR, *parts)


def parse(url: str) -> Location:
    """`s3://bucket[/prefix]` -> Location; a URL without a valid bucket is a ConfigError."""
    if not is_s3(url):
        raise ConfigError(f"{url!r} is not an s3:// URL")
    rest = str(url)[len(SCHEME):]
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise ConfigError(f"--target {url}: no bucket; write s3://BUCKET/PREFIX")
    if not BUCKET_NAME.fullmatch(bucket) or ".." in bucket:
        raise ConfigError(f"--target {url}: {bucket!r} is not a valid bucket name (3-63 "
                          "lowercase letters, digits, dots or hyphens)")
    prefix = prefix.strip("/")
    if any(part in ("", ".", "..") for part in prefix.split("/")) and prefix:
        raise ConfigError(f"--target {url}: the prefix may not hold empty, '.' or '..' parts")
    return Location(bucket, prefix)
