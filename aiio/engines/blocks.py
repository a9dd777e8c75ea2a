"""Self-describing 4 KiB blocks: what aiio writes, and how `--verify` checks it on the way back.

Every 4 KiB block aiio writes (checkpoint shards, model weights, prep shards, randrw files)
starts with a 24-byte header followed by random payload:

    bytes 0-3    crc32c of bytes 4 .. end of block (0 when written without checksums)
    bytes 4-7    magic b"AIIO"
    bytes 8-15   the file's tag, a 64-bit value derived from the run's seed and the file's name
    bytes 16-23  the block's own byte offset in the file

The header lets a reader tell a corrupt block (checksum), a misdirected one (wrong tag or
offset) and an unwritten one (no magic) apart. A file's last block may be short; its checksum
covers what is there, and a tail shorter than the header holds the header's first bytes (no
checksum) and is not checked.

The payload is random, drawn once per writer, and before each write every 8-byte word of a
block's payload is XORed with a 64-bit key mixed from the file's tag and the block's offset
(`Stamper`). So no two blocks are alike anywhere: not as a whole (deduplication), not in their
payload under a new header, and not in any 8-byte-aligned run of their payload (similarity and
delta reduction find nothing to reuse), while the data stays incompressible. The cost is one
XOR pass over the buffer per write. What it does not defeat: a system that XORs blocks against
each other would see a repeating 8-byte pattern, which no storage product is known to exploit.
"""

from __future__ import annotations

import hashlib
import struct
import time
from dataclasses import dataclass, field

import crc32c
import numpy as np

BLOCK = 4096
HEADER = 24
MAGIC = struct.unpack("<I", b"AIIO")[0]
MAX_REPORTED = 100  # corrupt blocks listed by file and offset; more are only counted


