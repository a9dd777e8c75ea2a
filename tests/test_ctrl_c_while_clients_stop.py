"""Ctrl-C pressed again while the clients stop (they are asked to stop, then send what they
measured): the second one is not held there. It escapes the stop, the run reads it as a
Ctrl-C "before measuring", and the clients' figures are dropped; in a clients sweep the line
naming the saved partial result is lost too ("aiio: interrupted")."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import TINY_DATA, aiio_cmd, ctrl_c_burst


def _ctrl_c_once_measuring(args: tuple[str, ...], target: Path,
                           times: int) -> tuple[int, str]:
    """`aiio ARGS`, sent `times` Ctrl-Cs 20 ms apart 2 s after its dataset is there (the
    first run is then measuring); its exit code and stderr."""
    return ctrl_c_burst(aiio_cmd(*args),
                        lambda _: len(list(target.glob("aiio/datasets/*/*/*.npz"))) >= 24,
                        2.0, times)


def test_ctrl_c_again_while_clients_stop_keeps_their_figures(target: Path,
                                                             results: Path) -> None:
    code, err = _ctrl_c_once_measuring(
        ("run", "-p", "train", "-t", str(target), "--results", str(results), *TINY_DATA,
         "--duration", "6s", "--quiet", "--no-report", "--no-history"), target, 3)
    assert code == 130, err
    (saved,) = [json.loads(p.read_text()) for p in results.glob("*/result.json")]
    assert saved["status"] == "interrupted"
    assert "before measuring" not in saved["error"], saved["error"]  # it measured for 2 s
    assert len(saved["clients"]) == 2, saved["error"]


def test_ctrl_c_again_in_a_clients_sweep_names_the_saved_result(target: Path,
                                                                 results: Path) -> None:
    code, err = _ctrl_c_once_measuring(
        ("scale", "-p", "train", "--clients", "1,2", "-t", str(target), "--results",
         str(results), *TINY_DATA, "--duration", "4s", "--no-history"), target, 50)
    assert code == 130, err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert "saved in" in last, err


def test_ctrl_c_again_while_fio_ends_leaves_no_file_and_names_the_result(
        target: Path, results: Path) -> None:
    """`aiio fio`: its ending (_fail in aiio.fio.suite.run_suite) is not held, so a second
    Ctrl-C cut the removal of its 1 GiB files short and lost the line naming the result."""
    code, err = ctrl_c_burst(
        aiio_cmd("fio", "-t", str(target), "--results", str(results), "--runtime", "3s",
                 "--ramp-time", "0s", "--tests", "seq_read"),
        lambda _: any(target.glob("aiio/fio/hero/*.fio"))
        and any(target.glob("aiio/fio/hero/seq_read*")), 0.5, 3)
    assert code == 130, err
    assert "partial result saved in" in err.strip().splitlines()[-1], err
    left = sorted(str(p.relative_to(target)) for p in target.rglob("*")
                  if p.is_file() and "fio" in p.parts)
    assert left == [], left
