"""The oracle lab's scale-out filesystem: a real GlusterFS distributed volume of four bricks on
this host, each brick's disk throttled (tests/oracle/gluster.py).

fio calibrates it first, one file per job placed one per brick: reads and writes grow by a
brick's rate per job up to the brick count, then stay at the bricks' sum. aiio is then held
to fio's figures: training with each client's files on a brick of its own. Shuffled training
and checkpoint writes go where the volume's hash puts them: aiio records that placement, the
collision model it implies is each point's truth (fio on the same files and order reads it
too), and the verdict says where clients shared a brick; so it does for replicas loading
weights placed one file a brick.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiio.phases.train import epoch_order, shard_bounds
from aiio.results import result
from aiio.storage.placement import Placed, placement, servers_of
from aiio.units import MiB, format_size

from .conftest import REPO
from .oracle import bricks as bricks_model
from .oracle.gluster import (
    FIRST,
    Volume,
    brick_sockets,
    can_gluster,
    command_socket,
    gluster_volume,
)
from .test_oracle_lab import TRAIN as ORACLE_TRAIN

REASON = can_gluster() or (None if shutil.which("fio") else "fio is not installed")
# One worker runs the whole module, the test without the module's volume too: one glusterd
# per machine (its port)
pytestmark = [pytest.mark.root, pytest.mark.skipif(REASON is not None, reason=REASON or ""),
              pytest.mark.xdist_group("gluster")]

BRICKS = 4
RATE = 20 * MiB  # each brick's disk, reads and writes: four make 80 MiB/s, well below the
#                  ~200 MiB/s the FUSE client moves on two cores
JOBS = (1, 2, 4, 8)
FIO_FILE = 16 * MiB  # a time-based job reads its file again and again: the size only sets
#                      what is laid out before


class Failed(Exception):
    """A test's failure inside the rig."""


def _leftovers(root: Path, vol: Volume) -> list[str]:
    """What of the rig `vol`, built under `root`, is still there: mounts, loop devices,
    processes, its cgroup."""
    left = [line for line in Path("/proc/self/mounts").read_text().splitlines()
            if str(root) in line]
    for device in vol.devices:  # still attached to one of the rig's images
        backing = Path("/sys/block", Path(device).name, "loop", "backing_file")
        with contextlib.suppress(OSError):
            if vol.mount.parent.name in backing.read_text():
                left.append(f"{device}: {backing.read_text().strip()}")
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if str(root).encode() in (proc / "cmdline").read_bytes():
                left.append(f"process {proc.name}: {(proc / 'comm').read_text().strip()}")
    folder = command_socket(vol.mount.parent).parent  # glusterd's command socket's
    return left + [str(path) for path in (vol.cgroup, folder) if path.exists()]


# First in the module: one rig runs on a machine at a time, and the module's own is built by
# the first test that asks for it and stays up to the module's end.
def test_the_rig_leaves_nothing_behind_when_a_test_fails(tmp_path):
    held = None
    with pytest.raises(Failed), gluster_volume(tmp_path, 2, RATE) as vol:
        (vol.mount / "busy").write_bytes(b"x" * 4096)
        held = open(vol.mount / "busy", "rb")  # an open file keeps the mount busy
        assert _leftovers(tmp_path, vol)  # the check sees a rig that is up
        sockets = brick_sockets(vol.cgroup)  # outside the rig's folder: glusterd's choice
        assert len(sockets) == 2 and all(path.exists() for path in sockets)
        raise Failed
    try:
        assert _leftovers(tmp_path, vol) == []
        assert not any(path.exists() for path in sockets)
    finally:
        with contextlib.suppress(OSError):
            held.close()


@pytest.fixture(scope="module")
def volume(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Volume]:
    with gluster_volume(tmp_path_factory.mktemp("gluster"), BRICKS, RATE) as vol:
        yield vol


def truth(streams: int) -> float:
    """MiB/s of `streams` streams, each on its own brick while bricks last: a brick's rate
    per busy brick."""
    return min(streams, BRICKS) * RATE / MiB


@pytest.fixture(scope="module")
def fio_files(volume: Volume) -> list[Path]:
    """One file per fio job of the largest count, job j's on brick j mod BRICKS, laid out
    at full speed."""
    folder = volume.mount / "fio"
    folder.mkdir()
    files = []
    with volume.unthrottled():
        for j in range(max(JOBS)):
            path = volume.new_file(folder, j % BRICKS, stem=f"job{j}")
            with open(path, "wb") as fh:
                fh.write(os.urandom(FIO_FILE))
                os.fsync(fh.fileno())
            files.append(path)
    return files


