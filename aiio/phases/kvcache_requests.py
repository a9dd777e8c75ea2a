"""What the KV-cache phase's users ask for: each request's context and generation lengths and
the KV blocks its context is made of, from a conversation (closed and open loops) or from a
trace (BurstGPT's CSV, Mooncake's JSONL); and when requests arrive (open loop, trace).

A block holds `block_tokens` tokens; only full blocks are stored (a partial tail is recomputed,
as prefix caches keep whole blocks). Names are relative to the run's folder:
`sys/p<prompt>-b<i>.kv` for a shared system prompt's blocks, `c<client>/...` for a client's.
"""

from __future__ import annotations

import csv
import json
import math
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aiio.errors import ConfigError
from aiio.workload import KvcacheSpec


@dataclass(frozen=True)
class Request:
    """One request: its tokens, the blocks of its context (in order), and the blocks the
    user no longer needs (deleted before this request is served)."""

    context: int
    generation: int
    blocks: tuple[str, ...]
    drop: tuple[str, ...] = ()


def draw(rng: np.random.Generator, mean: int, stdev: int, lo: int, hi: int) -> int:
    """A token count: the mean, or a normal draw around it, kept within [lo, hi]."""
    x = mean if stdev == 0 else rng.normal(mean, stdev)
    return int(min(max(round(x), lo), hi))


