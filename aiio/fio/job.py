"""fio, the reference aiio stands beside: job files, running it by subprocess, reading its JSON.

fio runs as its own program (no wrapper library). Its report is read from the first '{' (text may
precede it); several concatenated reports are allowed and the last one is the final report; a
missing `disk_util` is normal (tmpfs). aiio never asks for `group_reporting`, so every fio job is
one entry, told apart by position, and each client's figures survive.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from aiio import stats
from aiio.errors import ConfigError, RunFailed, ToolMissing
from aiio.stats import BITS, Histogram, bucket_index
from aiio.units import MiB, mib_per_s

INSTALL_HINT = "install it with: apt-get install fio (dnf install fio on Fedora/RHEL)"
DIRECTIONS = ("read", "write", "trim")
# fio's percentile keys -> aiio's latency summary keys
PERCENTILES = {"50.000000": "p50_ns", "90.000000": "p90_ns", "99.000000": "p99_ns",
               "99.900000": "p999_ns"}
Options = dict[str, Any]
# The most jobs one fio runs: its job table is 512 shared-memory segments of 8, the last never
# handed out (fio 3.33 ran 4,088 and refused 4,089: "maximum number of jobs reached").
MAX_JOBS = 4088


def check_jobs(clients: int) -> None:
    """Refuse, before anything is laid out, more clients (one fio job each) than fio runs."""
    if not 1 <= clients <= MAX_JOBS:
        raise ConfigError(f"--clients {clients:,}: fio runs one job per client, 1 to at most "
                          f"{MAX_JOBS:,} in one run; lower --clients")


# --- the program ---------------------------------------------------------------------------

def find_fio(program: str = "fio") -> str:
    """The fio executable (on PATH unless a path is given), or ToolMissing naming the install
    command."""
    path = shutil.which(program)
    if path is None:
        raise ToolMissing(f"fio is not installed ({program} not found); {INSTALL_HINT}")
    return path


def fio_version(path: str | None = None) -> str:
    """fio's own version string, e.g. 'fio-3.33'."""
    out = subprocess.run([path or find_fio(), "--version"], capture_output=True, text=True,
                         timeout=30)
    return out.stdout.strip() or out.stderr.strip()


# --- job files -----------------------------------------------------------------------------

def render(global_opts: Options, jobs: Sequence[tuple[str, Options]],
           comments: Iterable[str] = ()) -> str:
    """An fio job file: comment lines, a [global] section, then one section per job."""
    lines = [f"; {c}" if c else ";" for c in comments]
    for name, opts in (("global", global_opts), *jobs):
        if lines:
            lines.append("")
        lines.append(f"[{name}]")
        for key, value in opts.items():
            if value is None:
                continue
            if isinstance(value, bool):
                value = int(value)
            lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


def size_opt(nbytes: int) -> str:
    """A byte count the way fio reads it exactly (k, m, g are binary in fio)."""
    for suffix, unit in (("g", 1024**3), ("m", MiB), ("k", 1024)):
        if nbytes >= unit and nbytes % unit == 0:
            return f"{nbytes // unit}{suffix}"
    return str(nbytes)


# --- running -------------------------------------------------------------------------------

