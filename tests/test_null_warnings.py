"""A run with the null method made no read or write system call: nothing could come from a
cache or miss the block device, so its warnings say that and what is true of the client
machine, never a cache trap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import TINY_DATA, run_cli

# Warnings about the client machine and the emulation, true whether or not any I/O was done.
CLIENT_SIDE = {"null_io", "client_cpu_saturated", "client_process_busy", "compute_ran_long",
               "rank_cpu_bound"}
# What each phase warned about its cache or its device under the null method before.
PHASES = {
    "load": ("--set", "load.size=4MiB"),
    "randrw": ("--set", "prep.file_size=1MiB", "--set", "prep.duration=0.3s"),
    "checkpoint": ("--set", "checkpoint.size=4MiB"),
    "train": ("--epochs", "1", "--batch-size", "2"),
    "kvcache": ("--set", "kvcache.model=tiny", "--set", "kvcache.layers=2", "--set",
                "kvcache.kv_heads=2", "--set", "kvcache.head_dim=64", "--set",
                "kvcache.block_tokens=64", "--set", "kvcache.duration=0.5s"),
}


@pytest.mark.parametrize("phase", sorted(PHASES))
def test_null_runs_warn_only_what_is_true_without_io(tmp_path: Path, phase: str) -> None:
    (tmp_path / "t").mkdir()
    out = run_cli("run", "--no-report",
                  "--phase", phase, "--cache", "null", "--clients", "2", "--target",
                  str(tmp_path / "t"), "--results", str(tmp_path / "r"), *TINY_DATA,
                  *PHASES[phase], "-q")
    assert out.returncode == 0, out.stderr
    (path,) = (tmp_path / "r").glob("*/result.json")
    res = json.loads(path.read_text())
    codes = [w["code"] for w in res["warnings"]]
    assert codes[0] == "null_io"
    assert set(codes) <= CLIENT_SIDE, codes
    for word in ("cache", "block device", "O_DIRECT"):
        assert word not in " ".join(w["message"] for w in res["warnings"][1:]), word
