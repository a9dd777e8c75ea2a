"""Adding an engine is one module: an engine registered from outside the package runs every
phase unchanged, and every figure inherits its definition (each call's time, each stream's
bandwidth) from the one seam, checked here against the engine's known time per call."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from aiio.run import runner
from aiio.units import MiB

from .conftest import TINY_DATA, call_cli, tiny_workload
from .sleepy_engine import SLEEP_S

ENGINE = "external:tests.sleepy_engine"
SLEEP_NS = SLEEP_S * 1e9
SMALL = {"checkpoint__size": "2MiB", "load__size": "2MiB", "prep__shard_size": "256KiB",
         "prep__file_size": "256KiB", "prep__duration": "0.5s", "train__epochs": 1,
         "kvcache__model": "tiny", "kvcache__layers": 2, "kvcache__kv_heads": 2,
         "kvcache__head_dim": 64, "kvcache__block_tokens": 64, "kvcache__users": 2,
         "kvcache__context_tokens": 256, "kvcache__duration": "0.5s",
         "kvcache__transfer_size": "64KiB",
         "vector__vectors": 3000, "vector__max_degree": 16, "vector__search_list": 16,
         "vector__duration": "0.5s"}


def run(phase: str, target: Path, results: Path) -> dict[str, Any]:
    res, _ = runner.run(runner.RunRequest(phase, tiny_workload(**SMALL), str(target),
                                          str(results), engine=ENGINE))
    assert res["status"] == "ok", res.get("error")
    assert res["engine"] == "sleepy"
    return res


def histograms(part: Any) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(operation, histogram) of every I/O section anywhere in a result's clients."""
    if isinstance(part, Mapping):
        for key, value in part.items():
            if key.endswith("histograms") and isinstance(value, Mapping):
                yield from value.items()
            else:
                yield from histograms(value)
    elif isinstance(part, list):
        for value in part:
            yield from histograms(value)


def assert_every_transfer_slept(res: dict[str, Any]) -> int:
    """Every read and write call any client timed took the engine's time or more; returns
    how many were timed."""
    timed = 0
    for op, h in histograms(res["clients"]):
        if op in ("read", "write") and h["count"]:
            assert h["min"] >= SLEEP_NS, (op, h["min"])
            timed += h["count"]
    assert timed
    return timed


@pytest.mark.parametrize("phase", ["prep", "train", "checkpoint", "load", "randrw", "kvcache",
                                   "vector",
                                   "all"])
def test_an_engine_from_outside_runs_every_phase_with_its_figures(
        phase: str, target: Path, results: Path) -> None:
    res = run(phase, target, results)
    assert_every_transfer_slept(res)
    w = tiny_workload(**SMALL)
    for c in res["clients"]:
        if phase == "load":  # one stream per reader thread: a transfer per SLEEP_S at most
            assert c["mib_s"] <= w.load.threads * w.load.transfer_size / MiB / SLEEP_S
        if phase == "randrw":  # one call at a time per thread, each SLEEP_S at least
            ops = c["read"]["ops"] + c["write"]["ops"]
            assert ops * SLEEP_S <= w.prep.threads * c["elapsed_s"] * 1.01
        if phase == "kvcache":  # one call at a time per user, each SLEEP_S at least
            calls = sum(c[d]["histograms"][d]["count"] for d in ("read", "write"))
            assert calls * SLEEP_S <= w.kvcache.users * c["elapsed_s"] * 1.01
        if phase == "vector":  # a query waits for each hop's reads, in flight together
            assert c["histograms"]["service"]["sum"] >= c["queries"]["hops"] * SLEEP_NS
            assert c["queries"]["reads"] == c["histograms"]["read"]["count"]
        if phase == "train":
            reads = c["histograms"]["read"]["count"]
            assert reads * SLEEP_S <= w.train.read_threads * c["elapsed_s"] * 1.01


