"""A sweep's points are set against the fio results of the sweep's results folder, as a single
run is: its points live in <sweep>/points/, where no fio result ever is."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .conftest import TINY_DATA, call_cli, run_cli

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")


@pytest.mark.long
def test_each_sweep_point_is_paired_with_the_results_folders_fio(tmp_path: Path) -> None:
    target, results = tmp_path / "target", tmp_path / "reports"
    target.mkdir()
    fio = run_cli("fio", "--target", str(target), "--results", str(results), "--clients", "2",
                  "--runtime", "300ms", "--ramp-time", "0", "--size", "4MiB", "--tests",
                  "seq_read", "--quiet")
    assert fio.returncode == 0, fio.stderr
    (fio_folder,) = results.glob("*-fio-*")
    out = run_cli("scale", "--phase", "train", "--target", str(target), "--results",
                  str(results), "--clients", "1,2", "--read-threads", "1", "--set",
                  "train.epochs=1", "--batch-size", "2", *TINY_DATA, "--no-charts",
                  "--no-history", "--no-report", "--json", "--quiet")
    assert out.returncode == 0, out.stderr
    sweep = json.loads(out.stdout)
    heroes = {p["clients"]: p["result"]["hero"] for p in sweep["points"]}
    # 2 clients x 1 loader thread: the 2 fio jobs at iodepth 1, as `aiio run` pairs them
    assert heroes[2]["fio_result_id"] == fio_folder.name
    assert heroes[2]["percent"] > 0 and heroes[2]["pairing"]["clients"] == 2
    # 1 client: the fio result is found, at another concurrency, and said so
    assert "percent" not in heroes[1]
    assert fio_folder.name in heroes[1]["text"] and "concurrency" in heroes[1]["text"]
    # and `aiio compare` on a point finds the fio result it was paired with
    point = results / sweep["id"] / sweep["points"][1]["folder"]
    cmp = call_cli("compare", str(point), "--json")
    assert cmp.returncode == 0, cmp.stderr
    assert json.loads(cmp.stdout)[0]["fio_result"] == fio_folder.name
