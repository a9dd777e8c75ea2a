"""The steady-or-overloaded verdict (docs/METHOD.md, "Steady or overloaded") as a run records
it beside its KV-cache requests, vector queries or vector inserts: one class, built by the
phase that judged it (aiio.phases.steadiness.verdict), serialised once (`to_dict`) and read
back (`from_dict`) by every reader.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiio.results.lenient import count, items, mapping, number, text


def word_for(overloaded: bool, judged: bool) -> str:
    """The verdict in a word: overloaded, steady, or not judged."""
    if overloaded:
        return "overloaded"
    return "steady" if judged else "not judged"


@dataclass(frozen=True)
class Verdict:
    """Steady or overloaded, by the rule stated in `rule`, with the evidence; not judged when
    no rule found an overload and too few arrived to see a trend."""

    overloaded: bool
    judged: bool                              # a result saved before "not judged" was: judged
    rule: str
    evidence: tuple[str, ...]
    latency_p50_ms: tuple[float | None, ...]  # latency by slice of arrival
    queue_depth: tuple[float, ...]            # mean waiting per client, by slice
    waiting_at_end: int | None
    slice_s: float                            # each slice's length
    word: str                                 # steady, overloaded, not judged
    recorded: bool = True                     # read back: the run recorded whether it was
    # overloaded (not written: a reader's knowledge of what it read)

    @property
    def kept_up(self) -> bool:
        """The storage kept up: a verdict was recorded and it is not overloaded (a result
        that recorded none is no pass)."""
        return self.recorded and not self.overloaded

    def to_dict(self) -> dict[str, Any]:
        return {"overloaded": self.overloaded, "judged": self.judged, "rule": self.rule,
                "evidence": list(self.evidence), "latency_p50_ms": list(self.latency_p50_ms),
                "queue_depth": list(self.queue_depth), "waiting_at_end": self.waiting_at_end,
                "slice_s": self.slice_s, "word": self.word}

    @classmethod
    def from_dict(cls, d: Any) -> Verdict:
        """As recorded; a verdict that is no object reads as not recorded (no pass)."""
        d = mapping(d)
        return cls(bool(d.get("overloaded")), bool(d.get("judged", True)), text(d.get("rule")),
                   tuple(str(e) for e in items(d.get("evidence"))),
                   tuple(number(v) for v in items(d.get("latency_p50_ms"))),
                   items(d.get("queue_depth")), count(d.get("waiting_at_end")),
                   number(d.get("slice_s")) or 0.0, str(d.get("word", "overloaded")),
                   "overloaded" in d)
