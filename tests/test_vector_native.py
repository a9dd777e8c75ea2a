"""`aiio run --phase vector --reader native`: queries through diskannpy on a real DiskANN disk
index laid out on the target, where diskannpy is importable; a one-line refusal (exit 2) where
it is not, before anything is written."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from .conftest import call_cli, run_cli

NATIVE = importlib.util.find_spec("diskannpy") is not None
SMALL = ["--set", "vector.vectors=2000", "--set", "vector.max_degree=16", "--set",
         "vector.search_list=20", "--set", "vector.beam_width=2", "--set",
         "vector.queries=20", "--set", "vector.concurrency=2"]


@pytest.mark.skipif(NATIVE, reason="diskannpy is importable here: the native reader runs")
def test_the_native_reader_without_diskannpy_is_refused_in_one_line(target: Path,
                                                                     results: Path) -> None:
    got = call_cli("run", "--phase", "vector", "--reader", "native", "--target", str(target),
                   "--results", str(results), "--no-history", *SMALL)
    assert got.returncode == 2, got.stdout + got.stderr
    assert "diskannpy" in got.stderr and "pip install diskannpy" in got.stderr, got.stderr
    assert len(got.stderr.strip().splitlines()) == 1
    assert not any(target.glob("aiio/indexes/*")) and not results.exists()


@pytest.mark.parametrize("sets, says", [
    (("vector.reader=bogus",), "is not one of raw, native"),
    (("vector.reader=native", "vector.element_size=1"), "float32"),
    (("vector.reader=native", "vector.sector_size=8KiB"), "4 KiB sectors"),
    (("vector.reader=native", "vector.rate=5"), "closed loop"),
])
def test_native_settings_it_cannot_honour_are_one_line_errors(target: Path, sets: tuple,
                                                               says: str) -> None:
    got = call_cli("run", "--phase", "vector", "--target", str(target), "--no-history",
                   *[x for s in sets for x in ("--set", s)])
    assert got.returncode == 2 and says in got.stderr, got.stderr
    assert len(got.stderr.strip().splitlines()) == 1


def test_the_native_reader_on_a_bucket_is_refused(tmp_path: Path) -> None:
    got = call_cli("run", "--phase", "vector", "--reader", "native", "--target",
                   "s3://bucket/p", "--no-history")
    assert got.returncode == 2 and "reads files" in got.stderr, got.stderr


@pytest.mark.skipif(not NATIVE, reason="diskannpy is not importable by this Python")
def test_native_queries_search_a_real_diskann_index(target: Path, results: Path) -> None:
    got = run_cli("run", "--phase", "vector", "--reader", "native", "--target", str(target),
                  "--results", str(results), "--no-history", "--no-report", "--json",
                  "--quiet", "--clients", "1", *SMALL)
    assert got.returncode == 0, got.stderr
    res = json.loads(got.stdout)
    v = res["aggregate"]["vector"]
    assert res["aggregate"]["index"]["reader"] == "native"
    assert v["queries"] == 20 and v["queries_per_s"] > 0 and v["latency_ms"]["p99"] > 0
    assert list(target.glob("aiio/indexes/*/ann_disk.index"))


@pytest.mark.skipif(NATIVE, reason="diskannpy is importable here: the native reader runs")
def test_datagen_for_the_native_reader_without_diskannpy_is_refused(target: Path) -> None:
    # it laid out aiio's own index instead, and said so as if it were the one asked for
    got = call_cli("datagen", "--phase", "vector", "--target", str(target), *SMALL[:4],
                   "--set", "vector.reader=native")
    assert got.returncode == 2, got.stdout + got.stderr
    assert "pip install diskannpy" in got.stderr and len(got.stderr.strip().splitlines()) == 1
    assert not any(target.glob("aiio/indexes/*"))


@pytest.mark.skipif(not NATIVE, reason="diskannpy is not importable by this Python")
def test_datagen_for_the_native_reader_builds_the_diskann_index_a_run_reuses(
        target: Path, results: Path) -> None:
    got = run_cli("datagen", "--phase", "vector", "--target", str(target), *SMALL,
                  "--set", "vector.reader=native")
    assert got.returncode == 0, got.stderr
    assert list(target.glob("aiio/indexes/*-diskann/ann_disk.index"))
    assert not list(target.glob("aiio/indexes/*/disk.index"))  # not aiio's own
    run = run_cli("run", "--phase", "vector", "--reader", "native", "--target", str(target),
                  "--results", str(results), "--no-history", "--no-report", "--json",
                  "--quiet", "--clients", "1", *SMALL)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["aggregate"]["index"]["reused"] is True
    built = next(target.glob("aiio/indexes/*-diskann/ann_disk.index")).stat().st_mtime_ns
    again = run_cli("datagen", "--phase", "vector", "--target", str(target), *SMALL,
                    "--set", "vector.reader=native", "--force")
    assert again.returncode == 0 and "built" in again.stdout, again.stderr
    assert next(target.glob("aiio/indexes/*-diskann/ann_disk.index")).stat().st_mtime_ns \
        > built  # --force builds it again


@pytest.mark.skipif(not NATIVE, reason="diskannpy is not importable by this Python")
def test_native_queries_are_judged_by_the_tenth_they_ran_in(target: Path, results: Path) -> None:
    # hundreds of queries in 2 s: the verdict saw every one (it said "too few queries: 0, 0,
    # 0" whatever ran), and the storage IOPS are the reads the I/O counters saw
    got = run_cli("run", "--phase", "vector", "--reader", "native", "--target", str(target),
                  "--results", str(results), "--no-history", "--no-report", "--json",
                  "--quiet", "--clients", "1", *SMALL[:-4], "--set", "vector.duration=2s")
    assert got.returncode == 0, got.stderr
    res = json.loads(got.stdout)
    v = res["aggregate"]["vector"]
    assert v["queries"] > 24 and v["verdict"]["judged"], v["verdict"]
    slices = res["clients"][0]["steadiness"]["slices"]
    assert sum(h["count"] for h in slices) == v["queries"]
    assert v["storage_iops"] == pytest.approx(v["reads_per_query"] * v["queries"]
                                              / res["clients"][0]["elapsed_s"], rel=0.01)
