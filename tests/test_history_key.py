"""A record's settings key holds what changes its own figures: the workload sections its phase
reads (Phase.workload_sections; a training run's checkpoint sections when it checkpoints, a
bucket's [s3]), plus the run's own settings. A section another phase reads, added or changed,
leaves a series whole; records written with the whole workload meet new ones under one key."""

from __future__ import annotations

import copy
import json
import shutil

import pytest

from aiio.results.history import History, compared_settings, run_record, sweep_record

from .conftest import REPO

V2 = REPO / "tests" / "data" / "results-v2"
V3 = REPO / "tests" / "data" / "results-v3"
TRAIN = V2 / "20261201-124017-train-demo-c4" / "result.json"
SWEEP = V2 / "20261201-124028-scale-train-demo-c1_2" / "result.json"
CHECKPOINT = V3 / "20261203-062410-checkpoint-demo-c2" / "result.json"
ALL = V3 / "20261203-062413-all-demo-c2" / "result.json"


def _load(path, **sections: dict) -> dict:
    """A stored result, the given sections' keys set (a section it lacks added)."""
    res = json.loads(path.read_text())
    for name, keys in sections.items():
        res["workload"].setdefault(name, {}).update(keys)
    return res


def _key(res: dict) -> str:
    return run_record(res).key[2]


def test_a_train_run_is_keyed_by_what_training_reads():
    base = _key(_load(TRAIN))
    # sections another phase reads: added (as a newer aiio resolves them) or changed
    for other in ({"kvcache": {"users": 64}}, {"vector": {"beam_width": 8}},
                  {"transformer": {"layers": 80}}, {"load": {"files": 9}},
                  {"prep": {"threads": 16}}, {"checkpoint": {"restore_after": "all_writes"}},
                  {"s3": {"part_size": 16 << 20}}, {"model": {"parameters": 8e9}}):
        assert _key(_load(TRAIN, **other)) == base, other
    # what training reads splits it
    for own in ({"train": {"batch_size": 8}}, {"dataset": {"num_files": 9}},
                {"run": {"seed": 7}}):
        assert _key(_load(TRAIN, **own)) != base, own


def test_a_training_run_that_checkpoints_reads_the_checkpoint_sections():
    saving = _load(TRAIN, checkpoint={"every": 1, "size": 1 << 20})
    base = _key(saving)
    assert base != _key(_load(TRAIN))
    for section, keys in (("checkpoint", {"threads": 4}), ("transformer", {"layers": 80}),
                          ("model", {"parameters": 8e9})):
        changed = copy.deepcopy(saving)
        changed["workload"].setdefault(section, {}).update(keys)
        assert _key(changed) != base, section
    assert _key(_load(TRAIN, checkpoint={"every": 1, "size": 1 << 20},
                      kvcache={"users": 64})) == base


def test_a_checkpoint_run_is_keyed_by_its_model_shape_not_by_training():
    base = _key(_load(CHECKPOINT))
    assert _key(_load(CHECKPOINT, transformer={"layers": 80})) != base
    assert _key(_load(CHECKPOINT, checkpoint={"threads": 4})) != base
    assert _key(_load(CHECKPOINT, model={"ranks": 8})) != base
    assert _key(_load(CHECKPOINT, train={"batch_size": 8})) == base
    assert _key(_load(CHECKPOINT, kvcache={"users": 64}, vector={"top_k": 3})) == base


def test_the_lifecycle_reads_its_stages_sections():
    base = _key(_load(ALL))
    for section, keys in (("prep", {"threads": 16}), ("train", {"batch_size": 8}),
                          ("load", {"files": 9}), ("checkpoint", {"threads": 4}),
                          ("transformer", {"layers": 80})):
        assert _key(_load(ALL, **{section: keys})) != base, section
    assert _key(_load(ALL, kvcache={"users": 64}, vector={"top_k": 3})) == base


