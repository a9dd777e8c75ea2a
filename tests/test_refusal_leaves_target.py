"""A command refused before its first write leaves the target as it found it: no aiio folder,
no ownership marker, no scratch folder, when the target had none. Every way an engine is
refused (an engine of one's own as it is made, for what it cannot do, on a bucket), a
sweep's first point, and datagen's own refusal."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .conftest import TINY_DATA, call_cli
from .test_s3_target import keys

SLEEPY = "external:tests.sleepy_engine"
# engines of one's own that load but cannot serve a directory, each refused as it is made
MODULES = {
    "make_fails": "def make(target, method):\n    raise ValueError('bad config')\n",
    "objects_only": "from dataclasses import replace\n"
                    "from tests.sleepy_engine import CAPS, SleepyEngine\n"
                    "def make(target, method):\n"
                    "    return SleepyEngine(method, caps=replace(CAPS, folders=False))\n",
    "holds_a_lock": "import threading\nfrom tests.sleepy_engine import SleepyEngine\n"
                    "def make(target, method):\n    e = SleepyEngine(method)\n"
                    "    e.lock = threading.Lock()\n    return e\n",
}


def listing(root: Path) -> list[str]:
    """Every file and folder below `root`, hidden ones too."""
    return sorted(str(Path(d, n).relative_to(root)) for d, dirs, files in os.walk(root)
                  for n in dirs + files)


@pytest.mark.parametrize(("phase", "engine", "extra", "says"), [
    ("train", "external:make_fails", (), "make_fails.make(target, method) failed"),
    ("train", "external:objects_only", (), "works on a bucket's objects"),
    ("train", "external:holds_a_lock", (), "cannot be pickled"),
    ("train", SLEEPY, ("--reader", "native"), "--reader native"),
    ("randrw", "external:tests.rigid_engine", ("--duration", "1s"),
     "the rigid engine cannot rewrite part of a file"),
    ("randrw", SLEEPY, ("--duration", "1s", "--set", "prep.iodepth=4",
                        "--set", "prep.read_share=1"),
     "the sleepy engine keeps at most 1 read(s) in flight"),
    ("checkpoint", "nope", (), "unknown engine 'nope'"),
])
def test_a_refused_engine_leaves_the_target_as_it_was(
        phase: str, engine: str, extra: tuple, says: str, tmp_path: Path, target: Path,
        results: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    modules = tmp_path / "modules"
    modules.mkdir()
    for name, text in MODULES.items():
        (modules / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(modules))
    (target / "theirs.txt").write_text("a file that was there before aiio")
    before = listing(target)
    got = call_cli("run", "-p", phase, "-t", str(target), "--results", str(results), "-q",
                   "--engine", engine, *TINY_DATA, *extra)
    assert got.returncode == 2 and says in got.stderr, got.stderr
    assert len(got.stderr.strip().splitlines()) == 1, got.stderr
    assert listing(target) == before
    assert not list(results.glob("*/result.json"))


def test_a_sweep_refused_at_its_first_point_leaves_the_target_as_it_was(
        tmp_path: Path, target: Path, results: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep opens the target before its first point, which makes the engine."""
    (tmp_path / "make_fails.py").write_text(MODULES["make_fails"])
    monkeypatch.syspath_prepend(str(tmp_path))
    got = call_cli("scale", "-p", "checkpoint", "-n", "1,2", "-t", str(target), "--results",
                   str(results), "-q", "--no-charts", "--engine", "external:make_fails")
    assert got.returncode == 2 and "make_fails.make(target, method) failed" in got.stderr, \
        got.stderr
    assert listing(target) == []
    assert not list(results.glob("*/result.json"))


@pytest.mark.parametrize(("engine", "says"), [
    (SLEEPY, "engine external:tests.sleepy_engine works on files in folders"),
    ("posix", "engine posix needs a directory target"),
])
def test_an_engine_refused_on_a_bucket_writes_nothing_there(
        engine: str, says: str, s3_server, s3_bucket: str, results: Path) -> None:
    got = call_cli("run", "-p", "checkpoint", "-t", f"s3://{s3_bucket}/er", "--results",
                   str(results), "-q", "--engine", engine)
    assert got.returncode == 2 and says in got.stderr, got.stderr
    assert keys(s3_server, s3_bucket) == set()  # not even aiio's marker object
    assert not list(results.glob("*/result.json"))


def test_datagen_refused_leaves_the_target_as_it_was(target: Path) -> None:
    got = call_cli("datagen", "-t", str(target), *TINY_DATA, "--set",
                   "dataset.sample_size=1TiB")
    assert got.returncode == 2 and "needs" in got.stderr, got.stderr
    assert listing(target) == []
