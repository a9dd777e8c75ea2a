"""Checkpoint retention while clients drift apart: a client that retires an old checkpoint
must not pull the folder from under a slower client that is about to write into it. Real
files on the temp filesystem, the real writer."""

from __future__ import annotations

import os

from aiio.cache_methods import METHOD_NONE
from aiio.engines.posix import PosixEngine
from aiio.engines.seam import OpLog, Writer
from aiio.phases import shards


def _plan(folder: str, stall_model: str) -> shards.CheckpointPlan:
    return shards.CheckpointPlan(
        folder=folder, total_bytes=2 * 64 * 1024, base_bytes=2 * 64 * 1024, scale=1.0,
        source="checkpoint.size", clients=2, files_per_client=1, threads=1,
        transfer_size=64 * 1024, method=METHOD_NONE, seed=1, count=3, keep=1,
        restore=False, every=1, every_unit="steps", stall_model=stall_model)


def _write(plan: shards.CheckpointPlan, k: int, client: int) -> int:
    wr = Writer(plan.method, plan.transfer_size, OpLog(0), count_at_fsync=True)
    try:
        return wr.write_file(plan.path(k, client, 0), plan.sizes(client)[0],
                             plan.tag(k, client, 0))
    finally:
        wr.close()


def test_fast_client_retiring_does_not_remove_a_slow_clients_folder(tmp_path):
    # per_client stall model: no barrier, so client 0 may be a checkpoint ahead of client 1
    plan = _plan(str(tmp_path / "run"), "per_client")
    os.makedirs(plan.folder)
    for k in (0, 1):  # the fast client's bursts, each opened as write_burst opens it
        os.makedirs(os.path.join(plan.folder, f"ckpt-{k}"), exist_ok=True)
        _write(plan, k, 0)
    # client 1 has begun its burst of checkpoint 0 (its folder exists) but not created its
    # file yet, when client 0, done with checkpoint 1, retires checkpoint 0
    assert shards.retire(plan, 0, 0, OpLog(0), PosixEngine(plan.method)) == 1
    assert _write(plan, 0, 1) == plan.sizes(1)[0]  # the slow client's shard still lands


def test_retention_removes_the_folder_when_every_client_is_past_it(tmp_path):
    # behind a barrier every client has written checkpoint 0 before anyone retires it
    plan = _plan(str(tmp_path / "run"), "synchronous")
    os.makedirs(os.path.join(plan.folder, "ckpt-0"))
    for client in (0, 1):
        _write(plan, 0, client)
    for client in (0, 1):
        shards.retire(plan, 0, client, OpLog(0), PosixEngine(plan.method))
    assert not os.path.exists(os.path.join(plan.folder, "ckpt-0"))
