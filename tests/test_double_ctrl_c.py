"""Ctrl-C pressed more than once, as people do when a run does not end at once: the second
cut short the run's ending, so the checkpoint files it was removing stayed on the target and
the line naming the saved result was lost ("aiio: interrupted"). Once a run is ending, a
Ctrl-C waits for its result to be saved and its files removed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import aiio_cmd, ctrl_c_burst


# Ctrl-C as the first files are written (as the run prepares), and once clients write; then
# one every 20 ms for a second, over the run's ending
@pytest.mark.parametrize("after_s", [0.0, 1.0])
def test_ctrl_c_again_while_the_run_ends_leaves_no_file_and_names_the_result(
        target: Path, results: Path, after_s: float) -> None:
    code, err = ctrl_c_burst(aiio_cmd(
        "run", "-p", "checkpoint", "-t", str(target), "--results", str(results),
         "--clients", "2", "--set", "checkpoint.size=256MiB", "--checkpoints", "8",
         "--quiet", "--no-report", "--no-history"),
        lambda _: any(target.glob("aiio/checkpoints/*/ckpt-*/*.bin")), after_s, 50)
    assert code == 130, err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("aiio: interrupted by the user") and "partial result saved in " \
        in last, err
    (saved,) = [json.loads(p.read_text()) for p in results.glob("*/result.json")]
    assert saved["status"] == "interrupted"
    left = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    assert left == ["aiio/.aiio-owned", "aiio/.runs.lock"], left
