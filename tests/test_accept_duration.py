"""An acceptance check's `duration` goes where `aiio run --duration` sends it: the time limit
of the phase that runs; a phase that does a fixed amount of work refuses it in one line (exit
2), as `aiio run` does, instead of running without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from aiio.accept.spec import load_spec

from .conftest import call_cli

CHECK = ('[spec]\nname = "t"\n[[check]]\nname = "c"\nphase = "{phase}"\nclients = 2\n'
         'duration = "3s"\n[check.require]\n{require}\n')


@pytest.mark.parametrize("phase, require", [("checkpoint", "max_checkpoint_s = 600"),
                                            ("load", "max_load_s = 600")])
def test_fixed_work_phases_refuse_a_duration(tmp_path: Path, phase: str, require: str) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(CHECK.format(phase=phase, require=require))
    (tmp_path / "t").mkdir()
    proc = call_cli("accept", str(spec), "--target", str(tmp_path / "t"), "--results",
                    str(tmp_path / "r"), "--quiet")
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "duration" in proc.stderr and phase in proc.stderr and str(spec) in proc.stderr
    run = call_cli("run", "--phase", phase, "--duration", "3s", "--target",
                   str(tmp_path / "t"), "--results", str(tmp_path / "r"))
    assert run.returncode == 2
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("phase, key", [("train", ("train", "duration")),
                                        ("randrw", ("prep", "duration"))])
def test_time_based_phases_take_it_as_their_limit(tmp_path: Path, phase: str, key) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(CHECK.format(phase=phase, require="min_aggregate_mib_s = 1"))
    (check,) = load_spec(spec).checks
    assert getattr(getattr(check.workload, key[0]), key[1]) == 3.0
    # only the phase that runs gets the limit: randrw does not make training time-based
    if phase == "randrw":
        assert check.workload.train.duration == 0