def system_blocks(k: KvcacheSpec, prompt: int) -> list[str]:
    """The names of one shared system prompt's full blocks."""
    return [f"sys/p{prompt}-b{i:05d}.kv" for i in range(k.system_prompt_tokens // k.block_tokens)]


class Conversation:
    """One user's conversations, one after another: the first turn brings `context_tokens`,
    each later one `followup_tokens` more on top of everything before (system prompt, earlier
    prompts and answers), so its blocks are the earlier turns' and then new ones. A
    conversation ends after `turns` requests, or when the next would pass the longest
    context; its own blocks are dropped then."""

    def __init__(self, k: KvcacheSpec, client: int, user: int, seed: int) -> None:
        self.k, self.client, self.user = k, client, user
        self.rng = np.random.Generator(np.random.PCG64([seed, client, user, 7]))
        self.number = -1
        self.turn = k.turns  # so the first request starts a conversation
        self.tokens = self.prompt = 0
        self.owned = 0  # full blocks of its own stored so far

    def _own(self, i: int) -> str:
        return f"c{self.client:05d}/u{self.user:05d}-{self.number}-b{i:05d}.kv"

    def _start(self) -> tuple[str, ...]:
        """A new conversation; the names of the last one's own blocks, to drop."""
        shared = len(system_blocks(self.k, 0))
        drop = tuple(self._own(i) for i in range(shared, self.owned))
        self.number += 1
        self.turn, self.owned = 0, 0
        self.prompt = int(self.rng.integers(self.k.system_prompts))
        self.tokens = self.k.system_prompt_tokens
        return drop

    def next(self) -> Request:
        k = self.k
        drop: tuple[str, ...] = ()
        if self.turn >= k.turns or self.tokens + k.followup_tokens > k.max_context_tokens:
            drop = self._start()
        room = k.max_context_tokens - self.tokens
        new = (draw(self.rng, k.context_tokens, k.context_stdev, 1, room) if self.turn == 0
               else k.followup_tokens)
        context = self.tokens + new
        gen = draw(self.rng, k.generation_tokens, k.generation_stdev, 0,
                   k.max_context_tokens - context)
        shared = system_blocks(k, self.prompt)
        full = context // k.block_tokens
        blocks = tuple(shared[:full]) + tuple(self._own(i) for i in range(len(shared), full))
        self.owned = max(self.owned, full)
        self.tokens = context + gen
        self.turn += 1
        return Request(context, gen, blocks, drop)


# --- traces -------------------------------------------------------------------------------

@dataclass(frozen=True)
class TraceRecord:
    """One request of a trace: seconds after the trace's first, its input and output
    tokens, and (Mooncake) the hash ids of its prefix blocks."""

    at_s: float
    context: int
    generation: int
    hash_ids: tuple[int, ...] = ()


def trace_format(path: str, asked: str) -> str:
    if asked != "auto":
        return asked
    suffix = Path(path).suffix.lower()
    if suffix in (".jsonl", ".json"):
        return "mooncake"
    if suffix == ".csv":
        return "burstgpt"
    raise ConfigError(f"kvcache.trace = {path}: set kvcache.trace_format (burstgpt or "
                      "mooncake); the extension does not say")


def read_trace(path: str, fmt: str, speed: float, until_s: float,
               block_tokens: int = 512) -> list[TraceRecord]:
    """The trace's requests that arrive within `until_s` of its first, at `speed`."""
    try:
        with open(path, newline="") as fh:
            records = (_burstgpt(fh, path) if fmt == "burstgpt"
                       else _mooncake(fh, path, block_tokens))
    except OSError as exc:
        raise ConfigError(f"kvcache.trace = {path}: cannot read: {exc.strerror}") from exc
    if not records:
        raise ConfigError(f"kvcache.trace = {path}: no requests in it")
    t0 = min(r.at_s for r in records)
    out = [TraceRecord((r.at_s - t0) / speed, r.context, r.generation, r.hash_ids)
           for r in records]
    return sorted((r for r in out if r.at_s < until_s), key=lambda r: r.at_s)


BURSTGPT = ("Timestamp", "Request tokens", "Response tokens")


def _burstgpt(fh: object, path: str) -> list[TraceRecord]:
    """BurstGPT: a CSV with Timestamp (s), Request tokens and Response tokens columns."""
    rows = csv.DictReader(fh)  # type: ignore[arg-type]
    if not rows.fieldnames or not set(BURSTGPT) <= set(rows.fieldnames):
        raise ConfigError(f"{path}: not a BurstGPT CSV (its header needs "
                          f"{', '.join(BURSTGPT)})")
    out = []
    for n, row in enumerate(rows, start=2):
        try:
            rec = TraceRecord(float(row["Timestamp"]), int(row["Request tokens"]),
                              int(row["Response tokens"]))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{path}, line {n}: cannot read the timestamp and token "
                              "counts") from exc
        out.append(_checked(rec, f"{path}, line {n}"))
    return out


def _checked(rec: TraceRecord, where: str) -> TraceRecord:
    """A record no request could have is refused: a NaN or infinite instant would drop out
    of the replay unsaid (and sort nowhere), a negative count would cut blocks off."""
    if not math.isfinite(rec.at_s):
        raise ConfigError(f"{where}: the timestamp is not a finite number")
    if rec.context < 0 or rec.generation < 0:
        raise ConfigError(f"{where}: token counts cannot be negative")
    return rec


def _mooncake(fh: object, path: str, block_tokens: int) -> list[TraceRecord]:
    """Mooncake (FAST'25): one JSON object a line, timestamp in ms, input_length,
    output_length and hash_ids (one id per 512-token block of the prompt)."""
    out = []
    for n, line in enumerate(fh, start=1):  # type: ignore[attr-defined]
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            rec = TraceRecord(float(d["timestamp"]) / 1000, int(d["input_length"]),
                              int(d["output_length"]),
                              tuple(int(h) for h in d.get("hash_ids", ())))
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{path}, line {n}: not a Mooncake trace line (timestamp, "
                              "input_length, output_length, hash_ids)") from exc
        out.append(_checked(rec, f"{path}, line {n}"))
        _check_ids(rec, block_tokens, f"{path}, line {n}")
    return out


def _check_ids(rec: TraceRecord, block_tokens: int, where: str) -> None:
    """A hash id per block of the prompt: with blocks of another size than the trace's, the
    ids would name blocks they are not (or leave full blocks without a name, unread)."""
    if rec.hash_ids and len(rec.hash_ids) != -(-rec.context // block_tokens):
        raise ConfigError(f"{where}: {len(rec.hash_ids)} hash ids for {rec.context} tokens "
                          f"are not one per block of {block_tokens}; set "
                          "kvcache.block_tokens to the trace's block (512 in Mooncake's)")


def trace_request(rec: TraceRecord, index: int, client: int, block_tokens: int,
                  drop: tuple[str, ...]) -> Request:
    """A trace record as a request of this client: Mooncake's hash ids name blocks that
    later requests of the client reuse; BurstGPT's requests share nothing (their blocks are
    the request's own, dropped when its user serves the next)."""
    full = rec.context // block_tokens
    if rec.hash_ids:
        blocks = tuple(f"c{client:05d}/h{h}.kv" for h in rec.hash_ids[:full])
    else:
        blocks = tuple(f"c{client:05d}/r{index}-b{i:05d}.kv" for i in range(full))
    return Request(rec.context, rec.generation, blocks, drop)


def client_share(records: list[TraceRecord], client: int, clients: int) -> list[TraceRecord]:
    """Client c replays records c, c + clients, ... (dealt in turn, as a load balancer)."""
    return records[client::clients]


# --- arrivals -------------------------------------------------------------------------------

class Arrivals:
    """When a client's requests arrive (seconds after the start): a Poisson process at
    `rate` (open loop) or a trace's instants. Users take them in order, each when free; one
    not taken yet is waiting in the queue."""

    def __init__(self, times: list[float] | None = None, rate: float = 0.0,
                 seed: tuple[int, ...] = ()) -> None:
        self.times = list(times or [])
        self.rate = rate
        self.rng = np.random.Generator(np.random.PCG64(list(seed)))
        self.fixed = times is not None
        self.taken = 0
        self.lock = threading.Lock()

    def _at(self, i: int) -> float | None:
        while not self.fixed and len(self.times) <= i:
            self._more(1)
        return self.times[i] if i < len(self.times) else None

    def _more(self, n: int) -> None:
        """n more Poisson arrivals (their gaps drawn in one call, the same gaps as one by one)."""
        last = self.times[-1] if self.times else 0.0
        gaps = self.rng.exponential(1 / self.rate, size=n)
        self.times.extend((last + np.cumsum(gaps)).tolist())

    def take(self, until_s: float) -> tuple[int, float] | None:
        """The next arrival (its number and instant), or None when there is none before
        `until_s`."""
        with self.lock:
            at = self._at(self.taken)
            if at is None or at >= until_s:
                return None
            self.taken += 1
            return self.taken - 1, at

    def waiting(self, until_s: float) -> np.ndarray:
        """The instants of requests that arrived before `until_s` and were never taken."""
        with self.lock:
            while not self.fixed and (not self.times or self.times[-1] < until_s):
                self._more(max(1024, int(self.rate * (until_s - (self.times or [0])[-1]))))
            rest = np.asarray(self.times[self.taken:], dtype=float)
            return rest[rest < until_s]
