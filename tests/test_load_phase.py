"""The load phase through the CLI: every replica reads every byte, cold, optionally staggered;
--verify finds a byte flipped on disk between the write and the read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import call_cli, run_cli

MiB = 1 << 20
LOAD = ("--set", "load.size=6MiB", "--set", "load.files=3", "--clients", "3")


def test_replicas_read_every_byte_with_staggered_starts(target: Path, results: Path) -> None:
    proc = run_cli("run", "--no-report",
                   "--phase", "load", "-t", str(target), "--results", str(results),
                   *LOAD, "--stagger", "0.2s", "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    agg = res["aggregate"]
    assert agg["replicas"] == 3 and agg["complete"]
    assert [c["bytes"] for c in res["clients"]] == [6 * MiB] * 3
    for c in res["clients"]:
        assert c["start_s"] >= 0.2 * c["client"]           # waited for its turn
        assert c["elapsed_s"] >= c["start_s"] + c["load_s"] - 1e-6
        assert c["histograms"]["read"]["count"] >= 6       # 1 MiB calls
    assert agg["first_ready_s"] <= agg["last_ready_s"]
    assert agg["last_ready_s"] >= 0.4                      # the last replica started at 0.4 s
    assert agg["model"]["files"] == 3 and not agg["model"]["reused"]


def test_verify_reports_a_flipped_byte_with_file_and_offset(target: Path,
                                                             results: Path) -> None:
    first = run_cli("run", "--phase", "load", "-t", str(target), "--results", str(results),
                    *LOAD, "-q", "--no-report")
    assert first.returncode == 0, first.stderr
    weights = sorted((target / "aiio" / "models").glob("*/weights-00002-of-00003.bin"))[0]
    offset = 3 * 4096 + 777
    with open(weights, "r+b") as fh:
        fh.seek(offset)
        b = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([b[0] ^ 0x20]))
    proc = run_cli("run", "--phase", "load", "--verify", "-t", str(target), "--results",
                   str(results), *LOAD, "-q", "--no-report")
    assert proc.returncode == 1, proc.stderr
    assert f"{weights} at offset {3 * 4096}" in proc.stderr
    saved = sorted(results.glob("*/result.json"))[-1]
    v = json.loads(saved.read_text())["aggregate"]["verify"]
    assert v["mismatches"] == 3  # each of the 3 replicas read the flipped block
    assert {(c["file"], c["offset"]) for c in v["corrupt"]} == {(str(weights), 3 * 4096)}
    assert v["cost_share"] > 0


def test_a_model_name_with_a_slash_loads(tmp_path: Path) -> None:
    """A hub-style model name (org/model) named the weights' lock file inside a folder that
    did not exist: the run failed 'No such file or directory'. The weights' folder and lock
    are named from the model's name with its path separators replaced, inside models/."""
    target = tmp_path / "t"
    target.mkdir()
    proc = run_cli("run", "--phase", "load", "--target", str(target), "--results",
                   str(tmp_path / "r"), "--set", "load.size=4MiB", "--set",
                   "model.name=../meta-llama/Llama-3.1-8B", "--clients", "1", "--quiet",
                   "--no-report", "--no-history")
    assert proc.returncode == 0, proc.stderr
    models = target / "aiio" / "models"
    (folder,) = [p for p in models.iterdir() if p.is_dir()]
    assert "Llama-3.1-8B" in folder.name and list(folder.glob("weights-*.bin"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r", "t"]  # nothing outside


def test_first_done_counts_what_replicas_ending_in_one_bucket_had_read(ram_target: Path,
                                                                       results: Path) -> None:
    """Two replicas reading 8 MiB from RAM end within milliseconds, inside one 0.1 s bucket
    of their byte series: by the first one's end the other had completed its bytes over its
    own few milliseconds, not over the bucket's 100 (first done read half of last done)."""
    proc = run_cli("run", "--no-report", "--no-history", "--phase", "load", "-t",
                   str(ram_target), "--results", str(results), "--set", "load.size=8MiB",
                   "--set", "load.files=1", "--clients", "2", "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    ends = [c["elapsed_s"] for c in res["clients"]]
    series = [c["series"] for c in res["clients"]]
    assert all(len(s["bytes"]) == 1 for s in series), series  # both inside the first bucket
    first = min(ends)
    # every replica's bytes were completed between the common start and its own end
    had = sum(s["bytes"][0] * min(1.0, first / end) for s, end in zip(series, ends, strict=True))
    agg = res["aggregate"]
    assert agg["first_done"]["seconds"] == first
    assert agg["first_done"]["bytes"] == pytest.approx(had)
    assert agg["first_done"]["mib_s"] >= agg["last_done"]["mib_s"] * 0.999


def test_weights_too_small_for_their_files_name_the_size_given(tmp_path):
    # `--set load.size=1` over two files was told "use a larger --scale", which it never gave
    out = call_cli("run", "--phase", "load", "--target", str(tmp_path), "--no-history",
                   "--set", "load.size=1", "--set", "load.files=2")
    assert out.returncode == 2
    assert "load.size" in out.stderr and "1 B" in out.stderr, out.stderr
