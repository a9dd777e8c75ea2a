"""The compiled io_uring loop: `depth` reads in flight, each timed, without the interpreter.

A ring driven from Python (through a binding, as aiio did until Dec 2026) spends about 0.5 us
of CPython per 4 KiB read on top of what the kernel costs: a third of fio's whole io_uring
read on tmpfs (docs/PERFORMANCE.md, "Queue depth"). This loop drives the ring from machine
code compiled by numba (the optional `fast` extra, as aiio.engines.compiled's pread loop). The ring
is set up, and its three areas mapped, by this module through the kernel's own calls
(io_uring_setup, mmap), as fio's io_uring engine does it without liburing; the loop fills
submission entries, moves the submission tail, enters the kernel once per wait (submitting and
waiting in one call) and reaps the completion ring, with the acquire and release orderings
the kernel's ring protocol asks for.

A request's latency runs, as fio's `lat` does, from the clock reading
taken just before the refill that prepared it to the reading taken once the wait that
reaped it returned (one reading stamps a refill, one a reap batch).

The loop keeps its state (slots, what each reads, since when) in arrays between calls: it
returns to Python at least every `until_ns` (so a stop, a deadline and a signal handler are
looked at) and at the end, and carries on where it stopped on the next call.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
from typing import Any

import numpy as np

from aiio.engines import compiled
from aiio.engines.seam import address_of

SYS_IO_URING_SETUP = 425  # x86-64 and arm64 (asm-generic) alike: io_uring came after the split
SYS_IO_URING_ENTER = 426
IORING_OFF_SQ_RING = 0
IORING_OFF_CQ_RING = 0x8000000
IORING_OFF_SQES = 0x10000000
IORING_ENTER_GETEVENTS = 1
IORING_OP_READ = 22
IORING_FEAT_SINGLE_MMAP = 1
IORING_SETUP_CQSIZE = 1 << 3
IORING_SETUP_COOP_TASKRUN = 1 << 8
IORING_SETUP_SINGLE_ISSUER = 1 << 12
IORING_SETUP_DEFER_TASKRUN = 1 << 13
SQE_WORDS = 8  # a submission entry: 64 bytes
CQE_WORDS = 4  # a completion entry: user_data (2 words), res, flags

# The loop's state array, kept between calls
NEXT = 0         # index of the next offset to issue
INFLIGHT = 1     # requests the kernel has taken and not completed
UNSUBMITTED = 2  # entries in the submission ring the kernel has not taken yet
NFREE = 3        # free slots (their numbers in the `free` array)
DONE = 4         # completions written to the output arrays
FAILED = 5       # errno of the first read that failed; 0 when none did
FAILED_AT = 6    # its file offset
EXPIRED = 7      # the deadline passed: nothing more was issued
HALT = 8         # set by the caller: issue nothing more, let the requests in flight complete
ENTER_ERRNO = 9  # io_uring_enter failed in a way waiting again cannot mend
STATE = 10

# What a call of the loop returns
FINISHED = 0     # nothing in flight and nothing more to issue (or halted, failed, expired)
YIELDED = 1      # its time was up, or a signal interrupted the wait: call again
BROKEN = 2       # the ring failed (ENTER_ERRNO): requests may still be in flight


class Params(ctypes.Structure):
    """struct io_uring_params, with its two offset structs flattened (120 bytes)."""

    _fields_ = [("sq_entries", ctypes.c_uint32), ("cq_entries", ctypes.c_uint32),
                ("flags", ctypes.c_uint32), ("sq_thread_cpu", ctypes.c_uint32),
                ("sq_thread_idle", ctypes.c_uint32), ("features", ctypes.c_uint32),
                ("wq_fd", ctypes.c_uint32), ("resv", ctypes.c_uint32 * 3),
                # struct io_sqring_offsets
                ("sq_head", ctypes.c_uint32), ("sq_tail", ctypes.c_uint32),
                ("sq_ring_mask", ctypes.c_uint32), ("sq_ring_entries", ctypes.c_uint32),
                ("sq_flags", ctypes.c_uint32), ("sq_dropped", ctypes.c_uint32),
                ("sq_array", ctypes.c_uint32), ("sq_resv1", ctypes.c_uint32),
                ("sq_user_addr", ctypes.c_uint64),
                # struct io_cqring_offsets
                ("cq_head", ctypes.c_uint32), ("cq_tail", ctypes.c_uint32),
                ("cq_ring_mask", ctypes.c_uint32), ("cq_ring_entries", ctypes.c_uint32),
                ("cq_overflow", ctypes.c_uint32), ("cq_cqes", ctypes.c_uint32),
                ("cq_flags", ctypes.c_uint32), ("cq_resv1", ctypes.c_uint32),
                ("cq_user_addr", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long


def _setup(depth: int, flags: int) -> tuple[int, Params]:
    p = Params(flags=flags, cq_entries=depth)
    fd = _syscall(ctypes.c_long(SYS_IO_URING_SETUP), ctypes.c_long(depth), ctypes.byref(p))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"io_uring_setup: {errno.errorcode.get(err, err)}")
    return fd, p


# fio's io_uring engine's flags, tried in its order: the completion ring sized to the depth,
# completions posted when the reader waits (no interrupt per worker completion; kernel
# 5.19), and task work deferred to the wait of the one thread that submits (6.1)
_FLAG_SETS = (IORING_SETUP_CQSIZE | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER
              | IORING_SETUP_DEFER_TASKRUN,
              IORING_SETUP_CQSIZE | IORING_SETUP_COOP_TASKRUN,
              IORING_SETUP_CQSIZE, 0)


class Ring:
    """One io_uring of `depth` entries, its areas mapped; made in the thread that uses it
    (SINGLE_ISSUER binds the ring to its maker)."""

    def __init__(self, depth: int) -> None:
        for flags in _FLAG_SETS:
            try:
                self.fd, p = _setup(depth, flags)
                break
            except OSError as exc:
                if exc.errno != errno.EINVAL or flags == 0:
                    raise
        self.flags = flags
        self.maps: list[mmap.mmap] = []
        try:
            self._map(p)
        except BaseException:
            self.close()
            raise

    def _map(self, p: Params) -> None:
        sq_size = p.sq_array + p.sq_entries * 4
        cq_size = p.cq_cqes + p.cq_entries * CQE_WORDS * 4
        rw = mmap.PROT_READ | mmap.PROT_WRITE
        if p.features & IORING_FEAT_SINGLE_MMAP:
            sq_size = cq_size = max(sq_size, cq_size)
        sq = self._mmap(sq_size, IORING_OFF_SQ_RING, rw)
        cq = (sq if p.features & IORING_FEAT_SINGLE_MMAP
              else self._mmap(cq_size, IORING_OFF_CQ_RING, rw))
        sqes = self._mmap(p.sq_entries * SQE_WORDS * 8, IORING_OFF_SQES, rw)
        sq_base, cq_base, sqes_base = (address_of(m) for m in (sq, cq, sqes))
        array = np.frombuffer(sq, np.uint32, p.sq_entries, p.sq_array)
        array[:] = np.arange(p.sq_entries, dtype=np.uint32)  # entry i in slot i, for good
        del array
        self.entries = p.sq_entries
        # addresses and masks the loop works with, in one array
        self.layout = np.array([self.fd, sq_base + p.sq_head, sq_base + p.sq_tail,
                                p.sq_entries - 1, sqes_base, cq_base + p.cq_head,
                                cq_base + p.cq_tail, p.cq_entries - 1, cq_base + p.cq_cqes],
                               np.int64)

    def _mmap(self, size: int, offset: int, prot: int) -> mmap.mmap:
        m = mmap.mmap(self.fd, size, mmap.MAP_SHARED | mmap.MAP_POPULATE, prot, offset=offset)
        self.maps.append(m)
        return m

    def close(self) -> None:
        for m in self.maps:
            m.close()
        self.maps = []
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


# layout's fields
RING_FD, SQ_HEAD, SQ_TAIL, SQ_MASK, SQES, CQ_HEAD, CQ_TAIL, CQ_MASK, CQES = range(9)


def _build() -> compiled.Loop:
    """Import numba, bind libc's calls and compile the loop for its one signature."""
    import numba
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    def _ptr(builder: Any, addr: Any, bits: int) -> Any:
        return builder.inttoptr(addr, ir.IntType(bits).as_pointer())

    @intrinsic
    def load_acquire(typingctx: Any, addr: Any) -> Any:
        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            v = builder.load_atomic(_ptr(builder, args[0], 32), "acquire", 4)
            return builder.zext(v, ir.IntType(64))
        return types.int64(types.int64), codegen

    @intrinsic
    def store_release(typingctx: Any, addr: Any, value: Any) -> Any:
        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            v = builder.trunc(args[1], ir.IntType(32))
            builder.store_atomic(v, _ptr(builder, args[0], 32), "release", 4)
            return context.get_dummy_value()
        return types.void(types.int64, types.int64), codegen

    @intrinsic
    def load_u32(typingctx: Any, addr: Any) -> Any:
        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            return builder.zext(builder.load(_ptr(builder, args[0], 32)), ir.IntType(64))
        return types.int64(types.int64), codegen

    @intrinsic
    def load_s32(typingctx: Any, addr: Any) -> Any:
        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            return builder.sext(builder.load(_ptr(builder, args[0], 32)), ir.IntType(64))
        return types.int64(types.int64), codegen

    @intrinsic
    def load_u64(typingctx: Any, addr: Any) -> Any:
        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            return builder.load(_ptr(builder, args[0], 64))
        return types.int64(types.int64), codegen

    @intrinsic
    def store_u64(typingctx: Any, addr: Any, value: Any) -> Any:
        def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            builder.store(args[1], _ptr(builder, args[0], 64))
            return context.get_dummy_value()
        return types.void(types.int64, types.int64), codegen

    libc = ctypes.CDLL(None)
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    syscall.argtypes = [ctypes.c_long] * 7
    clock = libc.clock_gettime
    clock.restype = ctypes.c_int
    clock.argtypes = [ctypes.c_int, ctypes.c_void_p]
    errno_at = libc.__errno_location
    errno_at.restype = ctypes.POINTER(ctypes.c_int)
    errno_at.argtypes = []
    mono, enter_nr, getevents = 1, SYS_IO_URING_ENTER, IORING_ENTER_GETEVENTS
    op_read, eintr, eagain, ebusy = IORING_OP_READ, errno.EINTR, errno.EAGAIN, errno.EBUSY

    @numba.njit(nogil=True, cache=False)
    def now(ts):  # pragma: no cover  (compiled)
        clock(mono, ts.ctypes.data)
        return ts[0] * 1000000000 + ts[1]

    @numba.njit(nogil=True, cache=False)
    def issue(ring, st, fd, buf, size, offsets, free, issued, where, t):  # pragma: no cover
        """Fill free slots with the next offsets' reads; returns how many."""
        tail = load_u32(ring[SQ_TAIL])
        mask, sqes, count = ring[SQ_MASK], ring[SQES], 0
        while st[NFREE] > 0 and st[NEXT] < offsets.shape[0]:
            st[NFREE] -= 1
            slot = free[st[NFREE]]
            off = offsets[st[NEXT]]
            st[NEXT] += 1
            e = sqes + ((tail & mask) << 6)
            store_u64(e, op_read | ((fd & 0xFFFFFFFF) << 32))    # opcode, flags, ioprio, fd
            store_u64(e + 8, off)                                # file offset
            store_u64(e + 16, buf + slot * size)                 # the slot's buffer
            store_u64(e + 24, size)                              # length; rw_flags 0
            store_u64(e + 32, slot)                              # user_data
            store_u64(e + 40, 0)
            store_u64(e + 48, 0)
            store_u64(e + 56, 0)
            issued[slot] = t
            where[slot] = off
            tail += 1
            count += 1
        store_release(ring[SQ_TAIL], tail)  # the entries before the tail that shows them
        return count

    @numba.njit(nogil=True, cache=False)
    def reap(ring, st, free, issued, where, lat, ends, got, slots, t):  # pragma: no cover
        """Take every posted completion: its latency, end and bytes, its slot freed."""
        head = load_u32(ring[CQ_HEAD])
        tail = load_acquire(ring[CQ_TAIL])  # the entries written before the tail we see
        mask, cqes = ring[CQ_MASK], ring[CQES]
        while head != tail:
            e = cqes + ((head & mask) << 4)
            slot = load_u64(e)
            res = load_s32(e + 8)
            free[st[NFREE]] = slot
            st[NFREE] += 1
            st[INFLIGHT] -= 1
            if res < 0:
                if st[FAILED] == 0:
                    st[FAILED] = -res
                    st[FAILED_AT] = where[slot]
            elif st[DONE] < lat.shape[0]:  # numba checks no bounds: never past the end
                k = st[DONE]
                lat[k] = t - issued[slot]
                ends[k] = t
                got[k] = res
                slots[k] = slot
                st[DONE] = k + 1
            head = (head + 1) & 0xFFFFFFFF
        store_release(ring[CQ_HEAD], head)  # the slots we read, back to the kernel

    a = "int64[::1]"  # ring layout, state; offsets, free, issued, where; latency, end, bytes, slot
    sig = f"int64({a}, {a}, int64, int64, int64, {', '.join([a] * 8)}, int64, int64)"

    @numba.njit(sig, nogil=True, cache=False)
    def run(ring, st, fd, buf, size, offsets, free, issued, where, lat, ends, got,
            slots, until_ns, deadline_ns):  # pragma: no cover
        ts = np.empty(2, np.int64)  # struct timespec
        while True:
            if st[FAILED] == 0 and st[HALT] == 0 and st[EXPIRED] == 0 \
                    and st[NEXT] < offsets.shape[0] and st[NFREE] > 0:
                t = now(ts)
                if deadline_ns and t >= deadline_ns:
                    st[EXPIRED] = 1
                else:
                    st[UNSUBMITTED] += issue(ring, st, fd, buf, size, offsets, free,
                                             issued, where, t)
            if st[INFLIGHT] == 0 and st[UNSUBMITTED] == 0:
                return 0
            # submit what is prepared and wait for one completion, in one call
            got_n = syscall(enter_nr, ring[RING_FD], st[UNSUBMITTED], 1, getevents, 0, 0)
            if got_n < 0:
                err = errno_at()[0]
                if err == eintr:
                    return 1
                if err != eagain and err != ebusy:
                    st[ENTER_ERRNO] = err
                    return 2
            else:
                st[UNSUBMITTED] -= got_n
                st[INFLIGHT] += got_n
            t = now(ts)
            reap(ring, st, free, issued, where, lat, ends, got, slots, t)
            if t >= until_ns:
                return 1

    # One call with nothing to do: numba's first call in a process fills caches and makes
    # objects; made in the parent before the clients fork, they share its pages
    none, state = np.empty(0, np.int64), np.zeros(STATE, np.int64)
    run(np.zeros(9, np.int64), state, -1, 0, 0, *[none] * 8, 0, 0)
    return compiled.Loop(run, f"compiled (numba {numba.__version__})")


_loop: compiled.Loop | None = None
_why: str | None = None  # why load() found no loop


def load() -> compiled.Loop | None:
    """The loop, compiled on the first call in this process (or in the parent before the
    fork); None when it cannot be had, and `why()` says why."""
    global _loop, _why
    if _loop is None and _why is None:
        _loop, _why = compiled.build_once(_build)
    return _loop


def loaded() -> compiled.Loop | None:
    """The loop if `load()` has compiled it in this process or before its fork."""
    return _loop


def why() -> str:
    """Why there is no loop: numba missing, its failure, or that none was asked for."""
    return _why or "not compiled before the clients started"
