"""Side by side on one read-throttled disk: MLPerf Storage's KV-cache benchmark and
`aiio run --phase kvcache` at the same model, users, duration and tiers (root only).

MLPerf's kv_cache_benchmark is not installable (not on PyPI); give the path of its
kv-cache.py with --mlperf. It runs as --clients processes side by side (its ranks), each with
--users users, no GPU or CPU tier (CLOSED option 1), `--generation-mode none` (pure storage);
aiio runs --clients clients of --users users with the nearest workload (docs/METHOD.md, "KV
cache", "Side by side with MLPerf"). Each tool's figures are computed by its own definitions
and printed as one table a trial; raw results stay in --out.

    python -m tools.kvcmp --mlperf PATH/kv-cache.py --out DIR [--trials 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from tools.storage import small_tmpfs, throttled_disk

MiB = 2**20
BYTES_PER_TOKEN = 131_072  # llama3.1-8b
# MLPerf draws each user's type (chatbot, coding, document) and think time from its seed:
# seeds 42 and 43 with 2 users each give think times 0.59, 0.46, 0.25 and 1.03 s.
THINK_S = 0.58


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mlperf", required=True, help="path of MLPerf's kv-cache.py")
    p.add_argument("--out", required=True, type=Path, help="folder for raw results")
    p.add_argument("--clients", type=int, default=2, help="MLPerf ranks = aiio clients")
    p.add_argument("--users", type=int, default=2, help="users per rank or client")
    p.add_argument("--duration", type=int, default=60, help="seconds a run")
    p.add_argument("--read-mib-s", type=int, default=200, help="the disk's read throttle")
    p.add_argument("--trials", type=int, default=2)
    p.add_argument("--python", default=sys.executable, help="a python with numpy for MLPerf")
    return p.parse_args(argv)


def run_mlperf(disk, a: argparse.Namespace, trial: Path) -> list[dict]:
    """Its ranks side by side, each its own cache folder and seed; their summaries."""
    procs, outs = [], []
    for rank in range(a.clients):
        cache, out = disk.mount / "mlperf" / f"rank{rank}", trial / f"mlperf_rank{rank}.json"
        cmd = disk.command(a.python, a.mlperf, "--model", "llama3.1-8b", "--num-users",
                           str(a.users), "--duration", str(a.duration), "--gpu-mem-gb", "0",
                           "--cpu-mem-gb", "0", "--cache-dir", str(cache), "--generation-mode",
                           "none", "--seed", str(42 + rank), "--output", str(out))
        procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL))
        outs.append(out)
    for proc in procs:
        proc.wait(timeout=a.duration + 600)
    subprocess.run(["rm", "-rf", str(disk.mount / "mlperf")], check=True)
    return [json.loads(o.read_text()) for o in outs]


def run_aiio(disk, a: argparse.Namespace, trial: Path, mlperf: dict) -> dict:
    """aiio's nearest workload to the MLPerf run just done: its measured context and
    generated tokens a request (a request's entry is context x 131,072 B), its users' mean
    think time, one turn a conversation (MLPerf's turns are separate entries), blocks of 32
    tokens (4 MiB) so that a short context is stored nearly whole as MLPerf stores it."""
    context = max(1, round(mlperf["write_mib_per_request"] * MiB / BYTES_PER_TOKEN))
    sets = {"model": "llama3.1-8b", "users": a.users, "block_tokens": 32,
            "context_tokens": context, "context_stdev": context,
            "generation_tokens": round(mlperf["generated_tokens_per_request"]),
            "max_context_tokens": 8192, "load": "closed", "think_time": f"{THINK_S}s",
            "duration": f"{a.duration}s", "turns": 1}
    cmd = disk.command(sys.executable, "-m", "aiio", "run", "--phase", "kvcache", "--target",
                       str(disk.mount), "--results", str(trial / "aiio"), "--json", "--quiet",
                       "--no-history", "--no-report", "--clients", str(a.clients),
                       *[x for k, v in sets.items() for x in ("--set", f"kvcache.{k}={v}")])
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=a.duration + 600)
    if proc.returncode:
        raise SystemExit(f"aiio failed: {proc.stderr.strip()[-400:]}")
    (trial / "aiio.json").write_text(proc.stdout)
    return json.loads(proc.stdout)


def mlperf_figures(ranks: list[dict]) -> dict:
    """MLPerf's figures by its definitions (summed over ranks, P95 the max of ranks'), and
    the pooled P95 of the same requests beside."""
    dur = ranks[0]["duration_s"]
    lat = [r["storage_latencies_s"] for r in ranks]
    reqs = sum(r["total_requests"] for r in ranks)
    read = sum(r["cache_stats"]["total_read_bytes"] for r in ranks)
    write = sum(r["cache_stats"]["total_write_bytes"] for r in ranks)
    return {"read_mib_s": read / MiB / dur, "write_mib_s": write / MiB / dur,
            "storage_p95_max_of_ranks_ms": max(np.percentile(x, 95) * 1e3 for x in lat if x),
            "storage_p95_pooled_ms": float(np.percentile(sum(lat, []), 95) * 1e3),
            "tokens_s": sum(r["avg_throughput_tokens_per_sec"] for r in ranks),
            "requests": reqs, "generated_tokens_per_request":
                sum(r["total_tokens"] for r in ranks) / max(reqs, 1),
            "read_mib_per_request": read / MiB / max(reqs, 1),
            "write_mib_per_request": write / MiB / max(reqs, 1),
            "wall_s": max(r["wall_s"] for r in ranks)}


def aiio_figures(result: dict) -> dict:
    """aiio's figures from its result: first done bandwidth, pooled P95, and its max of
    client P95s (shown as MLPerf's); the requests served, those done within the duration,
    and the rates of the latter over the duration (docs/METHOD.md, "Requests and tokens per
    second"), generated tokens/s among them (every request generates the workload's
    generation_tokens: its stdev is left at 0)."""
    agg = result["aggregate"]
    kv, st = agg["kvcache"], agg["kvcache"]["storage_time"]
    generated = kv["generated_tokens"] / max(kv["requests"], 1)
    return {"read_mib_s": agg["read"]["first_done"]["mib_s"],
            "write_mib_s": agg["write"]["first_done"]["mib_s"],
            "storage_p95_max_of_ranks_ms": st["max_client_p95_ms"],
            "storage_p95_pooled_ms": st["pooled"]["p95_ms"], "tokens_s": kv["tokens_per_s"],
            "requests": kv["requests"], "requests_in_duration": kv["requests_in_duration"],
            "requests_per_s": kv["requests_per_s"],
            "generated_tokens_s": generated * kv["requests_in_duration"] / kv["rate_window_s"],
            "read_mib_per_request": kv["read_bytes_per_request"] / MiB,
            "write_mib_per_request": kv["write_bytes_per_request"] / MiB,
            "verdict": kv["verdict"]["word"]}


def main(argv: list[str] | None = None) -> int:
    a = _args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    tmp = a.out / "disk"
    tmp.mkdir(exist_ok=True)
    with small_tmpfs(tmp, 6200) as ram, \
            throttled_disk(ram, a.read_mib_s * MiB, size_mib=6144, write_bps=2000 * MiB) as disk:
        for n in range(a.trials):
            trial = a.out / f"trial{n}"
            trial.mkdir(exist_ok=True)
            figs: dict = {}
            for name in ("mlperf", "aiio"):
                before, t0 = disk.bytes_read(), time.monotonic()
                if name == "mlperf":
                    figs = mlperf_figures(run_mlperf(disk, a, trial))
                else:
                    figs = aiio_figures(run_aiio(disk, a, trial, figs))
                dev = (disk.bytes_read() - before) / MiB / (time.monotonic() - t0)
                figs["device_read_mib_s_over_process_life"] = dev
                (trial / f"{name}_figures.json").write_text(json.dumps(figs, indent=1))
                print(name, n, json.dumps({k: v for k, v in figs.items() if k != "kvcache"}),
                      flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
