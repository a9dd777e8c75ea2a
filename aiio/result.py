"""Results: the versioned JSON every run, sweep, fio suite and acceptance run writes.

A result is a plain dict with a fixed top-level shape (documented in docs/RESULTS.md); this
module names it, saves it atomically and loads it back, refusing unknown schema versions.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

from aiio.errors import AiioError

SCHEMA = "aiio.result/1"
STATUSES = ("ok", "failed", "interrupted")


def new_id(kind: str, *parts: Any) -> str:
    """A sortable, readable id: 20261130-041501-train-demo-c2."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    tail = "-".join(re.sub(r"[^A-Za-z0-9_.]+", "_", str(p)) for p in parts if p != "")
    return f"{stamp}-{kind}-{tail}" if tail else f"{stamp}-{kind}"


def unique_folder(base: Path, run_id: str) -> Path:
    """reports/<run-id>/, with a suffix when two runs start in the same second."""
    folder = base / run_id
    n = 1
    while folder.exists():
        n += 1
        folder = base / f"{run_id}-{n}"
    folder.mkdir(parents=True)
    return folder


def save(result: dict[str, Any], folder: Path) -> Path:
    """Write folder/result.json atomically (a crash never leaves half a file)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "result.json"
    tmp = folder / ".result.json.tmp"
    tmp.write_text(json.dumps(result, indent=1, default=_json_default) + "\n")
    os.replace(tmp, path)
    return path


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return str(value)


def load(path: str | os.PathLike) -> dict[str, Any]:
    """A result from result.json or the folder holding it."""
    p = Path(path)
    if p.is_dir():
        p = p / "result.json"
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise AiioError(f"no result at {path} (expected a result.json or its folder)") from None
    except (OSError, ValueError) as exc:
        raise AiioError(f"cannot read result {p}: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise AiioError(f"{p} is not an aiio result of schema {SCHEMA}")
    return data
