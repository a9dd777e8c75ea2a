"""Where a client's KV blocks are: the memory tiers above the target (GPU, then host; in
memory, least recently used first out, no I/O) and which blocks the target holds.

Every block written goes to the target (write-through, as LMCache stores to each backend) and
into the GPU tier; a block pushed out of the GPU tier goes to the host tier, one pushed out of
that is only on the target. A hit in a tier costs no I/O; a miss is a read from the target,
and the block is then in the GPU tier again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

GPU, HOST, STORAGE = "gpu", "host", "storage"
TIERS = (GPU, HOST, STORAGE)


class Tiers:
    """A client's GPU and host tiers, capacities in blocks, shared by its users."""

    def __init__(self, gpu_blocks: int, host_blocks: int) -> None:
        self.caps = (gpu_blocks, host_blocks)
        self.gpu: OrderedDict[str, None] = OrderedDict()
        self.host: OrderedDict[str, None] = OrderedDict()
        self.lock = threading.Lock()

    def insert(self, name: str) -> None:
        """A block just written or read: the GPU tier's most recent."""
        with self.lock:
            self._to_gpu(name)

    def lookup(self, name: str) -> str:
        """Which tier serves the block (GPU, host, or the target: a read); a host hit
        moves it up to the GPU tier, as a read from the target will."""
        with self.lock:
            if name in self.gpu:
                self.gpu.move_to_end(name)
                return GPU
            if name in self.host:
                del self.host[name]
                self._to_gpu(name)
                return HOST
            return STORAGE

    def forget(self, names: Iterable[str]) -> None:
        """Blocks deleted from the target leave the tiers too."""
        with self.lock:
            for name in names:
                self.gpu.pop(name, None)
                self.host.pop(name, None)

    def _to_gpu(self, name: str) -> None:
        self.gpu[name] = None
        self.gpu.move_to_end(name)
        while len(self.gpu) > self.caps[0]:
            old, _ = self.gpu.popitem(last=False)
            self._to_host(old)

    def _to_host(self, name: str) -> None:
        if not self.caps[1]:
            return
        self.host[name] = None
        self.host.move_to_end(name)
        while len(self.host) > self.caps[1]:
            self.host.popitem(last=False)  # on the target only from now on


class BlockIndex:
    """Which blocks the target holds, shared by a client's users. A block being written is
    the writing user's; another user that needs it meanwhile waits for that write rather
    than write it again or read it half-written."""

    def __init__(self, stored: Iterable[str] = ()) -> None:
        self.lock = threading.Lock()
        self.state: dict[str, threading.Event | None] = dict.fromkeys(stored)

    def claim(self, name: str) -> tuple[bool, threading.Event | None]:
        """(whether the caller must write the block, the write to wait for if another user
        is writing it)."""
        with self.lock:
            if name not in self.state:
                self.state[name] = threading.Event()
                return True, None
            return False, self.state[name]

    def done(self, name: str, ok: bool = True) -> None:
        """The caller's write of the block returned (or failed: not stored then)."""
        with self.lock:
            ev = self.state.pop(name, None) if not ok else self.state.get(name)
            if ok:
                self.state[name] = None
        if ev is not None:
            ev.set()

    def forget(self, names: Iterable[str]) -> None:
        with self.lock:
            for name in names:
                self.state.pop(name, None)
