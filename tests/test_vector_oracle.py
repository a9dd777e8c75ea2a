"""The vector phase against a latency oracle (root and FUSE only): the oracle lab's filesystem
answers every read request a fixed delay after it arrived, so a query, whose hops run one
after another with each hop's reads in flight together, must take its hops times that delay
(not its reads times it), and the filesystem must see every node read the phase counted."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import REPO
from .oracle.mount import Rates, can_mount_fuse, ratefs

REASON = can_mount_fuse()
pytestmark = [pytest.mark.root, pytest.mark.skipif(REASON is not None, reason=REASON or "")]
DELAY_S = 0.050
SETS = {"vectors": 3000, "max_degree": 16, "search_list": 24, "beam_width": 4,
        "concurrency": 1, "queries": 12}


def test_a_query_takes_its_hops_times_the_oracles_delay(tmp_path):
    sets = [x for k, v in SETS.items() for x in ("--set", f"vector.{k}={v}")]
    log = tmp_path / "streams.jsonl"
    with ratefs(tmp_path, Rates(read_delay=DELAY_S), size_mib=64, log=log) as mount:
        proc = subprocess.run(
            [sys.executable, "-m", "aiio", "run", "--phase", "vector", "--target", str(mount),
             "--results", str(tmp_path / "r"), "--json", "--quiet", "--no-history",
             "--no-report", "--clients", "2", *sets],
            cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    v = res["aggregate"]["vector"]
    assert v["queries"] == 24 and v["reads_per_query"] > 1.5 * v["hops_per_query"]
    # each query's latency, closed loop: its start to its last hop's end
    hists = [c["histograms"]["query"] for c in res["clients"]]
    mean_s = sum(h["sum"] for h in hists) / sum(h["count"] for h in hists) / 1e9
    hops_s = v["hops_per_query"] * DELAY_S
    # measured 1.042 (10.4 hops, 34.6 reads a query) on a machine at load 15, whose FUSE
    # threads wake late from each delay; reads one at a time would take 3.3 times as long
    assert hops_s <= mean_s <= hops_s * 1.08, (mean_s, hops_s)
    assert min(h["min"] for h in hists) / 1e9 >= 2 * DELAY_S  # no query ends at its first hop
    # every node read the phase counted reached the filesystem, one request each, and one
    # header read a client besides
    index_reads = [r for line in log.read_text().splitlines()
                   for s in [json.loads(line)] if s["path"].endswith(".index")
                   for r in s["reads"]]
    counted = sum(c["queries"]["reads"] for c in res["clients"])
    assert len(index_reads) == counted + 2
    assert all(r[2] == 4096 for r in index_reads)