def run(jobfile: str | os.PathLike, on_wait: Callable[[float], None] | None = None,
        extra_args: Sequence[str] = (), realtime: bool = False, program: str = "fio",
        env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run fio on a job file and return its final JSON report (json+, with latency bins).

    fio failing (non-zero exit or a job with an error) raises RunFailed carrying its stderr.
    `realtime` runs fio (and so its jobs) at real-time priority where permitted; `env` adds
    variables the job file expands (fio reads ${NAME}), e.g. credentials kept off the file.
    """
    cmd = [find_fio(program), "--output-format=json+", *extra_args, str(jobfile)]
    # fio names its files in its report as their bytes: a name that is no UTF-8 is read back
    # as the same lone surrogates the job file was written from (suite.write_job)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="surrogateescape",
                            preexec_fn=try_realtime if realtime else None,
                            env={**os.environ, **env} if env else None)
    t0 = time.monotonic()
    while True:
        try:
            stdout, stderr = proc.communicate(timeout=0.25)
            break
        except subprocess.TimeoutExpired:
            if on_wait:
                on_wait(time.monotonic() - t0)
        except KeyboardInterrupt:
            _stop(proc)
            raise
    if proc.returncode != 0:
        raise RunFailed(f"fio exited with code {proc.returncode}: {_one_line(stderr)}")
    report = final_report(stdout)
    failed = [j for j in jobs_of(report) if j.get("error")]
    if failed:
        err = failed[0]["error"]
        raise RunFailed(f"fio job {failed[0].get('jobname')} failed: {os.strerror(err)} "
                        f"(errno {err}); {_one_line(stderr)}")
    return report


def _stop(proc: subprocess.Popen) -> None:
    """Stop fio (a terminal's Ctrl-C reached it already; a signal to aiio alone did not) and
    wait for it, so the caller removes files only after fio has let go of them."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_text(jobtext: str, on_wait: Callable[[float], None] | None = None,
             realtime: bool = False, program: str = "fio",
             env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run fio on job text (written to a temporary file outside any target)."""
    with tempfile.NamedTemporaryFile("w", suffix=".fio", prefix="aiio-", encoding="utf-8",
                                     errors="surrogateescape") as fh:  # as suite.write_job
        fh.write(jobtext)
        fh.flush()
        return run(fh.name, on_wait, realtime=realtime, program=program, env=env)


def try_realtime() -> bool:
    """Move this process to the lowest real-time priority (SCHED_FIFO 1) where permitted.

    For calibration runs only: other processes' load then cannot decide a throughput ratio.
    The kernel still keeps 5 % of every second for normal tasks (sched_rt_runtime_us).
    """
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except (OSError, AttributeError):
        return False
    return True


def _one_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return "; ".join(lines) if lines else "(fio printed nothing on stderr)"


# --- parsing -------------------------------------------------------------------------------

def parse_reports(text: str) -> list[dict[str, Any]]:
    """Every JSON report in fio's output, in order: objects holding `jobs` (or, in
    client/server mode, `client_stats`), wherever they start; text around them is skipped."""
    decoder = json.JSONDecoder()
    reports, error = [], None
    pos = text.find("{")
    while pos >= 0:
        try:
            obj, end = decoder.raw_decode(text, pos)
        except ValueError as exc:  # a brace in fio's text, or a report cut short
            error, end = exc, pos + 1
        else:
            if isinstance(obj, dict) and ("jobs" in obj or "client_stats" in obj):
                reports.append(obj)
            else:
                end = pos + 1  # not a report: look inside it for one
        pos = text.find("{", end)
    if not reports:
        why = f" (the JSON there is broken: {error})" if error else ""
        raise RunFailed(f"fio printed no complete JSON report{why}; its output began "
                        f"{text[:120]!r}")
    return reports


def final_report(text: str) -> dict[str, Any]:
    """The last (final) report: --status-interval prints interim ones before it."""
    return parse_reports(text)[-1]


def jobs_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The job entries, in order; client/server mode keeps them under client_stats."""
    if "jobs" in report:
        return list(report["jobs"])
    return [j for j in report.get("client_stats", []) if j.get("jobname") != "All clients"]


def latency_from(clat: dict[str, Any]) -> tuple[dict[str, float], Histogram | None]:
    """aiio's latency summary from fio's clat_ns; the histogram when fio gave its bins."""
    hist = histogram_from(clat)
    if hist is not None:
        return hist.summary(), hist
    pct = clat.get("percentile") or {}
    out = {"count": int(clat.get("N", 0)), "min_ns": float(clat.get("min", 0)),
           "mean_ns": float(clat.get("mean", 0)), "max_ns": float(clat.get("max", 0))}
    for key, name in PERCENTILES.items():
        out[name] = float(pct.get(key, 0))
    return out, None


def histogram_from(clat: dict[str, Any]) -> Histogram | None:
    """fio's json+ bins as aiio's Histogram: the same log-linear layout (6 bits), so each bin's
    value falls in exactly the bucket fio counted it in."""
    bins = clat.get("bins")
    if not bins:
        return None
    buckets: dict[str, int] = {}
    for value, n in bins.items():
        key = str(bucket_index(int(value)))
        buckets[key] = buckets.get(key, 0) + int(n)
    count = sum(buckets.values())
    total = round(float(clat.get("mean", 0)) * count)
    return Histogram.from_dict({"bits": BITS, "buckets": buckets, "count": count,
                                "min": int(clat.get("min", 0)), "max": int(clat.get("max", 0)),
                                "sum": total})


def direction_figures(d: dict[str, Any]) -> dict[str, Any]:
    """One direction (read/write) of one job: bytes, I/Os, runtime, MiB/s, IOPS, latency."""
    runtime_s = d.get("runtime", 0) / 1000.0
    latency, hist = latency_from(d.get("clat_ns", {}))
    return {"bytes": int(d.get("io_bytes", 0)), "ios": int(d.get("total_ios", 0)),
            "runtime_s": runtime_s, "mib_s": mib_per_s(d.get("io_bytes", 0), runtime_s),
            "iops": float(d.get("iops", 0.0)), "latency": latency,
            "histogram": hist.to_dict() if hist else None}


def job_figures(job: dict[str, Any], index: int) -> dict[str, Any]:
    """One fio job = one aiio client: totals over its directions, and each direction."""
    ops = {name: direction_figures(job[name]) for name in DIRECTIONS
           if job.get(name, {}).get("io_bytes", 0) > 0}
    nbytes = sum(o["bytes"] for o in ops.values())
    ios = sum(o["ios"] for o in ops.values())
    elapsed = max((o["runtime_s"] for o in ops.values()), default=0.0)
    main = max(ops, key=lambda k: ops[k]["bytes"]) if ops else None
    return {"client": index, "jobname": job.get("jobname", ""), "host": job.get("hostname"),
            "error": int(job.get("error", 0)), "bytes": nbytes, "ios": ios,
            "elapsed_s": elapsed, "mib_s": mib_per_s(nbytes, elapsed),
            "iops": ios / elapsed if elapsed else 0.0,
            "latency": ops[main]["latency"] if main else {},
            "usr_cpu": float(job.get("usr_cpu", 0.0)), "sys_cpu": float(job.get("sys_cpu", 0.0)),
            "ops": ops}


def clients_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every fio job in the report as an aiio client entry, numbered by position."""
    return [job_figures(job, i) for i, job in enumerate(jobs_of(report))]


def aggregate(clients: list[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate over jobs: all bytes over the slowest job's runtime (fio's group figure, and
    aiio's last done), the sum of per-job rates, spread, fairness and merged latency."""
    if not clients:
        return {"bytes": 0, "ios": 0, "seconds": 0.0, "mib_s": 0.0, "iops": 0.0, "ops": {}}
    seconds = max(c["elapsed_s"] for c in clients)
    nbytes = sum(c["bytes"] for c in clients)
    ios = sum(c["ios"] for c in clients)
    rates = [c["mib_s"] for c in clients]
    out = {"bytes": nbytes, "ios": ios, "seconds": seconds, "mib_s": mib_per_s(nbytes, seconds),
           "iops": ios / seconds if seconds else 0.0, "sum_client_mib_s": sum(rates),
           "sum_client_iops": sum(c["iops"] for c in clients),
           "per_client_mib_s": stats.spread(rates),
           "jain": stats.jain(rates) if any(rates) else 0.0,
           "ops": {name: _direction_aggregate([c["ops"][name] for c in clients
                                               if name in c["ops"]])
                   for name in DIRECTIONS if any(name in c["ops"] for c in clients)}}
    main = max(out["ops"], key=lambda k: out["ops"][k]["bytes"]) if out["ops"] else None
    out["latency"] = out["ops"][main]["latency"] if main else {}
    return out


def _direction_aggregate(figs: list[dict[str, Any]]) -> dict[str, Any]:
    seconds = max(f["runtime_s"] for f in figs)
    nbytes, ios = sum(f["bytes"] for f in figs), sum(f["ios"] for f in figs)
    hists = [Histogram.from_dict(f["histogram"]) for f in figs if f["histogram"]]
    merged = sum(hists, Histogram()) if len(hists) == len(figs) else None
    return {"bytes": nbytes, "ios": ios, "seconds": seconds,
            "mib_s": mib_per_s(nbytes, seconds), "iops": ios / seconds if seconds else 0.0,
            "latency": merged.summary() if merged else {},
            "histogram": merged.to_dict() if merged else None}


def disk_util(report: dict[str, Any]) -> list[dict[str, Any]]:
    """fio's block-device statistics; empty when fio could not map the files to a device."""
    return list(report.get("disk_util") or [])


# --- small measurements other modules reuse --------------------------------------------------

def seq_read_job(files: Sequence[str], block_size: int = MiB, direct: bool = True,
                 loops: int = 1, ioengine: str = "psync") -> str:
    """One fio job per file, each reading its file sequentially `loops` times."""
    glob = {"ioengine": ioengine, "direct": direct, "rw": "read", "bs": size_opt(block_size),
            "loops": loops, "invalidate": 1}
    jobs = [(f"c{i}", {"filename": escape(f)}) for i, f in enumerate(files)]
    return render(glob, jobs, ["aiio: sequential read, one job per file"])


def seq_read_mib_s(files: Sequence[str], block_size: int = MiB, direct: bool = True,
                   loops: int = 1, realtime: bool = False) -> dict[str, Any]:
    """fio psync sequential read of the given files, one job each: the aggregate."""
    report = run_text(seq_read_job(files, block_size, direct, loops), realtime=realtime)
    return aggregate(clients_of(report))


def rand_read_iops(path: str, runtime_s: float = 2.0, block_size: int = 4096,
                   direct: bool = True) -> float:
    """4 KiB random-read IOPS of one psync job on an existing file."""
    glob = {"ioengine": "psync", "direct": direct, "rw": "randread",
            "bs": size_opt(block_size), "time_based": 1, "runtime": f"{int(runtime_s * 1000)}ms",
            "norandommap": 1, "randrepeat": 0}
    report = run_text(render(glob, [("randread", {"filename": escape(path)})]))
    return aggregate(clients_of(report))["iops"]


def escape(path: str) -> str:
    """fio splits filename= on ':'; a literal colon is written '\\:'."""
    return str(path).replace(":", "\\:")
