"""Sections every kind of report shares: title, what went wrong, warnings, what was measured."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aiio.cache_methods import MEANING
from aiio.report import html as h
from aiio.results.markup import Html
from aiio.results.result import Result, dig, kind_of, model

log = logging.getLogger(__name__)

# What each well-known part of a result must be; anything else counts as missing.
KINDS_OF: dict[str, type | tuple[type, ...]] = {
    "clients": list, "points": list, "table": list, "checks": list, "warnings": list,
    "aggregate": Mapping, "target": (Mapping, str), "workload": Mapping,
    "environment": Mapping, "monitor": Mapping, "verdict": (Mapping, str), "method": str}


def guarded(name: str, draw: Callable[..., Html], *args: Any) -> Html:
    """Draw one section; a damaged part of the result costs that section, never the page."""
    try:
        return draw(*args)
    except Exception as exc:  # noqa: BLE001 - any damage in the input must still render
        log.debug("report section %s failed", name, exc_info=True)
        return h.notice("fail", f"The {name} section could not be drawn from this result "
                        f"({type(exc).__name__}: {exc}).")


def sections(res: Mapping[str, Any], title: str, what: str,
             drawn: Sequence[tuple[str, Callable[[Mapping[str, Any]], Html]]],
             known: set[str]) -> list[Html]:
    """A page's body: its title, a notice when the `what` (table, search) did not finish,
    each (name, draw) section guarded, then whatever else it recorded."""
    return [header(res, title), status_notice(res, what),
            *(guarded(name, draw, res) for name, draw in drawn),
            guarded("other", other_section, res, known)]


def header(res: Mapping[str, Any], title: str) -> Html:
    status = dig(res, "status", default="unknown")
    when = f"{dig(res, 'started', default='start unknown')} to " \
           f"{dig(res, 'finished', default='end unknown')}"
    version = dig(res, "environment", "aiio")
    meta = h.join([h.badge(status), " ", h.tag("code", dig(res, "id", default="no id")),
                   f" · {when}" + (f" · aiio {version}" if version else "")])
    return h.join([h.tag("h1", title), h.tag("p", meta, class_="meta")])


def status_notice(res: Mapping[str, Any], what: str) -> Html:
    """Say plainly when the figures below are partial and why."""
    status = res.get("status")
    if status in ("ok", "pass", "fail"):  # an acceptance run that judged every check
        return Html("")
    reason = res.get("error") or "no reason was recorded"
    if status in ("interrupted", "failed"):
        return h.notice("fail", f"This {what} did not finish: it was {status} ({reason}). "
                        "Everything below comes from what was recorded before it stopped.")
    return h.notice("fail", f"This {what} has status {status!r}, not ok ({reason}); "
                    "its figures may be incomplete.")


def missing_notice(res: Mapping[str, Any], expected: Mapping[str, str]) -> Html:
    """List the parts of a result that are absent, empty or of the wrong kind (a list where a
    list belongs, an object where an object does), with what each would have shown."""
    def gone_(key: str) -> bool:
        value = res.get(key)
        kind = KINDS_OF.get(key)
        return not value or (kind is not None and not isinstance(value, kind))

    gone = [f"{key}: {meaning}" for key, meaning in expected.items() if gone_(key)]
    if not gone:
        return Html("")
    return h.notice("warn", "Missing from this result, so not shown:", gone)


def warnings_section(warnings: list[Any], scope: str, finished: bool = True) -> Html:
    """The honesty warnings, first thing after the title (DESIGN: measuring rule 2)."""
    if not warnings and not finished:
        return h.notice("warn", f"This {scope} stopped before its figures were checked for "
                        "honesty (memory-backed target, page cache, busy client CPU, bytes the "
                        "block device saw): no warning here does not mean none applies.",
                        anchor="warnings")
    if not warnings:
        return h.notice("ok", f"No honesty warnings were raised for this {scope}: the target, "
                        "the cache-defeat method and the client machine gave no reason to "
                        "doubt that the figures are the storage's.", anchor="warnings")
    items = []
    for w in warnings:
        if isinstance(w, Mapping):
            items.append(h.join([h.tag("code", w.get("code", "warning")), " ",
                                 w.get("message", "")]))
        else:
            items.append(str(w))
    return h.notice("warn", f"Why these figures may not be the storage's ({len(items)}):", items,
                    anchor="warnings")


NOT_SET = "not set"


def _declared(section: str) -> list:
    """The workload section's key declarations (dataclass fields); none for an unknown one."""
    import dataclasses
    import typing

    from aiio.workload import Workload

    spec = typing.get_type_hints(Workload).get(section)
    if spec is None or not dataclasses.is_dataclass(spec):
        return []
    return list(dataclasses.fields(spec))


def _off_when_zero(section: str) -> set[str]:
    """The section's duration keys for which 0 means "not set" (train.duration: run by
    epochs; load.stagger: all at once), read from the workload's own key declarations."""
    return {f.name for f in _declared(section) if f.metadata.get("kind") == "duration"
            and f.default == 0 and f.metadata.get("min") == 0}


def mark_unset(workload: Mapping[str, Any]) -> dict[str, Any]:
    """The workload with each unset value replaced by "not set", so no table shows it as a
    zero with a unit ("0.000 s")."""
    out: dict[str, Any] = {}
    for name, section in workload.items():
        if isinstance(section, Mapping):
            off = _off_when_zero(str(name))
            section = {k: NOT_SET if v is None or (k in off and v == 0) else v
                       for k, v in section.items()}
        out[name] = section
    return out


