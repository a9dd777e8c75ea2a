"""Bad input a phase refuses once the runner has started (its set-up: a layout the file cannot
hold, a size the target has no room for): one line, exit 2, and no result, since nothing ran.
A refusal that comes after the run wrote on the target (a dataset generated, a stage's files
written) keeps its partial result, as any failure after I/O started does.

Before, every refusal in a phase's set-up saved a "failed" result, which `aiio history` and
the results folder then held as a run."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import (
    REPO,
    TINY_ARGS,
    TINY_DATA,
    call_cli,
    run_cli,
    saved_result,
    saved_results,
)

HUGE = "1000TiB"  # more than any test machine's free space


def _refused(target: Path, results: Path, *args: str) -> str:
    proc = call_cli("run", "--target", str(target), "--results", str(results), "--quiet",
                    "--no-report", *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    return proc.stderr


@pytest.mark.parametrize("args, fragment", [
    (("--phase", "randrw", "--set", "prep.file_size=8KiB", "--set", "prep.threads=4"),
     "fewer than the 4 threads"),
    (("--phase", "randrw", "--set", f"prep.file_size={HUGE}"), "randrw files"),
    (("--phase", "checkpoint", "--set", f"checkpoint.size={HUGE}"), "checkpoint(s) of"),
    (("--phase", "load", "--set", f"load.size={HUGE}"), "model weights"),
    (("--phase", "prep", *TINY_DATA, "--set", "dataset.sample_size=1TiB"), "dataset demo"),
], ids=["randrw-layout", "randrw-space", "checkpoint-space", "load-space", "dataset-space"])
def test_a_refusal_before_any_io_leaves_no_result(target: Path, results: Path, args, fragment):
    said = _refused(target, results, *args)
    assert fragment in said and "partial result" not in said, said
    assert saved_results(results) == []
    assert not results.exists() or not [p for p in results.iterdir() if p.is_dir()]
    assert not (target / "aiio").exists()  # the target as it was: not even aiio's marker


def test_a_refusal_after_reading_an_existing_dataset_leaves_no_result(target: Path,
                                                                       results: Path):
    """Training reads the dataset that is there (nothing written), then its checkpoints do
    not fit: nothing ran."""
    assert run_cli("datagen", "--target", str(target), *TINY_DATA).returncode == 0
    said = _refused(target, results, *TINY_ARGS, "--checkpoint-every", "1",
                    "--set", f"checkpoint.size={HUGE}")
    assert "checkpoint(s) of" in said and "partial result" not in said, said
    assert saved_results(results) == []


def test_a_refusal_after_a_stage_wrote_keeps_the_partial_result(target: Path, results: Path):
    """The lifecycle's prep stage generates the dataset and makes its folder before the train
    stage finds its checkpoints do not fit: I/O had started, so the result stays, failed."""
    said = _refused(target, results, "--phase", "all", *TINY_ARGS, "--checkpoint-every", "1",
                    "--set", f"checkpoint.size={HUGE}")
    assert "checkpoint(s) of" in said and "partial result saved" in said, said
    res = saved_result(results)
    assert res["status"] == "failed" and "checkpoint(s) of" in res["error"]
    assert not list((target / "aiio").glob("prep/*")), "the prep stage's folder was left"


def test_too_few_open_files_is_refused_before_the_files_are_written(target: Path,
                                                                     results: Path):
    """The open-file limit was checked as the clients were forked, after randrw had written
    every client's file: now with the memory, before anything is written."""
    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (300, 300))

    proc = subprocess.run(
        [sys.executable, "-m", "aiio", "run", "--phase", "randrw", "--target", str(target),
         "--results", str(results), "--clients", "40", "--set", "prep.file_size=64KiB",
         "--quiet", "--no-report", "--no-history"],
        cwd=REPO, capture_output=True, text=True, timeout=120, preexec_fn=low_limit)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "open files" in proc.stderr
    assert "partial result" not in proc.stderr and saved_results(results) == []
    assert not (target / "aiio").exists()  # refused before the target was even claimed


def test_a_sweep_whose_first_point_is_refused_leaves_no_result(target: Path, results: Path):
    """`aiio scale` refused at its first point ran nothing, as `aiio run` refused there: it
    left a sweep of no points, its report and a history record of it."""
    proc = call_cli("scale", "--phase", "load", "--target", str(target), "--results",
                    str(results), "--clients", "1,2", "--set", f"load.size={HUGE}", "--quiet")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert "model weights" in proc.stderr and "saved" not in proc.stderr, proc.stderr
    assert not results.exists() or list(results.iterdir()) == [], list(results.iterdir())
