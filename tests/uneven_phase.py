"""A phase whose clients disagree on how many barriers the run has: every client meets one
barrier after the start, and client `AIIO_TEST_EXTRA_BARRIER` meets one more. No real phase
does this; under MPI it stands for hosts that disagree, which must end the run naming the
host, never hang it."""

from __future__ import annotations

import os
from typing import Any

from aiio.engines import seam as engine
from aiio.engines.seam import OpLog
from aiio.phases.base import Phase, RunContext, client_identity, client_io_figures, io_aggregate
from aiio.run.clients import ClientContext


class UnevenPhase(Phase):
    name = "uneven"

    def prepare(self, rc: RunContext) -> int:
        return int(os.environ["AIIO_TEST_EXTRA_BARRIER"])

    def client(self, ctx: ClientContext) -> dict[str, Any]:
        start_ns = ctx.ready_and_wait()
        for _ in range(2 if ctx.index == ctx.args else 1):
            ctx.sync()
        return {**client_identity(ctx.index), "cpu_s": 0.0,
                **client_io_figures([OpLog(start_ns)], start_ns, engine.now_ns(),
                                    main_op="read")}

    def summarize(self, rc: RunContext, args: int, clients: list[dict]) -> dict:
        return io_aggregate(clients)


PHASE = UnevenPhase()
