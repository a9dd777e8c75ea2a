"""The refusal of client counts the host cannot hold: based on measured client memory."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from aiio import memcheck
from aiio.errors import AiioError
from aiio.units import GiB
from aiio.workload import load_workload

from .conftest import REPO, client_processes


def test_512_demo_clients_fit_on_24_gib():
    # 256 clients measured 8.4 MiB of PSS each before the client model was slimmed: 512 of
    # them need about 4.2 GiB, far below 24 GiB.
    memcheck.check_need(memcheck.client_bytes(load_workload("demo")), 512, available=24 * GiB)


def test_more_clients_than_memory_holds_are_refused_with_the_figures():
    with pytest.raises(AiioError) as info:
        memcheck.check_need(memcheck.client_bytes(load_workload("demo")), 20_000,
                            available=24 * GiB)
    message = str(info.value)
    assert info.value.exit_code == 2
    assert "20000 clients" in message and "each" in message and "\n" not in message


def test_estimate_covers_what_a_real_client_uses(tmp_path):
    """Each client of a real run stays within the per-client figure the refusal uses: its
    own memory (USS), what one more client adds; the rest it shares with the parent."""
    target = tmp_path / "target"
    target.mkdir()
    cmd = [sys.executable, "-m", "aiio", "run", "--target", str(target), "--results",
           str(tmp_path / "reports"), "--quiet", "--clients", "4", "--duration", "4s"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    peak = 0
    try:
        while proc.poll() is None:
            for kid in client_processes(proc.pid):
                try:
                    peak = max(peak, kid.memory_full_info().uss)
                except psutil.Error:
                    continue  # exited while we looked
            time.sleep(0.2)
    finally:
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert peak > 0, "no client process was seen"
    assert peak <= memcheck.client_bytes(load_workload("demo")), peak


def test_the_randrw_depth_buffers_are_counted():
    # A randrw reader holds iodepth buffers of block_size per thread, populated at once: 2
    # threads at depth 1,024 of 16 MiB blocks are 32 GiB a client, and the estimate counted
    # the prep transfer size only (9.75 MiB a client), so 2 such clients passed the check.
    w = load_workload("demo", [("prep", "mode", "randrw"), ("prep", "iodepth", 1024),
                               ("prep", "block_size", "16MiB"), ("prep", "file_size", "1GiB"),
                               ("prep", "read_share", 1)])
    assert memcheck.client_bytes(w) >= w.prep.threads * 1024 * 16 * 2**20
    with pytest.raises(AiioError, match="2 clients need"):
        memcheck.check_need(memcheck.client_bytes(w), 2, available=24 * GiB)


def test_a_refusal_below_the_available_memory_names_the_share_a_run_may_use():
    # 2,000 demo clients need about 19.2 GiB; with 20.8 GiB available the line read "need
    # about 19.17 GiB ... but only 20.80 GiB is available", which contradicts itself: a run
    # may plan on 80 % of what is available, and the line must say so and what does fit
    each = memcheck.client_bytes(load_workload("demo"))
    available = int(20.8 * GiB)
    with pytest.raises(AiioError) as info:
        memcheck.check_need(each, 2000, available=available)
    message = str(info.value)
    assert "80 %" in message and "16.64 GiB" in message, message
    fits = int((memcheck.USABLE * available - memcheck.PARENT_BYTES) // each)
    memcheck.check_need(each, fits, available=available)
    assert f"at most {fits} clients" in message, message
    assert "\n" not in message
