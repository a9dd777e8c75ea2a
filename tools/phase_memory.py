"""What one client of each phase holds in memory: the figures aiio/run/memcheck.py is built on.

Runs `aiio run --phase P --clients N` for each phase and count asked, and samples every
process of the run's tree from /proc while it runs: each client's USS (the pages it alone
holds: what one more client adds) and the run's summed PSS (every page counted once, shared
pages split). Prints one line per run; --json prints the figures.

Run: `python -m tools.phase_memory [--clients 64 256] [--phase train prep ...] [--target DIR]`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

from aiio.run import memcheck
from aiio.units import KiB, MiB
from aiio.workload import load_workload

# phase label: the run's arguments (prep's randrw mode is a phase of its own for memory)
PHASES: dict[str, tuple[str, ...]] = {
    "train": ("--phase", "train"),
    "prep": ("--phase", "prep"),
    "randrw": ("--phase", "randrw"),
    "checkpoint": ("--phase", "checkpoint"),
    "load": ("--phase", "load"),
    "vector": ("--phase", "vector"),
}


@dataclass
class Sample:
    """Peaks of one run's memory (bytes)."""

    phase: str
    clients: int
    seen: int = 0                 # client processes seen at least once
    uss_max: int = 0              # the largest peak USS of any client
    uss_mean: float = 0.0         # the mean of the clients' peak USS
    counted: int = 0              # the I/O buffers aiio.run.memcheck counts for the phase
    pss_sum: int = 0              # peak of the run's summed PSS (parent and clients)
    parent_pss: int = 0           # the parent's PSS at that peak
    per_client: dict[int, int] = field(default_factory=dict, repr=False)


def _read(proc: psutil.Process) -> tuple[int, int]:
    """(USS, PSS) of one process; smaps_rollup, read directly: psutil's full info is slower."""
    uss = pss = 0
    with open(f"/proc/{proc.pid}/smaps_rollup") as fh:
        for line in fh:
            key, _, rest = line.partition(":")
            if key in ("Private_Clean", "Private_Dirty"):
                uss += int(rest.split()[0]) * KiB
            elif key == "Pss":
                pss = int(rest.split()[0]) * KiB
    return uss, pss


def _sample_once(root: psutil.Process, got: Sample) -> None:
    """One pass over the tree: each client's USS peak, and the summed PSS's peak."""
    total = parent = 0
    with contextlib.suppress(psutil.Error):
        for p in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.Error, OSError, ValueError):
                uss, pss = _read(p)
                total += pss
                if p.pid == root.pid:
                    parent = pss
                elif p.name().startswith("aiio-client"):
                    got.per_client[p.pid] = max(got.per_client.get(p.pid, 0), uss)
    if total > got.pss_sum:
        got.pss_sum, got.parent_pss = total, parent


def measure(phase: str, clients: int, target: str, duration: str,
            env: dict[str, str] | None = None, extra: tuple[str, ...] = ()) -> Sample:
    """Run one phase at `clients` clients and sample it to its end."""
    got = Sample(phase, clients)
    with tempfile.TemporaryDirectory(prefix="aiio-mem-") as reports:
        # only training is time-based; the other phases do a fixed amount of work
        timed = ("--duration", duration) if phase == "train" else ()
        cmd = [sys.executable, "-m", "aiio", "run", *PHASES[phase], "--target", str(target),
               "--clients", str(clients), *timed, *extra, "--quiet", "--no-report", "--no-history",
               "--results", reports]
        # output to a file: a pipe nobody drains while we sample would block the run
        with tempfile.TemporaryFile("w+") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=out, text=True,
                                    env={**os.environ, **(env or {})})
            root = psutil.Process(proc.pid)
            while proc.poll() is None:
                _sample_once(root, got)
                time.sleep(0.25)
            if proc.returncode:
                out.seek(0)
                raise SystemExit(f"{phase} at {clients} clients failed: {out.read().strip()}")
    peaks = list(got.per_client.values())
    got.seen = len(peaks)
    got.uss_max = max(peaks, default=0)
    got.uss_mean = statistics.fmean(peaks) if peaks else 0.0
    got.counted = memcheck.client_memory(load_workload("demo"),
                                         ("s3:" if target.startswith("s3://") else "") + phase,
                                         clients).buffers
    return got


def line(s: Sample) -> str:
    """One run's figures in MiB."""
    per = (s.pss_sum - s.parent_pss) / s.clients / MiB
    return (f"{s.phase:10s} {s.clients:4d} clients ({s.seen} seen): USS per client mean "
            f"{s.uss_mean / MiB:.2f} MiB, max {s.uss_max / MiB:.2f} MiB (less its buffers, "
            f"{s.counted / MiB:.2f} MiB: base {(s.uss_max - s.counted) / MiB:.2f} "
            f"MiB); PSS of the run "
            f"{s.pss_sum / MiB:.0f} MiB (parent {s.parent_pss / MiB:.0f} MiB, "
            f"{per:.2f} MiB per client)")


@contextlib.contextmanager
def _bucket() -> Iterator[tuple[str, dict[str, str]]]:
    """An s3:// target on a local SeaweedFS service, and the environment that reaches it."""
    from aiio.s3.localserver import SeaweedServer

    with SeaweedServer() as server:
        server.client().create_bucket(Bucket="aiio-mem")
        yield "s3://aiio-mem/mem", server.env()


def main() -> None:
    """Measure the phases and counts asked for; one line (or a JSON list) per run."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--phase", nargs="+", choices=list(PHASES), default=list(PHASES))
    ap.add_argument("--duration", default="10s", help="of the train runs")
    ap.add_argument("--target", type=Path, help="a folder (default: a new one in /var/tmp)")
    ap.add_argument("--run-args", default="", help="more arguments for every aiio run, e.g. "
                    "'--reader native --set dataset.format=hdf5' (the buffers counted stay "
                    "the demo's)")
    ap.add_argument("--s3", action="store_true",
                    help="against a bucket of a local SeaweedFS S3 service instead")
    ap.add_argument("--json", action="store_true")
    opts = ap.parse_args()
    with contextlib.ExitStack() as stack:
        env: dict[str, str] = {}
        if opts.s3:
            target, env = stack.enter_context(_bucket())
        else:
            target = str(opts.target or stack.enter_context(
                tempfile.TemporaryDirectory(prefix="aiio-mem-target-", dir="/var/tmp")))
        out = []
        for phase in opts.phase:
            for clients in opts.clients:
                s = measure(phase, clients, target, opts.duration, env,
                            tuple(shlex.split(opts.run_args)))
                out.append(s)
                print(line(s), flush=True)
        if opts.json:
            print(json.dumps([{k: v for k, v in asdict(s).items() if k != "per_client"}
                              for s in out], indent=1))


if __name__ == "__main__":
    main()
