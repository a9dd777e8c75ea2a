"""An I/O stream's figures are typed where they are made (aiio.results.sections) and spelled
once, by `to_dict`: a client's entry and the aggregate hold what the typed figures say, and
`from_dict` reads back what `to_dict` wrote. The figures come from real reads of real files."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from aiio.engines.seam import OpLog
from aiio.phases import base
from aiio.results.sections import AggregateIo, ClientIo

BLOCK = 64 * 1024


def _read_logs(path: Path, blocks: int) -> tuple[list[OpLog], int, int]:
    """Read `blocks` blocks of a real file with pread, each call timed into an OpLog."""
    path.write_bytes(os.urandom(blocks * BLOCK))
    start = time.monotonic_ns()
    log = OpLog(start)
    fd = os.open(path, os.O_RDONLY)
    try:
        with log.timed("open"):
            os.fstat(fd)
        for k in range(blocks):
            with log.timed("read", BLOCK):
                os.pread(fd, BLOCK, k * BLOCK)
    finally:
        os.close(fd)
    return [log], start, time.monotonic_ns()


@pytest.fixture
def clients(tmp_path: Path) -> list[tuple[list[OpLog], int, int]]:
    return [_read_logs(tmp_path / f"f{k}", blocks) for k, blocks in enumerate((3, 5))]


def test_a_clients_entry_is_its_typed_stream_as_written(clients) -> None:
    for logs, start, end in clients:
        typed = base.client_io(logs, start, end, main_op="read")
        entry = base.client_io_figures(logs, start, end, main_op="read")
        assert entry == typed.to_dict()
        assert (entry["bytes"], entry["ops"]) == (sum(log.nbytes for log in logs),
                                                  sum(log.ops for log in logs))
        assert entry["latency"]["count"] == entry["ops"] - 1  # the reads', not the open's
        assert base.client_io_figures(logs, start, end, "x_") == typed.to_dict("x_")
        assert set(typed.to_dict("x_")) == {f"x_{k}" for k in entry}


def test_a_written_stream_reads_back_as_the_same_figures(clients) -> None:
    for logs, start, end in clients:
        entry = json.loads(json.dumps(base.client_io_figures(logs, start, end, "c_")))
        again = ClientIo.from_dict(entry, "c_")
        assert again.to_dict("c_") == entry


def test_the_aggregate_is_the_typed_one_over_the_clients_entries(clients) -> None:
    entries = [base.client_io_figures(logs, s, e) for logs, s, e in clients]
    typed = AggregateIo.over([base.client_io(logs, s, e) for logs, s, e in clients])
    agg = base.io_aggregate(entries)
    assert agg == typed.to_dict() == base.aggregate_io(entries).to_dict()
    assert agg["bytes"] == sum(e["bytes"] for e in entries) == 8 * BLOCK
    assert agg["last_done"]["bytes"] == 8 * BLOCK
    assert list(agg) == ["first_done", "last_done", "per_client_mib_s", "jain", "latency",
                         "histograms", "series_mib_s", "bytes", "ops"]
