"""A bucket under real MPI: `mpiexec -n 2 aiio run --target s3://...` runs each rank's share
of the clients against the same SeaweedFS bucket, from one common start, and rank 0 writes
one result with every client and the first-done and last-done aggregates over all of them."""

from __future__ import annotations

import json
import os

from aiio.units import MiB
from tests.conftest import TINY_DATA, saved_results
from tests.mpi import mpi_run, needs_mpi


def _env(s3_server) -> dict:
    return dict(os.environ, **s3_server.env())


@needs_mpi
def test_train_on_a_bucket_runs_clients_on_every_rank(s3_server, s3_bucket, results):
    done = mpi_run(2, "run", "--phase", "train", "--target", f"s3://{s3_bucket}/mp",
                   "--results", str(results), *TINY_DATA, "--set", "dataset.format=raw",
                   "--batch-size", "2", "--clients", "4", "--epochs", "1", "--no-history",
                   "--no-report", "--json", env=_env(s3_server))
    assert done.returncode == 0, done.stderr
    res = json.loads(done.stdout)
    assert [r["id"] for r in saved_results(results)] == [res["id"]]  # only rank 0 wrote
    assert res["status"] == "ok" and res["ranks"] == 2 and res["split"] == [2, 2]
    assert [c["rank"] for c in res["clients"]] == [0, 0, 1, 1]
    assert all(c["requests"] > 0 and c["s3"]["retries"] == 0 for c in res["clients"])
    assert [h["target"]["fstype"] for h in res["hosts"]] == ["s3", "s3"]
    agg = res["aggregate"]
    assert agg["requests"] == 24  # one epoch of 24 objects over the 4 clients
    assert 0 < agg["first_done"]["seconds"] <= agg["last_done"]["seconds"]
    assert sum(h["aggregate"]["bytes"] for h in res["hosts"]) == agg["bytes"]


@needs_mpi
def test_checkpoint_on_a_bucket_under_mpi(s3_server, s3_bucket, results):
    size = 4 * 2 * MiB
    done = mpi_run(2, "run", "--phase", "checkpoint", "--target", f"s3://{s3_bucket}/mc",
                   "--results", str(results), "--clients", "4", "--set",
                   f"checkpoint.size={size}", "--no-history", "--no-report", "--json",
                   env=_env(s3_server))
    assert done.returncode == 0, done.stderr
    res = json.loads(done.stdout)
    assert res["split"] == [2, 2] and [c["rank"] for c in res["clients"]] == [0, 0, 1, 1]
    agg = res["aggregate"]
    assert agg["write_bytes"] == size and agg["read_bytes"] == size
    left = s3_server.client().list_objects_v2(Bucket=s3_bucket, Prefix="mc/aiio/checkpoints/")
    assert left.get("KeyCount", 0) == 0
