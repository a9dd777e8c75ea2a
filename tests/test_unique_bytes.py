"""The data-vs-RAM cache check weighs the distinct bytes a run could be served from, each once:
64 load replicas of 2 GiB of weights read 128 GiB, yet the 2 GiB they read fit any cache."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from aiio import honesty
from aiio.cache_methods import METHOD_DIRECT
from aiio.results import figures
from aiio.run import hosts
from aiio.units import KiB, MiB

from .conftest import run_cli, saved_result

CLIENTS = 3
DATASET = 24 * 64 * KiB          # 24 samples of 64 KiB, no spread
FILES = CLIENTS * MiB            # the random mix's file per client
CHECKPOINT, WEIGHTS = 2 * MiB, MiB


def test_repeated_reads_count_once(tmp_path: Path) -> None:
    """A lifecycle run reads each byte several times (three replicas load the same weights;
    the random mix revisits its files): its unique bytes are the dataset, the random mix's
    files and the weights, each once."""
    (tmp_path / "t").mkdir()
    out = run_cli("run", "--no-report", "--no-history", "-q", "--phase", "all",
                  "--clients", str(CLIENTS), "--target", str(tmp_path / "t"),
                  "--results", str(tmp_path / "r"), "--epochs", "1",
                  "--set", "prep.mode=randrw", "--set", "prep.file_size=1MiB",
                  "--set", "prep.duration=0.3s", "--set", f"checkpoint.size={CHECKPOINT}B",
                  "--set", f"load.size={WEIGHTS}B", "--set", "dataset.num_files=24",
                  "--set", "dataset.sample_size=64KiB", "--set", "dataset.sample_size_stdev=0")
    assert out.returncode == 0, out.stderr
    res = saved_result(tmp_path / "r")
    # training writes its checkpoints and never reads them back: no source of its reads
    unique = DATASET + FILES + WEIGHTS
    assert res["aggregate"]["read_bytes"] > unique  # the reads repeat ...
    assert figures.unique_bytes(res, DATASET) == unique  # ... the bytes they come from do not
    # On a target no block device confirms, with client RAM a fifth of the reads (so the
    # reads alone are 5 x RAM), the unique bytes still fit the clients' caches: flagged.
    fuse = dataclasses.replace(hosts.target_info(res["hosts"][0]), confirm_device="",
                               fstype="fuse.ratefs", memory_backed=False)
    ram = res["aggregate"]["read_bytes"] // 5
    codes = [w["code"] for w in honesty.target_warnings(fuse, METHOD_DIRECT, unique, ram)]
    assert "unconfirmed_bytes" in codes


def test_restored_checkpoints_count_as_kept(tmp_path: Path) -> None:
    """Three checkpoints of 2 MiB, each restored after its write, two kept: 6 MiB read back
    from the 4 MiB the storage keeps."""
    (tmp_path / "t").mkdir()
    out = run_cli("run", "--no-report", "--no-history", "-q", "--phase", "checkpoint",
                  "--clients", "2", "--target", str(tmp_path / "t"),
                  "--results", str(tmp_path / "r"), "--checkpoints", "3",
                  "--set", "checkpoint.keep=2", "--set", f"checkpoint.size={CHECKPOINT}B")
    assert out.returncode == 0, out.stderr
    res = saved_result(tmp_path / "r")
    assert res["aggregate"]["read_bytes"] == 3 * CHECKPOINT
    assert figures.unique_bytes(res, 0) == 2 * CHECKPOINT
