"""One measurement seam: the engine times every call; phases never read a clock to time one."""

from __future__ import annotations

import ast
import dataclasses
import errno
import os
from pathlib import Path

import pytest

import aiio
from aiio.engines import seam as engine
from aiio.engines.seam import METHOD_FADVISE, OpLog, Reader, Writer, merge_logs
from aiio.errors import RunFailed

PACKAGE = Path(aiio.__file__).parent
# The one use of the time module that reads no clock: sleeping (emulated compute, a transform).
# Everything else in it reads one, the wall clock's labels (strftime, localtime) included.
TIME_UNCLOCKED = {"sleep"}
# Modules that measure: every phase, and object storage's phases and its request layer; and
# the example phase built outside the package, which a new phase is copied from.
EXAMPLE_PHASE = Path(__file__).parent / "readback_phase.py"
MEASURING = sorted([*PACKAGE.glob("phases/*.py"), *PACKAGE.glob("s3/*.py")]) + [EXAMPLE_PHASE]
# Not measuring: starting a local S3 server waits for it with a deadline of its own.
NOT_MEASURING = {"s3/localserver.py"}


def _rel(path: Path) -> str:
    return str(path.relative_to(PACKAGE if path.is_relative_to(PACKAGE) else PACKAGE.parent))


def _module_attr(node: ast.AST, module: str) -> str | None:
    """The attribute `node` reads of `module` (`time.monotonic` -> "monotonic"), or None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id == module:
        return node.attr
    return None


def _clock_reads(tree: ast.AST) -> list[str]:
    """Clock reads in one module: the time module's clocks and wall-clock labels (anything but
    sleep, by attribute or import), the CPU clock (`os.times`), and any use of the engine's
    clock (`now_ns`, by any path or import)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "now_ns" \
                or isinstance(node, ast.Name) and node.id == "now_ns":
            found.append(f"line {node.lineno}: now_ns")
        if isinstance(node, ast.ImportFrom):
            found += [f"line {node.lineno}: import of now_ns" for a in node.names
                      if a.name == "now_ns"]
        if (attr := _module_attr(node, "time")) is not None and attr not in TIME_UNCLOCKED:
            found.append(f"line {node.lineno}: time.{attr}")
        if _module_attr(node, "os") == "times":
            found.append(f"line {node.lineno}: os.times")
        if isinstance(node, ast.ImportFrom):
            found += [f"line {node.lineno}: from {node.module} import {a.name}"
                      for a in node.names
                      if node.module == "time" and a.name not in TIME_UNCLOCKED
                      or node.module == "os" and a.name == "times"]
    return found


@pytest.mark.parametrize("path", [p for p in MEASURING if _rel(p) not in NOT_MEASURING],
                         ids=_rel)
def test_measuring_modules_never_read_a_clock(path: Path) -> None:
    """Calls are timed by the engine (its metadata functions, Reader, Writer, OpLog.timed);
    window edges, deadlines and the accelerator's steps by aiio.engines.timing, on the same
    clock."""
    assert _clock_reads(ast.parse(path.read_text())) == []


def test_the_guard_sees_a_clock_read() -> None:
    code = "import time\nfrom time import perf_counter\nt0 = time.monotonic_ns()\n"
    assert len(_clock_reads(ast.parse(code))) == 2


def test_the_guard_sees_the_cpu_clock_and_wall_clock_labels_but_not_a_sleep() -> None:
    code = ("import os, time\nfrom time import sleep\nfrom os import times\n"
            "stamp = time.strftime('%Y')\ncpu = os.times()\ntime.sleep(0.1)\n")
    assert _clock_reads(ast.parse(code)) == ["line 3: from os import times",
                                             "line 4: time.strftime", "line 5: os.times"]


def test_the_guard_sees_the_engine_clock_by_any_path() -> None:
    code = ("from aiio.engines import seam as engine\nfrom aiio.engines.seam import OpLog, now_ns\n"
            "t0 = engine.now_ns()\nt1 = now_ns()\nnow = engine.now_ns\n")
    assert len(_clock_reads(ast.parse(code))) == 4


def _oplog_private() -> set[str]:
    names = {f.name for f in dataclasses.fields(OpLog) if f.name.startswith("_")}
    return names | {n for n in vars(OpLog) if n.startswith("_") and not n.startswith("__")}


