"""A Ctrl-C while the clients get ready: no client moves a byte once told to stop. Real runs
on the temp filesystem, the stop delivered where every client is ready and none started."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import REPO, TINY_ARGS

# the run's parent, stopped as a Ctrl-C would stop it right after every client got ready
STOPPED_AT_READY = ("import aiio.run.clients as c\n"
                    "ready = c._wait_ready\n"
                    "def stopped(*a, **k):\n"
                    "    ready(*a, **k)\n"
                    "    raise KeyboardInterrupt\n"
                    "c._wait_ready = stopped\n"
                    "from aiio.cli import main\n"
                    "main({argv!r})\n")


@pytest.mark.parametrize("phase", [("checkpoint",), ("train",), ("load",), ("prep",),
                                   ("prep", "--set", "prep.mode=randrw")],
                         ids=["checkpoint", "train", "load", "prep", "randrw"])
def test_clients_stopped_before_the_start_move_no_byte(tmp_path, phase):
    # Each checkpoint client wrote its first transfer (1 MiB of the demo's) after the stop:
    # the first checkpoint's burst started at the run's start without asking whether to stop.
    # Training's loader threads read their first batch and load's readers their first
    # transfers the same way.
    results = tmp_path / "reports"
    argv = ["run", "--phase", *phase, "--target", str(tmp_path), "--results",
            str(results), "--no-history", "--no-report", "--quiet", *TINY_ARGS,
            "--clients", "3"]
    done = subprocess.run([sys.executable, "-c", STOPPED_AT_READY.format(argv=argv)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    (path,) = results.glob("*/result.json")
    clients = json.loads(path.read_text())["clients"]
    assert clients and all(c["bytes"] == 0 for c in clients), [c["bytes"] for c in clients]
