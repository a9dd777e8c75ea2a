"""`aiio fio --emit --phase randrw`: the job keeps the requests aiio keeps in flight (threads
times prep.iodepth, as the hero pairing counts them) and is named after the phase."""

from __future__ import annotations

from pathlib import Path

from aiio.fio.emit import emit
from tests.conftest import tiny_workload


def _options(job: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in job.splitlines()
                if "=" in line and not line.startswith(";"))


def test_the_random_mix_job_keeps_every_request_in_flight(tmp_path: Path) -> None:
    w = tiny_workload(prep__mode="randrw", prep__threads=2, prep__iodepth=8,
                      prep__read_share=1.0)
    opts = _options(emit("randrw", w, tmp_path))
    assert (opts["ioengine"], opts["iodepth"]) == ("libaio", "16")


def test_the_random_mix_job_is_named_after_its_phase(tmp_path: Path) -> None:
    job = emit("randrw", tiny_workload(prep__mode="randrw"), tmp_path)
    sections = [line for line in job.splitlines() if line.startswith("[")]
    assert sections == ["[global]", "[randrw-demo]"]
