"""A phase that exists only to prove the contract from outside the package: each client reads
back one file of its own, front to back. The test registers it with one line; aiio does the
rest (clients, common start, summary, warnings, result, console tables, figures)."""

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
class ReadbackArgs:
    folder: str
    method: str

    def path(self, client: int) -> str:
        return os.path.join(self.folder, f"file-{client:05d}.bin")


class ReadbackPhase(Phase):
    name = "readback"

    def prepare(self, rc: RunContext) -> ReadbackArgs:
        a = ReadbackArgs(str(rc.target.root / "readback" / new_run_tag()), rc.method)
        os.makedirs(a.folder)
        writer = rc.engine.writer(MiB, OpLog(0), seed=rc.workload.run.seed)
        try:
            for c in range(rc.clients):
                writer.write_file(a.path(c), FILE_SIZE, blocks.file_tag(1, a.path(c)))
        finally:
            writer.close()
        return a

    def client(self, ctx: ClientContext) -> dict[str, Any]:
        a: ReadbackArgs = ctx.args
        reader = ctx.engine.reader(TRANSFER, OpLog(0), ctx.add_bytes)
        try:
            run = Window(ctx.ready_and_wait())  # from the clients' common start
            cpu0 = cpu_seconds()
            reader.log = OpLog(run.start_ns)
            reader.read_file(a.path(ctx.index))
            run.close()  # on the engine's clock, as every phase's window
        finally:
            reader.close()
        return {**client_identity(ctx.index), "cpu_s": cpu_seconds() - cpu0,
                **client_io_figures([reader.log], run.start_ns, run.end_ns, main_op="read")}

    def summarize(self, rc: RunContext, args: ReadbackArgs, clients: list[dict]) -> dict:
        return io_aggregate(clients)

    def cleanup(self, rc: RunContext, args: ReadbackArgs | None, status: str) -> None:
        if args is not None:
            remove_run_folder(rc, args.folder)


PHASE = ReadbackPhase()
