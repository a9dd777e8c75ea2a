"""A client's CPU time is read at the clock's own resolution, not in 10 ms ticks.

`os.times()` counts in clock ticks (1/100 s on Linux): a client that spent 7 ms of CPU in its
window read 0.0, so every client of a short run showed no CPU at all on its page.
"""

from __future__ import annotations

from pathlib import Path

from aiio.fio import hero
from aiio.run import runner
from tests.conftest import tiny_workload


def test_every_client_that_read_spent_cpu_time_and_it_is_not_counted_in_ticks(
        target: Path, results: Path) -> None:
    res, _ = runner.run(runner.RunRequest("train", tiny_workload(), str(target), str(results),
                                          hero=hero.Pairing(results)))
    assert res["status"] == "ok", res.get("error")
    cpu = [c["cpu_s"] for c in res["clients"]]
    assert all(s > 0 for s in cpu), cpu
    # a tick-counted clock gives whole hundredths only; a client's real CPU time almost never is
    assert any(abs(s * 100 - round(s * 100)) > 1e-6 for s in cpu), cpu
