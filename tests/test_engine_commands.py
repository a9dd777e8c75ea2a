"""`aiio scale` and `aiio accept` take `--engine` as `aiio run` does: the same one-line refusal
of an engine that cannot be had, the engine every point and check ran on recorded in its
result, and its history series keyed by it (runs on another engine are another series)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiio.results.history import History

from .conftest import call_cli, saved_results
from .test_engine_external import assert_every_transfer_slept

SLEEPY = "external:tests.sleepy_engine"
# a checkpoint of fixed work per point: no duration to wait out, a few calls a client
SMALL = ("--set", "checkpoint.size=1MiB", "--set", "checkpoint.transfer_size=256KiB")
# one check, every key inline; clients = 1 runs it, a list sweeps it
SPEC = ('spec = {{name = "engines"}}\n'  # an inline table holds to one line in TOML
        'check = [{{name = "burst", phase = "checkpoint", workload = "demo", '
        'clients = {clients}, require = {{max_checkpoint_s = "1h"}}, '
        'set = {{checkpoint = {{size = "1MiB", transfer_size = "256KiB"}}}}}}]\n')


def scale(target: Path, results: Path, *extra: str):
    return call_cli("scale", "-p", "checkpoint", "-n", "1,2", "-t", str(target),
                    "--results", str(results), "-q", "--no-charts", "--no-report",
                    *SMALL, *extra)


def accept(spec: Path, target: Path, results: Path, *extra: str):
    return call_cli("accept", str(spec), "-t", str(target), "--results", str(results),
                    "-q", "--no-report", *extra)


def spec_file(tmp_path: Path, clients: str = "1") -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(SPEC.format(clients=clients))
    return path


def settings(results: Path) -> dict[str, set[str]]:
    """The settings of every history record, by kind."""
    h = History(results / "history.sqlite")
    try:
        out: dict[str, set[str]] = {}
        for r in h.records():
            out.setdefault(r.kind, set()).add(r.settings)
        return out
    finally:
        h.close()


def test_scale_runs_every_point_on_the_engine_asked(target: Path, results: Path) -> None:
    got = scale(target, results, "--engine", SLEEPY)
    assert got.returncode == 0, got.stderr
    (sweep,) = saved_results(results, "scale")
    assert sweep["engine"] == "sleepy"
    assert [p["result"]["engine"] for p in sweep["points"]] == ["sleepy", "sleepy"]
    for p in sweep["points"]:
        assert_every_transfer_slept(p["result"])
    kept = settings(results)
    assert all(json.loads(s)["engine"] == "sleepy" for s in kept["sweep"] | kept["run"])


def test_scale_on_the_targets_own_engine_keys_as_before(target: Path, results: Path) -> None:
    got = scale(target, results, "--engine", "posix")
    assert got.returncode == 0, got.stderr
    (sweep,) = saved_results(results, "scale")
    assert sweep["engine"] == "posix"
    kept = settings(results)
    assert all("engine" not in json.loads(s) for s in kept["sweep"] | kept["run"])


@pytest.mark.parametrize(("engine", "says"), [
    ("nope", "unknown engine 'nope'"),
    ("s3", "engine s3 needs an s3:// target"),
    ("external:tests.no_such_module", "cannot import tests.no_such_module"),
])
def test_scale_refuses_an_engine_it_cannot_have(engine: str, says: str, target: Path,
                                                results: Path) -> None:
    got = scale(target, results, "--engine", engine)
    lines = got.stderr.strip().splitlines()
    assert got.returncode == 2 and len(lines) == 1 and says in lines[0], got.stderr
    assert not results.exists()
    assert not list(target.iterdir())  # not even aiio's folder


def test_accept_runs_every_check_on_the_engine_asked(tmp_path: Path, target: Path,
                                                     results: Path) -> None:
    got = accept(spec_file(tmp_path), target, results, "--engine", SLEEPY)
    assert got.returncode == 0, got.stdout + got.stderr
    (run,) = saved_results(results, "checkpoint")
    assert run["engine"] == "sleepy"
    assert_every_transfer_slept(run)
    (out,) = saved_results(results, "accept")
    assert out["engine"] == SLEEPY
    kept = settings(results)
    assert all(json.loads(s)["engine"] == "sleepy" for s in kept["check"] | kept["run"])


def test_accept_runs_a_sweep_check_on_the_engine_asked(tmp_path: Path, target: Path,
                                                       results: Path) -> None:
    got = accept(spec_file(tmp_path, "[1, 2]"), target, results, "--engine", SLEEPY)
    assert got.returncode == 0, got.stdout + got.stderr
    (sweep,) = saved_results(results, "scale")
    assert sweep["engine"] == "sleepy"
    assert all(p["result"]["engine"] == "sleepy" for p in sweep["points"])
    kept = settings(results)
    assert all(json.loads(s)["engine"] == "sleepy" for s in kept["check"] | kept["sweep"])


@pytest.mark.parametrize(("engine", "says"), [
    ("nope", "unknown engine 'nope'"),
    ("s3", "engine s3 needs an s3:// target"),
])
def test_accept_refuses_an_engine_it_cannot_have(engine: str, says: str, tmp_path: Path,
                                                 target: Path, results: Path) -> None:
    got = accept(spec_file(tmp_path), target, results, "--engine", engine)
    lines = got.stderr.strip().splitlines()
    assert got.returncode == 2 and len(lines) == 1 and says in lines[0], got.stderr
    assert not results.exists()
    assert not list(target.iterdir())
