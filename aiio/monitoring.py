"""Monitoring export: history records as a node_exporter textfile (Prometheus text format).

Acceptance runs and `aiio history` write the same metric names through this one module, so a
dashboard does not care which of them produced the file. Every figure is one gauge whose
labels say which series it belongs to (check, kind, target, phase, workload, clients); beside
them each series has its pass/fail, its status, a regression flag and the time it ran. Values
are the history's own floats: MiB/s in MiB/s, seconds in seconds, percentages as 0..1 ratios.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry, write_to_textfile
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from aiio.errors import AiioError, ConfigError
from aiio.figures import FIGURES
from aiio.history import Record, readable

PREFIX = "aiio_"
LABELS = ("check", "kind", "target", "phase", "workload", "clients")
UNIT_WORDS = {"MiB/s": "MiB/s (2^20 bytes per second)", "s": "seconds", "ms": "milliseconds",
              "%": "ratio 0..1", "": "no unit"}

# (record, names of its regressed figures): what one series contributes to the file
Judged = tuple[Record, list[str]]


def check_path(path: str) -> Path:
    """The export path, refused before anything runs when node_exporter could not read it."""
    p = Path(path)
    if p.suffix != ".prom":
        raise ConfigError(f"--prometheus {path}: the node_exporter textfile collector reads "
                          "only *.prom files; name it e.g. aiio.prom")
    real = Path(os.path.realpath(p))  # a symlink: the file it points to is written
    if real.is_dir():
        raise ConfigError(f"--prometheus {path}: is a folder; name the file in it, e.g. "
                          f"{p / 'aiio.prom'}")
    if not real.parent.is_dir():
        raise ConfigError(f"--prometheus {path}: folder {real.parent} does not exist; point "
                          "it at node_exporter's --collector.textfile.directory")
    if not os.access(real.parent, os.W_OK):
        raise ConfigError(f"--prometheus {path}: folder {real.parent} is not writable")
    return p


def _labels(rec: Record) -> list[str]:
    """The series' label values, as valid UTF-8 (the file is UTF-8; a path may not be)."""
    return [readable(v) for v in (rec.name, rec.kind, rec.target, rec.phase, rec.workload,
                                  rec.clients)]


class SeriesCollector(Collector):
    """The gauges of a fixed list of judged records (one per series)."""

    def __init__(self, judged: list[Judged]) -> None:
        self.judged = judged

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield from self._figures()
        passed = _gauge("passed", "1 when the check passed (a run: finished ok), else 0")
        status = _gauge("status", "1 for the record's status (pass, fail, error, ok, failed, "
                        "interrupted)", ("status",))
        regressed = _gauge("regression", "1 when a watched figure is worse than its baseline "
                           "(median of the last passing records of its series)")
        required = _gauge("required", "the threshold a check judges a figure against, in the "
                          "figure's unit", ("figure",))
        when = _gauge("timestamp_seconds", "when the record was written, Unix time")
        for rec, regs in self.judged:
            labels = _labels(rec)
            passed.add_metric(labels, 1.0 if rec.passed else 0.0)
            status.add_metric([*labels, readable(rec.status)], 1.0)
            regressed.add_metric(labels, 1.0 if regs else 0.0)
            for name, value in sorted(rec.required.items()):
                required.add_metric([*labels, name], value)
            when.add_metric(labels, rec.ts)
        yield from (passed, status, regressed, required, when)

    def _figures(self) -> Iterator[GaugeMetricFamily]:
        names = sorted({n for rec, _ in self.judged for n in rec.figures if n in FIGURES})
        for name in names:
            fig = FIGURES[name]
            gauge = _gauge(name, f"{fig.label}, {UNIT_WORDS.get(fig.unit, fig.unit)}")
            for rec, _ in self.judged:
                if name in rec.figures:
                    gauge.add_metric(_labels(rec), rec.figures[name])
            yield gauge


def _gauge(name: str, doc: str, extra: tuple[str, ...] = ()) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, doc, labels=[*LABELS, *extra])


def write(path: str | Path, judged: list[Judged]) -> Path:
    """Write the records' gauges to `path` atomically (a temporary file renamed over it), so
    node_exporter never reads half a file."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SeriesCollector(judged))
    try:
        # through a symlink the rename goes to the file it points to, keeping the link
        write_to_textfile(os.path.realpath(path), registry)
    except OSError as exc:
        raise AiioError(f"--prometheus {path}: cannot write: {exc.strerror}") from None
    return Path(path)


def latest(judged: list[tuple[Record, list]]) -> list[Judged]:
    """The last record of every series (name, target) with its regressed figures."""
    last: dict[tuple[str, str], Judged] = {}
    for rec, regs in judged:
        last[rec.series] = (rec, [r.figure for r in regs])
    return list(last.values())