def _own_fields(cls: ast.ClassDef) -> set[str]:
    """Attribute names a class defines itself: `self.x = ...`, class-level fields, slots."""
    names = set()
    for n in ast.walk(cls):
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) \
                and isinstance(n.value, ast.Name) and n.value.id == "self":
            names.add(n.attr)
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            names.add(n.value)  # __slots__ entries
    names |= {n.target.id for n in cls.body
              if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    return names


def _private_uses(tree: ast.AST, private: set[str]) -> list[str]:
    """Uses of OpLog's private names outside OpLog, except a class's uses of a same-named
    field of its own (ByteSeries has a `_bytes` too)."""
    allowed = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        own = private if cls.name == "OpLog" else _own_fields(cls) & private
        allowed |= {id(n) for n in ast.walk(cls) if isinstance(n, ast.Attribute)
                    and n.attr in own}
    return [f"line {n.lineno}: .{n.attr}" for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and n.attr in private and id(n) not in allowed]


def test_only_oplog_touches_its_private_fields() -> None:
    """Everyone records through OpLog's methods: no module, the engine's Reader included,
    appends to its buffers behind its back."""
    private = _oplog_private()
    assert {"_lat", "_end", "_bytes"} <= private
    found = {}
    for path in [*PACKAGE.rglob("*.py"), *PACKAGE.parent.glob("tools/*.py")]:
        if uses := _private_uses(ast.parse(path.read_text()), private):
            found[str(path)] = uses
    assert found == {}


def test_the_private_guard_sees_a_reader_writing_into_the_log() -> None:
    code = ("class Reader:\n    def go(self, log):\n        log._end.append(1)\n"
            "class ByteSeries:\n    __slots__ = ('_bytes',)\n    def m(self, o):\n"
            "        return o._bytes\n")
    assert _private_uses(ast.parse(code), {"_end", "_bytes"}) == ["line 3: ._end"]


def test_phases_record_only_through_timed() -> None:
    """The engine's own hot loops hold their clock readings and record them; a phase has
    none to hold, so it never calls the low-level recorders."""
    found = []
    for path in MEASURING:
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            low = node.func.attr in ("add_timed", "add_pair", "add_many")
            # OpLog's old recorder, log.add("op", t0, t1, nbytes), coming back with a merge
            old = node.func.attr == "add" and len(node.args) == 4 \
                and isinstance(node.args[0], ast.Constant)
            if low or old:
                found.append(f"{_rel(path)} line {node.lineno}")
    assert found == []


def test_timed_records_a_call_that_returns_and_not_one_that_raises(tmp_path: Path) -> None:
    log = OpLog(start_ns=engine.now_ns())
    with log.timed("stat"):
        os.stat(tmp_path)
    with pytest.raises(FileNotFoundError), log.timed("stat"):
        os.stat(tmp_path / "missing")
    with log.timed("read", 10) as op:
        op.nbytes = 7  # the call said how much it moved
    with log.timed("read") as op:
        op.cancel()  # the end of a stream: no operation
    hist, series, ops, nbytes = merge_logs([log])
    assert hist["stat"].count == 1 and hist["read"].count == 1
    assert ops == 2 and nbytes == series.total == 7
    assert op.end_ns >= op.t0 > 0


def test_metadata_calls_each_get_their_histogram(tmp_path: Path) -> None:
    log = OpLog(start_ns=engine.now_ns())
    folder = tmp_path / "a" / "b"
    engine.makedirs(log, str(folder))
    wr = Writer(METHOD_FADVISE, 4096, log, seed=1)
    try:
        wr.write_file(str(folder / "f.bin"), 3 * 4096, tag=1)
        wr.fsync_dir(str(folder))
    finally:
        wr.close()
    assert engine.listdir(log, str(folder)) == ["f.bin"]
    assert engine.stat(log, str(folder / "f.bin")).st_size == 3 * 4096
    rd = Reader(METHOD_FADVISE, 4096, log)
    try:
        assert rd.read_file(str(folder / "f.bin")) == 3 * 4096  # its fstat is a "stat"
    finally:
        rd.close()
    engine.drop_cached(log, str(folder / "f.bin"))
    engine.unlink(log, str(folder / "f.bin"))
    with pytest.raises(FileNotFoundError):
        engine.unlink(log, str(folder / "f.bin"))
    hist, _, ops, _ = merge_logs([log])
    counts = {op: h.count for op, h in hist.items()}
    assert counts == {"mkdir": 1, "create": 1, "write": 3, "fsync": 1, "drop_cache": 1,
                      "dir_fsync": 1, "list": 1, "stat": 2, "open": 2, "read": 3, "unlink": 1}
    assert ops == sum(counts.values())


def _failing_write(fd: int, bufs: list, offset: int) -> int:
    """An engine's own write call (in Python, as tests/sleepy_engine.py's) failing at once."""
    raise OSError(errno.EIO, "Input/output error")


@pytest.mark.parametrize("how", ["write_file", "write_content"])
def test_a_failing_engine_write_is_the_error_said_not_the_writers_close(
        how: str, tmp_path: Path) -> None:
    """An engine's write call in Python that raises keeps its frame, and the buffer slice it
    was handed, in the traceback: the writer closed while that error is on its way (a phase's
    `finally`) failed with BufferError, which the run then reported instead of the I/O error."""
    wr = Writer(METHOD_FADVISE, 4096, OpLog(start_ns=engine.now_ns()), seed=1)
    wr.pwritev = _failing_write
    path = str(tmp_path / "f.bin")
    with pytest.raises(RunFailed, match="Input/output error"):
        try:
            if how == "write_file":
                wr.write_file(path, 3 * 4096, tag=1)
            else:
                wr.write_content(path, [b"x" * 3000])
        finally:
            wr.close()
