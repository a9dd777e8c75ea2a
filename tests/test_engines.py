"""The engine registry: the engine a target gets, one-line refusals of unknown engines, and
what every registered engine says it can do."""

from __future__ import annotations

import pickle
from dataclasses import FrozenInstanceError
from types import SimpleNamespace

import pytest

from aiio import engines
from aiio.cache_methods import METHOD_DIRECT, METHOD_FADVISE, METHOD_NONE, METHOD_NULL, METHOD_S3
from aiio.engines.base import DURABLE_FSYNC, DURABLE_REQUEST, Engine
from aiio.errors import ConfigError
from aiio.options import Access

BUCKET = SimpleNamespace(access=Access(), loc=SimpleNamespace(bucket="b"))


def test_the_target_picks_the_engine_unless_one_is_asked_for():
    assert engines.choose("/mnt/data", METHOD_DIRECT) == "posix"
    assert engines.choose("S3://bucket/p", METHOD_S3) == "s3"
    assert engines.choose("/mnt/data", METHOD_NULL) == "null"
    assert engines.choose("/mnt/data", METHOD_DIRECT, "io_uring") == "io_uring"


@pytest.mark.parametrize("name", list(engines.REGISTRY))
def test_every_registered_engine_keeps_the_contract(name: str) -> None:
    eng = engines.make(name, BUCKET if name == "s3" else None, METHOD_FADVISE)
    assert isinstance(eng, Engine)
    assert eng.name == name
    with pytest.raises(FrozenInstanceError):
        eng.caps.queue_depth = 2  # capabilities are facts of the engine, not settings
    assert pickle.loads(pickle.dumps(eng)).caps == eng.caps  # crosses MPI's pickling


def test_capabilities_say_what_a_bucket_cannot_do():
    posix = engines.make("posix", None, METHOD_DIRECT)
    s3 = engines.make("s3", BUCKET, METHOD_S3)
    assert posix.caps.partial_overwrite and not s3.caps.partial_overwrite
    assert posix.caps.durable == DURABLE_FSYNC and s3.caps.durable == DURABLE_REQUEST
    assert posix.caps.device_confirms and not s3.caps.device_confirms
    assert engines.make("io_uring", None, METHOD_DIRECT).caps.queue_depth > 1
    with pytest.raises(ConfigError, match="cannot be rewritten in place"):
        s3.open_rw("any")


def test_the_null_method_never_gets_a_posix_engine_that_writes_nothing():
    eng = engines.make("posix", None, METHOD_NULL)
    assert eng.name == "null" and not eng.caps.device_confirms
    assert eng.setup().method == METHOD_NONE  # what a run keeps is written for real


def test_a_bucket_engine_crosses_a_fork_without_its_connection():
    eng = engines.make("s3", BUCKET, METHOD_S3)
    eng.io  # noqa: B018 - this process's connection object (no request made yet)
    assert eng._io is not None
    assert pickle.loads(pickle.dumps(eng))._io is None


