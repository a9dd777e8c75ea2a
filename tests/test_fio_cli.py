"""`aiio fio`, "% of hero" and `aiio compare`, run as a user runs them, with the real fio."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aiio.fio import hero

from .conftest import REPO, TINY_ARGS, call_cli, flat, is_root, run_cli

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
MiB = 2**20
QUICK = ("--clients", "2", "--runtime", "500ms", "--ramp-time", "0", "--size", "8MiB")


def _load(results: Path, kind: str) -> tuple[Path, dict]:
    [folder] = [p for p in results.iterdir() if f"-{kind}-" in p.name]
    return folder, json.loads((folder / "result.json").read_text())


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """One full hero suite on a real directory, shared by the tests below."""
    base = tmp_path_factory.mktemp("hero")
    target, results = base / "target", base / "reports"
    target.mkdir()
    proc = run_cli("fio", "--target", str(target), "--results", str(results), *QUICK)
    assert proc.returncode == 0, proc.stderr
    folder, res = _load(results, "fio")
    return {"target": target, "results": results, "folder": folder, "res": res,
            "stdout": proc.stdout}


def test_suite_result_holds_every_job(suite):
    res = suite["res"]
    assert res["kind"] == "fio" and res["status"] == "ok"
    assert res["fio_version"].startswith("fio-")
    assert res["method"] == "o_direct" and res["options"]["direct"] is True
    assert list(res["tests"]) == ["seq_read", "seq_write", "rand_read", "rand_write", "rand_mix"]
    for name, test in res["tests"].items():
        assert len(test["clients"]) == 2, name
        agg = test["aggregate"]
        assert agg["bytes"] == sum(c["bytes"] for c in test["clients"]) > 0
        assert agg["mib_s"] == pytest.approx(agg["bytes"] / MiB / agg["seconds"])
        assert agg["latency"]["p99_ns"] >= agg["latency"]["p50_ns"] > 0
        for c in test["clients"]:
            assert c["bytes"] == c["ios"] * test["block_size"]  # whole blocks, fio's count
        assert res["aggregate"][name]["mib_s"] == agg["mib_s"]
        job = test["jobfile"]
        assert "numjobs=2" in job and "direct=1" in job and "group_reporting" not in job
    assert set(res["tests"]["rand_mix"]["aggregate"]["ops"]) == {"read", "write"}
    assert "end_fsync=1" in res["tests"]["seq_write"]["jobfile"]


def test_suite_removes_its_files_and_prints_a_table(suite):
    assert not (suite["target"] / "aiio" / "fio" / "hero").exists()
    assert "seq_read" in suite["stdout"] and "MiB/s" in suite["stdout"]
    assert str(suite["folder"]) in suite["stdout"]


def test_keep_leaves_the_files(tmp_path):
    target = tmp_path / "t"
    target.mkdir()
    args = ("fio", "--target", str(target), "--results", str(tmp_path / "r"), "--tests",
            "seq_read", "--runtime", "200ms", "--ramp-time", "0", "--size", "2MiB",
            "--clients", "2", "--json", "--keep")
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    files = sorted((target / "aiio" / "fio" / "hero").glob("hero.*"))
    assert [f.name for f in files] == ["hero.0", "hero.1"]
    assert all(f.stat().st_size == 2 * MiB for f in files)
    assert list(json.loads(proc.stdout)["tests"]) == ["seq_read"]
    assert run_cli(*args[:-1]).returncode == 0  # without --keep: reused, then removed
    assert not (target / "aiio" / "fio" / "hero").exists()


ONE_STREAM = (*TINY_ARGS, "--read-threads", "1")  # 2 clients x 1 stream, as the suite's jobs


def test_train_run_shows_its_percent_of_hero(suite, tmp_path):
    proc = run_cli("run", "--no-report",
                   "--target", str(suite["target"]), "--results", str(suite["results"]),
                   "--json", "--quiet", *ONE_STREAM)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    h = res["hero"]
    seq_read = suite["res"]["tests"]["seq_read"]["aggregate"]["mib_s"]
    assert h["test"] == "seq_read" and h["fio_result_id"] == suite["res"]["id"]
    assert h["fio_mib_s"] == seq_read
    assert h["percent"] == pytest.approx(  # the bytes the loaders were delivered, as fio's
        100 * res["aggregate"]["delivered"]["last_done"]["mib_s"] / seq_read)
    assert f"{h['percent']:.1f} % of fio seq_read" in h["text"]
    # the terminal table shows it too
    shown = run_cli("run", "--no-report",
                    "--target", str(suite["target"]), "--results", str(tmp_path),
                    "--quiet", *ONE_STREAM)
    assert "no fio result for this target" in shown.stdout  # other results folder: none


def test_run_without_hero_says_how_to_make_one(target, results):
    proc = run_cli("run", "--no-report",
                   "--target", str(target), "--results", str(results), "--json",
                   "--quiet", *TINY_ARGS)
    assert proc.returncode == 0, proc.stderr
    h = json.loads(proc.stdout)["hero"]
    assert h["text"] == (f"no fio result for this target; run: aiio fio --target {target} "
                         "--clients 2 --iodepth 2 --tests seq_read")
    assert "percent" not in h


def test_compare_lists_phase_next_to_hero(suite):
    runs = [p for p in suite["results"].iterdir() if "-train-" in p.name]
    if not runs:
        proc = run_cli("run", "--no-report", "--target", str(suite["target"]), "--results",
                       str(suite["results"]), "--quiet", *ONE_STREAM)
        assert proc.returncode == 0, proc.stderr
        runs = [p for p in suite["results"].iterdir() if "-train-" in p.name]
    run_dir = runs[0]
    proc = call_cli("compare", str(run_dir), "--json")
    assert proc.returncode == 0, proc.stderr
    [item] = json.loads(proc.stdout)
    assert item["fio_result"] == suite["res"]["id"]
    run = json.loads((run_dir / "result.json").read_text())
    rows = {r["figure"]: r for r in item["rows"]}
    first = rows["aggregate MiB/s (the % of hero figure)"]
    assert first["phase"] == run["aggregate"]["delivered"]["last_done"]["mib_s"]
    assert first["fio"] == suite["res"]["tests"]["seq_read"]["aggregate"]["mib_s"]
    assert first["percent"] == pytest.approx(100 * first["phase"] / first["fio"])
    assert rows["clients / fio jobs"]["phase"] == 2 and rows["clients / fio jobs"]["fio"] == 2
    text = call_cli("compare", str(run_dir))
    assert text.returncode == 0 and "% of fio" in flat(text.stdout) and "rand_read" in text.stdout
    chosen = call_cli("compare", str(run_dir), "--fio", str(suite["folder"]), "--json")
    assert json.loads(chosen.stdout)[0]["rows"] == item["rows"]
    wrong = call_cli("compare", str(run_dir), "--fio", str(run_dir))
    assert wrong.returncode == 2 and "not a fio result" in wrong.stderr


def test_compare_refuses_a_fio_result(suite):
    proc = call_cli("compare", str(suite["folder"]))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "is a result of kind 'fio'" in proc.stderr


def test_hero_for_picks_the_latest_on_the_same_target(suite, tmp_path):
    res = suite["res"]
    results = tmp_path / "reports"

    def save(name: str, saved_at: float, path: str, tests: dict) -> None:
        copy = dict(res, id=name, saved_at=saved_at, tests=tests,
                    target=dict(res["target"], path=path))
        (results / name).mkdir(parents=True)
        (results / name / "result.json").write_text(json.dumps(copy))

    target = res["target"]["path"]
    older = {k: json.loads(json.dumps(v)) for k, v in res["tests"].items()}
    older["seq_read"]["aggregate"]["mib_s"] = 1.0
    save("20200101-000000-fio-c2", 1.0, target, older)
    save("20200102-000000-fio-c2", 2.0, target, res["tests"])
    save("20200103-000000-fio-c2", 3.0, "/elsewhere", res["tests"])
    only_read = {"seq_read": res["tests"]["seq_read"]}
    save("20200104-000000-fio-c2", 4.0, target, only_read)
    save("20200106-000000-fio-c2", 6.0, target, {"seq_read": {"clients": []}})  # no figure
    (results / "20200105-000000-fio-c2").mkdir()
    (results / "20200105-000000-fio-c2" / "result.json").write_text("{not json")

    train = hero.hero_for(target, "train", results)
    assert train["fio_result_id"] == "20200104-000000-fio-c2"  # latest holding seq_read
    ckpt = hero.hero_for(target, "checkpoint", results)
    assert ckpt["test"] == "seq_write" and ckpt["fio_result_id"] == "20200102-000000-fio-c2"
    assert hero.hero_for(target, "prep", results)["test"] == "seq_read"  # shards mode
    assert hero.hero_for("/nowhere", "train", results) is None
    assert hero.hero_for(target, "train", tmp_path / "missing") is None


def test_percent_arithmetic():
    assert hero.percent(25.0, 200.0) == 12.5
    assert hero.percent(5.0, 0.0) is None


def test_missing_fio_is_one_line_with_the_install_command(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    target = tmp_path / "t"
    target.mkdir()
    proc = call_cli("fio", "--target", str(target), "--results", str(tmp_path / "r"),
                    env={"PATH": str(empty)})
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "fio is not installed" in proc.stderr and "apt-get install fio" in proc.stderr
    assert not (tmp_path / "r").exists()


def test_fio_failing_shows_its_stderr_and_leaves_no_files(tmp_path):
    target = tmp_path / "t"
    target.mkdir()
    proc = run_cli("fio", "--target", str(target), "--results", str(tmp_path / "r"), *QUICK,
                   "--ioengine", "no-such-engine")
    assert proc.returncode == 1
    assert "no-such-engine" in proc.stderr and "partial result saved" in proc.stderr
    _, res = _load(tmp_path / "r", "fio")
    assert res["status"] == "failed" and "no-such-engine" in res["error"]
    assert not (target / "aiio" / "fio" / "hero").exists()


@pytest.mark.parametrize("args, words", [
    (("--tests", "seq_read,bogus"), "unknown fio test"),
    (("--size", "4KiB"), "at least 1 MiB"),
    (("--iodepth", "0"), "--iodepth"),
    (("--runtime", "fast"), "duration"),
    # more jobs than fio runs: it refused them ("maximum number of jobs reached"), exit 1
    # with a result saved "failed", after the layout's own job had failed the same way
    (("--clients", "4089", "--size", "1MiB"), "at most 4,088"),
])
def test_bad_input_is_one_line(tmp_path, args, words):
    proc = call_cli("fio", "--target", str(tmp_path), "--results", str(tmp_path / "r"), *args)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and words in proc.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.root
@pytest.mark.skipif(not is_root(), reason="needs root to mount a ramfs (refuses O_DIRECT)")
def test_target_refusing_o_direct_runs_buffered_with_a_warning(tmp_path):
    mount = tmp_path / "ramfs"
    mount.mkdir()
    subprocess.run(["mount", "-t", "ramfs", "ramfs", str(mount)], check=True)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "aiio", "fio", "--target", str(mount), "--results",
             str(tmp_path / "r"), "--tests", "seq_read,seq_write", *QUICK, "--json"],
            cwd=REPO, capture_output=True, text=True, timeout=120)
        leftover = (mount / "aiio" / "fio" / "hero").exists()
    finally:
        subprocess.run(["umount", str(mount)], check=True)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["options"]["direct"] is False and res["method"] == "fadvise_dontneed"
    codes = {w["code"] for w in res["warnings"]}
    assert {"no_o_direct", "memory_backed", "space_unknown"} <= codes
    assert "direct=0" in res["tests"]["seq_read"]["jobfile"]
    assert res["tests"]["seq_write"]["aggregate"]["bytes"] > 0
    assert not leftover


def test_ctrl_c_saves_an_interrupted_result_and_removes_the_files(tmp_path):
    target, results = tmp_path / "t", tmp_path / "r"
    target.mkdir()
    cmd = [sys.executable, "-m", "aiio", "fio", "--target", str(target), "--results",
           str(results), "--clients", "2", "--size", "8MiB", "--runtime", "30s", "--quiet"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    jobfile = target / "aiio" / "fio" / "hero" / "seq_read.fio"
    deadline = time.monotonic() + 60
    while not jobfile.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)  # fio is measuring
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: aiio and fio both get it
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "partial result saved" in err
    _, res = _load(results, "fio")
    assert res["status"] == "interrupted" and res["tests"] == {}
    assert not (target / "aiio" / "fio" / "hero").exists()


def test_above_the_hero_number_says_so(suite):
    run = {"phase": "train", "target": suite["res"]["target"], "clients_requested": 2,
           "workload": {"train": {"read_threads": 1}},
           "aggregate": {"last_done": {"mib_s": 1e9}}}
    h = hero.hero_entry(run, suite["results"])
    assert h["percent"] > 100 and "above the hero number" in h["text"]


@pytest.mark.parametrize("phase, args, test, figure", [
    ("checkpoint", ("--set", "checkpoint.size=4MiB"), "seq_write",
     lambda agg: agg["write_mib_s"]),
    ("load", ("--set", "load.size=4MiB", "--set", "load.files=2"), "seq_read",
     lambda agg: agg["last_done"]["mib_s"]),
    ("prep", ("--set", "prep.mode=randrw", "--set", "prep.file_size=2MiB", "--set",
              "prep.duration=300ms", "--set", "prep.threads=1"), "rand_mix",
     lambda agg: agg["read_mib_s"] + agg["write_mib_s"]),
])
def test_every_phase_is_set_against_its_hero(suite, phase, args, test, figure):
    proc = run_cli("run", "--no-report",
                   "--phase", phase, "--target", str(suite["target"]), "--results",
                   str(suite["results"]), "--clients", "2", *args, "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    fio_mib_s = suite["res"]["tests"][test]["aggregate"]["mib_s"]
    h = res["hero"]
    assert h["test"] == test and h["fio_mib_s"] == fio_mib_s
    assert h["percent"] == pytest.approx(100 * figure(res["aggregate"]) / fio_mib_s)
    shown = call_cli("compare", str(suite["results"] / res["id"]))
    assert shown.returncode == 0 and f"fio {test}" in shown.stdout


def test_lifecycle_run_sets_each_stage_against_its_hero(suite):
    proc = run_cli("run", "--no-report",
                   "--phase", "all", "--target", str(suite["target"]), "--results",
                   str(suite["results"]), *ONE_STREAM, "--set", "prep.threads=1",
                   "--set", "checkpoint.size=2MiB",
                   "--set", "load.size=2MiB", "--set", "prep.shard_size=256KiB")
    assert proc.returncode == 0, proc.stderr
    [folder] = [p for p in suite["results"].iterdir() if "-all-" in p.name]
    res = json.loads((folder / "result.json").read_text())
    stages = res["hero"]["stages"]
    assert {k: v["test"] for k, v in stages.items() if k != "prep"} == {
        "train": "seq_read", "load": "seq_read"}
    # prep in shards mode: its reads against seq_read, its writes against seq_write
    assert {p["test"] for p in stages["prep"]["pairs"]} == {"seq_read", "seq_write"}
    train = res["aggregate"]["train"]["delivered"]["last_done"]["mib_s"]
    assert stages["train"]["percent"] == pytest.approx(
        100 * train / suite["res"]["tests"]["seq_read"]["aggregate"]["mib_s"])
    assert proc.stdout.count("% of fio hero") == 3  # one row in each stage's table


def test_fio_on_a_target_whose_name_is_no_utf8(tmp_path):
    # its job files name the folder: writing them as text stopped the suite with a
    # UnicodeEncodeError traceback before fio ran; fio must be given the name's own bytes
    target = tmp_path / os.fsdecode(b"t\xff")
    target.mkdir()
    done = subprocess.run([sys.executable, "-m", "aiio", "fio", "--target", str(target),
                           "--results", str(tmp_path / "results"), "--clients", "1",
                           "--runtime", "500ms", "--ramp-time", "0", "--size", "1MiB",
                           "--tests", "seq_read", "--quiet"], cwd=REPO, capture_output=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    (res,) = (tmp_path / "results").glob("*/result.json")
    assert json.loads(res.read_text())["tests"]["seq_read"]["aggregate"]["mib_s"] > 0
