"""The whole lifecycle against a bucket: the mount's lifecycle run with each stage's object
storage phase (prep in shards mode, training with checkpoints as shard objects, loading)."""

from __future__ import annotations

from aiio.phases import OBJECT_PREFIX
from aiio.phases.lifecycle import AllPhase
from aiio.s3 import load, prep, train


class S3AllPhase(AllPhase):
    object_store = True
    stage_table = {"prep": prep.PHASE, "train": train.PHASE, "load": load.PHASE}
    registry_prefix = OBJECT_PREFIX  # the clients find each stage's phase as "s3:NAME"


PHASE = S3AllPhase()
