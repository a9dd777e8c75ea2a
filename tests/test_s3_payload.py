"""Making an object's payload is never timed as the service's: a single PUT makes it before
"put" starts, and a multipart upload leaves each part's making out of "put", as a mount makes
its payload before the timed write."""

from __future__ import annotations

from aiio.engines.seam import OpLog, Timed
from aiio.options import Access
from aiio.s3.objectio import ObjectIO, ObjectWriter
from aiio.units import MiB


class KeptLog(OpLog):
    """An op log that also keeps each timed block, to read what it left out."""

    def __init__(self) -> None:
        super().__init__(0)
        self.blocks: list[Timed] = []

    def timed(self, op: str, nbytes: int = 0, ops: int = 1) -> Timed:
        block = super().timed(op, nbytes, ops)
        self.blocks.append(block)
        return block


def _put(log: KeptLog) -> Timed:
    (put,) = [b for b in log.blocks if b.op == "put"]
    return put


def test_part_payloads_are_left_out_of_put(s3_bucket):
    log = KeptLog()
    writer = ObjectWriter(ObjectIO(Access(), s3_bucket, 1), 5 * MiB, log)
    assert writer.write_object("multi", 12 * MiB, 1) == 12 * MiB
    put = _put(log)
    writes = [b for b in log.blocks if b.op == "write"]
    assert [w.nbytes for w in writes] == [5 * MiB, 5 * MiB, 2 * MiB]
    # all three parts were made inside the upload, and all of that time is left out
    assert writer.made_ns > 0
    assert put.spent_ns == put.end_ns - put.t0 - writer.made_ns


def test_a_single_put_makes_its_payload_first(s3_bucket):
    log = KeptLog()
    writer = ObjectWriter(ObjectIO(Access(), s3_bucket, 1), 5 * MiB, log)
    assert writer.write_object("one", 4 * MiB, 1) == 4 * MiB
    put = _put(log)
    assert writer.made_ns > 0 and put.spent_ns == put.end_ns - put.t0
