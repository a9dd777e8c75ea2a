"""The report of an `aiio fio` result (the hero suite, on a mount or a bucket): each fio test
with its bandwidth, IOPS and completion-latency percentiles, over all jobs and per job; which
fio ran with which options; and the aiio runs each test is set beside."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from aiio.fio.pairing import phases_beside
from aiio.report import html as h
from aiio.report.common import (
    environment_pairs,
    guarded,
    header,
    other_section,
    status_notice,
    target_pairs,
    warnings_section,
)
from aiio.results.markup import Html
from aiio.results.result import IoFigures, Result, dig, model

KNOWN = {"schema", "io", "kind", "id", "phase", "status", "error", "started", "finished",
         "environment", "target", "method", "fio_version", "options", "clients_requested",
         "tests", "aggregate", "warnings", "saved_at"}
PERCENTILES = (("p50", "p50_ns"), ("p90", "p90_ns"), ("p99", "p99_ns"), ("p99.9", "p999_ns"),
               ("max", "max_ns"))


def title(res: Mapping[str, Any]) -> str:
    where = dig(res, "target", "path", default="?")
    jobs = dig(res, "options", "clients", default="?")
    fstype = dig(res, "target", "fstype", default="?")
    return f"aiio fio hero suite: {jobs} jobs on {where} ({fstype})"


def tests(res: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The result's tests that are objects (anything else counts as missing)."""
    got = res.get("tests")
    return {str(k): v for k, v in got.items() if isinstance(v, Mapping)} \
        if isinstance(got, Mapping) else {}


def render_body(res: Mapping[str, Any]) -> list[Html]:
    found = tests(res)
    body = [header(res, title(res)), status_notice(res, "fio suite"),
            warnings_section(h.items(res.get("warnings")), "fio suite",
                             finished=res.get("status") == "ok")]
    if not found:
        body.append(h.notice("warn", "This result holds no fio test, so no figures are shown."))
    body.append(guarded("summary", summary_section, res if isinstance(res, Result)
                        else model(res), found))
    body.append(guarded("pairing", pairing_section, res, found))
    body += [guarded(f"test {name}", test_section, name, test) for name, test in found.items()]
    body.append(guarded("what was measured", measured_section, res))
    body.append(other_section(res, KNOWN))
    return body


# --- over all jobs ---------------------------------------------------------------------------

def _latency_cells(lat: Any) -> list[h.Cell]:
    lat = lat if isinstance(lat, Mapping) else {}
    return [h.num(h.latency(lat.get(key)), lat.get(key)) for _, key in PERCENTILES]


def _rate(value: Any) -> str:
    """MiB/s without its unit, for columns whose heading names it."""
    return h.number(value, 1)


def summary_section(run: Result, found: Mapping[str, Mapping[str, Any]]) -> Html:
    """One row per test and direction: a mixed test's reads and writes stay apart."""
    rows = []
    for name in found:
        test = run.section(name) or IoFigures.of(name, (), {})
        spread = test.per_client_mib_s
        low, high = (spread.min, spread.max) if spread else (None, None)
        ops = dict(test.directions) or {"(none)": IoFigures.of("(none)", (), {})}
        if len(ops) > 1:  # a mix: its total too (no latency: the directions' differ)
            total = "+".join(ops)
            ops[total] = replace(IoFigures.of(total, (), {}), mib_s=test.mib_s, iops=test.iops)
        for op, fig in ops.items():
            rows.append([name, op, h.num(_rate(fig.mib_s), fig.mib_s),
                         h.num(h.number(fig.iops), fig.iops),
                         h.num(f"{_rate(low)} – {_rate(high)}", low),
                         h.num(h.number(test.jain, 3), test.jain),
                         *_latency_cells(fig.main_latency)])
    heads = ["test", "direction", "MiB/s", "IOPS", "per job MiB/s", "Jain",
             *[f"clat {p}" for p, _ in PERCENTILES]]
    return h.section("fio's figures per test", h.table(heads, rows, sortable=True),
                     anchor="summary", note=(
                         "MiB/s is 2^20 bytes per second: all jobs' bytes of that direction "
                         "over the slowest job's runtime (fio's group figure; aiio's last "
                         "done). IOPS the same way. clat is fio's completion latency of each "
                         "I/O (clat_ns); over all jobs its percentiles come from fio's "
                         "latency bins merged, per job they are fio's own."))