def test_a_bucket_run_reads_the_s3_section():
    on_bucket = _load(TRAIN)
    on_bucket["target"]["path"] = "s3://bucket/prefix"
    base = _key(on_bucket)
    changed = copy.deepcopy(on_bucket)
    changed["workload"]["s3"] = {"part_size": 16 << 20}
    assert _key(changed) != base


def test_a_sweep_is_keyed_by_what_its_phase_reads():
    sweep = json.loads(SWEEP.read_text())
    other = copy.deepcopy(sweep)
    other["workload"]["kvcache"] = {"users": 64}
    assert sweep_record(sweep).key == sweep_record(other).key
    other["workload"]["train"]["batch_size"] = 8
    assert sweep_record(sweep).key != sweep_record(other).key


def test_a_phase_this_aiio_does_not_know_keeps_the_whole_workload():
    res = _load(TRAIN)
    res["phase"] = "elsewhere"
    assert _key(_load(TRAIN, kvcache={"users": 64}) | {"phase": "elsewhere"}) != _key(res)


def test_the_key_is_recomputed_from_the_stored_whole_workload(tmp_path):
    """A record written before keys followed the phase kept every section: it meets a record
    of this aiio, of a workload that has grown sections since, under one key."""
    path = tmp_path / "h.sqlite"
    old = run_record(_load(TRAIN))
    assert set(json.loads(old.settings)["workload"]) >= {"dataset", "train", "prep", "load"}
    with History(path) as h:
        h.add(old)
        stored, = h.records()
    grown = run_record(_load(TRAIN, kvcache={"users": 64}, vector={"top_k": 3}))
    assert stored.key == grown.key
    # what is compared is said without the other phases' sections
    kept = json.loads(compared_settings(stored.settings, "train", stored.target))
    assert set(kept["workload"]) == {"run", "dataset", "train"}


@pytest.mark.parametrize("name", ["results-v1", "results-v3"])
def test_stored_histories_group_their_records_as_before(name, tmp_path):
    """The histories stored with the tests: records of one series and settings still share a
    key, and records of other settings of a series still have keys of their own."""
    copy_of = tmp_path / "history.sqlite"  # opening one may switch its journal: a copy
    shutil.copyfile(REPO / "tests" / "data" / name / "history.sqlite", copy_of)
    with History(copy_of) as h:
        records = h.records()
    by_settings = {(r.name, r.target, r.settings) for r in records}
    by_key = {r.key for r in records}
    assert len(by_key) == len(by_settings)


VECTOR_SWEEP = REPO / "tests" / "data" / "sweeps-v3" / "20261203-083304-scale-vector-demo-c1_2" \
    / "result.json"


def _without(path, section: str, *names: str) -> dict:
    """A stored result as an aiio before those keys of the section were added recorded it."""
    res = json.loads(path.read_text())
    for name in names:
        res["workload"][section].pop(name, None)
    return res


def test_keys_added_later_at_their_inert_value_continue_the_series():
    """The reader and the insert stream came after vector runs were recorded: a run that
    leaves them as they were (raw reader, no inserts) is in the older runs' series; one that
    uses them, or sets what only acts with inserts while inserting, is in a series of its own."""
    old = _key(_without(VECTOR_SWEEP, "vector", "reader", "insert_rate", "insert_sync",
                        "merge_every"))
    now = {"reader": "raw", "insert_rate": 0.0, "insert_sync": 16, "merge_every": 1000}
    assert _key(_load(VECTOR_SWEEP, vector=now)) == old
    # what acts only with inserts changes nothing without them
    assert _key(_load(VECTOR_SWEEP, vector={**now, "insert_sync": 4, "merge_every": 9})) == old
    inserting = _key(_load(VECTOR_SWEEP, vector={**now, "insert_rate": 50.0}))
    assert inserting != old
    assert _key(_load(VECTOR_SWEEP, vector={**now, "insert_rate": 50.0, "merge_every": 9})) \
        not in (old, inserting)
    assert _key(_load(VECTOR_SWEEP, vector={**now, "reader": "native"})) != old
