"""Dataset generation: files on disk, manifest reuse and regeneration, unique random contents."""

from __future__ import annotations

import json
import os
import sys
import zlib

import numpy as np

from aiio.storage import dataset as ds
from aiio.storage.target import Target

from .conftest import tiny_workload


def test_generate_spreads_files_and_writes_manifest(target):
    w = tiny_workload()
    data, generated = ds.ensure(Target(target), w)
    assert generated
    files = sorted(data.folder.glob("d*/*.npz"))
    assert len(files) == 24
    assert len({p.parent for p in files}) == 3  # 10 files per folder
    manifest = json.loads((data.folder / "manifest.json").read_text())
    assert manifest["complete"] and manifest["num_files"] == 24
    assert manifest["total_bytes"] == sum(p.stat().st_size for p in files)


def test_a_sample_path_interns_none_of_its_parts(target, monkeypatch):
    """Clients are forked from one parent and share its table of interned strings. A client
    that interns a name may grow that table, which copies all of it into the client: about
    0.9 MiB per client at hundreds of clients. Loader threads ask for a path per read."""
    data, _ = ds.ensure(Target(target), tiny_workload())
    assert os.path.isfile(data.path(3))
    interned: list[str] = []
    real_intern = sys.intern
    # Counted as called: an interned string dies with its last reference (its slot in the
    # table stays taken), so looking for it afterwards could miss it.
    monkeypatch.setattr(sys, "intern", lambda s: interned.append(s) or real_intern(s))
    far = 7_654_321  # a number of its own: the spy sees only what path() does with it
    path = data.path(far)
    monkeypatch.undo()
    assert interned == []
    parts = [os.path.basename(path), os.path.basename(os.path.dirname(path))]
    assert parts == ["f7654321.npz", "d765432"]


def test_matching_dataset_is_reused_not_rewritten(target):
    w = tiny_workload()
    first, _ = ds.ensure(Target(target), w)
    mtime = (first.folder / "manifest.json").stat().st_mtime_ns
    second, generated = ds.ensure(Target(target), w)
    assert not generated
    assert (second.folder / "manifest.json").stat().st_mtime_ns == mtime


def test_mismatched_dataset_is_regenerated(target):
    ds.ensure(Target(target), tiny_workload())
    data, generated = ds.ensure(Target(target), tiny_workload(dataset__num_files=12))
    assert generated and data.num_files == 12
    assert len(list(data.folder.glob("d*/*.npz"))) == 12


def test_incomplete_dataset_is_regenerated(target):
    data, _ = ds.ensure(Target(target), tiny_workload())
    manifest = data.folder / "manifest.json"
    doc = json.loads(manifest.read_text())
    doc["complete"] = False
    manifest.write_text(json.dumps(doc))
    found, why = ds.check(Target(target), tiny_workload())
    assert found is None and "incomplete" in why
    _, generated = ds.ensure(Target(target), tiny_workload())
    assert generated


def test_contents_are_incompressible_and_unique(target):
    data, _ = ds.ensure(Target(target), tiny_workload())
    a = open(data.path(0), "rb").read()
    b = open(data.path(1), "rb").read()
    assert len(zlib.compress(a[-32768:])) > 0.99 * 32768
    assert a[-32768:] != b[-32768:]


def test_sample_sizes_follow_mean_and_stdev():
    w = tiny_workload(dataset__num_files=400, dataset__sample_size="1MiB",
                      dataset__sample_size_stdev="128KiB")
    params = ds.DatasetParams.from_workload(w)
    sizes = np.concatenate([params.sample_sizes(i) for i in range(400)])
    assert abs(sizes.mean() - 2**20) < 0.02 * 2**20
    assert 0.7 * 131072 < sizes.std() < 1.1 * 131072


def test_ranges_point_at_each_sample(target):
    w = tiny_workload(dataset__format="tfrecord", dataset__samples_per_file=5,
                      dataset__num_files=4)
    data, _ = ds.ensure(Target(target), w)
    files = np.array([2, 3])
    off, length = data.ranges(files, np.array([1, 4]), np.array([1, 1]))
    for f, o, n in zip(files, off, length, strict=False):
        assert o + n <= data.file_size(int(f)) and n > 0


def test_a_target_dropped_unreleased_lets_its_locks_go(target):
    # A Target held its locks through a reference cycle (a lock's folder-making callback held
    # the Target): dropped without `release`, it kept them until the cyclic collector ran,
    # and the next ensure of the same dataset in the process waited on itself for ever
    import fcntl
    import gc

    gc.disable()
    try:
        ds.ensure(Target(target), tiny_workload())  # the Target goes with the call
        for name in (".demo.lock", "../.runs.lock"):
            fd = os.open(target / "aiio" / "datasets" / name, os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises while held
            finally:
                os.close(fd)
    finally:
        gc.enable()
