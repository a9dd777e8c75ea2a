"""Where a run result keeps its figures: its named I/O sections (in the aggregate and in each
client's entry), the parts its phase declares (checkpoints, the model load, metadata, other
byte series, stages) and how it is judged.

A result of aiio.result/3 records all of it in its own `io` index, written when it is saved,
so reading one needs no phase. Results of /1 and /2 recorded at most the section paths of
their first client: they are read with `LEGACY`, the phases' declarations as they stood when
/3 was made, frozen here (a phase added later writes /3 results only). Below the phases and
the result model both: the phases build the index with `index_of`, the model reads it.
The finders below are the common layouts, and phases whose layout they are declare with
them; a phase that lays its figures out anew writes a finder of its own, and the table keeps
these: /1 and /2 results were written so (tests/test_results_v1.py and _v3.py hold them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiio.document import Where, dig

# (part, client) -> name -> path inside `part` (its aggregate, or one client's entry)
Finder = Callable[[Mapping[str, Any], bool], dict[str, Where]]


def flat_sections(main_op: str) -> Finder:
    """One stream kept flat, as the common aggregate's, named by the main operation."""
    return lambda part, client: {main_op: ()}


def burst_sections(part: Any, sides: tuple[str, ...]) -> dict[str, Where]:
    """'checkpoint.N.write' (and '.read') -> path, for each burst under part['checkpoints']."""
    out: dict[str, Where] = {}
    bursts = dig(part, "checkpoints", default=[])
    for k, burst in enumerate(bursts if isinstance(bursts, list) else ()):
        for side in sides:
            if isinstance(dig(burst, side), Mapping):
                out[f"checkpoint.{burst.get('n', k + 1)}.{side}"] = ("checkpoints", k, side)
    return out


def read_write_sections(part: Mapping[str, Any], client: bool = False) -> dict[str, Where]:
    """'read' and 'write', each under its own key (data preparation, the random mix)."""
    return {d: (d,) for d in ("read", "write") if isinstance(part.get(d), Mapping)}


def train_sections(part: Mapping[str, Any], client: bool) -> dict[str, Where]:
    """The reads (the accelerators' consumed bytes), flat; in the aggregate also the loaders'
    side (read-ahead included); and each checkpoint burst's writes."""
    if client:
        return {"read": (), **burst_sections(part, ("write",))}
    out: dict[str, Where] = {"read": ()}
    if isinstance(part.get("delivered"), Mapping):
        out["delivered"] = ("delivered",)
    held = burst_sections(part.get("checkpoint"), ("write",))
    return {**out, **{name: ("checkpoint", *path) for name, path in held.items()}}


def checkpoint_sections(part: Mapping[str, Any], client: bool) -> dict[str, Where]:
    return burst_sections(part, ("write", "read"))


def one_below(sections: Mapping[str, Where]) -> dict[str, Where]:
    """A client's totals by default: its I/O sections one key below its entry (prep's read
    and write, a lifecycle stage's)."""
    return {name: path for name, path in sections.items() if len(path) == 1}


@dataclass(frozen=True)
class Layout:
    """A phase's layout of its result, as a reader needs it. Paths of parts (`checkpoint_at`,
    `load_at`, `metadata_at`) are inside the aggregate; a lifecycle's checkpoint and load
    parts are its stage's, behind the stage's name."""

    name: str = ""
    main_op: str = "read"            # the operation its p99 latency figure is taken from
    judged_on: str = "first_done"    # a key of aiio.sweep.per_point.JUDGES
    headline_stage: str | None = None
    stages: tuple[str, ...] = ()
    checkpoint_at: Where | None = None
    load_at: Where | None = None
    metadata_at: Where | None = None  # in the aggregate and in a client's entry alike
    other_series: tuple[tuple[str, str], ...] = ()  # (name, key prefix) in a client's entry
    finder: Finder | None = None     # None: flat_sections(main_op)
    totals_finder: Callable[[Mapping[str, Any]], dict[str, Where]] | None = None
    stage_layouts: Mapping[str, Layout] = field(default_factory=dict)
    # The workload sections the run's phase read (Phase.sections_read), which its history
    # record is keyed by; None: not recorded (written before phases declared them).
    workload_sections: tuple[str, ...] | None = None

    def sections(self, part: Any, client: bool) -> dict[str, Where]:
        """Name -> path inside `part` (the aggregate, or a client's entry when `client`)."""
        if not isinstance(part, Mapping) or not part:
            return {}
        return (self.finder or flat_sections(self.main_op))(part, client)

    def aggregate_sections(self, doc: Mapping[str, Any]) -> dict[str, Where]:
        """Name -> path from the document's top of each section of a run's aggregate."""
        agg = dig(doc, "aggregate", default={})
        return {name: ("aggregate", *path) for name, path in self.sections(agg, False).items()}

    def client_sections(self, n: int, entry: Mapping[str, Any]) -> dict[str, Where]:
        """The sections of the `n`th client's entry."""
        return self.sections(entry, True)

    def client_totals(self, n: int, entry: Mapping[str, Any]) -> dict[str, Where]:
        """Name -> path in the `n`th client's entry of each stream its per-client figures
        show beside the client's own."""
        if self.totals_finder is not None:
            return self.totals_finder(entry)
        return one_below(self.client_sections(n, entry))

    def stage(self, name: str) -> Layout:
        return self.stage_layouts.get(name) or legacy(name)


