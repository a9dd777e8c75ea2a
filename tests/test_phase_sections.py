"""Every phase declares the workload sections it reads (Phase.workload_sections and
sections_read), and its history key holds only those: so each phase runs for real here, its
workload telling which sections anything in the run read, in the parent and in every client
process, and none may be outside what the phase declares (with [run], and [s3] on a bucket).
A section read but not declared would let a setting that changes the figures leave the key."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from aiio.fio import hero
from aiio.phases import REGISTRY, get_phase, phase_of
from aiio.results.history import (
    BUCKET_SECTIONS,
    RUN_SECTIONS,
    compared_settings,
    run_record,
    settings_of,
)
from aiio.results.layout import LEGACY_SECTIONS, legacy_sections
from aiio.run import runner
from aiio.workload import Workload

from .conftest import tiny_workload

SECTIONS = tuple(f.name for f in dataclasses.fields(Workload)
                 if f.name not in ("source", "given"))
# Reading every key to save the workload in the result, or to copy a section, reads no
# setting for the figures.
COPIES = {("dataclasses.py", "replace"), ("dataclasses.py", "_asdict_inner"),
          ("dataclasses.py", "asdict"), ("dataclasses.py", "fields")}
# Keys a phase reads to learn which sections it reads (`sections_read` follows them): training
# saves checkpoints, and reads their sections, only with checkpoint.every above 0.
SWITCHES = {"train": {"checkpoint.every"}}
IDENTITY = {"workload.name", "workload.description"}  # name the series, in no key
LOG: list[Path] = []  # the file every process of the run appends the keys it reads to


def _logged_read(section: str):
    def read(self, name: str):
        if LOG and not name.startswith("_") and name in self.__dataclass_fields__:
            caller = sys._getframe(1).f_code
            if (Path(caller.co_filename).name, caller.co_name) not in COPIES:
                with open(LOG[0], "a") as fh:
                    fh.write(f"{section}.{name} {Path(caller.co_filename).name}:"
                             f"{caller.co_name}\n")
        return object.__getattribute__(self, name)
    return read


def tracked(w: Workload) -> Workload:
    """`w`, each section of it an instance of a subclass that logs every key read (a copy
    made with dataclasses.replace is of the same subclass, so it logs too)."""
    sections = {}
    for name in SECTIONS:
        value = getattr(w, name)
        cls = type(f"Logged{type(value).__name__}", (type(value),),
                   {"__getattribute__": _logged_read(name)})
        sections[name] = cls(**{f.name: getattr(value, f.name)
                                for f in dataclasses.fields(value)})
    return dataclasses.replace(w, **sections)


def read_in_run(phase: str, w: Workload, target: str, results: Path, tmp_path: Path,
                monkeypatch) -> tuple[set[str], dict]:
    """The workload keys anything read while `phase` ran `w`, in any process, each with
    where ("train.batch_size train.py:prepare"), and its saved result."""
    log = tmp_path / "keys.log"
    log.write_text("")
    monkeypatch.setattr(sys.modules[__name__], "LOG", [log])
    res, _ = runner.run(runner.RunRequest(phase, tracked(w), target, str(results),
                                          hero=hero.Pairing(results)))
    monkeypatch.setattr(sys.modules[__name__], "LOG", [])
    assert res["status"] == "ok", res.get("error")
    return set(log.read_text().splitlines()), res


def outside(phase: str, read: set[str], declared: tuple[str, ...]) -> set[str]:
    """The keys read (with where) of sections the phase did not declare (nor [run], nor its
    switches)."""
    allowed = {*RUN_SECTIONS, *declared}
    unlisted = IDENTITY | SWITCHES.get(phase, set())
    return {line for line in read if (key := line.split()[0]) not in unlisted
            and key.split(".")[0] not in allowed}


TINY = {"checkpoint__size": "2MiB", "load__size": "2MiB", "prep__file_size": "2MiB",
        "prep__duration": "200ms", "kvcache__model": "tiny", "kvcache__layers": 2,
        "kvcache__kv_heads": 2, "kvcache__head_dim": 64, "kvcache__block_tokens": 64,
        "kvcache__users": 2, "kvcache__context_tokens": 256, "kvcache__generation_tokens": 32,
        "kvcache__duration": "300ms", "kvcache__transfer_size": "64KiB",
        "vector__vectors": 3000, "vector__max_degree": 16, "vector__search_list": 24,
        "vector__duration": "300ms"}
RUNS = {"train": {}, "train saving": {"checkpoint__every": 1}, "prep": {},
        "prep randrw": {"prep__mode": "randrw"}, "randrw": {"prep__mode": "randrw"},
        "checkpoint": {}, "load": {}, "kvcache": {}, "vector": {}, "all": {}}


@pytest.mark.parametrize("run", RUNS)
def test_a_phase_reads_no_section_it_does_not_declare(run: str, target: Path, results: Path,
                                                      tmp_path: Path, monkeypatch) -> None:
    phase = run.split()[0]
    w = tiny_workload(**{**TINY, **RUNS[run]})
    read, res = read_in_run(phase, w, str(target), results, tmp_path, monkeypatch)
    declared = phase_of(res).sections_read(res["workload"])  # prep in randrw mode: randrw's
    assert declared is not None, f"{phase} declares no workload sections"
    assert outside(phase, read, declared) == set(), run
    # the result records them, and the history keys the run by them
    assert res["io"]["workload_sections"] == list(declared)
    new = run_record(res)
    kept = json.loads(new.settings)
    assert kept.pop("sections") == list(declared)
    # a record written before phases declared them (no `sections`) meets it under one key
    old = dataclasses.replace(new, settings=json.dumps(kept))
    assert old.key == new.key, run
    assert legacy_sections(phase, res["workload"]) == declared


def test_every_registered_phase_declares_its_sections() -> None:
    undeclared = [name for name in REGISTRY if get_phase(name).workload_sections is None]
    assert undeclared == []
    for name in REGISTRY:
        assert set(get_phase(name).workload_sections) <= set(SECTIONS), name


def test_the_tracking_sees_a_section_read_in_a_client(target: Path, results: Path,
                                                      tmp_path: Path, monkeypatch) -> None:
    """The guard above can fail: a read of an undeclared section in a client process shows."""
    from aiio.phases import train

    def reads_vector(ctx):
        assert ctx.args.workload.vector.top_k > 0
        return train.run_client(ctx)

    monkeypatch.setattr(train.TrainPhase, "client", staticmethod(reads_vector))
    read, _ = read_in_run("train", tiny_workload(), str(target), results, tmp_path,
                          monkeypatch)
    assert {line.split()[0] for line in outside("train", read, ("dataset", "train"))} \
        == {"vector.top_k"}


@pytest.mark.parametrize("run", ["train", "checkpoint"])
def test_on_a_bucket_a_phase_reads_the_s3_section_besides(run: str, s3_bucket: str,
                                                          results: Path, tmp_path: Path,
                                                          monkeypatch) -> None:
    w = tiny_workload(**TINY)
    read, res = read_in_run(run, w, f"s3://{s3_bucket}/aiio", results, tmp_path, monkeypatch)
    declared = get_phase(run).sections_read(res["workload"])
    assert outside(run, read, (*declared, *BUCKET_SECTIONS)) == set()
    assert any(line.startswith("s3.part_size") for line in read)
    kept = json.loads(compared_settings(settings_of(res), run, res["target"]["path"]))
    assert "s3" in kept["workload"]


@pytest.mark.parametrize("name", sorted(LEGACY_SECTIONS))
def test_records_that_did_not_say_are_keyed_as_their_phase_reads_today(name: str) -> None:
    """The frozen table that keys records written before phases declared their sections is
    what each phase declares: such a record meets this aiio's records of its settings. (A phase
    that comes to read more later rightly splits from them: then this phase's expectation
    changes here, never the frozen table.)"""
    for every in (0, 2):
        w = {"checkpoint": {"every": every}}
        assert legacy_sections(name, w) == get_phase(name).sections_read(w), (name, every)
