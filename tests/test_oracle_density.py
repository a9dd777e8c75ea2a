"""Shares at density: 256 clients on the per-stream oracle (root and FUSE only).

The oracle gives every open file a stream of STREAM bytes/s and has no global cap, so a client
that reads its files one after another gets the stream rate from the common start to its last
byte, whatever the number of clients. Its stream log says what it delivered to each stream:
when the stream was opened, when each read was asked for and answered. Anything a client's
figures show beyond that is the client's own time, and the start-up burst is where it hides:
all clients start together, and whatever each still has to do before its first read (the
shuffle, first touches of its memory and code) is done by all of them at once, inside the
window, on a few CPUs.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from aiio.units import MiB

from .conftest import REPO
from .oracle import fair
from .oracle.mount import Rates, can_mount_fuse, ratefs

REASON = can_mount_fuse()
# Its checks hold beside the whole suite (the start-up bound's figure read 0.00 to 0.09 s at
# load averages from 2 to 50), so it runs in the parallel pass; beside the oracle lab's sweeps,
# in the serial pass, its 256 clients took the CPU the lab's one-client point needed.
pytestmark = [pytest.mark.root, pytest.mark.skipif(REASON is not None, reason=REASON or ""),
              pytest.mark.oracle_under_load, pytest.mark.long]

CLIENTS = 256
STREAM, FILE, FILES = fair.STREAM, fair.FILE, fair.FILES  # 4 s per file, 2 files a client

# How much longer a client's own time before its first file may be than between its files
# (median over clients). The burst this check was written for held the loader threads' first
# batch 0.44 s after the common start at 256 clients (4 s, a whole file, at 1,024). Without it,
# what is left is waking 256 processes on two CPUs and their first opens through FUSE: 0.00 to
# 0.09 s in four runs at load averages from 2 to 50. 0.2 s sits a factor of two from each.
# The bound is fixed. It was the second files' spread over the clients: the oracle's and the
# scheduler's jitter, which a quiet run shrinks below that start-up cost (0.082 s against
# 0.075 s once). The oracle's time for each file, which varies by up to 0.1 s under load, is
# taken out of both sides, so the compared figure is the client's own time alone.
START_BOUND_S = 0.2


def _run(tmp: Path) -> tuple[dict, list[dict]]:
    """One 256-client epoch on the oracle: the result and the oracle's log of the data
    streams (those that read one whole file)."""
    spec = tmp / "density.toml"
    spec.write_text(fair.workload(CLIENTS))
    log = tmp / "streams.jsonl"
    size_mib = CLIENTS * FILES * FILE // MiB + 64
    with ratefs(tmp, Rates(read_stream=STREAM), size_mib=size_mib, threads=2 * CLIENTS + 64,
                log=log) as mount:
        (mount / "data").mkdir()
        # the dataset first, so the oracle's log of the run holds only the run's streams
        gen = subprocess.run([sys.executable, "-m", "aiio", "datagen", "--workload", str(spec),
                              "--target", str(mount / "data")], cwd=REPO, capture_output=True,
                             text=True, timeout=300)
        assert gen.returncode == 0, gen.stderr[-2000:]
        log.write_text("")
        proc = subprocess.run([sys.executable, "-m", "aiio", "run", "--workload", str(spec),
                               "--clients", str(CLIENTS), "--target", str(mount / "data"),
                               "--results", str(tmp / "r"), "--json", "--quiet",
                               "--no-history", "--no-report"], cwd=REPO, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
    streams = [json.loads(line) for line in log.read_text().splitlines()]
    return json.loads(proc.stdout), [s for s in streams
                                     if sum(r[2] for r in s["reads"]) == FILE]


def _served_s(stream: dict) -> float:
    """How long the oracle took to deliver one file: its open to its last answered read."""
    return stream["reads"][-1][1] - stream["open"]


def _in_hand(client: dict) -> tuple[float, float]:
    """When the client held its first and its second batch, in s since the common start."""
    s0, s1 = client["step_log"][:2]
    return s0[2] + s0[3], s1[2] + s1[3]


def _own_before_first(client: dict, own: list[dict]) -> float:
    """The client's own time up to its first batch: the common start to the batch in hand,
    less the oracle's time for the first file."""
    return _in_hand(client)[0] - _served_s(own[0])


def _own_between(client: dict, own: list[dict]) -> float:
    """The client's own time between its batches: the first batch in hand to the second, less
    the oracle's time for the second file."""
    first, second = _in_hand(client)
    return second - first - _served_s(own[1])


def _per_client(res: dict, streams: list[dict]) -> list[tuple[dict, list[dict]]]:
    """Each client's result with its streams in the order it opened them (matched by pid)."""
    by_pid: dict[int, list[dict]] = {}
    for s in streams:
        by_pid.setdefault(s["pid"], []).append(s)
    return [(c, sorted(by_pid.get(c["pid"], []), key=lambda s: s["open"]))
            for c in res["clients"]]


def test_every_client_gets_the_stream_rate_from_the_common_start(tmp_path):
    res, streams = _run(tmp_path)
    assert len(res["clients"]) == CLIENTS
    assert len(streams) == CLIENTS * FILES
    pairs = _per_client(res, streams)
    assert all(len(own) == FILES for _, own in pairs), "streams not matched to their clients"
    served = sorted(_served_s(s) for s in streams)
    assert served[0] >= FILE / STREAM * 0.99, "the oracle delivered faster than its rate"

    # The start-up burst. A client's own time around its first file (from the common start to
    # the oracle's open, and from the last byte to the batch in hand) against its own time
    # around its second (from the first batch in hand to the second); the oracle's time for
    # each file, from its log, is taken out, so only the client's time is compared. The
    # finer check, that no per-client work is left between the start and the first read, is
    # tests/test_train_start.py.
    later = statistics.median(_own_before_first(c, own) - _own_between(c, own)
                              for c, own in pairs)
    assert later <= START_BOUND_S, (
        f"a client spent {later:.3f} s more of its own time before its first file than "
        f"between its files (median over clients); the bound is {START_BOUND_S} s")

    # Nobody counted more than the oracle allows (the rate over the window, plus its slack).
    assert all(c["mib_s"] * MiB <= STREAM * 1.01 for c in res["clients"])

    # No client starved: each spent at least 90 % of its window (common start to last byte)
    # being served by the oracle, whatever it did before, between and after its files.
    for c, own in pairs:
        storage_s = sum(_served_s(s) for s in own)
        assert storage_s / c["elapsed_s"] >= 0.9, (
            f"client {c['client']} spent {c['elapsed_s'] - storage_s:.3f} s of its "
            f"{c['elapsed_s']:.3f} s window outside the oracle's time for its files")
