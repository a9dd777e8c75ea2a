"""The accelerator table: memory and dense bf16 peak per accelerator type, with sources."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiio.errors import ConfigError
from aiio.units import GiB
from aiio.workload import workload_folders, workloads_dir

ACCELERATOR_KEYS = {"name": str, "memory_gib": (int, float), "bf16_tflops": (int, float),
                    "source": str}


@dataclass(frozen=True)
class Accelerator:
    """One accelerator type: memory and dense bf16 peak, with where the numbers come from."""

    key: str
    name: str
    memory_gib: float
    bf16_tflops: float
    source: str

    @property
    def memory_bytes(self) -> float:
        return self.memory_gib * GiB

    @property
    def peak_flops(self) -> float:
        """Dense bf16 peak in FLOP/s."""
        return self.bf16_tflops * 1e12


def accelerators_path() -> Path:
    """hardware/accelerators.toml of the first workload folder that has one (a user's own
    folder can replace the shipped table)."""
    for _, folder in workload_folders():
        if (folder / "hardware" / "accelerators.toml").is_file():
            return folder / "hardware" / "accelerators.toml"
    return workloads_dir() / "hardware" / "accelerators.toml"


def load_accelerators(path: Path | None = None) -> dict[str, Accelerator]:
    """Read and check the accelerator table; unknown or missing keys name the file and entry."""
    path = path or accelerators_path()
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read the accelerator table {path}: {exc}") from exc
    return {key.lower(): _accelerator(key.lower(), entry, f"{path} [{key}]")
            for key, entry in data.items()}


def _accelerator(key: str, entry: Any, where: str) -> Accelerator:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = set(entry) - set(ACCELERATOR_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r}; "
                          f"known: {', '.join(ACCELERATOR_KEYS)}")
    for name, kind in ACCELERATOR_KEYS.items():
        value = entry.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ConfigError(f"{where}: {name} is missing or not a {_kind_name(kind)}")
        if not isinstance(value, str) and value <= 0:
            raise ConfigError(f"{where}: {name} = {value} must be greater than 0")
    return Accelerator(key=key, name=entry["name"], memory_gib=float(entry["memory_gib"]),
                       bf16_tflops=float(entry["bf16_tflops"]), source=entry["source"])


def _kind_name(kind: Any) -> str:
    return "string" if kind is str else "number"


def find_accelerator(name: str, table: dict[str, Accelerator]) -> Accelerator:
    """The table entry for a name such as 'H100' (case does not matter)."""
    found = table.get(name.strip().lower())
    if found is None:
        raise ConfigError(f"unknown accelerator {name!r}; known: {', '.join(sorted(table))} "
                          f"(add it to {accelerators_path()})")
    return found
