"""A run whose headline rests on no bytes measured nothing: it is no "ok" run at 0 MiB/s for
the history's baselines and acceptance to take as the storage's figure, but a failed one that
says why (status `failed`, warning `nothing_measured`, exit code 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiio.results.history import History

from .conftest import TINY_DATA, run_cli, saved_result

# Each ends before its headline's window holds a byte: a deadline 1 us after the common start
# passes before any client's first request returns. Left out, as their outcome is a race: the
# lifecycle at 1 us (it measured nothing in 5 runs of 5 by hand, yet once in six beside other
# tests its train stage consumed a sample) and a 4 KiB checkpoint over two clients (one shard:
# whether first done holds a byte depends on which client ends first).
NOTHING = {
    "train": ("--duration", "1us"),
    "randrw": ("--duration", "1us"),
}


def _run(tmp_path: Path, phase: str, *args: str) -> tuple[int, str, dict]:
    (tmp_path / "t").mkdir()
    out = run_cli("run", "--no-report", "--phase", phase, "--clients", "2", "--target",
                  str(tmp_path / "t"), "--results", str(tmp_path / "r"), *TINY_DATA, *args,
                  "-q")
    return out.returncode, out.stderr, saved_result(tmp_path / "r")


@pytest.mark.parametrize("phase", sorted(NOTHING))
def test_a_run_that_measured_nothing_is_not_ok(tmp_path: Path, phase: str) -> None:
    code, err, res = _run(tmp_path, phase, *NOTHING[phase])
    assert code == 1, err
    assert res["status"] == "failed"
    # the phase's own reason where it has one (training's names a measurable length)
    said = ("nothing measured", "cannot be measured")
    assert any(s in res["error"] for s in said) and any(s in err for s in said)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "nothing_measured" in [w["code"] for w in res["warnings"]]
    with History(tmp_path / "r" / "history.sqlite") as h:
        (rec,) = h.records()
    assert not rec.passed  # never a baseline


def test_a_tiny_run_that_moved_bytes_stays_ok(tmp_path: Path) -> None:
    """4 KiB of weights per replica is little, yet a measurement: the rule is no bytes, not
    few."""
    code, err, res = _run(tmp_path, "load", "--set", "load.size=4KiB")
    assert code == 0, err
    assert res["status"] == "ok"
    assert "nothing_measured" not in [w["code"] for w in res["warnings"]]
