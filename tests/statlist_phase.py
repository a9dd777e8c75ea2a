"""A phase that only touches metadata, added by the walk-through alone (one module, one
registry line): each client lists its own folder and stats every file in it, ROUNDS times;
no byte is read or written in its window, and its main operation is stat."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from aiio.engines.seam import OpLog
from aiio.engines.timing import Window, cpu_seconds
from aiio.phases.base import Phase, RunContext, client_identity, client_io_figures, io_aggregate
from aiio.phases.rundata import new_run_tag, remove_run_folder
from aiio.run.clients import ClientContext

FILES = 40
ROUNDS = 30


@dataclass
class StatArgs:
    folder: str

    def sub(self, client: int) -> str:
        """The folder of one client's files."""
        return os.path.join(self.folder, f"c{client:05d}")


class StatListPhase(Phase):
    name = "statlist"
    main_op = "stat"

    def prepare(self, rc: RunContext) -> StatArgs:
        rc.target.require_space(FILES * rc.clients * 4096, "the files statlist stats")
        a = StatArgs(str(rc.target.root / "statlist" / new_run_tag()))
        for c in range(rc.clients):
            os.makedirs(a.sub(c))
            for f in range(FILES):
                with open(os.path.join(a.sub(c), f"f{f:04d}"), "wb") as fh:
                    fh.write(b"x")
        return a

    def client(self, ctx: ClientContext) -> dict[str, Any]:
        a: StatArgs = ctx.args
        run = Window(ctx.ready_and_wait())
        cpu0 = cpu_seconds()
        log = OpLog(run.start_ns)
        for _ in range(ROUNDS):
            for name in ctx.engine.listdir(log, a.sub(ctx.index)):
                ctx.engine.stat(log, os.path.join(a.sub(ctx.index), name))
        run.close()
        return {**client_identity(ctx.index), "cpu_s": cpu_seconds() - cpu0,
                **client_io_figures([log], run.start_ns, run.end_ns, main_op="stat")}

    def summarize(self, rc: RunContext, args: StatArgs, clients: list[dict]) -> dict:
        return io_aggregate(clients)

    def cleanup(self, rc: RunContext, args: StatArgs | None, status: str) -> None:
        if args is not None:
            remove_run_folder(rc, args.folder)


PHASE = StatListPhase()
