"""The compiled read loop in a run: the random mix reads through it and says so, a run that
does not use it never imports numba, and a run without numba falls back and says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aiio.engines import compiled
from aiio.report.common import measured_section
from aiio.report.run import headline_section
from aiio.run import runner
from tests.conftest import REPO, TINY_ARGS, saved_result, tiny_workload
from tests.mpi import mpi_run, needs_mpi

numba_missing = pytest.mark.skipif(compiled.unavailable() is not None,
                                   reason=compiled.unavailable() or "")
BLOCK = 4096


def _randrw(target: Path, results: Path, verify: bool = False, share: float = 1.0) -> dict:
    w = tiny_workload(prep__mode="randrw", prep__file_size="1MiB", prep__threads=2,
                      prep__duration="300ms", prep__read_share=share, prep__block_size="4KiB")
    options = runner.RunOptions(verify=verify)
    res, _ = runner.run(runner.RunRequest("randrw", w, str(target), str(results),
                                          options=options))
    assert res["status"] == "ok", res.get("error")
    return res


@numba_missing
@pytest.mark.parametrize("share", [1.0, 0.5])
def test_the_random_mix_reads_through_the_compiled_loop_and_says_so(
        target: Path, results: Path, share: float) -> None:
    res = _randrw(target, results, share=share)
    label = res["aggregate"]["read_loop"]
    assert label.startswith("compiled (numba ") and compiled.loaded() is not None
    for c in res["clients"]:
        assert c["read_loop"] == label
        reads = c["read"]["histograms"]["read"]["count"]
        assert reads > 0 and c["read"]["bytes"] == reads * BLOCK  # every block whole
    page = str(measured_section(res, "2 clients"))  # the report's "What was measured"
    assert "read loop" in page and label in page
    # ... and there only: the headline's "other aggregate figures" listed it a second time
    assert "read_loop" not in str(headline_section(res))


def test_a_verified_mix_keeps_the_python_loop_and_says_why(target: Path,
                                                           results: Path) -> None:
    res = _randrw(target, results, verify=True, share=0.7)
    assert res["aggregate"]["read_loop"] == "python (--verify checks every read)"
    assert res["aggregate"]["verify"]["blocks_checked"] > 0


def test_a_mix_of_writes_only_says_it_read_through_no_loop(target: Path,
                                                          results: Path) -> None:
    """read_share 0 makes no read: its result said the reads went through the Python loop
    because the compiled one was "not compiled before the clients started", as if it had
    failed."""
    res = _randrw(target, results, share=0.0)
    assert res["aggregate"]["read"]["bytes"] == 0
    assert res["aggregate"]["read_loop"] == "none (no reads)"
    assert [c["read_loop"] for c in res["clients"]] == ["none (no reads)"] * 2


def _script(body: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", body], cwd=REPO, capture_output=True,
                          text=True, timeout=180, env={**os.environ, **(env or {})})


RUN = ("import sys\nfrom pathlib import Path\nfrom aiio.run import runner\n"
       "from tests.conftest import tiny_workload\n"
       "def run(name, verify=False, method='auto', **sets):\n"
       "    w = tiny_workload(**sets)\n"
       "    res, _ = runner.run(runner.RunRequest(name, w, sys.argv[1], sys.argv[2], method,\n"
       "                        options=runner.RunOptions(verify=verify)))\n"
       "    assert res['status'] == 'ok', res.get('error')\n"
       "    return res\n"
       "mix = dict(prep__mode='randrw', prep__file_size='1MiB', prep__threads=1,\n"
       "           prep__duration='200ms')\n")


def test_numba_is_imported_only_by_a_run_that_reads_through_the_loop(tmp_path: Path) -> None:
    """aiio starts in a fraction of a second and numba's import takes about 0.2 s: a run that
    does not read through the compiled loop never imports it. One that does compiles it once,
    in the parent, before the clients are forked."""
    body = RUN + (
        "run('train')\n"
        "run('randrw', verify=True, **mix)\n"
        "run('randrw', prep__iodepth=1, prep__read_share=0.0, **mix)\n"
        "res = run('randrw', method='null', **mix)\n"
        "assert res['aggregate']['read_loop'] == 'python (null method)'\n"
        "assert 'numba' not in sys.modules, 'numba imported'\n"
        "res = run('randrw', **mix)\n"
        "assert ('numba' in sys.modules) == res['aggregate']['read_loop'].startswith("
        "'compiled'), res['aggregate']['read_loop']\n")
    (tmp_path / "t").mkdir()
    done = _script(body.replace("sys.argv[1], sys.argv[2]",
                                f"{str(tmp_path / 't')!r}, {str(tmp_path / 'r')!r}"))
    assert done.returncode == 0, done.stderr


def test_a_run_without_numba_falls_back_to_the_python_loop_and_says_so(tmp_path: Path) -> None:
    hidden = tmp_path / "hidden"
    (hidden / "numba").mkdir(parents=True)
    (hidden / "numba" / "__init__.py").write_text(  # as Python says it of a missing module
        "raise ModuleNotFoundError(\"No module named 'numba'\", name='numba')\n")
    (tmp_path / "t").mkdir()
    env = {"PYTHONPATH": os.pathsep.join([str(hidden), str(REPO)])}
    done = subprocess.run(
        [sys.executable, "-m", "aiio", "run", "--phase", "randrw", "--target",
         str(tmp_path / "t"), "--results", str(tmp_path / "r"), "--clients", "2", "--no-report",
         "--set", "prep.file_size=1MiB", "--set", "prep.duration=200ms"],
        cwd=REPO, capture_output=True, text=True, timeout=180, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    res = saved_result(tmp_path / "r")
    label = res["aggregate"]["read_loop"]
    assert label == "python (numba is not installed: pip install 'aiio[fast]')"
    assert all(c["read_loop"] == label for c in res["clients"])
    assert "read loop" in done.stdout and "numba is not installed" in done.stdout
    assert res["aggregate"]["read"]["bytes"] > 0
    json.dumps(res)


@needs_mpi
@numba_missing
def test_every_host_compiles_the_loop_before_forking_its_clients(tmp_path: Path) -> None:
    """Under MPI the phase is prepared on rank 0 only: each rank compiles the loop itself
    before its clients fork, or its clients would read through the Python loop."""
    target, results = tmp_path / "t", tmp_path / "r"
    target.mkdir()
    done = mpi_run(2, "run", "--phase", "randrw", "--target", str(target), "--results",
                   str(results), "--clients", "2", "--no-report", "--json", "--set",
                   "prep.file_size=1MiB", "--set", "prep.duration=200ms", "--set",
                   "prep.block_size=4KiB")
    assert done.returncode == 0, done.stderr
    res = json.loads(done.stdout)
    assert [c["rank"] for c in res["clients"]] == [0, 1]
    assert all(c["read_loop"].startswith("compiled (numba ") for c in res["clients"]), [
        c["read_loop"] for c in res["clients"]]


@numba_missing
def test_a_lifecycle_with_prep_in_randrw_mode_compiles_the_loop_before_its_fork(
        tmp_path: Path) -> None:
    """One client process runs every stage: the lifecycle compiles its stages' needs (prep's
    randrw loop) in the parent, before the fork, as the phases alone do."""
    target, results = tmp_path / "t", tmp_path / "r"
    target.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "aiio", "run", "--phase", "all", "--target", str(target),
         "--results", str(results), "--no-report", "--json", "-q", *TINY_ARGS,
         "--set", "checkpoint.size=2MiB", "--set", "load.size=2MiB",
         "--set", "prep.mode=randrw", "--set", "prep.file_size=1MiB",
         "--set", "prep.duration=200ms", "--set", "prep.block_size=4KiB"],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    res = json.loads(done.stdout)
    assert [c["prep"]["read_loop"] for c in res["clients"]] == [res["aggregate"]["prep"][
        "read_loop"]] * 2
    assert res["aggregate"]["prep"]["read_loop"].startswith("compiled (numba ")