# --- a /3 result's own index -----------------------------------------------------------------

def _paths(value: Any) -> dict[str, Where]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): tuple(p) for k, p in value.items() if isinstance(p, list)}


def _where(value: Any) -> Where | None:
    return tuple(value) if isinstance(value, list) else None


@dataclass(frozen=True)
class Indexed(Layout):
    """The layout a result records in its `io` index: every section's path, each client's."""

    aggregate: Mapping[str, Where] = field(default_factory=dict)
    first_client: Mapping[str, Where] = field(default_factory=dict)
    clients: tuple[Mapping[str, Any], ...] = ()  # per client: its sections and totals

    def aggregate_sections(self, doc: Mapping[str, Any]) -> dict[str, Where]:
        return dict(self.aggregate)

    def _entry(self, n: int) -> Mapping[str, Any] | None:
        return self.clients[n] if 0 <= n < len(self.clients) else None

    def client_sections(self, n: int, entry: Mapping[str, Any]) -> dict[str, Where]:
        own = self._entry(n)
        return _paths(own.get("sections")) if own is not None else dict(self.first_client)

    def client_totals(self, n: int, entry: Mapping[str, Any]) -> dict[str, Where]:
        own = self._entry(n)
        if own is not None and isinstance(own.get("totals"), Mapping):
            return _paths(own.get("totals"))
        return one_below(self.client_sections(n, entry))


def indexed(index: Mapping[str, Any], n_clients: int | None = None) -> Indexed:
    """The layout an `io` index records (a /2 index: its sections and main operation only).
    Per-client entries are believed only when there is one for each client."""
    clients = tuple(c if isinstance(c, Mapping) else {} for c in index.get("clients") or ())
    if n_clients is not None and len(clients) != n_clients:
        clients = ()
    stages = index.get("stages") if isinstance(index.get("stages"), Mapping) else {}
    series = index.get("other_series")
    stage_names = tuple(str(s) for s in stages)
    return Indexed(
        name=str(index.get("phase") or ""), main_op=str(index.get("main_op") or "read"),
        judged_on=str(index.get("judged_on") or "first_done"),
        headline_stage=index.get("headline_stage") if isinstance(
            index.get("headline_stage"), str) else None,
        stages=stage_names, checkpoint_at=_where(index.get("checkpoint_at")),
        load_at=_where(index.get("load_at")), metadata_at=_where(index.get("metadata_at")),
        other_series=tuple((str(s[0]), str(s[1])) for s in series
                           if isinstance(s, list) and len(s) == 2)
        if isinstance(series, list) else (),
        stage_layouts={k: indexed(v) for k, v in stages.items() if isinstance(v, Mapping)},
        aggregate=_paths(index.get("aggregate")), first_client=_paths(index.get("client")),
        clients=clients, workload_sections=sections_of_index(index))


