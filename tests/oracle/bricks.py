"""The collision model of reads on bricks of equal rate: what clients reading files one after
another deliver together when each brick's rate is shared equally by the clients reading from
it at that moment, and an idle brick gives nothing.

Each client reads its own sequence of (brick, bytes), one file at a time, with no time between
files. A fluid simulation: between two moments at which something changes, every brick with k
readers moves each of them at its rate / k.

A brick's disk is limited by the kernel's blkio throttle, which is a rate over time slices of
100 ms: a disk that has idled lets up to one slice's bytes by at once when it is asked again
(on the lab's bricks, 2 MiB read after 0.2 s idle took 0.009 s, the next 2 MiB 0.106 s). With
`burst` (bytes) that is modelled as a bucket: an idle brick gains credit at its rate up to
`burst`, and a brick with credit serves at `peak` (what the client moves unthrottled) until
the credit is spent. Shuffled reads switch bricks at every file, so the credit counts there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

EPS = 1e-9


@dataclass
class _Brick:
    credit: float  # bytes it may let by at once
    readers: int = 0


def aggregate(sequences: Sequence[Sequence[tuple[int, float]]], rate: float,
              duration: float | None = None, burst: float = 0.0, peak: float = 0.0) -> float:
    """Bytes per second the clients move together over `duration` seconds (None: until every
    sequence is read), each brick giving `rate` bytes/s shared equally by its readers, and
    `peak` while it has credit left (at most `burst` bytes, gained at `rate` while idle)."""
    at = [0] * len(sequences)        # each client's file in its sequence
    left = [float(seq[0][1]) if seq else 0.0 for seq in sequences]
    bricks: dict[int, _Brick] = {b: _Brick(burst) for seq in sequences for b, _ in seq}
    now, moved = 0.0, 0.0
    while True:
        active = [c for c, seq in enumerate(sequences) if at[c] < len(seq)]
        if not active or (duration is not None and now >= duration - EPS):
            break
        for brick in bricks.values():
            brick.readers = 0
        for c in active:
            bricks[sequences[c][at[c]][0]].readers += 1
        speed = {b: (peak if brick.credit > EPS and peak > rate else rate)
                 for b, brick in bricks.items()}
        each = {c: speed[sequences[c][at[c]][0]] / bricks[sequences[c][at[c]][0]].readers
                for c in active}
        step = min(left[c] / each[c] for c in active)
        for b, brick in bricks.items():  # a busy brick's credit running out changes its speed
            if brick.readers and speed[b] > rate:
                step = min(step, brick.credit / (speed[b] - rate))
        if duration is not None:
            step = min(step, duration - now)
        for b, brick in bricks.items():
            gain = rate - speed[b] if brick.readers else rate
            brick.credit = min(burst, max(0.0, brick.credit + gain * step))
        for c in active:
            left[c] -= each[c] * step
            moved += each[c] * step
            if left[c] <= EPS * rate:  # this file done: the next one
                at[c] += 1
                if at[c] < len(sequences[c]):
                    left[c] = float(sequences[c][at[c]][1])
        now += step
    return moved / now if now else 0.0
