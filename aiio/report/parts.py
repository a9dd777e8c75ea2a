"""The measured parts of a run result, read through the typed result model: the aggregate I/O
sections the phase declares, the clients' byte series (their I/O sections' and the phase's
other series: training's consumed bytes), the streams each client's figures show, latency
histograms and the clients' timed parts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiio.results.result import ClientFigures, IoFigures, Result, model
from aiio.stats import Histogram


@dataclass(frozen=True)
class Stream:
    """One kind of I/O the clients recorded a byte series for: an I/O section of theirs
    (`ClientFigures.io`) or a series the phase keeps beside them (`ClientFigures.series`)."""

    label: str       # its section's path as words: '' (kept flat), 'read', 'prep read'
    name: str
    declared: bool   # an I/O section; else one of the phase's other series ('consumed')

    def of(self, client: ClientFigures) -> IoFigures | None:
        """The client's figures of this stream, when it recorded a series of it."""
        got = (client.io if self.declared else client.series).get(self.name)
        return got if got is not None and got.has_series else None


def io_sections(res: Mapping[str, Any]) -> list[Stream]:
    """Every stream the clients recorded a byte series for, in the order the phase declares
    them: its I/O sections, then its other series (training's consumed bytes). Checkpoint
    bursts, one per list entry, belong to the timeline, not here."""
    run = res if isinstance(res, Result) else model(res)
    found: list[Stream] = []
    for c in run.clients:
        streams = [Stream(path_label(s.path), name, True) for name, s in c.io.items()
                   if s.has_series and all(isinstance(p, str) for p in s.path)]
        for stream in (*streams, *(Stream(name, name, False) for name in c.series)):
            if stream not in found:
                found.append(stream)
    return found


def client_subsections(res: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, name) of the streams each client's figures show beside its own
    (`Phase.client_totals`): prep's 'read' and 'write', a checkpoint client's totals, a
    lifecycle client's 'train' and 'load'."""
    run = res if isinstance(res, Result) else model(res)
    found: list[tuple[str, str]] = []
    for c in run.clients:
        for name, section in c.totals.items():
            if (path_label(section.path), name) not in found:
                found.append((path_label(section.path), name))
    return found


class AggSection:
    """One first-done/last-done aggregate inside a run's aggregate: its label, its typed
    section, its recorded figures and the path of keys that leads to it from the aggregate."""

    __slots__ = ("label", "section", "figures", "path")

    def __init__(self, label: str, section: IoFigures, path: tuple[str, ...]) -> None:
        self.label, self.section, self.path = label, section, path
        self.figures = section.figures


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
            out.append(AggSection(path_label(where), section, tuple(map(str, where))))
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


def events(client: ClientFigures) -> list[tuple[str, float, float]]:
    """(label, start s, end s) of the timed parts of a client's run, since the common start:
    a checkpoint burst, its write or restore, and the client itself when it has a start of
    its own (a staggered replica: label '')."""
    return [(path_label(e.path), e.start_s, e.end_s) for e in client.events]