def section_pairs(section: Mapping[str, Any], name: str = "") -> list[tuple[str, str]]:
    """A workload section as (key, value) rows, each with the unit its key declares (a
    duration in seconds, a size in bytes), else the one its name implies."""
    kinds = {f.name: f.metadata.get("kind") for f in _declared(name)}
    rows = []
    for key, value in section.items():
        if isinstance(value, Mapping):
            text = ", ".join(f"{k} {h.by_name(key, v)}" for k, v in value.items())
        elif kinds.get(key) == "duration" and h.finite(value) is not None:
            text = h.seconds(value)
        else:
            text = h.by_name(key, value)
        rows.append((key, text))
    return rows


def target_pairs(t: Mapping[str, Any]) -> list[tuple[str, Any]]:
    if t.get("fstype") == "s3":  # a bucket prefix: no device, no capacity, no page cache
        return [("bucket prefix", t.get("path", h.MISSING)),
                ("S3 endpoint", t.get("mountpoint") or "from the AWS configuration")]
    return [
        ("path", t.get("path", h.MISSING)),
        ("filesystem", f"{t.get('fstype', '?')} mounted at {t.get('mountpoint', '?')}"),
        ("device", t.get("device", h.MISSING)),
        ("memory-backed (tmpfs, ramfs)", h.plain(t.get("memory_backed"))),
        ("network filesystem", h.plain(t.get("network"))),
        ("O_DIRECT accepted", h.plain(t.get("o_direct"))),
        ("space free / total", f"{h.size(t.get('free_bytes'))} / {h.size(t.get('total_bytes'))}"),
    ]


def environment_pairs(env: Mapping[str, Any]) -> list[tuple[str, Any]]:
    argv = env.get("argv")
    return [
        ("host", env.get("host", h.MISSING)),
        ("CPUs (logical / physical)", f"{env.get('cpus', '?')} / {env.get('cpus_physical', '?')}"),
        ("RAM", h.size(env.get("ram_bytes"))),
        ("kernel / OS", f"{env.get('kernel', '?')} / {env.get('os', '?')}"),
        ("aiio / Python / numpy", f"{env.get('aiio', '?')} / {env.get('python', '?')} / "
                                  f"{env.get('numpy', '?')}"),
        ("command", " ".join(str(a) for a in argv) if isinstance(argv, list) else h.MISSING),
    ]


def _process_pairs(res: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The engine that did the I/O, the processes that ran, and the start-up before the first
    I/O, where the result recorded them."""
    pairs: list[tuple[str, Any]] = []
    if res.get("engine"):
        pairs.append(("engine", res["engine"]))
    if res.get("ranks") is not None:
        pairs.append(("processes (ranks)", h.number(res["ranks"])))
    if isinstance(res, Result) and (shared := res.shared_processes) is not None:
        pairs.append(("client processes", f"{len(res.clients):,} clients in {shared[0]:,} "
                                          f"processes (as threads), {shared[1]:,} at most in "
                                          "one"))
    start = dig(res, "timing", "command_to_first_io_s", default=None)
    if start is not None:
        pairs.append(("command to first I/O", h.seconds(start)))
    return pairs


def _read_loop(res: Mapping[str, Any]) -> str | None:
    """Which loop timed a run's reads, when it recorded it (a sweep, fio suite or acceptance
    run has none of its own)."""
    if not isinstance(res, Result) and kind_of(res) != "run":
        return None
    return (res if isinstance(res, Result) else model(res)).summary.read_loop


def measured_section(res: Mapping[str, Any], clients_line: str) -> Html:
    """Target, filesystem, workload, clients, cache-defeat method and environment."""
    w = dig(res, "workload", default={})
    w = mark_unset(w) if isinstance(w, Mapping) else w
    phase = res.get("phase", h.MISSING)
    method = res.get("method")
    what = [
        ("phase", phase),
        ("workload", f"{dig(w, 'workload', 'name', default='?')}: "
                     f"{dig(w, 'workload', 'description', default='')}"),
        ("clients", clients_line),
        ("page-cache defeat", f"{method}: {MEANING.get(method, 'unknown method')}"
         if method else h.MISSING),
    ]
    what += _process_pairs(res)
    loop = _read_loop(res)
    if loop is not None:  # which loop timed the reads: results compare only alike
        what.append(("read loop", loop))
    # An acceptance run has no phase or workload of its own: its checks do.
    parts = [h.kv_table(what, caption="run")] if phase != h.MISSING or w else []
    t = res.get("target")
    parts.append(h.kv_table(target_pairs(t), caption="target") if isinstance(t, Mapping)
                 else h.notice("warn", "The target was not recorded."))
    for name in ("dataset", phase):
        if isinstance(w.get(name), Mapping):
            parts.append(h.kv_table(section_pairs(w[name], name), caption=f"workload [{name}]"))
    env = res.get("environment")
    if isinstance(env, Mapping):
        parts.append(h.kv_table(environment_pairs(env), caption="environment"))
    more = h.details("the whole resolved workload", h.nested_table(w)) if w else ""
    return h.section("What was measured", h.grid(*parts), more, anchor="measured")


# Who wrote the result (pid, host, boot): what tells a live run from a dead one, not a figure.
PROVENANCE = {"writer"}


def other_section(res: Mapping[str, Any], known: set[str]) -> Html:
    """Whatever the result holds that this report has no chart for, as plain tables."""
    rest = {k: v for k, v in res.items()
            if k not in known | PROVENANCE and v not in (None, {}, [])}
    if not rest:
        return Html("")
    return h.section("Other recorded figures", h.nested_table(rest), anchor="other",
                     note="Parts of the result this report has no specific view for, "
                          "shown as recorded.")