def _fio(files: list[Path], rw: str, seconds: float = 2) -> float:
    """MiB/s fio moves with one psync O_DIRECT 1 MiB stream per file, for `seconds`."""
    jobs = [arg for j, path in enumerate(files)
            for arg in (f"--name=j{j}", f"--filename={path}")]
    proc = subprocess.run(
        [*FIRST, "fio", f"--rw={rw}", "--bs=1M", f"--size={FIO_FILE}", "--direct=1",
         "--ioengine=psync", "--time_based", f"--runtime={seconds}", "--group_reporting",
         "--output-format=json", *jobs],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["jobs"][0][rw]["bw_bytes"] / MiB


def calibrate(fio_files: list[Path]) -> dict[int, float]:
    """fio's reads at each job count, one job per placed file: MiB/s by jobs."""
    return {jobs: _fio(fio_files[:jobs], "read") for jobs in JOBS}


# A steady moment: two measurements back to back agree this closely. On a machine shared with
# other work the FUSE client and the bricks' kernel threads slow down with it: at a load
# average of 10 fio's 8-job point read 55.8 MiB/s of 80 once.
STEADY = 0.05
TRIES = 3


def agree(a: float, b: float) -> bool:
    return abs(a - b) <= STEADY * (a + b) / 2


def steady_calibration(fio_files: list[Path]) -> dict[int, float]:
    """fio's calibration at a steady moment: taken twice back to back, again (TRIES times at
    most) while any job count's two readings disagree; their mean."""
    for _ in range(TRIES):
        first, second = calibrate(fio_files), calibrate(fio_files)
        if all(agree(first[n], second[n]) for n in JOBS):
            break
    return {n: (first[n] + second[n]) / 2 for n in JOBS}


@pytest.fixture(scope="module")
def calibration(volume: Volume, fio_files: list[Path]) -> dict[int, float]:
    return steady_calibration(fio_files)


def test_fio_reads_a_brick_rate_per_placed_job_up_to_the_bricks(calibration):
    assert calibration == pytest.approx({jobs: truth(jobs) for jobs in JOBS}, rel=0.05)


def test_fio_writes_at_most_a_brick_rate_per_placed_job(fio_files):
    # No cache takes writes in: never more than a brick's rate per busy brick, and more than
    # one brick's worth once jobs write to several. They can come out well under, as each
    # 1 MiB write also waits for the brick's synchronous journal and the loop device's worker,
    # kernel threads that get no raised priority: 1 to 8 % under when the rig was built, 20
    # and 31 % under at 4 jobs at load averages of 20 and 17
    for jobs in JOBS:
        got = _fio(fio_files[:jobs], "write", seconds=1)
        assert truth(jobs) * 0.6 < got < truth(jobs) * 1.05, (jobs, got)


# --- aiio on the volume, each client's files on its own brick -----------------------------

# Training with the shuffle off: client k of n reads its contiguous share of the files, epoch
# after epoch, so with the dataset's quarters placed one per brick, 1, 2 and 4 clients each
# read bricks no other client reads (one at a time: a share of two quarters is read front to
# back) and 8 read two to a brick. One loader thread, one batch of read-ahead, no compute:
# every client asks more than its brick gives (the FUSE oracle's training workload,
# tests/test_oracle_lab.py).
def _edited(text: str, *changes: tuple[str, str]) -> str:
    """`text` with each (old, new) replaced; an old that is not there is an error, not a
    workload silently left as it was."""
    for old, new in changes:
        assert old in text, old
        text = text.replace(old, new)
    return text


TRAIN = _edited(ORACLE_TRAIN, ('"oracle-train"', '"gluster-train"'),
                ("num_files = 32", "num_files = 128"),
                ("files_per_dir = 32", "files_per_dir = 128"),
                ("prefetch = 1", 'prefetch = 1\nshuffle = "off"'))


def _aiio(*args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([*FIRST, sys.executable, "-m", "aiio", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, COLUMNS="160"))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def _placed_dataset(volume: Volume, spec: Path, name: str) -> None:
    """aiio's dataset for `spec` (workload `name`) on the volume, written at full speed, its
    files then moved so that quarter q of them (in file order) lives on brick q."""
    with volume.unthrottled():
        _aiio("datagen", "--workload", str(spec), "--target", str(volume.mount))
        files = sorted(volume.mount.glob(f"aiio/datasets/{name}/d*/f*"))
        assert files
        for i, path in enumerate(files):
            volume.place(path, i * BRICKS // len(files))


def _scale(tmp: Path, volume: Volume, spec: Path, phase: str, *extra: str) -> tuple[dict, str]:
    """A sweep over JOBS clients: its result and what it printed (its page in `tmp`/r)."""
    proc = _aiio("scale", "--phase", phase, "--workload", str(spec), "--clients",
                 ",".join(map(str, JOBS)), "--target", str(volume.mount), "--results",
                 str(tmp / "r"), "--quiet", "--no-history", "--no-charts", *extra)
    (folder,) = [p for p in (tmp / "r").iterdir() if p.is_dir()]
    return result.load(folder), proc.stdout


def _page(tmp: Path) -> str:
    """The sweep's report page, as text (tags out, spaces as one)."""
    (page,) = (tmp / "r").glob("*/report.html")
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page.read_text())).split())