@pytest.mark.parametrize(("name", "says"), [
    ("ceph", "unknown engine 'ceph'; choose one of: posix, io_uring, null, s3"),
    ("external:no.such.module", "cannot import no.such.module (No module named 'no'); an "
                                "engine module must be importable on every host"),
    ("external:json", "json has no make(target, method)"),
])
def test_an_engine_that_cannot_be_had_is_one_line(name: str, says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        engines.module_of(name)
    assert says in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize(("target", "name", "method", "says"), [
    ("/mnt/data", "s3", METHOD_DIRECT, "engine s3 needs an s3:// target"),
    ("s3://b/p", "posix", METHOD_S3, "engine posix needs a directory target"),
    ("/mnt/data", "null", METHOD_DIRECT, "use --cache null"),
    # the null method leaves out every read and write call: an io_uring run of it made none,
    # yet its result named io_uring, durable at fsync and confirmed by the device
    ("/mnt/data", "io_uring", METHOD_NULL, "the null method is the null engine: leave out "
                                           "--engine io_uring"),
])
def test_an_engine_of_the_wrong_kind_for_the_target_is_refused(target: str, name: str,
                                                               method: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        engines.choose(target, method, name)


def test_the_cli_refuses_an_unknown_engine_before_anything_runs(tmp_path) -> None:
    from .conftest import call_cli
    got = call_cli("run", "-p", "load", "-t", str(tmp_path), "--engine", "ceph")
    assert got.returncode == 2 and "unknown engine 'ceph'" in got.stderr
    assert not (tmp_path / "aiio").exists()


BROKEN = {  # engine modules a newcomer's first tries get wrong, each a file of its own
    "import_fails": 'raise RuntimeError("no driver on this host")\n',
    "bad_syntax": "def make(:\n",
    "make_fails": 'def make(target, method):\n    raise ValueError("bad config")\n',
    "makes_nothing": "def make(target, method):\n    return None\n",
    "make_one_arg": "def make(target):\n    return None\n",
    # the calls the contract's first list names and nothing more: the members a bucket
    # engine needs (with_streams, client_figures, aggregate, warnings) are left out
    "calls_only": "from aiio.engines.posix import PosixEngine\n"
                  "class Calls:\n    name, method, caps = 'calls', 'none', PosixEngine.caps\n"
                  + "".join(f"    def {c}(self, *a, **k): pass\n" for c in (
                      "reader", "writer", "setup", "open_rw", "fsync", "fsync_dir", "stat",
                      "listdir", "unlink", "makedirs", "drop_cached", "close"))
                  + "def make(target, method):\n    return Calls()\n",
    # holds what a process makes (a lock, a connection): rank 0 could not send it to the
    # other ranks under MPI, a traceback after 30 s
    "holds_a_lock": "import threading\nfrom tests.sleepy_engine import SleepyEngine\n"
                    "class Locked(SleepyEngine):\n    pass\n"
                    "def make(target, method):\n    e = Locked(method)\n"
                    "    e.lock = threading.Lock()\n    return e\n",
    # a registered engine's name: a train run on it was recorded as posix (its history
    # series and compare rows posix's), one named s3 said "engine s3" on a directory
    "named_posix": "from tests.sleepy_engine import SleepyEngine\n"
                   "def make(target, method):\n    return SleepyEngine(method, name='posix')\n",
    # no name: the result's engine was null, the console's "engine None"
    "named_none": "from tests.sleepy_engine import SleepyEngine\n"
                  "def make(target, method):\n    return SleepyEngine(method, name=None)\n",
    "named_in_lines": "from tests.sleepy_engine import SleepyEngine\n"
                      "def make(target, method):\n"
                      "    return SleepyEngine(method, name='my\\nengine')\n",
    # capabilities as a dict: a traceback as the run began
    "caps_dict": "from tests.sleepy_engine import SleepyEngine\n"
                 "def make(target, method):\n"
                 "    return SleepyEngine(method, caps={'durable': 'fsync returned'})\n",
    # reads by a method of its own: the result said o_direct of reads made through the cache
    "own_method": "from tests.sleepy_engine import SleepyEngine\n"
                  "def make(target, method):\n    return SleepyEngine('none')\n",
}


@pytest.mark.parametrize(("name", "says"), [
    ("external:", "engine external: names no module"),
    ("external:.relative", "engine external:.relative names no module"),
    ("external:import_fails", "cannot import import_fails (RuntimeError: no driver on this"),
    ("external:bad_syntax", "cannot import bad_syntax (SyntaxError: invalid syntax"),
    ("external:make_fails", "make_fails.make(target, method) failed: ValueError: bad config"),
    ("external:makes_nothing", "makes_nothing.make(target, method) gave None, not an engine"),
    ("external:make_one_arg", "make_one_arg.make(target, method) failed: TypeError"),
    ("external:calls_only", "calls_only.make(target, method) gave Calls, not an engine "
                            "(aiio.engines.base.Engine): it lacks aggregate, client_figures, "
                            "warnings, with_streams"),
    ("external:holds_a_lock", "holds_a_lock.make(target, method) gave an engine that cannot "
                              "be pickled (TypeError: cannot pickle '_thread.lock' object)"),
    ("external:named_posix", "engine external:named_posix calls itself posix, the name of a "
                             "registered engine: give it a name of its own"),
    ("external:named_none", "engine external:named_none calls itself None: its name must be "
                            "one word"),
    ("external:named_in_lines", "engine external:named_in_lines calls itself 'my\\nengine': "
                                "its name must be one word"),
    ("external:caps_dict", "engine external:caps_dict: its caps is a dict, not a "
                           "Capabilities (aiio.engines.base)"),
    ("external:own_method", "engine external:own_method reads by method none, not the run's "
                            "o_direct"),
])
def test_an_external_engine_that_breaks_is_one_line(name: str, says: str, tmp_path,
                                                     monkeypatch) -> None:
    for module, text in BROKEN.items():
        (tmp_path / f"{module}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as refused:
        engines.make(engines.choose(str(tmp_path), METHOD_DIRECT, name), None, METHOD_DIRECT)
    assert says in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize(("target", "method", "says"), [
    (SimpleNamespace(path="s3://b/p"), METHOD_S3,
     "engine external:tests.sleepy_engine works on files in folders; s3://b/p is a bucket"),
])
def test_an_external_engine_of_the_wrong_kind_for_the_target_is_refused(target, method,
                                                                       says: str) -> None:
    # on a bucket, a file engine's load failed in its clients (no such file) and the other
    # phases measured boto3 while the result named the file engine
    with pytest.raises(ConfigError, match=says):
        engines.make("external:tests.sleepy_engine", target, method)


def test_an_external_object_engine_is_refused_on_a_directory(tmp_path, monkeypatch) -> None:
    (tmp_path / "objects_only.py").write_text(
        "from dataclasses import replace\n"
        "from tests.sleepy_engine import CAPS, SleepyEngine\n"
        "def make(target, method):\n"
        "    return SleepyEngine(method, caps=replace(CAPS, folders=False))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=f"works on a bucket's objects; {tmp_path} is a "
                                          "directory"):
        engines.make("external:objects_only", SimpleNamespace(path=tmp_path), METHOD_DIRECT)


@pytest.mark.parametrize(("method", "refused"), [
    (METHOD_DIRECT, True), (METHOD_FADVISE, True), (METHOD_NONE, False)])
def test_an_engine_that_cannot_defeat_the_cache_runs_only_where_none_is_asked(
        method: str, refused: bool, tmp_path, monkeypatch) -> None:
    """`caps.cache_defeat` false: its reads may come from the client's page cache whatever
    the method says. Run by o_direct (the default on most filesystems), the result and report
    said "O_DIRECT: reads bypassed the page cache"; --cache none says they may not have."""
    (tmp_path / "cached_only.py").write_text(
        "from dataclasses import replace\n"
        "from tests.sleepy_engine import CAPS, SleepyEngine\n"
        "def make(target, method):\n"
        "    return SleepyEngine(method, caps=replace(CAPS, cache_defeat=False))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    target = SimpleNamespace(path=tmp_path)
    if not refused:
        assert engines.make("external:cached_only", target, method).method == method
        return
    with pytest.raises(ConfigError) as said:
        engines.make("external:cached_only", target, method)
    assert str(said.value) == (
        f"engine external:cached_only cannot get past the client's page cache "
        f"(caps.cache_defeat), so its reads are no {method} reads: run it with --cache none")


def test_an_engine_that_makes_no_io_needs_the_null_method(tmp_path) -> None:
    # the null engine loaded as an engine of one's own ran a load of no I/O recorded as an
    # o_direct run, status ok, at 194,025 MiB/s, into the history
    with pytest.raises(ConfigError, match="engine external:aiio.engines.null makes no read or "
                                          "write call: it runs with --cache null only"):
        engines.make("external:aiio.engines.null", SimpleNamespace(path=tmp_path),
                     METHOD_DIRECT)
    assert engines.make("external:aiio.engines.null", SimpleNamespace(path=tmp_path),
                        METHOD_NULL).name == "null"


def test_the_null_method_on_a_bucket_is_left_to_its_own_refusal() -> None:
    # the CLI's refusal of --cache null on a bucket says what to do (use a directory);
    # the engine's would have said to leave out --engine s3, which would not help
    assert engines.choose("s3://b/p", METHOD_NULL, "s3") == "s3"


def test_loader_threads_share_one_bucket_connection(monkeypatch):
    """A client's loader threads ask its engine for the connection at once; each must get the
    same one, or requests are counted on a connection the client's figures never read (a CI
    run counted 12 SDK calls of a client's 24 GETs). The constructor is slowed so that the
    threads meet inside it, as they can on a loaded host."""
    import threading
    import time

    from aiio.engines import s3 as s3_engine

    class SlowIO(s3_engine.ObjectIO):
        def __init__(self, *args, **kwargs) -> None:
            time.sleep(0.05)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(s3_engine, "ObjectIO", SlowIO)
    eng = engines.make("s3", BUCKET, METHOD_S3)
    start = threading.Barrier(4)
    got: list = []

    def ask() -> None:
        start.wait()
        got.append(eng.io)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(io) for io in got}) == 1 and eng.io is got[0]
