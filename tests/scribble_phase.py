"""A phase that only writes, made by following docs/ARCHITECTURE.md's "adding a phase" step by
step: each client writes one file of its own, front to back, and fsyncs it. Its declarations
are the walk-through's (name, main operation, hero test); the test registers it with one line
and aiio does the rest: the runner's warnings, the result's I/O section, `aiio compare`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from aiio.engines import blocks
from aiio.engines.seam import OpLog
from aiio.engines.timing import Window, cpu_seconds
from aiio.phases.base import (
    Phase,
    RunContext,
    client_identity,
    client_io_figures,
    io_aggregate,
)
from aiio.phases.rundata import new_run_tag, remove_run_folder
from aiio.run.clients import ClientContext
from aiio.units import KiB, MiB

FILE_SIZE = 2 * MiB
TRANSFER = 256 * KiB


@dataclass
class ScribbleArgs:
    folder: str
    method: str
    seed: int

    def path(self, client: int) -> str:
        return os.path.join(self.folder, f"file-{client:05d}.bin")


class ScribblePhase(Phase):
    name = "scribble"
    main_op = "write"
    hero_test = "seq_write"
    workload_sections = ()  # no section of its own: [run]'s seed, which every key holds

    def prepare(self, rc: RunContext) -> ScribbleArgs:
        rc.target.require_space(rc.clients * FILE_SIZE, "scribble's files")
        a = ScribbleArgs(str(rc.target.root / "scribble" / new_run_tag()), rc.method,
                         rc.workload.run.seed)
        os.makedirs(a.folder)
        return a

    def client(self, ctx: ClientContext) -> dict[str, Any]:
        a: ScribbleArgs = ctx.args
        writer = ctx.engine.writer(TRANSFER, OpLog(0), ctx.add_bytes, seed=a.seed)
        path = a.path(ctx.index)
        try:
            run = Window(ctx.ready_and_wait())  # from the clients' common start
            cpu0 = cpu_seconds()
            writer.log = OpLog(run.start_ns)
            writer.write_file(path, FILE_SIZE, blocks.file_tag(a.seed, path))
            run.close()
        finally:
            writer.close()
        return {**client_identity(ctx.index), "cpu_s": cpu_seconds() - cpu0,
                **client_io_figures([writer.log], run.start_ns, run.end_ns, main_op="write")}

    def summarize(self, rc: RunContext, args: ScribbleArgs, clients: list[dict]) -> dict:
        return io_aggregate(clients)

    def cleanup(self, rc: RunContext, args: ScribbleArgs | None, status: str) -> None:
        if args is not None:
            remove_run_folder(rc, args.folder)


PHASE = ScribblePhase()
