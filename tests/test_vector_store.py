"""The vector index laid out once on a mount (`aiio datagen --phase vector`, or a run's first)
in aiio's folder, TARGET/aiio/indexes/<settings>/, and reused by every later run of the same
settings: the file is not written again; other settings get an index of their own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiio.phases import vector_index as vi
from aiio.run import runner

from .conftest import call_cli, flat, run_cli, tiny_workload
from .test_vector_phase import SMALL

SETS = [x for k, v in SMALL.items() for x in ("--set", f"{k.replace('__', '.')}={v}")]


def indexes(target: Path) -> list[Path]:
    return sorted((target / "aiio" / "indexes").glob("*/" + vi.INDEX_NAME))


def run(target: Path, results: Path, **sets: Any) -> dict[str, Any]:
    res, _ = runner.run(runner.RunRequest("vector", tiny_workload(**{**SMALL, **sets}),
                                          str(target), str(results)))
    assert res["status"] == "ok", res.get("error")
    return res


def test_datagen_lays_out_the_index_once_and_a_run_reuses_it(target: Path,
                                                              results: Path) -> None:
    got = run_cli("datagen", "--phase", "vector", "--target", str(target), *SETS)
    assert got.returncode == 0, got.stderr
    assert "vector index" in flat(got.stdout) and "written" in got.stdout, got.stdout
    [index] = indexes(target)
    manifest = json.loads((index.parent / "manifest.json").read_text())
    assert manifest["complete"] and manifest["params"]["vectors"] == 3000
    assert index.stat().st_size == manifest["params"]["file_size"]
    first = index.stat()
    again = run_cli("datagen", "--phase", "vector", "--target", str(target), *SETS)
    assert again.returncode == 0 and "already present and matching" in again.stdout
    res = run(target, results, vector__queries=3)
    assert res["aggregate"]["index"]["reused"] is True
    assert res["aggregate"]["index"]["path"] == str(index)
    after = index.stat()
    assert (after.st_ino, after.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)
    assert indexes(target) == [index]  # kept after the run, for the next


def test_a_run_lays_out_its_own_settings_index_and_the_next_reuses_it(target: Path,
                                                                     results: Path) -> None:
    one = run(target, results, vector__queries=3)
    assert one["aggregate"]["index"]["reused"] is False
    two = run(target, results, vector__queries=3)
    assert two["aggregate"]["index"]["reused"] is True
    other = run(target, results, vector__queries=3, vector__vectors=4000)
    assert other["aggregate"]["index"]["reused"] is False
    assert len(indexes(target)) == 2  # one per settings


def test_an_index_whose_writing_stopped_is_written_again(target: Path, results: Path) -> None:
    run(target, results, vector__queries=3)
    [index] = indexes(target)
    (index.parent / "manifest.json").unlink()  # as a generation killed before its end
    index.write_bytes(b"partial")
    res = run(target, results, vector__queries=3)
    assert res["aggregate"]["index"]["reused"] is False
    assert index.stat().st_size == res["aggregate"]["index"]["file_size"]


def test_clean_removes_the_kept_indexes(target: Path, results: Path) -> None:
    run(target, results, vector__queries=3)
    got = run_cli("clean", "--target", str(target))
    assert got.returncode == 0, got.stderr
    assert not (target / "aiio").exists()


def test_datagen_for_vector_on_a_bucket_is_refused_in_one_line(tmp_path: Path) -> None:
    got = call_cli("datagen", "--phase", "vector", "--target", "s3://bucket/p", *SETS)
    assert got.returncode == 2 and "each run writes its own index" in got.stderr, got.stderr
    assert len(got.stderr.strip().splitlines()) == 1


def test_datagen_refuses_an_unknown_phase(target: Path) -> None:
    got = call_cli("datagen", "--phase", "bogus", "--target", str(target))
    assert got.returncode == 2 and "bogus" in got.stderr, got.stderr
    assert not (target / "aiio").exists()
