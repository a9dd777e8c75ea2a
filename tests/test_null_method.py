"""The null method: every bit of aiio's bookkeeping, no read or write system call, and results
that say so loudly and never pass for storage speed."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from aiio.accept.spec import load_spec
from aiio.engines import seam as engine
from aiio.engines.seam import METHOD_NULL, OpLog, Reader, Writer, merge_logs
from aiio.errors import ConfigError

from .conftest import TINY_ARGS, call_cli, flat, run_cli

MiB = 2**20


def test_null_reads_count_every_byte_and_call_but_move_nothing(tmp_path: Path) -> None:
    size = 3 * MiB + 12345
    path = tmp_path / "data.bin"
    path.write_bytes(os.urandom(size))
    log = OpLog(start_ns=engine.now_ns())
    reader = Reader(METHOD_NULL, MiB, log)
    try:
        assert reader.read_file(str(path)) == size
        untouched = not any(reader.view)  # a real read would have filled the buffer
        fd = reader.open(str(path))
        try:
            offsets = [i * 4096 for i in range(3000)]
            assert reader.read_blocks(fd, offsets, 4096) == 3000 * 4096
        finally:
            os.close(fd)
    finally:
        reader.close()
    hist, series, ops, nbytes = merge_logs([log])
    assert untouched
    assert hist["read"].count == 4 + 3000 and hist["open"].count == 2
    assert nbytes == series.total == size + 3000 * 4096
    assert ops == 4 + 3000 + 2 + 1  # and the fstat of read_file


def test_null_writes_count_every_byte_and_write_nothing(tmp_path: Path) -> None:
    size = 5 * MiB + 100
    path = tmp_path / "out.bin"
    log = OpLog(start_ns=engine.now_ns())
    wr = Writer(METHOD_NULL, MiB, log, seed=3, checksum=True)
    try:
        assert wr.write_file(str(path), size, tag=9) == size
    finally:
        wr.close()
    hist, series, _, nbytes = merge_logs([log])
    assert hist["write"].count == math.ceil(size / MiB) and nbytes == series.total == size
    assert hist["checksum"].count == hist["write"].count  # the bookkeeping still ran
    assert path.stat().st_size == size  # its length, so a null read knows where it ends
    assert path.stat().st_blocks == 0 and path.read_bytes() == bytes(size)  # sparse: no data


def test_the_per_op_overhead_figure_exists() -> None:
    ns = engine.null_read_ns(20_000)
    assert math.isfinite(ns) and ns > 0


def _run(target: Path, results: Path, cache: str, *more: str) -> dict:
    proc = run_cli("run", "-t", str(target), "--results", str(results), "--cache", cache,
                   "--json", "-q", "--no-history", "--no-report", *TINY_ARGS, *more)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_null_train_counts_exactly_what_a_real_run_reads(target: Path, tmp_path: Path) -> None:
    real = _run(target, tmp_path / "real", "fadvise_dontneed")
    null = _run(target, tmp_path / "null", "null")
    assert null["method"] == "null"
    for key in ("bytes", "read_bytes", "consumed_bytes", "samples"):
        assert null["aggregate"][key] == real["aggregate"][key], key
    assert null["aggregate"]["delivered"]["app_bytes"] == null["aggregate"]["read_bytes"]
    counts = {r: {op: h["count"] for op, h in res["aggregate"]["histograms"].items()}
              for r, res in (("real", real), ("null", null))}
    assert counts["null"] == counts["real"]
    codes = [w["code"] for w in null["warnings"]]
    assert codes[0] == "null_io" and "no_o_direct" not in codes
    assert "null_io" not in [w["code"] for w in real["warnings"]]
    assert "null" in null["hero"]["text"] and "percent" not in null["hero"]


def test_null_prep_and_checkpoint_byte_counts_are_exact(target: Path, tmp_path: Path) -> None:
    prep = _run(target, tmp_path / "prep", "null", "--phase", "prep",
                "--set", "prep.threads=1", "--set", "prep.shard_size=256KiB",
                "--set", "prep.transfer_size=64KiB")
    data = json.loads(next((target / "aiio" / "datasets").rglob("manifest.json")).read_text())
    agg = prep["aggregate"]
    assert agg["read_bytes"] == agg["write_bytes"] == data["total_bytes"]
    assert agg["metadata"]["ops"]["stat"]["count"] == 24
    size = 3 * MiB + 12345
    ck = _run(target, tmp_path / "ck", "null", "--phase", "checkpoint",
              "--set", f"checkpoint.size={size}", "--set", "checkpoint.files_per_client=2")
    assert ck["aggregate"]["write_bytes"] == ck["aggregate"]["read_bytes"] == size
    assert ck["warnings"][0]["code"] == "null_io"


def test_the_console_marks_a_null_run(target: Path, results: Path) -> None:
    proc = run_cli("run", "-t", str(target), "--results", str(results), "--cache", "null",
                   "--no-history", *TINY_ARGS)
    assert proc.returncode == 0, proc.stderr
    assert "NO I/O" in flat(proc.stdout) and "null_io" in proc.stdout
    report = next(results.rglob("report.html")).read_text()
    assert "NO I/O" in report


def test_null_runs_stay_out_of_history(target: Path, results: Path) -> None:
    proc = run_cli("run", "-t", str(target), "--results", str(results), "--cache", "null", "-q",
                   "--no-report", *TINY_ARGS)
    assert proc.returncode == 0, proc.stderr
    assert not (results / "history.sqlite").exists()
    assert "not recorded in history" in proc.stdout + proc.stderr


@pytest.mark.parametrize("args, words", [
    (("--verify",), "--verify checks the data"),
    (("--reader", "native"), "use --reader raw"),
    (("--target", "s3://bucket/x"), "use a directory target"),
    (("--phase", "randrw", "--set", "prep.iodepth=4", "--set", "prep.read_share=1"),
     "use prep.iodepth = 1"),
])
def test_null_with_what_needs_real_io_is_one_line_exit_2(target: Path, results: Path,
                                                        args: tuple[str, ...], words: str) -> None:
    proc = call_cli("run", "-t", str(target), "--results", str(results), "--cache", "null",
                    "-q", *TINY_ARGS, *args)
    assert proc.returncode == 2 and words in proc.stderr
    assert proc.stderr.count("\n") == 1 and not results.exists()


def test_acceptance_refuses_the_null_method(tmp_path: Path) -> None:
    path = tmp_path / "spec.toml"
    path.write_text('[spec]\nname = "t"\n[[check]]\nname = "a"\nphase = "train"\n'
                    'workload = "demo"\nclients = 2\ncache = "null"\n[check.require]\n'
                    'min_au = 0.5\n')  # noqa: E501
    with pytest.raises(ConfigError) as info:
        load_spec(path)
    assert "cache" in str(info.value) and "null" in str(info.value)


FIO = Path(__file__).parent / "data" / "results-v1" / "20261130-230552-fio-c2"


def test_compare_sets_a_null_run_against_no_fio_result(target: Path, tmp_path: Path) -> None:
    # given --fio, compare listed the null run's figures as "4.4 % of fio seq_read": aiio's
    # own overhead shown as a fraction of the storage's speed
    _run(target, tmp_path, "null")
    (folder,) = tmp_path.glob("*-train-*")
    out = call_cli("compare", str(folder), "--json", "--fio", str(FIO))
    assert out.returncode == 0, out.stderr
    (item,) = json.loads(out.stdout)
    assert item["fio_test"] is None and item["fio_result"] is None, item
    assert all(r["fio"] is None and r["percent"] is None for r in item["rows"]), item["rows"]
    assert item["note"].startswith("no fio hero comparison: the null method did no I/O"), item
    text = call_cli("compare", str(folder), "--fio", str(FIO))
    assert text.returncode == 0, text.stderr
    assert "no fio counterpart" in flat(text.stdout) and "% of fio" not in text.stdout, text.stdout
    assert "the null method did no I/O" in " ".join(text.stdout.split())
