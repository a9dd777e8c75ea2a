"""The hosts a piece of work is spread over, as the data and target layers see them: how many,
and one call on each. aiio.run.comm's world (one host, or MPI ranks) is what callers pass in, so
these layers never reach up to MPI themselves."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

Report = Callable[[int, int], None]        # (units done, bytes done) of one rank's share
CallFn = Callable[[Any, Report], Any]


class Ranks(Protocol):
    size: int

    def call_all(self, fn: CallFn, args: Sequence[Any], on_progress: Report | None = None,
                 bounded: bool = False, own_s: float = 0.0) -> list[Any]:
        """Run fn(args[rank], report) on every rank; returns the values in rank order.
        `bounded`: a quick check, or the run is failing or ending already, so no rank is
        waited for long; `own_s`: what the call may take itself then, beyond that."""
        ...


def _no_report(done: int, nbytes: int) -> None:
    pass


class ThisHost:
    """One host, one rank: the work runs here, in this process."""

    rank = 0
    size = 1

    def call_all(self, fn: CallFn, args: Sequence[Any], on_progress: Report | None = None,
                 bounded: bool = False, own_s: float = 0.0) -> list[Any]:
        """Run fn(args[rank], report) on every rank; returns the values in rank order."""
        return [fn(args[0], on_progress or _no_report)]


THIS_HOST = ThisHost()
