"""The measured parts of a run result: the aggregate I/O sections the phase declares (read
through the typed result model), and, found by their shape, the clients' byte series, latency
histograms and timed events.

A training client keeps its figures at the top; a prep client under `read` and `write`; a
checkpoint client per burst under `checkpoints[k].write` / `.read`. The clients' series are
read by shape because they include figures no I/O section holds (training's consumed bytes
beside the device bytes), and so a phase the report has never heard of still shows them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aiio.report.html import finite
from aiio.report.series import is_series
from aiio.result import IoFigures, Result, model
from aiio.stats import Histogram

MAX_DEPTH = 4


class IOSection:
    """Where one kind of I/O sits in a client's figures: a path of keys and a key prefix."""

    __slots__ = ("label", "path", "prefix")

    def __init__(self, label: str, path: tuple[str, ...] = (), prefix: str = "") -> None:
        self.label, self.path, self.prefix = label, path, prefix

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IOSection) and (self.path, self.prefix) == (other.path,
                                                                             other.prefix)

    __hash__ = None  # type: ignore[assignment]

    def of(self, figures: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """This section's part of a client's (or the aggregate's) figures."""
        for key in self.path:
            figures = figures.get(key) if isinstance(figures, Mapping) else None
        return figures if isinstance(figures, Mapping) else None

    def value(self, figures: Mapping[str, Any], key: str) -> Any:
        part = self.of(figures)
        return None if part is None else part.get(self.prefix + key)


def io_sections(clients: Sequence[Mapping[str, Any]]) -> list[IOSection]:
    """Every I/O section the clients recorded a byte series for, in order of appearance: the
    client itself (label ''), a sub-section such as 'read' or a stage's 'prep read' (two
    levels down at most), or a prefix such as 'write_'. Series inside lists (checkpoint
    bursts) belong to the timeline, not here."""
    found: list[IOSection] = []
    for c in clients:
        for s in _sections_in(c, ()):
            if s not in found:
                found.append(s)
    return found


def _sections_in(figures: Mapping[str, Any], path: tuple[str, ...]) -> list[IOSection]:
    out = []
    for key, value in figures.items():
        if key.endswith("series") and is_series(value):
            out.append(IOSection(" ".join((*path, key[:-6].rstrip("_"))).strip(), path,
                                 key[:-6]))
        elif isinstance(value, Mapping) and len(path) < 2:
            if is_series(value.get("series")):
                out.append(IOSection(" ".join((*path, key)), (*path, key)))
            else:
                out.extend(_sections_in(value, (*path, key)))
    return out


def client_subsections(clients: Sequence[Mapping[str, Any]]) -> list[str]:
    """Keys under which clients keep figures of one kind of I/O ('read', 'write'): any
    object with its own MiB/s, whether or not it also has a time series."""
    found: list[str] = []
    for c in clients:
        for key, value in c.items():
            if isinstance(value, Mapping) and "mib_s" in value and key not in found:
                found.append(key)
    return found


class AggSection:
    """One first-done/last-done aggregate inside a run's aggregate: its label, its dict and
    the path of keys that leads to it from the aggregate."""

    __slots__ = ("label", "figures", "path")

    def __init__(self, label: str, figures: Mapping[str, Any], path: tuple[str, ...]) -> None:
        self.label, self.figures, self.path = label, figures, path


def aggregate_sections(res: Mapping[str, Any]) -> list[AggSection]:
    """Every first-done/last-done aggregate among the I/O sections the phase declares
    (`Phase.io_sections`), in its order: the aggregate itself (training's reads, label ''), a
    sub-section ('read', 'delivered') or a stage's ('prep read', 'train'). Checkpoint bursts,
    one per list entry, belong to the timeline, not here."""
    run = res if isinstance(res, Result) else model(res)
    out = []
    for section in run.io.values():
        where = section.path[1:]  # from the aggregate
        if all(isinstance(p, str) for p in where) and "first_done" in section.figures:
            out.append(AggSection(path_label(where), section.figures, tuple(map(str, where))))
    return out


def path_label(path: Sequence[Any]) -> str:
    """('checkpoint', 'checkpoints', 3, 'write') -> 'checkpoint write': list positions and a
    plural right after its singular are dropped, so the parts of every burst share a label."""
    words: list[str] = []
    for p in path:
        if isinstance(p, int) or (words and p == words[-1] + "s"):
            continue
        words.append(str(p))
    return " ".join(words)


def _walk(data: Any, path: tuple, depth: int = 0):
    """(path, dict) for every dict inside data, lists included, down to MAX_DEPTH."""
    if depth > MAX_DEPTH:
        return
    if isinstance(data, Mapping):
        yield path, data
        for key, value in data.items():
            if isinstance(value, Mapping | list):
                yield from _walk(value, (*path, key), depth + 1)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            if isinstance(value, Mapping):
                yield from _walk(value, (*path, i), depth + 1)


def _histograms_in(data: Any, into: dict[str, dict[str, Histogram]]) -> None:
    """Merge every `histograms` map inside data into `into`, by the label of its place."""
    for path, d in _walk(data, ()):
        for key, ops in d.items():
            if not (key.endswith("histograms") and isinstance(ops, Mapping)):
                continue
            label = " ".join(w for w in (path_label(path), key[:-10].rstrip("_")) if w)
            for op, hd in ops.items():
                if isinstance(hd, Mapping) and "buckets" in hd:
                    into.setdefault(label, {}).setdefault(op, Histogram()).merge(
                        Histogram.from_dict(hd))


def histogram_sets(res: Mapping[str, Any]) -> dict[str, dict[str, Histogram]]:
    """{place: {operation: Histogram}} of the I/O sections the phase declares, from the
    aggregate, or merged from the clients' when the run ended before it was summarized. The
    place is the section's path as words, so every checkpoint burst's writes merge into one
    ('checkpoint write')."""
    run = res if isinstance(res, Result) else model(res)
    out: dict[str, dict[str, Histogram]] = {}
    _merge(((s.path[1:], s) for s in run.io.values()), out)
    if not out:
        _merge(((s.path, s) for c in run.clients for s in c.io.values()), out)
    return out


def _merge(sections: Iterable[tuple[Sequence[Any], IoFigures]],
           into: dict[str, dict[str, Histogram]]) -> None:
    for where, section in sections:
        for op, hd in section.histograms.items():
            if "buckets" in hd:
                into.setdefault(path_label(where), {}).setdefault(op, Histogram()).merge(
                    Histogram.from_dict(hd))


def events(client: Mapping[str, Any]) -> list[tuple[str, float, float]]:
    """(label, start s, end s) of the timed parts of a client's run, since the common start:
    anything with start_s and end_s (a checkpoint burst, a stall), and the client itself when
    it has a start of its own (a staggered replica: from start_s to its elapsed_s, label '')."""
    out = []
    for path, d in _walk(client, ()):
        start = finite(d.get("start_s"))
        end = finite(d.get("end_s")) if path else finite(d.get("elapsed_s"))
        if start is not None and end is not None and end >= start:
            out.append((path_label(path), start, end))
    return out
