"""Run options: what a run checks and how it reaches the target, apart from the workload.
They come from the command line or an acceptance spec's [check.options]; none is a measured
value or changes one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from aiio.errors import ConfigError

KEYS = ("verify", "space_check", "s3")
S3_KEYS = ("endpoint", "profile")


@dataclass(frozen=True)
class Access:
    """How to reach the service: endpoint URL (None: AWS config/env) and profile name."""

    endpoint: str | None = None
    profile: str | None = None

    def __post_init__(self) -> None:
        if self.endpoint:
            check_endpoint(self.endpoint, "endpoint", ConfigError)


def check_endpoint(url: str, name: str, error: type[Exception]) -> None:
    """Refuse what botocore would take apart with a traceback or a bare "not a valid URI"."""
    parts = urlsplit(url)
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        port_ok = False
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise error(f"{name} {url!r} is not an S3 service URL; write it as http://HOST:PORT "
                    "or https://HOST:PORT")


@dataclass(frozen=True)
class RunOptions:
    verify: bool = False        # checksum every block written and read back (--verify)
    space_check: bool = True    # refuse before writing what does not fit (off: tests fill disks)
    s3: Access | None = None    # how an s3:// target is reached (--endpoint, --profile)

    def to_dict(self) -> dict[str, Any]:
        """Only what was given, as results have always recorded it."""
        out: dict[str, Any] = {}
        if self.verify:
            out["verify"] = True
        if self.s3 is not None:
            out["s3"] = {"endpoint": self.s3.endpoint, "profile": self.s3.profile}
        if not self.space_check:
            out["space_check"] = False
        return out

    @classmethod
    def from_table(cls, table: dict[str, Any], where: str) -> RunOptions:
        """Validate a TOML table of options; `where` names it in the one-line error."""
        _known(table, KEYS, where)
        s3 = table.get("s3")
        if s3 is not None:
            if not isinstance(s3, dict):
                raise ConfigError(f"{where}.s3 must be a table (endpoint, profile)")
            _known(s3, S3_KEYS, f"{where}.s3")
            s3 = Access(*(_text(s3, k, f"{where}.s3") for k in S3_KEYS))
        return cls(verify=_flag(table, "verify", False, where),
                   space_check=_flag(table, "space_check", True, where), s3=s3)


def _known(table: dict[str, Any], keys: tuple[str, ...], where: str) -> None:
    for key in table:
        if key not in keys:
            raise ConfigError(f"{where}: unknown key {key!r}; known: {', '.join(keys)}")


def _flag(table: dict[str, Any], key: str, default: bool, where: str) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{where}.{key} must be true or false, not {value!r}")
    return value


def _text(table: dict[str, Any], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{where}.{key} must be a string, not {value!r}")
    return value