def _sweep(tmp: Path, volume: Volume, spec: Path, phase: str, *extra: str) -> dict:
    return _scale(tmp, volume, spec, phase, *extra)[0]


def assert_linear_to_the_bricks(verdict: dict) -> None:
    """Linear up to 4 clients (one per brick), the knee at 8, saturated at the bricks' sum."""
    assert verdict["shape"] == "saturated", verdict["statements"]
    assert verdict["linear_up_to"] == BRICKS and verdict["knee"] == 2 * BRICKS, \
        verdict["statements"]
    assert verdict["plateau"]["mib_s"] == pytest.approx(truth(BRICKS), rel=0.05)


# Large samples: 8 MiB, one a batch, 0.4 s of a brick and 0.8 s of half of one. A point
# ends with each client part way through its next batch, up to 8 MiB that no consumed figure
# holds, and aiio refuses a point where those bytes pass 5 % of what the storage fed. At 5 s
# (six batches a client at 8 clients) they came to 5 % in a CI run and aiio refused the
# point; with batches of two samples it refused 8 clients twice in three runs. At 15 s the
# 8-client point holds 18 batches a client: half a batch in flight on average is 2.8 %, and
# passing 5 % would take all 8 clients at once near the end of a batch.
LARGE_S = "15s"
LARGE = _edited(TRAIN, ('"gluster-train"', '"gluster-large"'),
                ('sample_size = "2MiB"', 'sample_size = "8MiB"'),
                ("num_files = 128", "num_files = 32"))


def _placed_sweep(tmp: Path, volume: Volume, fio_files: list[Path], spec: str,
                  duration: str) -> tuple[dict, dict[int, float]]:
    """aiio's training sweep on the dataset of `spec`, placed, and fio's calibration taken
    right before it: on a machine shared with other work, the module's first one is minutes
    old by then (a load spike between the two failed the test though aiio read the bricks)."""
    name = spec.split('name = "', 1)[1].split('"', 1)[0]
    path = tmp / f"{name}.toml"
    path.write_text(spec)
    _placed_dataset(volume, path, name)
    calibration = steady_calibration(fio_files)
    return _sweep(tmp, volume, path, "train", "--duration", duration), calibration


def _aggregates(sweep: dict) -> dict[int, float]:
    return {row["clients"]: row["aggregate_mib_s"] for row in sweep["table"]}


