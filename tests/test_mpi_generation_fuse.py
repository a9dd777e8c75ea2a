"""MPI generation on a mount whose writes are slow (the FUSE rate oracle): generators killed
in a write the daemon has taken are slow to die, and a Ctrl-C or a rank's SIGTERM must still
leave at most the files they are writing. A module of its own: a module on the oracle runs in
the serial pass (tests/conftest.py), and the other MPI generation tests need not."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from .mpi import needs_mpi, ranks_of
from .oracle.mount import Rates, can_mount_fuse, ratefs
from .test_mpi_generation import (
    HANG_GUARD_S,
    aiio_lines,
    generators,
    hit_and_wait,
    start_generating,
)

# A FUSE write the daemon has taken cannot be cut short: a generator SIGKILLed in one ends
# only once it is answered, 2 s at most here (as on a throttled network mount), and the
# file it writes cannot be removed before that (the kernel holds the file's lock).
SLOW_WRITES = Rates(write_stream=2048)
# Few files: the throttled mount's backing store is a small tmpfs, and aiio checks the space.
SLOW_DATA = ("--set", "dataset.num_files=400", "--set", "dataset.sample_size=4KiB",
             "--set", "dataset.sample_size_stdev=0", "--set", "dataset.files_per_dir=100")


def dataset_files(target: Path) -> list[Path]:
    """The files the generation left in the dataset's folder (its lock file, beside the
    folder, is no file the generation wrote)."""
    return [p for p in (target / "aiio" / "datasets" / "demo").rglob("*") if p.is_file()]


def hit_slow_generators(tmp_path: Path, results: Path, hit) -> tuple[str, int, list[Path]]:
    """A 2-rank generation on the slow-writing mount, hit(proc, ranks) once every generator
    is done with files beyond the one it writes: the launcher's stderr, exit code, and the
    number of generators and the files that stayed once the job ended."""
    with ratefs(tmp_path, SLOW_WRITES, size_mib=256) as mount:
        proc = start_generating(mount, results, data=SLOW_DATA)
        generating = sum(len(generators(r)) for r in ranks_of(proc).values())
        deadline = time.monotonic() + HANG_GUARD_S
        while len(dataset_files(mount)) < 3 * generating and time.monotonic() < deadline:
            time.sleep(0.1)
        err, left = hit_and_wait(proc, lambda ranks: hit(proc, ranks))
        assert proc.returncode != 0, err
        assert "Traceback" not in err, err
        assert not left
        return err, generating, dataset_files(mount)


@needs_mpi
@pytest.mark.long  # 10 to 12 s
@pytest.mark.skipif(can_mount_fuse() is not None, reason=can_mount_fuse() or "")
def test_ctrl_c_while_generators_are_slow_to_die_removes_all_they_wrote(tmp_path, results):
    """Ctrl-C at the launcher (SIGINT to its process group): Open MPI SIGKILLs the ranks a
    quarter of a second after passing a SIGTERM on. Rank 0 waited for its generators, stuck
    in writes, to be reaped before removing anything, and every file written stayed. At
    most the one file each generator is still writing may stay (the next generation removes
    a folder without a manifest)."""
    _, generating, stayed = hit_slow_generators(
        tmp_path, results, lambda proc, ranks: os.killpg(proc.pid, signal.SIGINT))
    assert len(stayed) <= generating, (generating, stayed)


@needs_mpi
@pytest.mark.long  # 10 to 12 s
@pytest.mark.skipif(can_mount_fuse() is not None, reason=can_mount_fuse() or "")
def test_sigterm_to_rank_1_alone_while_its_generators_are_slow_to_die_names_it(
        tmp_path, results):
    """Rank 0 removes the folder while rank 1's killed generators still hold files open: on
    FUSE (as on NFS) a file removed while open is renamed to a hidden name until closed, so
    its folder is not empty. That clean-up error replaced the message naming rank 1."""
    err, generating, stayed = hit_slow_generators(
        tmp_path, results, lambda proc, ranks: ranks[1].send_signal(signal.SIGTERM))
    said = aiio_lines(err)
    assert said and "(rank 1)" in said[0] and "not empty" not in err, err
    assert len(stayed) <= generating, (generating, stayed)
