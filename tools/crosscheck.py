"""aiio's own engine against fio on the same job: same files, block size, client count, O_DIRECT.

Each client (a real aiio client process; a fio job on fio's side) reads its own file front to
back `loops` times. The figure compared is all bytes over the slowest client's time (fio's group
figure, aiio's last done). Both run back to back on the same storage, alternating, and the best
of `repeats` is kept on each side, so a passing burst of noise from other processes does not
decide the ratio. If they disagree by more than 5 %, aiio's accounting is suspect.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aiio.cache_methods import METHOD_DIRECT, METHOD_FADVISE
from aiio.engines.seam import OpLog, Reader
from aiio.fio.job import seq_read_mib_s, try_realtime
from aiio.run.clients import ClientContext, run_clients
from aiio.storage.target import Target, probe_direct_io, remove_tree
from aiio.units import MiB, mib_per_s

TOLERANCE = 0.05
FOLDER = "crosscheck"


@dataclass
class SeqReadArgs:
    files: list[str]
    block_size: int
    method: str
    loops: int
    realtime: bool = False


def _client(ctx: ClientContext) -> dict[str, Any]:
    """One aiio client: read its file `loops` times through the engine's Reader."""
    args: SeqReadArgs = ctx.args
    # clients run in their own session, as fio's jobs do (see aiio.run.clients._own_session)
    rt = try_realtime() if args.realtime else False
    log = OpLog(start_ns=0)
    reader = Reader(args.method, args.block_size, log)
    path = args.files[ctx.index]
    try:
        start = ctx.ready_and_wait()
        log.start_ns = start
        nbytes = sum(reader.read_file(path) for _ in range(args.loops))
        end = time.monotonic_ns()
    finally:
        reader.close()
    return {"client": ctx.index, "bytes": nbytes, "ops": log.ops,
            "elapsed_s": (end - start) / 1e9, "realtime": rt}


def engine_seq_read(files: list[str], block_size: int = MiB, method: str = METHOD_DIRECT,
                    loops: int = 1, realtime: bool = False) -> dict[str, Any]:
    """aiio's engine, one client process per file: bytes over the slowest client's time."""
    args = SeqReadArgs(files, block_size, method, loops, realtime)
    clients, _ = run_clients(len(files), _client, args)
    seconds = max(c["elapsed_s"] for c in clients)
    nbytes = sum(c["bytes"] for c in clients)
    return {"mib_s": mib_per_s(nbytes, seconds), "bytes": nbytes, "seconds": seconds,
            "clients": clients, "realtime": all(c["realtime"] for c in clients)}


def fio_seq_read(files: list[str], block_size: int = MiB, direct: bool = True,
                 loops: int = 1, realtime: bool = False) -> dict[str, Any]:
    """fio, one psync job per file: the same figure from fio's own accounting."""
    agg = seq_read_mib_s(files, block_size, direct, loops, realtime)
    return {"mib_s": agg["mib_s"], "bytes": agg["bytes"], "seconds": agg["seconds"]}


def make_files(folder: Path, count: int, size: int, seed: int = 7) -> list[str]:
    """`count` files of `size` bytes of incompressible data, flushed and dropped from cache."""
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(count):
        path = folder / f"xcheck.{i}"
        with open(path, "wb") as fh:
            for _ in range(size // MiB):
                fh.write(rng.bytes(MiB))
            fh.write(rng.bytes(size % MiB))
            fh.flush()
            os.fsync(fh.fileno())
            os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        paths.append(str(path))
    return paths


def compare(files: list[str], block_size: int = MiB, loops: int = 1, repeats: int = 3,
            direct: bool = True, max_repeats: int | None = None,
            budget_s: float | None = None, realtime: bool = False,
            control: bool = False) -> dict[str, Any]:
    """Best of `repeats` alternating runs of each side; ratio = aiio / fio.

    With `control`, fio runs a second time after aiio in each round (fio_again_runs_mib_s):
    fio against itself, the A/A control that says how far the storage alone moved.

    With `max_repeats`, rounds continue past `repeats` while the two disagree, until
    max_repeats rounds or `budget_s` seconds: interference from other processes only ever
    slows a run down, so more rounds bring both best figures closer to the storage's speed,
    while a real accounting error persists however many rounds are run.
    """
    method = METHOD_DIRECT if direct else METHOD_FADVISE
    aiio_runs: list[dict[str, Any]] = []
    fio_runs: list[dict[str, Any]] = []
    again: list[float] = []
    t0 = time.monotonic()
    while True:
        fio_runs.append(fio_seq_read(files, block_size, direct, loops, realtime))
        aiio_runs.append(engine_seq_read(files, block_size, method, loops, realtime))
        if control:
            again.append(fio_seq_read(files, block_size, direct, loops, realtime)["mib_s"])
        out = _best(aiio_runs, fio_runs)
        rounds = len(aiio_runs)
        if rounds < repeats:
            continue
        if out["agree"] or rounds >= (max_repeats or repeats):
            break
        if budget_s is not None and time.monotonic() - t0 > budget_s:
            break
    out.update({"clients": len(files), "block_size": block_size, "rounds": rounds,
                "realtime": all(r["realtime"] for r in aiio_runs),
                "bytes_per_run": aiio_runs[0]["bytes"], "fio_bytes_per_run": fio_runs[0]["bytes"],
                "median_round_ratio": _median_ratio(aiio_runs, fio_runs),
                "aiio_runs_mib_s": [r["mib_s"] for r in aiio_runs],
                "fio_runs_mib_s": [r["mib_s"] for r in fio_runs]})
    if control:
        out["fio_again_runs_mib_s"] = again
    return out


def _best(aiio_runs: list[dict[str, Any]], fio_runs: list[dict[str, Any]]) -> dict[str, Any]:
    best_aiio = max(r["mib_s"] for r in aiio_runs)
    best_fio = max(r["mib_s"] for r in fio_runs)
    ratio = best_aiio / best_fio if best_fio else 0.0
    return {"aiio_mib_s": best_aiio, "fio_mib_s": best_fio, "ratio": ratio,
            "agree": abs(ratio - 1.0) <= TOLERANCE}


def _median_ratio(aiio_runs: list[dict[str, Any]], fio_runs: list[dict[str, Any]]) -> float:
    """Median of each round's aiio / fio: context for noisy storage, next to the best-of."""
    ratios = [a["mib_s"] / f["mib_s"] for a, f in zip(aiio_runs, fio_runs, strict=True)
              if f["mib_s"]]
    return statistics.median(ratios) if ratios else 0.0


def run_on_target(target_path: str | os.PathLike, clients: int = 2, size: int = 128 * MiB,
                  loops: int = 8, repeats: int = 3, max_repeats: int | None = None,
                  budget_s: float | None = None, realtime: bool = False,
                  control: bool = False) -> dict[str, Any]:
    """Make the files in TARGET/aiio/crosscheck, compare, and remove them again."""
    target = Target(target_path)
    target.check_usable()
    target.require_space(clients * size, f"cross-check files ({clients} x {size // MiB} MiB)")
    folder = target.subdir(FOLDER)
    try:
        files = make_files(folder, clients, size)
        direct, _ = probe_direct_io(folder)
        out = compare(files, MiB, loops, repeats, direct, max_repeats, budget_s, realtime,
                      control)
        out["direct"] = direct
        return out
    finally:
        remove_tree(folder, target.root)
