"""Ctrl-C while randrw writes its files (before any client starts): one line, exit 130, and
the files it had written are removed. It was a BufferError traceback (the writers' buffers
closed under threads still writing), exit 1, and the files stayed on the target."""

from __future__ import annotations

import sys
from pathlib import Path

from .conftest import client_processes, ctrl_c_burst, saved_results
from .storage import throttled_disk


def test_ctrl_c_while_writing_the_files_leaves_nothing(target: Path, results: Path) -> None:
    cmd = [sys.executable, "-m", "aiio", "run", "--phase", "randrw", "--target", str(target),
           "--results", str(results), "--clients", "4", "--set", "prep.file_size=1GiB",
           "--duration", "60s", "--quiet", "--no-report", "--no-history"]
    prep = target / "aiio" / "prep"
    code, err = ctrl_c_burst(cmd, lambda _: any(prep.glob("*/randrw-*.bin")), 0.0, 1)
    assert code == 130, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not list(prep.glob("*/*")), "randrw files left on the target"


def test_ctrl_c_on_slow_storage_keeps_the_clients_figures(tmp_path: Path) -> None:
    """A randrw client at depth 1 looked at its stop once per 1,024 random I/Os: at 25 reads
    a second (4 KiB reads on a 100 KiB/s disk) a Ctrl-C waited out a 41 s batch, longer than
    the 10 s the parent gives its clients to send their figures, and the client was killed
    and its figures lost."""
    with throttled_disk(tmp_path, read_bps=100 * 1024) as disk:
        results = tmp_path / "results"
        cmd = disk.command(sys.executable, "-m", "aiio", "run", "--phase", "randrw",
                           "--target", str(disk.mount), "--results", str(results),
                           "--clients", "1", "--duration", "600s", "--quiet", "--no-report",
                           "--no-history", "--set", "prep.file_size=16MiB",
                           "--set", "prep.read_share=1.0", "--set", "prep.threads=1")
        # the client measures for 2 s: a few reads done, a batch under way
        code, err = ctrl_c_burst(cmd, client_processes, 2.0, 1)
    assert code == 130, err
    (saved,) = saved_results(results)
    assert saved["status"] == "interrupted"
    assert [c["client"] for c in saved["clients"]] == [0], err
    assert saved["clients"][0]["bytes"] > 0
