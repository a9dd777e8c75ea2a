"""The bench's fio counterpart of the checkpoint burst writes data of the kind aiio writes:
fresh in every write call, so no 64-byte piece repeats (docs/METHOD.md, "Write payload").
fio by default fills its buffer once and writes it again and again, changing only a few bytes
of each 512-byte sector (scramble_buffers): a reference that makes no data at all. Real fio,
real files; no speed is measured here."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tools import bench

PIECE = 64  # bytes: the run length that delta and similarity reduction match


def test_the_checkpoint_rows_fio_writes_fresh_data_in_every_call(tmp_path: Path) -> None:
    jobs = bench.checkpoint_fio_jobs(tmp_path, clients=2, shard=4 * bench.MiB, keep=True)
    assert sum(j["write"]["io_bytes"] for j in jobs) == 8 * bench.MiB
    data = b"".join(p.read_bytes() for p in sorted(tmp_path.glob("fio-ckpt-*.bin")))
    assert len(data) == 8 * bench.MiB
    pieces = np.frombuffer(data, dtype=np.uint8).reshape(-1, PIECE)
    assert len(np.unique(pieces.view(f"V{PIECE}").ravel())) == len(pieces)


def test_the_checkpoint_note_says_which_fio_is_judged_and_what_making_data_cost_fio() -> None:
    """fio's user CPU is its whole loop, not only its data: the note gives what refill_buffers
    adds over fio's default buffer in the same rounds, and names the judged reference."""
    plain = bench.paired_row("", [900.0, 1000.0], [1200.0, 1250.0], "MiB/s", 0.9)
    note = bench.checkpoint_note(fresh_cpu=[0.25, 0.23, 0.24], plain_cpu=[0.02, 0.01, 0.03],
                                 keying_ms=0.11, plain=plain)
    assert "judged against fio with refill_buffers=1" in note
    assert "fio 0.220 ms" in note and "0.240 with refill_buffers, 0.020 without" in note
    assert "aiio's keying 0.110 ms" in note
    assert f"not judged, against fio's default buffer: {plain.ratio:.3f}" in note
