"""Two model-load runs on one target at once: the weights are written once, by one of them.

The weights folder had no lock (the dataset has had one since Dec 1 2026): a second run found
the first one's weights without a manifest, removed them while the first was writing them and
wrote its own; the first then measured and declared complete what the second had replaced.
Real commands, real files: no run here is timed."""

from __future__ import annotations

import os
import signal

from .conftest import finish, wait_for
from .test_dataset_lock import WAITING

# The first run is paused (SIGSTOP to its process group) once its first weight file is there
# and goes on only when the second says it waits: the second always comes while the first
# writes, however loaded the machine (768 MiB written unpaused only made that likely, and a
# loaded run of the suite once wrote them all before the second started).
FILES = 16
WEIGHTS = ("--set", "load.size=64MiB", "--set", f"load.files={FILES}")


def test_a_second_load_waits_for_the_weights_and_reuses_them(target, tmp_path, start):
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    common = ("--phase", "load", "-t", str(target), "--no-report", "--no-history",
              "--clients", "1", *WEIGHTS)
    first = start(logs[0], "run", *common, "--results", str(tmp_path / "a"))
    models = target / "aiio" / "models"
    wait_for(first, lambda: any(models.glob("*/weights-*")), "the first run's weights")
    os.killpg(first.pid, signal.SIGSTOP)
    assert not any(models.glob("*/manifest.json")), "the first run had written them all"
    second = start(logs[1], "run", *common, "--results", str(tmp_path / "b"))
    try:
        wait_for(second, lambda: WAITING in logs[1].read_text(), "the second run's wait")
    finally:
        os.killpg(first.pid, signal.SIGCONT)
    code2, said2 = finish(second, logs[1])
    code1, said1 = finish(first, logs[0])
    assert (code1, code2) == (0, 0), said1 + said2
    assert "Traceback" not in said1 + said2
    assert "writing model weights:" in said1, said1
    assert "writing model weights:" not in said2, said2  # written once, by the first
    assert said2.count(WAITING) == 1 and "reusing model weights" in said2, said2
    (folder,) = [p for p in models.iterdir() if p.is_dir()]
    assert len(list(folder.glob("weights-*.bin"))) == FILES
