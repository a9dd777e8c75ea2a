"""The HTML report of an `aiio fio` result: each fio test with its bandwidth, IOPS and clat
percentiles per job, which fio ran with which options, and the aiio runs it is set beside.
The result comes from a real fio run on a real directory."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from aiio import report
from aiio.report import html as h
from aiio.results import result
from tests.conftest import call_cli, run_cli


@pytest.fixture(scope="module")
def fio_result(tmp_path_factory) -> Path:
    area = tmp_path_factory.mktemp("fio-report")
    target, results = area / "t", area / "res"
    target.mkdir()
    proc = run_cli("fio", "-t", str(target), "--runtime", "1s", "--ramp-time", "0s",
                   "--size", "4MiB", "--clients", "2", "--tests", "seq_read,rand_mix",
                   "--results", str(results), "-q")
    assert proc.returncode == 0, proc.stderr
    return next(results.glob("*-fio-*/result.json"))


def _page(path: Path) -> str:
    proc = call_cli("report", str(path))
    assert proc.returncode == 0, proc.stderr
    return (path.parent / "report.html").read_text()


def _text(page: str) -> str:
    """The page's visible text, tags dropped."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


def test_fio_result_has_a_view_of_its_own(fio_result: Path) -> None:
    page = _page(fio_result)
    assert "MiB/s is 2^20 bytes per second" in page
    assert "no view for results of kind" not in page
    text = _text(page)
    res = json.loads(fio_result.read_text())
    assert res["fio_version"] in text and "psync" in text
    for name, test in res["tests"].items():
        agg = test["aggregate"]
        assert f"{name} " in text
        assert h.number(agg["mib_s"], 1) in text and h.number(agg["iops"]) in text
        for op, fig in agg["ops"].items():  # rand_mix: reads and writes apart
            for key in ("p50_ns", "p99_ns", "p999_ns"):
                assert h.latency(fig["latency"][key]) in text, (name, op, key)
        for job in test["clients"]:
            for fig in job["ops"].values():
                assert h.number(fig["mib_s"], 1) in text
                assert h.latency(fig["latency"]["p99_ns"]) in text
    assert "rw=randrw" in page  # the job file fio ran


def test_fio_view_names_the_runs_each_test_is_set_beside(fio_result: Path) -> None:
    text = _text(_page(fio_result))
    served = re.search(r"seq_read[^.]*set beside ([^.]*)\.", text)
    assert served and "train" in served.group(1) and "load" in served.group(1)
    mix = re.search(r"rand_mix[^.]*set beside ([^.]*)\.", text)
    assert mix and "randrw" in mix.group(1) and "train" not in mix.group(1)
    assert "2 fio jobs x iodepth 1" in text


def test_damaged_fio_result_still_renders(fio_result: Path) -> None:
    res = result.load(fio_result)
    res = dict(res)
    res["tests"] = {"seq_read": {"clients": "junk", "aggregate": None}}
    page = report.render(res)
    assert "<html" in page and "no view for results of kind" not in page
    assert "seq_read" in page
