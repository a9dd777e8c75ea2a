"""The write payload: every 4 KiB block aiio writes is unique, header and payload alike, so
neither deduplication nor similarity or delta reduction in the storage can shrink it.

The shards are written by the checkpoint phase's own writer (two clients' writers, each seeded
as the phase seeds them), and read back from the real files: the phase itself deletes its
checkpoints when it ends.
"""

from __future__ import annotations

import numpy as np

from aiio.cache_methods import METHOD_DIRECT
from aiio.engines.blocks import BLOCK, HEADER, file_tag
from aiio.engines.seam import OpLog, Writer
from aiio.storage.target import probe_direct_io

CHUNK = 64  # bytes: sub-block similarity and delta encoders match runs of this order
TRANSFER = 256 * 1024


def _write_shards(folder, size: int, checksum: bool) -> bytes:
    direct, _ = probe_direct_io(folder)
    data = b""
    for client in range(2):  # the checkpoint phase's seeds for two clients
        wr = Writer(METHOD_DIRECT if direct else "none", TRANSFER, OpLog(0),
                    seed=(1 * 1_000_003 + client) * 64, checksum=checksum)
        path = folder / f"shard-{client}"
        wr.write_file(str(path), size, file_tag(1, path.name))
        data += path.read_bytes()
    return data


def _assert_unique(data: bytes) -> None:
    full = len(data) // BLOCK
    blocks = np.frombuffer(data, dtype=np.uint8, count=full * BLOCK).reshape(full, BLOCK)
    assert len({b.tobytes() for b in blocks}) == full  # exact duplicates
    assert len({b[HEADER:].tobytes() for b in blocks}) == full  # same payload, new header
    # no 64-byte piece of payload appears twice anywhere: nothing for delta encoding to reuse
    body = np.ascontiguousarray(blocks[:, CHUNK:]).reshape(-1, CHUNK)  # skip the header's piece
    assert len(np.unique(body.view(f"V{CHUNK}").ravel())) == len(body)


def test_no_two_blocks_of_a_checkpoint_are_alike(tmp_path):
    _assert_unique(_write_shards(tmp_path, 6 * 2**20, checksum=False))


def test_unique_with_checksums_and_a_ragged_tail(tmp_path):
    _assert_unique(_write_shards(tmp_path, 3 * 2**20 + 5000, checksum=True))
