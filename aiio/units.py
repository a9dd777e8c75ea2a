"""Parse and format sizes, durations and rates. IEC units: KiB, MiB, GiB; rates in MiB/s."""

from __future__ import annotations

import re

from aiio.errors import ConfigError

KiB = 1024
MiB = 1024**2
GiB = 1024**3
TiB = 1024**4

# Bare k/m/g/t are taken as binary, the way fio and dd read them; SI units must be spelled out.
_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": KiB, "kib": KiB, "m": MiB, "mib": MiB, "g": GiB, "gib": GiB, "t": TiB, "tib": TiB,
    "p": 1024**5, "pib": 1024**5,
    "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4, "pb": 1000**5,
}
_DURATION_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "m": 60.0, "min": 60.0, "h": 3600.0}
_COUNT_UNITS = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
_NUM = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def _split(text: str, what: str) -> tuple[float, str]:
    m = _NUM.match(text)
    if not m:
        raise ConfigError(f"cannot read {text!r} as a {what}")
    return float(m.group(1)), m.group(2).lower()


def parse_size(value: int | float | str) -> int:
    """Bytes from 4096, '4k', '1MiB', '1.5 GiB' or '912GB' (SI only when spelled out)."""
    if isinstance(value, bool):
        raise ConfigError(f"cannot read {value!r} as a size")
    if isinstance(value, (int, float)):
        return int(value)
    number, unit = _split(value, "size (e.g. 4KiB, 1MiB, 2GiB)")
    if unit not in _SIZE_UNITS:
        raise ConfigError(f"unknown size unit {unit!r} in {value!r}; use B, KiB, MiB, GiB, TiB")
    return int(round(number * _SIZE_UNITS[unit]))


def parse_duration(value: int | float | str) -> float:
    """Seconds from 30, '30s', '500ms', '2m', '1h'."""
    if isinstance(value, bool):
        raise ConfigError(f"cannot read {value!r} as a duration")
    if isinstance(value, (int, float)):
        return float(value)
    number, unit = _split(value, "duration (e.g. 30s, 2m)")
    if unit not in _DURATION_UNITS:
        raise ConfigError(f"unknown duration unit {unit!r} in {value!r}; use ms, s, m, h")
    return number * _DURATION_UNITS[unit]


def parse_count(value: int | float | str) -> float:
    """A large count such as tokens or parameters: '2T', '70B', '8e9'."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    number, unit = _split(str(value), "count (e.g. 70B, 2T)")
    if unit not in _COUNT_UNITS:
        raise ConfigError(f"unknown count suffix {unit!r} in {value!r}; use K, M, B, T")
    return number * _COUNT_UNITS[unit]


def format_size(nbytes: float) -> str:
    """'1.50 GiB' style, binary units."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    return f"{value:.2f} PiB"


def format_duration(seconds: float) -> str:
    """'850 ms', '12.3 s', '4m05s'."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    minutes, sec = divmod(int(round(seconds)), 60)
    return f"{minutes}m{sec:02d}s"


def mib_per_s(nbytes: float, seconds: float) -> float:
    """MiB/s from bytes and seconds; 0 when no time passed."""
    return nbytes / MiB / seconds if seconds > 0 else 0.0


def format_rate(mib_s: float, unit: bool = True) -> str:
    """'1,234.5 MiB/s'; rates under 1 MiB/s keep three significant digits ('0.0123 MiB/s').
    Without the unit for a column whose heading carries it."""
    text = f"{mib_s:.3g}" if 0 < abs(mib_s) < 1 else f"{mib_s:,.1f}"
    return f"{text} MiB/s" if unit else text


def format_latency_ns(ns: float | None) -> str:
    """Latency with a readable unit: ns, us, ms or s; "n/a" for none (no call was timed)."""
    if ns is None:
        return "n/a"
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.1f} us"
    if ns < 1e9:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.2f} s"
