"""The KV-cache phase against a latency oracle (root and FUSE only): the oracle lab's
filesystem answering every read request after a fixed delay, so each block's read call must
read that delay, and no less."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import REPO
from .oracle.mount import Rates, can_mount_fuse, ratefs

REASON = can_mount_fuse()
pytestmark = [pytest.mark.root, pytest.mark.skipif(REASON is not None, reason=REASON or "")]
DELAY_S = 0.020
# 64 KiB blocks (1,024 B/token x 64 tokens): one FUSE read request a block
MODEL = {"model": "tiny", "layers": 2, "kv_heads": 2, "head_dim": 64, "block_tokens": 64,
         "context_tokens": 256, "generation_tokens": 16, "users": 2, "duration": "3s",
         "max_context_tokens": 1024,
         "transfer_size": "64KiB"}


def test_each_block_read_takes_the_oracles_delay(tmp_path):
    sets = [x for k, v in MODEL.items() for x in ("--set", f"kvcache.{k}={v}")]
    with ratefs(tmp_path, Rates(read_delay=DELAY_S), size_mib=64) as mount:
        proc = subprocess.run(
            [sys.executable, "-m", "aiio", "run", "--phase", "kvcache", "--target", str(mount),
             "--results", str(tmp_path / "r"), "--json", "--quiet", "--no-history",
             "--no-report", "--clients", "2", *sets],
            cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    agg = json.loads(proc.stdout)["aggregate"]
    reads = agg["read"]["latency"]["read"]
    assert reads["count"] > 20
    assert reads["min_ns"] >= DELAY_S * 1e9
    assert reads["p50_ns"] == pytest.approx(DELAY_S * 1e9, rel=0.05)
    # a block read is its open, that read and its close: the delay and a little more
    block = agg["kvcache"]["block_read"]["pooled"]
    assert DELAY_S * 1e3 <= block["p50_ms"] <= DELAY_S * 1e3 * 1.10