def file_tag(seed: int, name: str) -> int:
    """The 64-bit tag of a file: derived from the seed and the file's name (not its folder)."""
    digest = hashlib.blake2b(f"{seed}:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def _views(buf: memoryview, nbytes: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(uint32 view, uint64 view) of the whole blocks in buf, and how many there are."""
    full = nbytes // BLOCK
    arr = np.frombuffer(buf, dtype=np.uint8, count=full * BLOCK)
    # little-endian views, as the header's format ("<IIQQ") is: the machine's own order on
    # x86-64 and arm64, and on a big-endian machine numpy swaps instead of writing it wrong
    return arr.view("<u4").reshape(full, BLOCK // 4), arr.view("<u8").reshape(
        full, BLOCK // 8), full


def _crcs(buf: memoryview, full: int) -> np.ndarray:
    """crc32c of bytes 4..4095 of each of the first `full` blocks."""
    return np.fromiter((crc32c.crc32c(buf[s + 4:s + BLOCK]) for s in range(0, full * BLOCK, BLOCK)),
                       dtype=np.uint32, count=full)


HEADER_WORDS = HEADER // 8
GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: a bijection of uint64 that scatters nearby inputs."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def block_keys(tag: int, offset: int, count: int) -> np.ndarray:
    """The payload key of `count` blocks from file offset `offset` of the file tagged `tag`."""
    index = np.uint64(offset // BLOCK) + np.arange(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return _mix(_mix(np.full(count, tag, dtype=np.uint64)) + index * GOLDEN)


SMALL = 4 * BLOCK  # up to this many bytes, plain struct calls beat numpy's per-call overhead


def stamp(buf: memoryview, nbytes: int, tag: int, offset: int, checksum: bool) -> None:
    """Write the header of every block in buf[:nbytes], which lands at file offset `offset`."""
    if nbytes <= SMALL:
        for start in range(0, nbytes, BLOCK):
            _header(buf, start, min(start + BLOCK, nbytes), tag, offset + start, checksum)
        return
    u32, u64, full = _views(buf, nbytes)
    if full:
        u32[:, 1] = MAGIC
        u64[:, 1] = tag
        u64[:, 2] = offset + np.arange(full, dtype=np.uint64) * BLOCK
        u32[:, 0] = _crcs(buf, full) if checksum else 0
    if nbytes > full * BLOCK:
        _header(buf, full * BLOCK, nbytes, tag, offset + full * BLOCK, checksum)


def _header(buf: memoryview, start: int, end: int, tag: int, offset: int, checksum: bool) -> None:
    """Write the header of the one block buf[start:end]; a block shorter than a header gets
    its first bytes (no checksum), so it holds nothing left over from earlier writes."""
    if end - start < HEADER:
        buf[start:end] = struct.pack("<IIQQ", 0, MAGIC, tag, offset)[:end - start]
        return
    struct.pack_into("<IIQQ", buf, start, 0, MAGIC, tag, offset)
    if checksum:
        struct.pack_into("<I", buf, start, crc32c.crc32c(buf[start + 4:end]))


class Stamper:
    """stamp() for one buffer that is written again and again: the views and the per-block
    offsets are prepared once, so a 1 MiB call costs a pass over the buffer and little more."""

    def __init__(self, buf: memoryview, checksum: bool) -> None:
        self.buf, self.checksum = buf, checksum
        self.u32, self.u64, self.full = _views(buf, len(buf))
        self.steps = np.arange(self.full, dtype=np.uint64) * BLOCK
        self.keys = np.zeros(self.full, dtype=np.uint64)  # the key each block now carries

    def rekey(self, nbytes: int, tag: int, offset: int) -> None:
        """XOR the blocks in buf[:nbytes] from their old key to the new one: the whole blocks,
        header words too (one contiguous pass; a pass over the payload words alone, strided,
        took twice the time), so the caller writes every header of them again."""
        n = min(-(-nbytes // BLOCK), self.full)  # a short last block: XOR it whole, it is ours
        new = block_keys(tag, offset, n)
        self.u64[:n] ^= (self.keys[:n] ^ new)[:, None]
        self.keys[:n] = new

    def stamp(self, nbytes: int, tag: int, offset: int) -> None:
        """Key the payload, then as `stamp(buf, nbytes, tag, offset, checksum)`."""
        self.rekey(nbytes, tag, offset)
        full = nbytes // BLOCK
        if full == 0 or nbytes - full * BLOCK:
            stamp(self.buf, nbytes, tag, offset, self.checksum)  # short or ragged: the general way
            return
        # one word: bytes 0-3 no checksum yet, 4-7 the magic (the view is little-endian)
        self.u64[:full, 0] = np.uint64(MAGIC << 32)
        self.u64[:full, 1] = tag
        np.add(self.steps[:full], np.uint64(offset), out=self.u64[:full, 2])
        if self.checksum:
            self.u32[:full, 0] = _crcs(self.buf, full)


@dataclass
class Verifier:
    """Checks blocks as they are read; counts and lists what does not match (per thread)."""

    blocks: int = 0
    mismatches: int = 0
    corrupt: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    def check(self, buf: memoryview, nbytes: int, path: str, tag: int, offset: int) -> int:
        """Check the blocks of buf[:nbytes], read from `path` at `offset`; returns bad blocks."""
        t0 = time.perf_counter_ns()
        if nbytes <= SMALL:
            bad = self._check_small(buf, nbytes, path, tag, offset)
            self.seconds += (time.perf_counter_ns() - t0) / 1e9
            return bad
        u32, u64, full = _views(buf, nbytes)
        bad_idx: list[int] = []
        if full:
            good = ((u32[:, 1] == MAGIC) & (u64[:, 1] == tag)
                    & (u64[:, 2] == offset + np.arange(full, dtype=np.uint64) * BLOCK)
                    & (u32[:, 0] == _crcs(buf, full)))
            bad_idx = np.flatnonzero(~good).tolist()
        self.blocks += full
        for i in bad_idx:
            start = i * BLOCK
            self._report(path, offset + start,
                         _block_problem(buf, start, start + BLOCK, tag, offset + start))
        start = full * BLOCK
        if nbytes - start >= HEADER:  # a tail too short for a header is not checked
            self.blocks += 1
            why = _block_problem(buf, start, nbytes, tag, offset + start)
            if why:
                bad_idx.append(full)
                self._report(path, offset + start, why)
        self.seconds += (time.perf_counter_ns() - t0) / 1e9
        return len(bad_idx)

    def _check_small(self, buf: memoryview, nbytes: int, path: str, tag: int,
                     offset: int) -> int:
        bad = 0
        for start in range(0, nbytes, BLOCK):
            end = min(start + BLOCK, nbytes)
            if end - start < HEADER:
                continue
            self.blocks += 1
            why = _block_problem(buf, start, end, tag, offset + start)
            if why:
                bad += 1
                self._report(path, offset + start, why)
        return bad

    def _report(self, path: str, offset: int, why: str) -> None:
        self.mismatches += 1
        if len(self.corrupt) < MAX_REPORTED:
            self.corrupt.append({"file": path, "offset": offset, "problem": why})

    def merge(self, other: Verifier) -> Verifier:
        self.blocks += other.blocks
        self.mismatches += other.mismatches
        room = MAX_REPORTED - len(self.corrupt)
        self.corrupt.extend(other.corrupt[:max(room, 0)])
        self.seconds += other.seconds
        return self

    def to_dict(self) -> dict:
        return {"blocks_checked": self.blocks, "mismatches": self.mismatches,
                "corrupt": list(self.corrupt), "check_s": self.seconds}


def _block_problem(buf: memoryview, start: int, end: int, tag: int, offset: int) -> str:
    """'' for a good block, else what is wrong with it."""
    crc, magic, got_tag, got_off = struct.unpack_from("<IIQQ", buf, start)
    if magic != MAGIC:
        return "no block header (unwritten or overwritten)"
    if got_tag != tag or got_off != offset:
        return f"misplaced block (holds offset {got_off} of tag {got_tag:#x})"
    if crc != crc32c.crc32c(buf[start + 4:end]):
        return "checksum mismatch"
    return ""