def sections_of_index(index: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The workload sections an index records its phase read; None when it records none."""
    listed = index.get("workload_sections")
    if isinstance(listed, list) and all(isinstance(s, str) for s in listed):
        return tuple(listed)
    return None


def index_of(layout: Layout, doc: Mapping[str, Any]) -> dict[str, Any]:
    """The `io` index a run result records: its layout, every aggregate section's path from
    the document's top, and each client's sections and totals (`clients`, in order; `client`
    is the first one's, as /2 recorded it)."""
    entries = [c for c in dig(doc, "clients", default=[]) if isinstance(c, Mapping)]
    clients = [{"sections": _listed(layout.client_sections(n, c)),
                "totals": _listed(layout.client_totals(n, c))} for n, c in enumerate(entries)]
    return {"phase": layout.name, "main_op": layout.main_op, "judged_on": layout.judged_on,
            "headline_stage": layout.headline_stage,
            "aggregate": _listed(layout.aggregate_sections(doc)),
            "client": clients[0]["sections"] if clients else {}, "clients": clients,
            "checkpoint_at": _list(layout.checkpoint_at), "load_at": _list(layout.load_at),
            "metadata_at": _list(layout.metadata_at),
            "other_series": [list(s) for s in layout.other_series],
            "stages": {name: index_of(layout.stage(name), stage_part(doc, name))
                       for name in layout.stages},
            # what its history record is keyed by; a result read with the frozen table
            # (/1, /2) recorded none
            **({} if layout.workload_sections is None
               else {"workload_sections": list(layout.workload_sections)})}


def _listed(paths: Mapping[str, Where]) -> dict[str, list[Any]]:
    return {k: list(v) for k, v in paths.items()}


def _list(where: Where | None) -> list[Any] | None:
    return None if where is None else list(where)


def stage_part(doc: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A lifecycle run's stage as a run of that stage's phase: its aggregate and each
    client's entry of it."""
    return dict(doc, phase=name, aggregate=dig(doc, "aggregate", name, default={}),
                clients=[c[name] for c in dig(doc, "clients", default=[])
                         if isinstance(c, Mapping) and isinstance(c.get(name), Mapping)])


# --- /1 and /2: the phases' declarations when /3 was made, frozen ---------------------------

def _checkpoint_totals(entry: Mapping[str, Any]) -> dict[str, Where]:
    """Each checkpoint client's writes and restores over every checkpoint."""
    return {"write": ("write",), "read": ("read",)}


def _lifecycle_sections(part: Mapping[str, Any], client: bool) -> dict[str, Where]:
    """Each stage's sections as that stage's phase lays them out, named 'stage.name'."""
    return {f"{stage}.{name}": (stage, *path) for stage in LIFECYCLE
            for name, path in LEGACY[stage].sections(part.get(stage), client).items()}


LIFECYCLE = ("prep", "train", "load")
LEGACY: dict[str, Layout] = {
    "train": Layout("train", checkpoint_at=("checkpoint",), finder=train_sections,
                    other_series=(("consumed", "consumed_"),)),
    "prep": Layout("prep", judged_on="read_plus_write", metadata_at=("metadata",),
                   finder=read_write_sections),
    "randrw": Layout("randrw", judged_on="read_plus_write", finder=read_write_sections),
    "checkpoint": Layout("checkpoint", main_op="write", judged_on="persist", checkpoint_at=(),
                         finder=checkpoint_sections, totals_finder=_checkpoint_totals),
    "load": Layout("load", load_at=()),
    "all": Layout("all", headline_stage="train", stages=LIFECYCLE,
                  checkpoint_at=("train", "checkpoint"), load_at=("load",),
                  finder=_lifecycle_sections),
}


def legacy(name: str) -> Layout:
    """A phase's layout by its name as /1 and /2 results were written; a phase not in the
    table reads with the defaults (one flat stream named by its main operation, read)."""
    return LEGACY.get(name) or Layout(name)


def _legacy_of(doc: Mapping[str, Any]) -> Layout:
    """The frozen layout of a /1 or /2 run: prep's in the random mode is randrw's."""
    name = str(doc.get("phase") or "")
    if name == "prep":
        mode = dig(doc, "aggregate", "mode") or dig(doc, "workload", "prep", "mode")
        return LEGACY["randrw"] if mode == "randrw" else LEGACY["prep"]
    return legacy(name)


# The workload sections each phase read when history records kept the whole workload without
# saying (aiio before phases declared them, Phase.workload_sections), frozen: (always, and when
# it saved checkpoints during the run). Such a record's key is recomputed with them, so it
# meets the records written since (aiio.results.history.compared_settings).
SAVING = ("checkpoint", "model", "transformer")
LEGACY_SECTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "train": (("dataset", "train"), SAVING), "prep": (("dataset", "prep"), ()),
    "randrw": (("prep",), ()), "checkpoint": (SAVING, ()), "load": (("load", "model"), ()),
    "kvcache": (("kvcache",), ()), "vector": (("vector", "s3"), ()),
    "all": (("dataset", "prep", "train", *SAVING, "load"), ())}


def legacy_sections(phase: str, workload: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The sections a record of `phase` that did not say read (`LEGACY_SECTIONS`; prep in its
    random mode: randrw's, as it ran); None for a phase not in the table: its whole workload
    is its key."""
    if phase == "prep" and dig(workload, "prep", "mode") == "randrw":
        phase = "randrw"
    if phase not in LEGACY_SECTIONS:
        return None
    always, saving = LEGACY_SECTIONS[phase]
    every = dig(workload, "checkpoint", "every", default=0)
    saves = isinstance(every, (int, float)) and every > 0
    return always + saving if saves else always


def layout_of(doc: Mapping[str, Any]) -> Layout:
    """The layout of a result: its own index when it is of /3 (or of a phase the frozen table
    does not know, whose /2 index is all there is), else the frozen table's."""
    index = doc.get("io")
    n = sum(isinstance(c, Mapping) for c in doc.get("clients") or ()) \
        if isinstance(doc.get("clients"), list) else None
    if isinstance(index, Mapping) and (doc.get("schema") == SCHEMA_V3 or
                                       doc.get("phase") not in LEGACY):
        return indexed(index, n)
    return _legacy_of(doc)


SCHEMA_V3 = "aiio.result/3"
