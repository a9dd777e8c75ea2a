"""Monitoring export: history records as a node_exporter textfile (Prometheus text format).

Acceptance runs and `aiio history` write the same metric names through this one module, so a
dashboard does not care which of them produced the file. Every figure is one gauge whose
labels say which series it belongs to (check, kind, target, phase, workload, clients, spec,
and the settings key);
beside them each series has its pass/fail, its status, a regression flag and the time it ran.
Names and values follow Prometheus' base units: bytes per second (not MiB/s), seconds (not
milliseconds), ratios 0..1 (not percent), with the unit as the name's suffix.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry, write_to_textfile
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from aiio.errors import AiioError, ConfigError
from aiio.results.figures import FIGURES
from aiio.results.history import History, Record, check_of, readable, with_regressions

PREFIX = "aiio_"
# settings: the record's settings key (history.settings_key), so a dashboard's series over
# time, as the history's baselines, never mixes runs of other settings
LABELS = ("check", "kind", "target", "phase", "workload", "clients", "spec", "settings")
# a history figure's unit -> (the factor to its base unit, the base unit in words)
BASE_UNITS = {"MiB/s": (2.0 ** 20, "bytes per second"), "s": (1.0, "seconds"),
              "ms": (1e-3, "seconds"), "%": (1.0, "ratio 0..1"), "": (1.0, "no unit")}
# each history figure's metric name (after the prefix), its base unit as the suffix
METRICS = {
    "aggregate_mib_s": "aggregate_bytes_per_second",
    "last_done_mib_s": "last_done_bytes_per_second",
    "client_mib_s_min": "client_min_bytes_per_second",
    "client_mib_s_mean": "client_mean_bytes_per_second",
    "cv": "cv", "jain": "jain",
    "au_min": "au_min_ratio", "au_mean": "au_mean_ratio",
    "samples_per_s": "samples_per_second",
    "p99_ms": "p99_latency_seconds",
    "query_p99_ms": "query_p99_latency_seconds",
    "queries_per_s": "queries_per_second",
    "tokens_per_s": "tokens_per_second",
    "storage_p95_ms": "storage_p95_latency_seconds",
    "request_p95_ms": "request_p95_latency_seconds",
    "checkpoint_s": "checkpoint_seconds", "restore_s": "restore_seconds",
    "load_s": "load_seconds",
    "hero_fraction": "hero_fraction_ratio",
    "scaling_efficiency": "scaling_efficiency_ratio",
    "scaling_efficiency_min": "scaling_efficiency_min_ratio",
}


def _unit_words(figure: str) -> str:
    """A figure's base unit in words for its help: a count per second (samples, queries,
    tokens) is kept without a unit in the history, yet its metric is a rate, as its name's
    suffix says."""
    unit = FIGURES[figure].unit
    if unit == "" and METRICS[figure].endswith("_per_second"):
        return "per second"
    return BASE_UNITS[unit][1]


def base_value(figure: str, value: float) -> float:
    """A history figure's value in its metric's base unit."""
    return value * BASE_UNITS[FIGURES[figure].unit][0]

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
                                  rec.clients, rec.spec, rec.key[2])]


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
        required = _gauge("required", "the threshold a check judges a figure against, in "
                          "the base unit of the figure's metric", ("figure",))
        when = _gauge("timestamp_seconds", "when the record was written, Unix time")
        for rec, regs in self.judged:
            labels = _labels(rec)
            passed.add_metric(labels, 1.0 if rec.passed else 0.0)
            status.add_metric([*labels, readable(rec.status)], 1.0)
            regressed.add_metric(labels, 1.0 if regs else 0.0)
            for name, value in sorted(rec.required.items()):
                required.add_metric([*labels, name], base_value(name, value))
            when.add_metric(labels, rec.ts)
        yield from (passed, status, regressed, required, when)

    def _figures(self) -> Iterator[GaugeMetricFamily]:
        names = sorted({n for rec, _ in self.judged for n in rec.figures if n in FIGURES})
        for name in names:
            fig = FIGURES[name]
            gauge = _gauge(METRICS[name], f"{fig.label}, {_unit_words(name)}")
            for rec, _ in self.judged:
                if name in rec.figures:
                    gauge.add_metric(_labels(rec), base_value(name, rec.figures[name]))
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


def other_checks(history: History, spec: str, target: str, ran: list[Judged]) -> list[Judged]:
    """The last record, from the history, of every check of one spec on one target that did
    not run now: an acceptance export of some checks (--check) keeps the others' series.
    A check counts once, whichever read loop timed it (its series are "NAME [python loop]"
    and the like): the export shows its last state, not an old failure of another loop."""
    now = {check_of(rec.name) for rec, _ in ran if rec.kind == "check"}
    records = [r for r in history.records(target=target) if r.spec == spec and r.kind == "check"]
    last: dict[str, Judged] = {}
    for judged in sorted(latest(with_regressions(records)), key=lambda j: (j[0].ts, j[0].id)):
        if check_of(judged[0].name) not in now:
            last[check_of(judged[0].name)] = judged  # the later overwrites the earlier
    return list(last.values())
