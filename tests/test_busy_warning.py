"""The busy-client warning blames what it knows: the client's own CPU, whichever loop read."""

from __future__ import annotations

from aiio.honesty import CLIENT_PROC_BUSY, run_warnings
from aiio.storage.target import TargetInfo

TMPFS = TargetInfo(path="/t", fstype="tmpfs", mountpoint="/t", device="tmpfs",
                   memory_backed=True, network=False, o_direct=True, direct_align=4096,
                   total_bytes=1 << 30, free_bytes=1 << 30)


def test_a_busy_client_is_told_its_own_cpu_may_limit_it_not_its_python_loop() -> None:
    # a client whose reads went through the compiled loop was told "their Python loop"
    busy = {"client": 3, "elapsed_s": 1.0, "cpu_s": CLIENT_PROC_BUSY,
            "read_loop": "compiled (numba 0.68.1)"}
    (warning,) = [w for w in run_warnings(TMPFS, {}, [busy], 0)
                  if w["code"] == "client_process_busy"]
    assert "client(s) 3" in warning["message"] and "own CPU" in warning["message"]
    assert "Python" not in warning["message"]
