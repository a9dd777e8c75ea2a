"""The fairness bench (tools/bench.py): aiio's and fio's measured runs start alike on the
oracle. At two clients; the bench's rows run 1,024."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.oracle import fair
from tests.oracle.mount import can_mount_fuse

REASON = can_mount_fuse()
pytestmark = [pytest.mark.root, pytest.mark.long,
              pytest.mark.skipif(REASON is not None, reason=REASON or "")]


def test_fio_finds_its_files_laid_out_apart_from_its_measured_runs(monkeypatch):
    # aiio's dataset is made on a mount of its own before any measured run; fio's files were
    # laid out by its first measured run, on the very mount it then read, so that run alone
    # found every name in the kernel's cache (a lookup fewer per open than the others)
    from tools import bench

    found: list[list[int]] = []
    measure = bench._fair_fio

    def measured(mount: Path, clients: int) -> list[float]:
        files = sorted((mount / "fio-data").glob("*")) if (mount / "fio-data").is_dir() else []
        found.append([f.stat().st_size for f in files])
        return measure(mount, clients)

    monkeypatch.setattr(bench, "_fair_fio", measured)
    rows = bench.fairness_rows(2, 1)
    assert found == [[fair.FILE] * 2 * fair.FILES]
    assert len(rows) == 4 and all(r.aiio > 0 for r in rows)