def pairing_section(res: Mapping[str, Any], found: Mapping[str, Mapping[str, Any]]) -> Html:
    """Which aiio runs each test is the hero of, and at which concurrency."""
    depth = dig(res, "options", "iodepth", default=1)
    depth = int(depth) if h.finite(depth) else 1
    items = []
    for name, test in found.items():
        jobs = len(h.items(test.get("clients")))
        phases = phases_beside(name)
        beside = (f"set beside {', '.join(phases)} runs" if phases
                  else "set beside no aiio phase (a reference figure only)")
        items.append(f"{name} ({jobs} fio jobs x iodepth {depth} = {jobs * depth} "
                     f"streams): {beside}.")
    note = ("A run's \"% of hero\" sets its last-done figure beside the test of its pattern "
            "when its clients x streams per client (loader or writer threads) equal fio's "
            "jobs x iodepth, on the same target.")
    return h.section("The aiio runs these tests are set beside", h.tag("ul", h.join(
        h.tag("li", i) for i in items)), anchor="pairing", note=note)


# --- one test --------------------------------------------------------------------------------

def test_section(name: str, test: Mapping[str, Any]) -> Html:
    rows = []
    for job in h.items(test.get("clients")):
        if not isinstance(job, Mapping):
            continue
        ops = job.get("ops") if isinstance(job.get("ops"), Mapping) else {}
        for op, fig in ops.items():
            fig = fig if isinstance(fig, Mapping) else {}
            rows.append([h.num(h.plain(job.get("client")), job.get("client")),
                         h.plain(job.get("host")), op,
                         h.num(h.size(fig.get("bytes")), fig.get("bytes")),
                         h.num(h.seconds(fig.get("runtime_s")), fig.get("runtime_s")),
                         h.num(_rate(fig.get("mib_s")), fig.get("mib_s")),
                         h.num(h.number(fig.get("iops")), fig.get("iops")),
                         *_latency_cells(fig.get("latency")), h.plain(job.get("error"))])
    heads = ["job", "host", "direction", "bytes", "runtime", "MiB/s", "IOPS",
             *[f"clat {p}" for p, _ in PERCENTILES], "error"]
    parts = [h.table(heads, rows, sortable=True, caption="per job")]
    objects = test.get("objects")
    if isinstance(objects, Mapping):
        parts.append(h.kv_table([("objects listed in the bucket", h.plain(objects.get("count"))),
                                 ("their bytes", h.size(objects.get("bytes")))],
                                caption="what the bucket held"))
    disks = [d for d in h.items(test.get("disk_util")) if isinstance(d, Mapping)]
    if disks:
        parts.append(h.records_table("block devices (fio's disk_util)", disks))
    if test.get("jobfile"):
        parts.append(h.details("the job file fio ran", h.tag("pre", test["jobfile"])))
    what = f"{test.get('description', '')}: fio rw={test.get('rw', '?')}, " \
           f"bs={h.size(test.get('block_size')) if test.get('block_size') else 'object size'}"
    return h.section(f"{name}", *parts, anchor=f"test-{name}", note=what)


def measured_section(res: Mapping[str, Any]) -> Html:
    """Which fio, with which options, against which target, from which machine."""
    opts = res.get("options") if isinstance(res.get("options"), Mapping) else {}
    fio = [("fio", res.get("fio_version", h.MISSING)), ("method", res.get("method", h.MISSING)),
           *[(k, h.by_name(k, v)) for k, v in opts.items()]]
    parts = [h.kv_table(fio, caption="fio and its options")]
    if isinstance(res.get("target"), Mapping):
        parts.append(h.kv_table(target_pairs(res["target"]), caption="target"))
    if isinstance(res.get("environment"), Mapping):
        parts.append(h.kv_table(environment_pairs(res["environment"]), caption="environment"))
    return h.section("What was measured", h.grid(*parts), anchor="measured")
