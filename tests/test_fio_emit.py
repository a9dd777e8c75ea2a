"""`aiio fio --emit`: the job file closest to a phase, run as written in the real fio."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aiio.fio.job import clients_of, jobs_of, run

from .conftest import call_cli

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
KiB = 1024
# tiny demo: 24 npz files of one 64 KiB sample, 2 clients, 2 epochs, batch 2, 2 loader threads
TINY = ("--workload", "demo", "--set", "dataset.num_files=24", "--set",
        "dataset.sample_size=64KiB", "--set", "dataset.sample_size_stdev=8KiB",
        "--epochs", "2", "--batch-size", "2", "--clients", "2")


def _emit(target, *args: str) -> str:
    return _emit_phase(target, "train", *args)


def _options(job: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in job.splitlines()
                if "=" in line and not line.startswith(";"))


def test_train_job_runs_as_written_and_reads_the_dataset_size(target, tmp_path):
    job = _emit(target, *TINY)
    opts = _options(job)
    assert opts["bs"] == "64k" and opts["rw"] == "read" and opts["direct"] == "1"
    assert opts["numjobs"] == "2" and opts["nrfiles"] == "12" and opts["loops"] == "2"
    assert opts["ioengine"] == "libaio" and opts["iodepth"] == "2"  # 2 loader threads
    assert "group_reporting" not in _options(job)
    folder = target / "aiio" / "fio" / "emit-train-demo"
    assert opts["directory"] == str(folder) and folder.is_dir()
    assert (target / "aiio" / ".aiio-owned").is_file()
    jobfile = tmp_path / "train.fio"
    jobfile.write_text(job)
    clients = clients_of(run(jobfile))
    assert len(clients) == 2
    for c in clients:  # each job read its 12 files of 64 KiB, twice
        assert c["bytes"] == 12 * 64 * KiB * 2
        assert c["ios"] == 24


def test_thinktime_lines_run_when_uncommented(target, tmp_path):
    job = _emit(target, *TINY)
    assert "; thinktime=10000" in job and "; thinktime_blocks=2" in job
    jobfile = tmp_path / "think.fio"
    jobfile.write_text(job.replace("; thinktime", "thinktime"))
    clients = clients_of(run(jobfile))
    assert all(c["bytes"] == 12 * 64 * KiB * 2 for c in clients)


def test_shuffled_samples_in_big_files_become_random_reads(target, tmp_path):
    job = _emit(target, *TINY, "--set", "dataset.samples_per_file=8", "--set",
                "dataset.sample_size=20KiB", "--set", "dataset.sample_size_stdev=0",
                "--read-threads", "1", "--duration", "300ms")
    opts = _options(job)
    assert opts["rw"] == "randread" and opts["bs"] == "20k"  # one read per sample
    assert opts["filesize"] == "160k" and opts["ioengine"] == "psync"
    assert opts["time_based"] == "1" and opts["runtime"] == "300ms"
    jobfile = tmp_path / "rand.fio"
    jobfile.write_text(job)
    clients = clients_of(run(jobfile))
    assert len(clients) == 2 and all(c["ios"] > 0 for c in clients)
    assert all(c["bytes"] == c["ios"] * 20 * KiB for c in clients)


@pytest.mark.parametrize("phase, words", [("bogus", "unknown phase 'bogus'"),
                                          ("all", "emit one at a time")])
def test_phase_without_a_job_is_one_line(target, phase, words):
    proc = call_cli("fio", "--emit", "--phase", phase, "--target", str(target))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and words in proc.stderr
    assert not (target / "aiio").exists()  # nothing created for a job that was not written


def _run_emitted(target, tmp_path, phase: str, *args: str) -> tuple[dict, list[dict]]:
    job = _emit_phase(target, phase, *args)
    jobfile = tmp_path / f"{phase}.fio"
    jobfile.write_text(job)
    return _options(job), jobs_of(run(jobfile))


def _emit_phase(target, phase: str, *args: str) -> str:
    """The job file `aiio fio --emit` writes, made in this process: only what it writes is
    read here (the real entry point's start is test_entry_point's), and fio then runs it
    as a process of its own."""
    proc = call_cli("fio", "--emit", "--phase", phase, "--target", str(target), *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_checkpoint_job_writes_every_shard_then_restores_it(target, tmp_path):
    opts, jobs = _run_emitted(target, tmp_path, "checkpoint", "--clients", "2", "--set",
                              "checkpoint.size=8MiB", "--set", "checkpoint.files_per_client=2")
    assert opts["filesize"] == "2m" and opts["nrfiles"] == "2" and opts["direct"] == "1"
    writes = [j for j in jobs if j["jobname"].startswith("checkpoint-")]
    restores = [j for j in jobs if j["jobname"].startswith("restore-")]
    assert len(writes) == len(restores) == 2  # one job per client, each side
    assert sum(j["write"]["io_bytes"] for j in writes) == 8 * 1024 * KiB  # the whole size
    assert all(j["read"]["io_bytes"] == 4 * 1024 * KiB for j in restores)


def test_load_job_has_every_replica_read_every_weight_file(target, tmp_path):
    opts, jobs = _run_emitted(target, tmp_path, "load", "--clients", "3", "--set",
                              "load.size=6MiB", "--set", "load.files=2")
    assert opts["filename"] == "weights.0:weights.1" and opts["numjobs"] == "3"
    assert [j["read"]["io_bytes"] for j in jobs] == [6 * 1024 * KiB] * 3


def test_load_job_has_one_stream_per_weight_file_at_most():
    # a replica starts one reader per file at most: 4 threads over 2 files read 2 at a time,
    # and the job asked fio for a queue of 4 (the fio pairing counts 2 since Dec 2 2026)
    from aiio.fio.emit import emit
    from aiio.workload import load_workload

    w = load_workload("demo", [("load", "threads", 4), ("load", "files", 2),
                               ("load", "size", "8MiB")])
    text = emit("load", w, Path("/weights"))
    assert "iodepth=2" in text and "iodepth=4" not in text, text
    assert "2 reader threads per replica" in text, text


def test_checkpoint_job_has_one_writer_per_shard_file_at_most():
    # a client starts min(checkpoint.threads, files_per_client) writers: 4 threads over one
    # file write one stream, and fio's job must not keep 4 in flight
    from aiio.fio.emit import emit
    from aiio.workload import load_workload

    w = load_workload("demo", [("checkpoint", "threads", 4), ("checkpoint", "files_per_client", 1),
                               ("checkpoint", "size", "8MiB")])
    text = emit("checkpoint", w, Path("/ckpt"))
    assert "ioengine=psync" in text and "iodepth" not in _options(text), text
    assert "1 writer thread per client" in text, text
    w = load_workload("demo", [("checkpoint", "threads", 4), ("checkpoint", "files_per_client", 3),
                               ("checkpoint", "size", "8MiB")])
    assert "iodepth=3" in emit("checkpoint", w, Path("/ckpt"))


def test_prep_jobs_read_samples_and_write_shards(target, tmp_path):
    _, jobs = _run_emitted(target, tmp_path, "prep", *TINY, "--set", "dataset.sample_size_stdev=0",
                           "--set", "prep.shard_size=256KiB")
    reads = [j for j in jobs if j["jobname"].startswith("prep-read-")]
    writes = [j for j in jobs if j["jobname"].startswith("prep-write-")]
    assert len(reads) == len(writes) == 2
    assert all(j["read"]["io_bytes"] == 12 * 64 * KiB for j in reads)  # its share of samples
    assert all(j["write"]["io_bytes"] == 768 * KiB for j in writes)  # 3 shards of 256 KiB
    opts, jobs = _run_emitted(target, tmp_path, "prep", "--clients", "2", "--set",
                              "prep.mode=randrw", "--set", "prep.file_size=2MiB", "--set",
                              "prep.duration=300ms")
    assert opts["rw"] == "randrw" and opts["rwmixread"] == "70" and opts["bs"] == "4k"
    assert all(j["read"]["io_bytes"] > j["write"]["io_bytes"] > 0 for j in jobs)
