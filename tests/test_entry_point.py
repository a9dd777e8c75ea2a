"""The real entry point, `python -m aiio`, once per command: bad input ends the process with one
line and exit code 2. The many other bad-input cases run in process (conftest.call_cli), through
the same error boundary; these make sure the process around it keeps that promise."""

from __future__ import annotations

import pytest

from .conftest import run_cli

NOWHERE = "/nonexistent/aiio-test"


@pytest.mark.parametrize("args, words", [
    (("run", "--target", NOWHERE), "does not exist"),
    (("datagen", "--target", NOWHERE), "does not exist"),
    (("workloads", "--no-such-option"), "No such option"),
    (("clean", "--target", NOWHERE), "does not exist"),
    (("size",), "give --model"),
    (("accept", "no-such-spec"), "unknown acceptance spec"),
    (("history", "--check"), "requires an argument"),
    (("scale", "--target", NOWHERE, "--clients", "4,2"), "must increase"),
    (("fio", "--target", NOWHERE, "--size", "4KiB"), "at least 1 MiB"),
    (("compare", NOWHERE), NOWHERE),
    (("report",), "nothing to report"),
])
def test_bad_input_ends_the_process_with_one_line_and_exit_2(args, words):
    proc = run_cli(*args, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aiio: ") and words in lines[0], proc.stderr
    assert proc.stdout == ""
