"""A checkpoint's bursts, one class each side of the hand-over: a client's write or restore
of its shard (`ClientBurst`), within its record of one checkpoint (`ClientRound`; during
training `ClientTrainingRound`, with what the accelerator waited for), sent from the client
process to the parent, which aggregates it; and one checkpoint over every client as the
result records it (`Burst`: its number, its write and restore sections, the gap before the
restore and, during training, what it cost), built by the phase (aiio.phases.shards,
aiio.phases.train_checkpoints), serialised once (`to_dict`) and read back by the parent
(`shards.every_round`) and by the result model (`CheckpointFigures.bursts`) and its readers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from aiio.results.lenient import count, mapping, number
from aiio.results.sections import ClientIo

# the calls of a burst whose summed time (`<call>_s`) it records beside its stream; the
# fsyncs' latency too (`<call>_latency`)
SPENT = ("fsync", "dir_fsync", "checksum", "verify")


@dataclass(frozen=True)
class ClientBurst:
    """One client's write or restore of its shard of one checkpoint: its stream, when it ran
    (s since the run's common start), its files, the time spent in each call of `SPENT` it
    made and the fsyncs' latency; a write: when each file became durable ([s, bytes] each);
    a restore under --verify: what the checks found."""

    io: ClientIo
    start_s: float
    end_s: float
    files: int
    spent_s: Mapping[str, float]
    latency: Mapping[str, Mapping[str, Any]]
    durable: tuple[tuple[float, int], ...] | None = None
    verify: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, io: ClientIo, start_s: float, end_s: float, files: int) -> ClientBurst:
        hist = {call: io.histograms[call] for call in SPENT if call in io.histograms}
        return cls(io, start_s, end_s, files, {c: h.sum / 1e9 for c, h in hist.items()},
                   {c: h.summary() for c, h in hist.items() if c.endswith("fsync")})

    def to_dict(self) -> dict[str, Any]:
        out = {**self.io.to_dict(), "start_s": self.start_s, "end_s": self.end_s,
               "files": self.files}
        for call, seconds in self.spent_s.items():
            out[f"{call}_s"] = seconds
            if call in self.latency:
                out[f"{call}_latency"] = dict(self.latency[call])
        if self.verify is not None:
            out["verify"] = dict(self.verify)
        if self.durable is not None:
            out["durable"] = [list(d) for d in self.durable]
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ClientBurst:
        """As `to_dict` wrote it (the parent reads what its clients sent)."""
        durable = d.get("durable")
        return cls(ClientIo.from_dict(d), d["start_s"], d["end_s"], d["files"],
                   {c: d[f"{c}_s"] for c in SPENT if f"{c}_s" in d},
                   {c: d[f"{c}_latency"] for c in SPENT if f"{c}_latency" in d},
                   None if durable is None else tuple((t, n) for t, n in durable),
                   d.get("verify"))


@dataclass(frozen=True)
class ClientRound:
    """One client's checkpoint k: its write burst and, once restored, its restore burst."""

    n: int
    write: ClientBurst
    read: ClientBurst | None = None

    def bursts(self) -> tuple[ClientBurst, ...]:
        """Its write, then its restore when it made one."""
        return (self.write,) if self.read is None else (self.write, self.read)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.n, "write": self.write.to_dict()}
        if self.read is not None:
            out["read"] = self.read.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ClientRound:
        """As `to_dict` wrote it (the parent reads what its clients sent)."""
        read = d.get("read")
        return cls(d["n"], ClientBurst.from_dict(d["write"]),
                   None if read is None else ClientBurst.from_dict(read))


@dataclass(frozen=True)
class ClientTrainingRound:
    """One client's checkpoint during training: its round (a write, no restore) and what
    the accelerator waited for it, s: its stall, which is its own shard's write, the wait for
    the others' (synchronous) and the retention deletes; the barrier's release lead is
    apart (no stall: the emulator's way to start clients together). From the accelerator's
    stop to its resume: start_s and end_s, s since the run's common start."""

    round: ClientRound
    stall_s: float
    own_shard_s: float
    wait_for_others_s: float
    release_lead_s: float
    retire_s: float
    start_s: float
    end_s: float

    def to_dict(self) -> dict[str, Any]:
        return {**self.round.to_dict(),
                **{f.name: getattr(self, f.name) for f in fields(self)[1:]}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ClientTrainingRound:
        """As `to_dict` wrote it (the parent reads what its clients sent)."""
        return cls(ClientRound.from_dict(d), **{f.name: d[f.name] for f in fields(cls)[1:]})


# what a checkpoint during training cost, as its burst records it (all or none)
COST = ("window_s", "start_s", "stall_s", "accelerator_s_lost", "read_mib_s_during",
        "read_mib_s_baseline", "read_dip", "au_during", "au_baseline", "au_lost")


@dataclass(frozen=True)
class Burst:
    """One checkpoint over every client: its number, its write and restore sections (the
    burst's I/O over the clients, read as sections by the model: `Result.section`), the gap
    before its restore and, during training (`window_s` recorded), what it cost: the window
    it took, the accelerators' stall, the read rate and AU inside it against the rest."""

    n: int
    write: Mapping[str, Any]
    read: Mapping[str, Any] | None = None
    restore_gap_s: float | None = None
    window_s: float | None = None              # training's: from the first stop to the
    start_s: float | None = None               # last resume, from the common start
    stall_s: Mapping[str, float] | None = None  # the clients' stalls, a spread
    accelerator_s_lost: float | None = None
    read_mib_s_during: float | None = None
    read_mib_s_baseline: float | None = None
    read_dip: float | None = None              # None: the loaders had read everything
    au_during: float | None = None
    au_baseline: float | None = None
    au_lost: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.n, "write": self.write}
        if self.read is not None:
            out["read"] = self.read
        if self.restore_gap_s is not None:
            out["restore_gap_s"] = self.restore_gap_s
        if self.window_s is not None:
            out.update({k: getattr(self, k) for k in COST})
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Burst:
        """As recorded, leniently: a figure missing or of the wrong type reads as None."""
        read, stall = d.get("read"), d.get("stall_s")
        return cls(count(d.get("n")) or 0, mapping(d.get("write")),
                   read if isinstance(read, Mapping) else None, number(d.get("restore_gap_s")),
                   stall_s=stall if isinstance(stall, Mapping) else None,
                   **{k: number(d.get(k)) for k in COST if k != "stall_s"})