def test_a_format_library_never_reads_past_the_engine(target: Path, results: Path) -> None:
    """--reader native hands the files to the format's library, which reads them itself: on
    the sleepy engine its reads took 0.98 ms where every engine call takes 2 ms, and the result
    named the sleepy engine. Refused in one line, before a dataset is written."""
    got = call_cli("run", "-p", "train", "-t", str(target), "--results", str(results),
                   "--engine", ENGINE, "--reader", "native", "--epochs", "1")
    assert got.returncode == 2, got.stderr
    assert "--reader native" in got.stderr and "sleepy engine" in got.stderr, got.stderr
    assert not list(results.glob("*/result.json"))
    assert not list(target.glob("aiio/datasets/*"))


@pytest.mark.parametrize(("engine", "sets", "says"), [
    ("external:tests.rigid_engine", (), "the rigid engine cannot rewrite part of a file"),
    (ENGINE, ("--set", "prep.iodepth=4", "--set", "prep.read_share=1"),
     "prep.iodepth = 4: the sleepy engine keeps at most 1 read(s) in flight"),
])
def test_randrw_refuses_an_engine_by_what_it_can_do(engine: str, sets: tuple, says: str,
                                                    target: Path, results: Path) -> None:
    got = call_cli("run", "-p", "randrw", "-t", str(target), "--results", str(results),
                   "--engine", engine, "--duration", "1s", *sets)
    assert got.returncode == 2 and says in got.stderr, got.stderr
    assert not list(results.glob("*/result.json"))  # refused: nothing ran, no result
    assert not list(target.glob("aiio/prep/*"))


def test_an_engine_whose_writes_fail_is_reported_by_its_error(target: Path,
                                                              results: Path) -> None:
    """The run says the engine's error and where (exit 1, a partial result), not an error of
    aiio's own cleanup: a BufferError from closing the writer used to hide it."""
    got = call_cli("run", "-p", "checkpoint", "-t", str(target), "--results", str(results),
                   "--engine", "external:tests.failing_engine", "--clients", "1",
                   "--set", "checkpoint.size=1MiB")
    assert got.returncode == 1, got.stderr
    assert "Input/output error" in got.stderr and "client00000" in got.stderr, got.stderr
    assert "BufferError" not in got.stderr


@pytest.mark.parametrize("lie", ["never", "late"])
def test_an_engine_that_misdates_durability_fails_the_run(lie: str, target: Path,
                                                          results: Path) -> None:
    """A checkpoint's first done counts the bytes each writer says were durable by then: a
    writer that never set the instant (0) had every byte counted at first done, one that said
    a later instant had none. An instant outside the file's write burst is refused in one
    line (exit 1), never turned into a figure."""
    got = call_cli("run", "-p", "checkpoint", "-t", str(target), "--results", str(results),
                   "--engine", "external:tests.misdated_engine", "--clients", "2",
                   "--set", "checkpoint.size=1MiB", env={"AIIO_TEST_DURABLE_AT": lie})
    assert got.returncode == 1, got.stdout + got.stderr
    assert "durable" in got.stderr and "misdated" in got.stderr, got.stderr


@pytest.mark.parametrize(("phase", "where"), [("train", "/f0000"), ("vector", "disk.index")])
def test_an_engine_whose_reads_fail_is_reported_with_the_file(phase: str, where: str,
                                                              target: Path,
                                                              results: Path) -> None:
    """A failed read names its file, as prep's, load's and a restore's do: train and vector
    said only "OSError: [Errno 5] Input/output error"."""
    sets = [x for k, v in SMALL.items() if k.startswith(("vector", "train"))
            for x in ("--set", f"{k.replace('__', '.')}={v}")]
    got = call_cli("run", "-p", phase, "-t", str(target), "--results", str(results),
                   "--engine", "external:tests.failing_engine", "--clients", "1", *sets,
                   *TINY_DATA, env={"AIIO_TEST_FAILING": "read"})
    assert got.returncode == 1, got.stderr
    assert "Input/output error" in got.stderr and where in got.stderr, got.stderr
