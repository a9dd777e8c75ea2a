"""% of hero is like for like: the same window (last done on both sides), the same concurrency
(fio jobs x iodepth = clients x streams per client) and the access pattern of the phase and
its mode; a run says what it was paired with, or which fio command makes a matching hero."""

from __future__ import annotations

import json
import shutil

import pytest

from .conftest import TINY_DATA, run_cli

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
MiB = 2**20
DATA = TINY_DATA


@pytest.fixture(scope="module")
def hero(tmp_path_factory):
    """A real fio suite: 2 jobs at iodepth 1, the sequential tests and the random mix."""
    base = tmp_path_factory.mktemp("pairing")
    target, results = base / "target", base / "reports"
    target.mkdir()
    proc = run_cli("fio", "--target", str(target), "--results", str(results), "--clients", "2",
                   "--runtime", "500ms", "--ramp-time", "0", "--size", "8MiB", "--tests",
                   "seq_read,seq_write,rand_mix", "--quiet")
    assert proc.returncode == 0, proc.stderr
    [folder] = [p for p in results.iterdir() if "-fio-" in p.name]
    return {"target": target, "results": results,
            "res": json.loads((folder / "result.json").read_text())}


def _run(hero: dict, phase: str, *args: str) -> dict:
    proc = run_cli("run", "--no-report",
                   "--phase", phase, "--target", str(hero["target"]), "--results",
                   str(hero["results"]), "--json", "--quiet", "--clients", "2", *DATA, *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _fio(hero: dict, test: str) -> float:
    return hero["res"]["tests"][test]["aggregate"]["mib_s"]


def test_training_is_paired_last_done_with_last_done_at_the_same_concurrency(hero):
    res = _run(hero, "train", "--read-threads", "1", "--epochs", "2")
    h = res["hero"]
    assert h["test"] == "seq_read" and h["window"] == "last done"
    # the storage's side, as fio's: what the loaders were delivered, not what was consumed
    assert h["phase_mib_s"] == pytest.approx(res["aggregate"]["delivered"]["last_done"]["mib_s"])
    assert h["percent"] == pytest.approx(100 * h["phase_mib_s"] / _fio(hero, "seq_read"))
    assert h["pairing"] == {"clients": 2, "streams_per_client": 1, "fio_jobs": 2,
                            "fio_iodepth": 1, "block_size": MiB,
                            "pattern": "sequential read"}
    assert "last done" in h["text"] and "2 clients x 1 stream" in h["text"]
    assert "2 fio jobs x iodepth 1" in h["text"]


def test_more_streams_than_the_hero_get_no_percent_but_the_command(hero):
    res = _run(hero, "train", "--read-threads", "2", "--epochs", "2")
    h = res["hero"]
    assert "percent" not in h or h["percent"] is None
    target = hero["target"]
    assert (f"aiio fio --target {target} --clients 2 --iodepth 2 --tests seq_read"
            in h["text"]), h["text"]
    assert "2 clients x 2 streams" in h["text"]


def test_prep_in_shards_mode_is_paired_with_sequential_read_and_write(hero):
    res = _run(hero, "prep", "--set", "prep.threads=1")
    h = res["hero"]
    tests = {p["direction"]: p["test"] for p in h["pairs"]}
    assert tests == {"read": "seq_read", "write": "seq_write"}
    agg = res["aggregate"]
    by_dir = {p["direction"]: p for p in h["pairs"]}
    assert by_dir["read"]["phase_mib_s"] == pytest.approx(agg["read"]["last_done"]["mib_s"])
    assert by_dir["write"]["phase_mib_s"] == pytest.approx(agg["write"]["last_done"]["mib_s"])
    assert by_dir["write"]["percent"] == pytest.approx(
        100 * by_dir["write"]["phase_mib_s"] / _fio(hero, "seq_write"))
    assert "rand_mix" not in h["text"]


def test_prep_in_randrw_mode_is_paired_with_the_random_mix(hero):
    res = _run(hero, "prep", "--set", "prep.mode=randrw", "--set", "prep.threads=1",
               "--set", "prep.file_size=8MiB", "--set", "prep.duration=1s")
    h = res["hero"]
    assert h["test"] == "rand_mix"
    agg = res["aggregate"]
    assert h["phase_mib_s"] == pytest.approx(agg["read_mib_s"] + agg["write_mib_s"])


def test_checkpoint_is_paired_with_sequential_write(hero):
    res = _run(hero, "checkpoint", "--set", "checkpoint.size=8MiB")
    h = res["hero"]
    assert h["test"] == "seq_write" and h["window"] == "last done"
    assert h["phase_mib_s"] == pytest.approx(res["aggregate"]["write_mib_s"])
    assert h["pairing"]["streams_per_client"] == 1 and h["pairing"]["fio_jobs"] == 2


def test_checkpoint_streams_are_its_writers_that_have_a_file(hero):
    """A client runs min(checkpoint.threads, files_per_client) writers: 4 threads over one
    shard file are one stream, paired with 2 fio jobs x iodepth 1 (it was "2 clients x 4
    streams" and no pairing), and the command for another hero asks that depth."""
    from aiio.fio.pairing import fio_command, streams_per_client

    res = _run(hero, "checkpoint", "--set", "checkpoint.size=8MiB", "--set",
               "checkpoint.threads=4", "--set", "checkpoint.files_per_client=1")
    h = res["hero"]
    assert h.get("percent") is not None, h["text"]
    assert h["pairing"]["streams_per_client"] == 1 and "2 clients x 1 stream" in h["text"]
    spec = {"phase": "checkpoint", "clients": [{}, {}],
            "workload": {"checkpoint": {"threads": 4, "files_per_client": 3}}}
    assert streams_per_client(spec) == 3
    assert "--iodepth 3" in fio_command("/mnt/t", spec, ["seq_write"])


def test_randrw_streams_count_the_requests_in_flight_at_depth() -> None:
    """prep.iodepth requests in flight per thread are as many streams as fio's iodepth."""
    from aiio.fio.pairing import streams_per_client

    res = {"phase": "prep", "workload": {"prep": {"mode": "randrw", "threads": 2,
                                                  "iodepth": 8}}}
    assert streams_per_client(res) == 16
    assert streams_per_client({**res, "phase": "randrw"}) == 16
    res["workload"]["prep"]["iodepth"] = 1
    assert streams_per_client(res) == 2


def test_load_streams_are_its_reader_threads_that_have_a_file() -> None:
    """A replica starts min(load.threads, load.files) readers (each takes whole files): 4
    threads over 2 weight files are 2 streams, and fio's matching command 2 jobs a replica."""
    from aiio.fio.pairing import streams_per_client

    res = {"phase": "load", "workload": {"load": {"threads": 4, "files": 2}}}
    assert streams_per_client(res) == 2
    res["workload"]["load"]["files"] = 8
    assert streams_per_client(res) == 4