def assert_one_client_a_brick(volume: Volume, sweep: dict) -> None:
    """The placement each point recorded: no brick read by two clients while there are bricks
    enough, two on every brick at 8, every brick busy nearly all the time there; and the
    verdict says the knee is not from placement."""
    for p in sweep["points"]:
        n, placed = p["clients"], p["result"]["aggregate"]["placement"]
        readers = sorted(len(c) for c in _clients_by_brick(volume, placed).values())
        assert readers[-1] == (1 if n <= BRICKS else n // BRICKS), (n, placed)
        assert placed["collided_s"] <= 0.05 * placed["window_s"], (n, placed)
        if n == 2 * BRICKS:
            assert all(s["busy_s"] >= 0.9 * placed["window_s"] for s in placed["servers"])
        # every byte the clients read is on one brick or another
        assert sum(s["bytes"] for s in placed["servers"]) == \
            p["result"]["aggregate"]["delivered"]["device_bytes"]
    verdict = sweep["verdict"]
    assert verdict["placement"]["collided_at"] == [], verdict["statements"]
    (said,) = [s for s in verdict["statements"] if s.startswith("placement:")]
    assert "at no count" in said and "not from where the files were placed" in said, said


def test_placed_training_reads_fio_calibration_at_every_point(tmp_path, volume, fio_files):
    sweep, calibration = _placed_sweep(tmp_path, volume, fio_files, TRAIN, "3s")
    assert _aggregates(sweep) == pytest.approx(calibration, rel=0.05), calibration
    assert_linear_to_the_bricks(sweep["verdict"])
    assert_one_client_a_brick(volume, sweep)


def test_placed_training_of_large_samples_reads_fio_calibration(tmp_path, volume, fio_files):
    sweep, calibration = _placed_sweep(tmp_path, volume, fio_files, LARGE, LARGE_S)
    assert _aggregates(sweep) == pytest.approx(calibration, rel=0.05), calibration
    assert_linear_to_the_bricks(sweep["verdict"])
    assert_one_client_a_brick(volume, sweep)


# --- shuffled: the files where the volume's hash put them --------------------------------

# The same training with the shuffle on: every epoch each client reads its share of a fresh
# permutation of the samples (one a file), so clients land on bricks at random and share one
# while another idles. Raw files of exactly one sample: aiio reads each file whole, as fio does.
# Two truths for a point, both from the real placement (the rig's own probe of each file) and
# the clients' real order (aiio's seeded permutation): fio reading each client's files in that
# order, one job a client, just before the sweep; and the collision model (tests/oracle/
# bricks.py), each busy brick giving its rate shared by its readers, with the throttle's burst:
# a brick idle for a slice (100 ms) lets up to a slice's bytes by at once, which a pure rate
# model misses by a quarter at 2 clients.
SHUFFLED = _edited(TRAIN, ('"gluster-train"', '"gluster-shuffled"'),
                   ('shuffle = "off"', 'shuffle = "sample"'), ('format = "npz"', 'format = "raw"'),
                   ("num_files = 128", "num_files = 512"),
                   ("files_per_dir = 128", "files_per_dir = 512"),
                   ('sample_size = "2MiB"', 'sample_size = "1MiB"'))
# 10 s points of 1 MiB samples: with 2 MiB ones the 8-client point held 6 % of its bytes in
# batches still being read at its end, and aiio refused it (over 5 %); at 5 s a point moved
# 10 % about the model from run to run (the moment a client reaches a brick decides whom it
# meets there), and missed it one run in four
SHUFFLED_S = 10.0
SAMPLE = 1 * MiB
FIO_FILES = 300  # of a job's order (fio takes 4 KiB of names); a job reads its list again
SLICE_S = 0.1  # the blkio throttle's time slice
PEAK = 200 * MiB  # what the FUSE client moves from a brick with credit (2 MiB in 0.009 s)


def _dataset_files(volume: Volume, name: str) -> list[Path]:
    files = sorted(volume.mount.glob(f"aiio/datasets/{name}/d*/f*"))
    assert files
    return files


def client_orders(count: int, n: int, epochs: int, seed: int = 1) -> list[list[int]]:
    """The files each of n clients reads, in order, over `epochs` epochs."""
    return [[f for epoch in range(epochs)
             for f in epoch_order("sample", count, seed, epoch)[slice(*shard_bounds(count, n, k))]]
            for k in range(n)]


def shuffled_model(bricks: list[int], n: int, seconds: float, burst: bool) -> float:
    """MiB/s of n clients reading their shares of each epoch's permutation, one file at a
    time, the bricks shared by whoever reads them at the moment (with the throttle's burst)."""
    sequences = [[(bricks[f], SAMPLE) for f in order]
                 for order in client_orders(len(bricks), n, epochs=4)]
    return bricks_model.aggregate(sequences, RATE, seconds, burst=RATE * SLICE_S * burst,
                                  peak=PEAK) / MiB


def _fio_in_order(orders: list[list[Path]], seconds: float | None = None) -> float:
    """MiB/s of fio reading, one psync O_DIRECT 1 MiB job a client, each job's files (all in
    one folder) whole and in its order, for `seconds` (None: until each has read its files):
    every job's bytes over the slowest job's time."""
    (folder,) = {path.parent for files in orders for path in files}
    # named within the folder: fio takes 4,096 characters of file names a job
    jobs = [arg for k, files in enumerate(orders)
            for arg in (f"--name=c{k}", "--filename=" + ":".join(p.name for p in files))]
    timed = ["--time_based", f"--runtime={seconds:g}"] if seconds else []
    proc = subprocess.run(
        [*FIRST, "fio", "--rw=read", "--bs=1M", "--direct=1", "--ioengine=psync",
         f"--directory={folder}", "--file_service_type=sequential", *timed,
         "--openfiles=1",  # each file opened as its turn comes, as a data loader does
         "--output-format=json", *jobs],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    runs = [job["read"] for job in json.loads(proc.stdout)["jobs"]]
    return sum(r["io_bytes"] for r in runs) / MiB / (max(r["runtime"] for r in runs) / 1000)


@pytest.fixture(scope="module")
def shuffled_sweep(tmp_path_factory: pytest.TempPathFactory,
                   volume: Volume) -> tuple[dict, str, list[int], dict[int, float], str, Path]:
    """The shuffled training sweep: its result, what it printed, each file's brick, fio's
    reading of the clients' orders at each count, the sweep's page and its folder."""
    tmp = tmp_path_factory.mktemp("shuffled")
    spec = tmp / "gluster-shuffled.toml"
    spec.write_text(SHUFFLED)
    with volume.unthrottled():
        _aiio("datagen", "--workload", str(spec), "--target", str(volume.mount))
    files = _dataset_files(volume, "gluster-shuffled")
    bricks = [volume.brick_of(path) for path in files]
    # one epoch's share, or its first FIO_FILES: a lone client reads about 500 in a point
    fio = {n: _fio_in_order([[files[f] for f in order[:FIO_FILES]] for order in
                             client_orders(len(files), n, epochs=1)], SHUFFLED_S)
           for n in JOBS}
    sweep, printed = _scale(tmp, volume, spec, "train", "--duration", f"{SHUFFLED_S:g}s")
    (folder,) = (tmp / "r").glob("*/report.html")
    return sweep, printed, bricks, fio, _page(tmp), folder.parent


def test_shuffled_training_reads_fio_and_the_collision_model_of_its_placement(shuffled_sweep):
    sweep, _, bricks, fio, _, _ = shuffled_sweep
    pure = {n: shuffled_model(bricks, n, SHUFFLED_S, burst=False) for n in JOBS}
    model = {n: shuffled_model(bricks, n, SHUFFLED_S, burst=True) for n in JOBS}
    got = _aggregates(sweep)
    print(f"shuffled: aiio {got}, fio {fio}, model {model}, without the burst {pure}")
    # below linear from 2 clients on, though no brick is ever asked for more than its rate
    assert all(pure[n] < 0.95 * truth(n) for n in JOBS if n > 1), pure
    # Where clients collide the model is the judge: aiio reads it within the 10 %
    # placement-driven sweeps are held to (fio's one run is no steadier than aiio's: a CI run
    # had fio 9 % under the model at 2 clients and aiio on it, 10.06 % apart). A lone client
    # (nothing to collide with) hops from brick to brick on the throttle's bursts, which the
    # model lets by more freely than the kernel (a read waits until the whole of it is
    # allowed, rounded up to the slice): the truth there lies between the model (the most
    # the bursts let by) and what the kernel's rounding leaves, and one run of either tool
    # falls anywhere from 0 to 13 % under the model (CI: aiio and fio alike 5 to 13 % under;
    # once aiio 1 % under and fio 10 % under, 10.1 % apart). So a lone client is held
    # to no more than 10 % under the lower of fio's reading and the model's, and no more
    # than 5 % over the model (the most the bursts let by).
    # fio is held to the model less tightly than aiio: it checks the rig and the model, not
    # aiio. A CI run read fio 10.3 % under the model at 4 clients with aiio 0.5 % from fio
    # (56.6 and 56.9 MiB/s against 63.1): the model, not either tool, was off that time.
    assert 0.90 * min(fio[1], model[1]) <= got[1] <= 1.05 * model[1], (got, fio, model)
    collided = [n for n in JOBS if n > 1]
    for measured, rel in ((fio, 0.12), (got, 0.10)):
        assert {n: measured[n] for n in collided} == \
            pytest.approx({n: model[n] for n in collided}, rel=rel), (got, fio, model)


def test_shuffled_training_says_where_the_knee_comes_from(volume, shuffled_sweep):
    sweep, printed, _, _, page, _ = shuffled_sweep
    verdict = sweep["verdict"]
    assert [n for n in JOBS if n > 1] == verdict["placement"]["collided_at"], verdict
    (said,) = [s for s in verdict["statements"] if s.startswith("placement:")]
    for p in sweep["points"]:
        placed = p["result"]["aggregate"]["placement"]
        # each brick's bytes are the clients' reads of its files
        assert sum(s["bytes"] for s in placed["servers"]) == \
            p["result"]["aggregate"]["delivered"]["device_bytes"]
        hot = max(placed["servers"], key=lambda s: s["bytes"])
        assert placed["hot"] == hot["server"]
        if p["clients"] > 1:
            assert f"at {p['clients']}:" in said and placed["hot"] in said, said
        # the page shows each brick's bytes at this count, and names the hot one
        assert placed["hot"] in page
    assert "Where the bytes went" in page, page[:2000]
    assert "placement:" in printed
    for brick in volume.bricks:
        assert str(brick) in page


def test_a_shuffled_run_page_shows_each_brick_and_the_hot_one(tmp_path, shuffled_sweep):
    # one point's own page: every brick with its bytes, files, clients and time busy
    sweep, folder = shuffled_sweep[0], shuffled_sweep[-1]
    point = next(p for p in sweep["points"] if p["clients"] == 2)
    folder = folder / point["folder"]
    _aiio("report", str(folder), "--output", str(tmp_path / "run.html"), "--no-charts")
    page = " ".join(html.unescape(re.sub(r"<[^>]+>", " ",
                                         (tmp_path / "run.html").read_text())).split())
    placed = point["result"]["aggregate"]["placement"]
    assert f"hot: {placed['hot']}; clients shared a server while another idled" in page, page
    for server in placed["servers"]:
        assert f"{server['server']} {format_size(server['bytes'])} {server['files']} 0, 1" \
            in page, page


# --- where the bytes went: checkpoint writes placed by the volume's own hashing -------------

# A fixed checkpoint split over the clients, one file each, written and made durable at once
# (no restore: the writes are what is judged). The volume places each file by its name's hash
# in its (new) folder's layout, so clients share bricks while others stay idle: the truth of a
# point is the collision model, the slowest brick's share (each client writes S / n, a brick
# holding m of the files is done after m S / n at its rate: the aggregate is n / max m bricks'
# rates), which fio writing files placed as aiio's were measures.
CHECKPOINT = 64 * MiB  # 3.2 s of one brick at one client, 0.8 s for a brick with one of 8
CHECKPOINT_SET = ("--set", f"checkpoint.size={CHECKPOINT // MiB}MiB",
                  "--set", "checkpoint.restore=false")


def _checkpoint_spec(tmp: Path) -> Path:
    spec = tmp / "gluster-train.toml"
    spec.write_text(TRAIN)
    return spec


def _clients_by_brick(volume: Volume, placement: dict) -> dict[int, list[int]]:
    """Clients by the index of the brick their files were on (every brick, idle ones too)."""
    assert placement["source"] == "glusterfs", placement
    out = {}
    for server in placement["servers"]:
        (brick,) = [i for i, b in enumerate(volume.bricks) if server["server"].endswith(str(b))]
        out[brick] = server["clients"]
    return out


def collision_model(n: int, bricks: dict[int, list[int]]) -> float:
    """MiB/s of n equal shards written at once: the brick with the most is done last."""
    return n * RATE / MiB / max(len(clients) for clients in bricks.values())


def test_placement_names_the_brick_whose_folder_holds_each_file(volume):
    # aiio's probe against the bricks' own folders: each file is where the probe says
    folder = volume.mount / "probe"
    folder.mkdir()
    for k in range(8):
        (folder / f"f{k}").write_bytes(b"x")
    files = [Placed(0, str(folder / f"f{k}"), 1, 0.0) for k in range(8)]
    placed = placement(str(folder), files, "the probe's files")
    assert sorted(s["server"] for s in placed["servers"]) == \
        sorted(servers_of(str(volume.mount)))
    assert len(placed["servers"]) == BRICKS
    for server in placed["servers"]:
        (brick,) = [b for b in volume.bricks if server["server"].endswith(str(b))]
        assert server["files"] == len(list((brick / "probe").iterdir()))
    assert sum(s["files"] for s in placed["servers"]) == 8


def _fio_writes(volume: Volume, bricks: list[int], size: int) -> float:
    """MiB/s of fio writing `size` bytes per job (job k to a new file on brick bricks[k]), all
    made durable: every job's bytes over the slowest job's time, as aiio's time to persist."""
    folder = volume.mount / "checkpoint-fio"
    folder.mkdir()
    try:
        files = [volume.new_file(folder, b, stem=f"w{k}") for k, b in enumerate(bricks)]
        jobs = [arg for k, path in enumerate(files)
                for arg in (f"--name=w{k}", f"--filename={path}")]
        proc = subprocess.run(
            [*FIRST, "fio", "--rw=write", "--bs=1M", f"--size={size}", "--direct=1",
             "--ioengine=psync", "--end_fsync=1", "--output-format=json", *jobs],
            capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(folder)
    assert proc.returncode == 0, proc.stderr
    runs = [job["write"] for job in json.loads(proc.stdout)["jobs"]]
    return sum(r["io_bytes"] for r in runs) / MiB / (max(r["runtime"] for r in runs) / 1000)


def _checkpoint_run(tmp: Path, volume: Volume, spec: Path, n: int) -> dict:
    """The aggregate of a checkpoint run of n clients; its console shows where the bytes
    went, every brick with its bytes, and the hot one."""
    results = Path(tempfile.mkdtemp(dir=tmp))
    proc = _aiio("run", "--phase", "checkpoint", "--workload", str(spec), "--clients", str(n),
                 "--target", str(volume.mount), "--results", str(results), "--quiet",
                 "--no-history", "--no-report", *CHECKPOINT_SET)
    (folder,) = [p for p in results.iterdir() if p.is_dir()]
    agg = result.load(folder)["aggregate"]
    assert f"hot: {agg['placement']['hot']}" in " ".join(proc.stdout.split()), proc.stdout
    assert proc.stdout.count(str(volume.mount.parent)) >= BRICKS, proc.stdout
    return agg


# The bricks' writes slow down with the machine too (their journal and loop device are
# kernel threads at no raised priority): fio writing aiio's placement a moment after aiio read
# 14.1 MiB/s where aiio had read 19.4, and 19.9 where aiio had read 17.0. fio just before and
# just after aiio's run must agree (STEADY).


def _bracketed(tmp: Path, volume: Volume, spec: Path, n: int,
               bricks: list[int]) -> tuple[float, list[float], dict]:
    """aiio's write MiB/s at `n` clients between two fio runs on the same placement, taken
    again (up to TRIES times) until the two fio runs agree within STEADY: (aiio, fio before
    and after, aiio's placement)."""
    size = CHECKPOINT // n
    for _ in range(TRIES):
        before = _fio_writes(volume, bricks, size)
        agg = _checkpoint_run(tmp, volume, spec, n)
        after = _fio_writes(volume, bricks, size)
        if agree(before, after):
            break
    return agg["write_mib_s"], [before, after], agg["placement"]


@pytest.fixture(scope="module")
def checkpoint_sweep(tmp_path_factory: pytest.TempPathFactory,
                     volume: Volume) -> tuple[dict, str]:
    """aiio's checkpoint sweep over 1, 2, 4, 8 clients on the volume, the files where the
    volume's hash put them: its result and what it printed."""
    tmp = tmp_path_factory.mktemp("checkpoint")
    return _scale(tmp, volume, _checkpoint_spec(tmp), "checkpoint", *CHECKPOINT_SET)


def _sweep_bricks(volume: Volume, sweep: dict) -> dict[int, dict[int, list[int]]]:
    """Each count's clients by brick, from the sweep's placement."""
    return {p["clients"]: _clients_by_brick(volume, p["result"]["aggregate"]["placement"])
            for p in sweep["points"]}


# Counts compared with fio: one brick, two clients of four sharing one, four of eight on one
BRACKETED = (1, 4, 8)


def test_checkpoint_writes_read_fio_on_the_same_placement(tmp_path, volume, checkpoint_sweep):
    # A new folder's layout turns with the folder's name, but the names land in the same
    # places relative to it, so the bricks' loads of each count repeat from the sweep's run.
    spec = _checkpoint_spec(tmp_path)
    got, fio, model = {}, {}, {}
    for n, bricks in _sweep_bricks(volume, checkpoint_sweep[0]).items():
        if n not in BRACKETED:
            continue
        of_client = {c: b for b, clients in bricks.items() for c in clients}
        got[n], fio[n], placed = _bracketed(tmp_path, volume, spec, n,
                                            [of_client[c] for c in range(n)])
        loads = sorted(len(c) for c in _clients_by_brick(volume, placed).values())
        assert loads == sorted(len(c) for c in bricks.values()), (bricks, placed)
        model[n] = collision_model(n, bricks)
    # fio on the same placement, just before and after, reads the collision model (a brick
    # back from idle lets a little more by), and so does aiio, each within the 10 % the
    # collision model is held to. aiio's time to persist also includes every client making
    # the checkpoint's folder (on every brick of the volume, each a synchronous journal write
    # through its throttle) and its file, which fio, writing files made before, does not: 0
    # to 0.17 s of the 1.6 s at 4 and 8 clients, where with fio steady at 39.5 MiB/s aiio
    # read 36.2 to 40.4.
    for n in BRACKETED:
        assert fio[n] == pytest.approx([model[n]] * 2, rel=0.10), (n, fio, got, model)
    assert got == pytest.approx(model, rel=0.10), (fio, model)


def test_checkpoint_sweep_says_where_the_knee_comes_from(volume, checkpoint_sweep):
    sweep, printed = checkpoint_sweep
    shared = []
    for n, bricks in _sweep_bricks(volume, sweep).items():
        placement = next(p["result"]["aggregate"]["placement"]
                         for p in sweep["points"] if p["clients"] == n)
        assert sorted(c for clients in bricks.values() for c in clients) == list(range(n))
        loads = sorted(len(clients) for clients in bricks.values())
        assert placement["hot"].endswith(str(volume.bricks[max(bricks, key=lambda b:
                                                                len(bricks[b]))]))
        if loads[-1] > 1 and loads[0] < loads[-1]:  # a brick shared while another did less
            shared.append(n)
    # names hash the same way in every new folder: two clients of four always share a brick
    assert shared, "no count had clients sharing a brick: the test proves nothing"
    verdict = sweep["verdict"]
    (said,) = [s for s in verdict["statements"] if s.startswith("placement:")]
    for n in shared:
        assert f"at {n}:" in said, said
    assert verdict["placement"]["collided_at"] == shared
    # printed too: each shared count's hot brick, with its bytes and the others'
    assert "placement:" in printed, printed
    for n in shared:
        hot = next(p["result"]["aggregate"]["placement"]["hot"]
                   for p in sweep["points"] if p["clients"] == n)
        assert hot in " ".join(printed.split()), printed


# --- model loading: every replica reads every weight file ---------------------------------

# Four weight files of 4 MiB, file k placed on brick k, one reader a replica: every replica
# reads the files in the same order, so the replicas move together from brick to brick, all
# on one while the other three idle: the knee is the placement's, and the verdict says so.
# The aggregate is not held to a model: replicas in step are a balance that the smallest lead
# tips (a replica ahead reaches the next brick alone and gains), so it turns on how closely the
# replicas start. fio's jobs, started less closely, read 28.5 / 25.4 / 31.3 / 24.3 MiB/s at 1
# / 2 / 4 / 8 where aiio read 34.2 / 25.4 / 22.4 / 21.4 and the collision model in step says
# 40.0 / 26.7 / 22.9 / 21.3 (with the throttle's burst as each brick is reached).
LOAD = """
[workload]
name = "gluster-load"
[load]
size = "16MiB"
files = 4
threads = 1
transfer_size = "1MiB"
"""
WEIGHT = 4 * MiB


def _placed_weights(tmp: Path, volume: Volume, spec: Path) -> list[Path]:
    """The weights of `spec` written by a first run at full speed, file k moved to brick k."""
    with volume.unthrottled():
        _aiio("run", "--phase", "load", "--workload", str(spec), "--clients", "1", "--target",
              str(volume.mount), "--results", str(tmp / "first"), "--quiet", "--no-history",
              "--no-report")
        weights = sorted(volume.mount.glob("aiio/models/gluster-load-*/weights-*.bin"))
        assert len(weights) == BRICKS, weights
        for k, path in enumerate(weights):
            volume.place(path, k)
    return weights


def test_placed_load_reads_the_collision_model_and_names_the_placement(tmp_path, volume):
    spec = tmp_path / "gluster-load.toml"
    spec.write_text(LOAD)
    weights = _placed_weights(tmp_path, volume, spec)
    sweep, printed = _scale(tmp_path, volume, spec, "load")
    order = [(volume.brick_of(path), WEIGHT) for path in weights]
    model = {n: bricks_model.aggregate([order] * n, RATE, burst=RATE * SLICE_S, peak=PEAK) / MiB
             for n in JOBS}
    got = {row["clients"]: row["last_done_mib_s"] for row in sweep["table"]}
    print(f"placed load: aiio {got}, model {model}")
    # eight replicas on four bricks get less than half of the bricks' sum: they share one
    assert got[8] < truth(8) / 2, (got, model)
    for p in sweep["points"]:
        placed = p["result"]["aggregate"]["placement"]
        # every replica read every brick's file
        assert all(s["clients"] == list(range(p["clients"])) and s["bytes"] ==
                   WEIGHT * p["clients"] for s in placed["servers"]), placed
    verdict = sweep["verdict"]
    assert verdict["placement"]["collided_at"] == [n for n in JOBS if n > 1], verdict
    assert "placement: clients shared a server while another was idle" in printed


def test_a_shuffled_run_prints_where_the_bytes_went(monkeypatch, capsys, tmp_path,
                                                    shuffled_sweep):
    # what the console printed at the end of that point, drawn again from its result
    from aiio.term.console import phase_tables, print_result

    monkeypatch.setenv("COLUMNS", "220")
    point = next(p for p in shuffled_sweep[0]["points"] if p["clients"] == 2)
    res = dict(point["result"])
    print_result(res, tmp_path, phase_tables(res))
    printed = " ".join(capsys.readouterr().out.split())
    placed = res["aggregate"]["placement"]
    assert f"where the bytes went (the dataset's files, as the clients read them; hot: " \
           f"{placed['hot']}" in printed, printed
    for server in placed["servers"]:
        assert server["server"] in printed and format_size(server["bytes"]) in printed
