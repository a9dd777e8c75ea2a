"""The kvcache phase's own CPU cost per block (`make bench`, figure `kvcache-cpu`): one client
of 4 users with no think time, small blocks of one call each, on a tmpfs folder; the clients'
CPU seconds over the blocks they read and wrote. With the null method no read or write system
call is made, so the figure is aiio's own work per block (tier look-up, timing, histogram
records, the request's bookkeeping); with `none` (the page cache kept) it adds the system
calls on tmpfs: open, write, fsync, close and open, read, close."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tools.pairs import Row

# 512 B a token (1 layer x 1 KV head x 128 x 2 x 2 B), 16 tokens a block: 8 KiB blocks, one
# call each; 256-token contexts write 16 blocks a request and read them back.
WORKLOAD = {"model": "cost", "layers": 1, "kv_heads": 1, "head_dim": 128, "block_tokens": 16,
            "context_tokens": 256, "generation_tokens": 16, "users": 4, "think_time": "0s",
            "transfer_size": "8KiB"}


def cpu_per_block_us(result: Mapping[str, Any]) -> float:
    """Every client's CPU seconds over every block read or written, in us (NaN: no block)."""
    clients = result["clients"]
    blocks = sum(c["kvcache"]["blocks_read"] + c["kvcache"]["blocks_written"] for c in clients)
    return sum(c["cpu_s"] for c in clients) / blocks * 1e6 if blocks else math.nan


def cost_row(method: str, result: Mapping[str, Any]) -> Row:
    """The figure as a bench row: reported, met when it was measured."""
    us = cpu_per_block_us(result)
    kv = [c["kvcache"] for c in result["clients"]]
    blocks = sum(k["blocks_read"] + k["blocks_written"] for k in kv)
    requests = sum(k["requests"] for k in kv)
    return Row(f"kvcache: aiio CPU per 8 KiB block, --cache {method}", us, 0.0, "us", 0.0,
               "reported", not math.isnan(us),
               note=f"1 client, 4 users, {requests:,} requests, {blocks:,} blocks")


def run_phase(folder: Path, method: str, duration: str) -> dict:
    """One run of the phase on `folder`; its result."""
    sets = {**WORKLOAD, "duration": duration}
    cmd = [sys.executable, "-m", "aiio", "run", "--phase", "kvcache", "--target", str(folder),
           "--cache", method, "--clients", "1", "--results", str(folder / "results"),
           "--json", "--quiet", "--no-history", "--no-report",
           *[x for k, v in sets.items() for x in ("--set", f"kvcache.{k}={v}")]]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode:
        raise SystemExit(f"kvcache run failed: {proc.stderr.strip()[-400:]}")
    return json.loads(proc.stdout)


def cost_rows(folder: Path, duration: str = "10s",
              methods: tuple[str, ...] = ("null", "none")) -> list[Row]:
    """A row per cache method, each from one run in its own folder under `folder`."""
    rows = []
    for method in methods:
        where = folder / method
        where.mkdir()
        rows.append(cost_row(method, run_phase(where, method, duration)))
    return rows
