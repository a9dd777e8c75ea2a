"""The typed result model: every phase's I/O sections under one type and a name, the same from a
result saved by an earlier aiio (aiio.result/1) as from a later one (aiio.result/2, /3).

Expected numbers are read from the saved JSON with plain dict access, so they do not depend on
the model under test.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from aiio.phases import REGISTRY, result_layout
from aiio.phases.base import Phase
from aiio.results import result

from .conftest import TINY_ARGS, call_cli, run_cli

STORED = Path(__file__).parent / "data" / "results-v1"


def _folder(name: str) -> Path:
    [folder] = [p for p in STORED.iterdir() if p.name.endswith(f"-{name}")]
    return folder


def _doc(folder: Path) -> dict:
    return json.loads((folder / "result.json").read_text())


def _bursts(part: dict, sides: tuple[str, ...], prefix: str = "") -> dict[str, dict]:
    return {f"{prefix}checkpoint.{b['n']}.{side}": b[side]
            for b in part.get("checkpoints", []) for side in sides if side in b}


# Where each phase keeps its I/O sections in the saved document, spelled out by hand.
AGGREGATE = {
    "230529-train-demo-c2": lambda a: {"read": a, "delivered": a["delivered"]},
    "prep-demo-c2": lambda a: {"read": a["read"], "write": a["write"]},
    "checkpoint-demo-c2": lambda a: _bursts(a, ("write", "read")),
    "load-demo-c2": lambda a: {"read": a},
    "all-demo-c2": lambda a: {
        "prep.read": a["prep"]["read"], "prep.write": a["prep"]["write"],
        "train.read": a["train"], "train.delivered": a["train"]["delivered"],
        **_bursts(a["train"]["checkpoint"], ("write",), "train."), "load.read": a["load"]},
}
CLIENT = {
    "230529-train-demo-c2": lambda c: {"read": c},
    "prep-demo-c2": lambda c: {"read": c["read"], "write": c["write"]},
    "checkpoint-demo-c2": lambda c: _bursts(c, ("write", "read")),
    "load-demo-c2": lambda c: {"read": c},
    "all-demo-c2": lambda c: {"prep.read": c["prep"]["read"], "prep.write": c["prep"]["write"],
                              "train.read": c["train"],
                              **_bursts(c["train"], ("write",), "train."),
                              "load.read": c["load"]},
}


def _same_aggregate(section: result.IoFigures, recorded: dict) -> None:
    for window in ("first_done", "last_done"):
        got = getattr(section, window)
        assert (got.mib_s, got.seconds, got.bytes) == (
            recorded[window]["mib_s"], recorded[window]["seconds"], recorded[window]["bytes"])
    assert section.per_client_mib_s.min == recorded["per_client_mib_s"]["min"]
    assert section.jain == recorded["jain"]
    assert section.latency == recorded.get("latency", {})
    assert section.main_latency == {}  # an aggregate's latency is per operation


def _same_client(section: result.IoFigures, recorded: dict) -> None:
    assert (section.bytes, section.ops, section.elapsed_s, section.mib_s) == (
        recorded["bytes"], recorded["ops"], recorded["elapsed_s"], recorded["mib_s"])
    assert list(section.series) == recorded["series"]["bytes"]
    assert section.bucket_s == recorded["series"]["bucket_s"]
    assert section.histograms == recorded["histograms"]
    # a client keeps one latency summary, of its section's main operation, not one per op
    assert dict(section.main_latency) == recorded["latency"]
    assert section.main_p("p99") == recorded["latency"]["p99_ns"]


@pytest.mark.parametrize("name", sorted(AGGREGATE))
def test_a_stored_v1_run_holds_its_sections_under_one_type(name: str) -> None:
    folder = _folder(name)
    doc, res = _doc(folder), result.load(folder)
    expected = AGGREGATE[name](doc["aggregate"])
    assert list(res.io) == list(expected)
    for key, recorded in expected.items():
        _same_aggregate(res.io[key], recorded)
    assert len(res.clients) == len(doc["clients"]) == 2
    for client, entry in zip(res.clients, doc["clients"], strict=True):
        mine = CLIENT[name](entry)
        assert list(client.io) == list(mine)
        for key, recorded in mine.items():
            _same_client(client.io[key], recorded)
        assert (client.client, client.bytes, client.cpu_s) == (
            entry["client"], entry["bytes"], entry["cpu_s"])


def test_a_stored_fio_suite_sweep_and_warnings_read_as_types() -> None:
    fio = result.load(_folder("fio-c2"))
    for test, entry in _doc(_folder("fio-c2"))["tests"].items():
        agg = entry["aggregate"]
        got = fio.io[test]
        assert (got.bytes, got.ops, got.elapsed_s, got.mib_s) == (
            agg["bytes"], agg["ios"], agg["seconds"], agg["mib_s"])
    sweep_folder = _folder("scale-train-demo-c1_2")
    sweep = result.load(sweep_folder)
    points = _doc(sweep_folder)["points"]
    assert [p.io["read"].first_done.mib_s for p in sweep.points] == [
        p["result"]["aggregate"]["first_done"]["mib_s"] for p in points]
    train = _folder("230529-train-demo-c2")
    assert [(w.code, w.message) for w in result.load(train).warnings] == [
        (w["code"], w["message"]) for w in _doc(train)["warnings"]]


def test_a_v1_result_saved_again_is_v3_with_the_same_sections(tmp_path: Path) -> None:
    old = result.load(_folder("checkpoint-demo-c2"))
    assert old["schema"] == "aiio.result/1"
    result.save(old, tmp_path)
    doc = _doc(tmp_path)
    assert doc["schema"] == result.SCHEMA == "aiio.result/3"
    assert doc["io"]["aggregate"]["checkpoint.1.read"] == ["aggregate", "checkpoints", 1, "read"]
    assert doc["io"]["client"]["checkpoint.0.write"] == ["checkpoints", 0, "write"]
    assert [c["totals"] for c in doc["io"]["clients"]] == [
        {"write": ["write"], "read": ["read"]}] * len(doc["clients"])
    assert (doc["io"]["main_op"], doc["io"]["judged_on"], doc["io"]["checkpoint_at"]) == (
        "write", "persist", [])
    again = result.load(tmp_path)
    assert again.io == old.io and again.clients == old.clients


def test_a_new_run_saves_v3_whose_index_points_at_its_sections(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    proc = run_cli("run", "--no-report", "--phase", "prep", "-t", str(tmp_path / "t"), "--results",
                   str(tmp_path / "r"), *TINY_ARGS, "--set", "prep.shard_size=256KiB", "-q")
    assert proc.returncode == 0, proc.stderr
    [folder] = (tmp_path / "r").glob("*-prep-*")
    doc = _doc(folder)
    assert doc["schema"] == "aiio.result/3"
    own = {"read": ["read"], "write": ["write"]}
    assert doc["io"] == {"phase": "prep", "main_op": "read", "judged_on": "read_plus_write",
                         "headline_stage": None,
                         "aggregate": {"read": ["aggregate", "read"],
                                       "write": ["aggregate", "write"]},
                         "client": own, "clients": [{"sections": own, "totals": own}] * 2,
                         "checkpoint_at": None, "load_at": None, "metadata_at": ["metadata"],
                         "other_series": [], "stages": {},
                         "workload_sections": ["dataset", "prep"]}
    res = result.load(folder)
    for name, path in doc["io"]["aggregate"].items():
        recorded = result.dig(doc, *path)
        assert res.io[name].first_done.mib_s == recorded["first_done"]["mib_s"]
        assert res.io[name].last_done.bytes == recorded["last_done"]["bytes"]


def test_a_result_of_an_unknown_schema_is_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "result.json").write_text(json.dumps({"schema": "aiio.result/9", "kind": "run"}))
    proc = call_cli("report", str(tmp_path))
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert "not an aiio result (schema aiio.result/1 or aiio.result/2 or aiio.result/3)" in line


def test_the_one_constructor_starts_every_kind_alike() -> None:
    doc = result.new("sweep", "x-1", "2026-11-30T23:00:00+0000", phase="train", points=[])
    assert list(doc)[:8] == ["schema", "kind", "phase", "id", "status", "error", "started",
                             "finished"]
    assert (doc["schema"], doc["status"], doc["points"]) == (result.SCHEMA, "running", [])


def test_a_document_without_a_kind_reads_as_a_run() -> None:
    """Figures built by hand (or by an older writer) name their phase but may lack a kind."""
    res = result.model({"phase": "train", "aggregate": {"last_done": {"mib_s": 5.0}}})
    assert res.io["read"].last_done.mib_s == 5.0 and res.io["read"].mib_s == 5.0


def test_the_report_shows_the_latency_of_every_declared_section() -> None:
    """The lifecycle's training checkpoints sit five levels down; the report's latency table
    lists them as the training report does, from the sections the phases declare."""
    from aiio import report

    run = result.load(_folder("all-demo-c2"))
    burst = run.section("train.checkpoint.1.write")
    assert burst is not None and "fsync" in burst.histograms
    page = report.render(run)
    latency = page[page.index('id="latency"'):]
    assert "train checkpoint write: fsync" in latency
    assert "prep read: read" in latency and "load: read" in latency


@pytest.mark.parametrize("name", ["230529-train-demo-c2", "load-demo-c2"])
def test_the_report_shows_each_flat_clients_own_latency(name: str) -> None:
    """Training and model loading keep a client's reads flat: the per-client table shows each
    client's p50, p99 and max from its recorded summary."""
    from aiio import report
    from aiio.units import format_latency_ns

    folder = _folder(name)
    page = report.render(result.load(folder))
    clients = page[page.index('id="clients"'):]
    clients = clients[:clients.index("</table>")]
    assert "max latency" in clients
    for entry in _doc(folder)["clients"]:
        for key in ("p50_ns", "p99_ns", "max_ns"):
            assert format_latency_ns(entry["latency"][key]) in clients


class _ScribblePhase(Phase):
    """A phase that writes: its one stream under its own key, its latency figure the writes'."""

    name = "scribble"
    main_op = "write"

    def io_sections(self, part, client):
        return {"scribble": ("scribble",)}


def _scribble_result() -> dict:
    window = {"seconds": 2.0, "bytes": 8 * 2**20, "mib_s": 4.0}
    lat = {op: {"count": 8, "p50_ns": p99 // 5, "p99_ns": p99, "max_ns": 2 * p99}
           for op, p99 in (("read", 3_000_000), ("write", 7_000_000))}
    return {"kind": "run", "phase": "scribble", "status": "ok",
            "aggregate": {"scribble": {"first_done": window, "last_done": window,
                                       "latency": lat, "bytes": 8 * 2**20}},
            "clients": [{"client": 0, "scribble": {"bytes": 8 * 2**20, "mib_s": 4.0,
                                                   "latency": lat["write"]}}]}


def test_a_result_of_a_phase_this_aiio_does_not_know_keeps_its_sections_and_main_op(
        tmp_path: Path, monkeypatch) -> None:
    """A result records where its sections are and which operation its latency figure is
    taken from, so a reader that does not know its phase still finds both."""
    from aiio.results import figures

    with monkeypatch.context() as m:
        m.setitem(sys.modules, "scribble_phase", types.SimpleNamespace(PHASE=_ScribblePhase()))
        m.setitem(REGISTRY, "scribble", "scribble_phase")
        doc = _scribble_result()
        result.save(doc, tmp_path, result_layout(doc))  # as the runner saves it
    run = result.load(tmp_path)
    assert run.main_op == "write"
    assert list(run.io) == ["scribble"] and list(run.clients[0].io) == ["scribble"]
    assert figures.run_figures(run)["p99_ms"] == 7.0


@pytest.mark.parametrize(("name", "op"), [("230529-train-demo-c2", "read"),
                                          ("checkpoint-demo-c2", "write"),
                                          ("all-demo-c2", "read"), ("fio-c2", "read")])
def test_a_result_saved_before_it_recorded_its_main_op_takes_its_phases(name: str,
                                                                         op: str) -> None:
    assert result.load(_folder(name)).main_op == op


def test_a_clients_timed_parts_totals_and_other_series_read_as_types() -> None:
    """What the report's timeline, per-client columns and bandwidth charts read beside the I/O
    sections: each client's timed parts, the streams its row shows, training's consumed
    bytes."""
    ckpt = _folder("checkpoint-demo-c2")
    for client, entry in zip(result.load(ckpt).clients, _doc(ckpt)["clients"], strict=True):
        assert [(e.path, e.start_s, e.end_s) for e in client.events] == [
            (("checkpoints", k, side), b[side]["start_s"], b[side]["end_s"])
            for k, b in enumerate(entry["checkpoints"]) for side in ("write", "read")]
        assert {n: (t.mib_s, t.bytes) for n, t in client.totals.items()} == {
            side: (entry[side]["mib_s"], entry[side]["bytes"]) for side in ("write", "read")}
    load = _folder("load-demo-c2")
    for client, entry in zip(result.load(load).clients, _doc(load)["clients"], strict=True):
        assert [(e.path, e.start_s, e.end_s) for e in client.events] == [
            ((), entry["start_s"], entry["elapsed_s"])]
        assert client.totals == {} and client.series == {}
    train = _folder("230529-train-demo-c2")
    for client, entry in zip(result.load(train).clients, _doc(train)["clients"], strict=True):
        consumed = client.series["consumed"]
        assert list(consumed.series) == entry["consumed_series"]["bytes"]
        assert (consumed.mib_s, consumed.elapsed_s) == (entry["consumed_mib_s"],
                                                        entry.get("consumed_elapsed_s"))
    both = result.load(_folder("all-demo-c2")).clients[0]
    assert list(both.totals) == ["train.read", "load.read"]


def test_a_prep_runs_metadata_operations_read_as_types() -> None:
    folder = _folder("prep-demo-c2")
    doc, run = _doc(folder), result.load(folder)
    recorded = doc["aggregate"]["metadata"]
    assert (run.metadata.total, run.metadata.ops_s) == (recorded["total"], recorded["ops_s"])
    assert {op: (m.count, m.ops_s, m.p("p99")) for op, m in run.metadata.ops.items()} == {
        op: (m["count"], m["ops_s"], m["latency"]["p99_ns"]) for op, m in recorded["ops"].items()}
    assert [c.metadata.ops_s for c in run.clients] == [
        c["metadata"]["ops_s"] for c in doc["clients"]]
    assert result.load(_folder("230529-train-demo-c2")).metadata is None


@pytest.mark.parametrize(("name", "section", "where"), [
    ("230529-train-demo-c2", "read", ()), ("all-demo-c2", "train.read", ("train",))])
def test_accelerator_utilization_reads_as_a_type_beside_trainings_reads(
        name: str, section: str, where: tuple[str, ...]) -> None:
    folder = _folder(name)
    recorded = result.dig(_doc(folder)["aggregate"], *where)
    au = result.load(folder).section(section).au
    assert (au.mean, au.min, au.goal, au.passed, list(au.below_goal)) == (
        recorded["au_mean"], recorded["au_min"], recorded["au_goal"], recorded["au_pass"],
        recorded["clients_below_goal"])
    assert result.load(_folder("checkpoint-demo-c2")).first().au is None


@pytest.mark.parametrize(("name", "where"), [("checkpoint-demo-c2", ()),
                                             ("all-demo-c2", ("train", "checkpoint"))])
def test_checkpoints_read_as_a_type_where_the_phase_declares_them(
        name: str, where: tuple[str, ...]) -> None:
    folder = _folder(name)
    recorded = result.dig(_doc(folder)["aggregate"], *where)
    ck = result.load(folder).checkpoint
    plan = recorded["plan"]
    assert (ck.plan.total_bytes, ck.plan.scale, ck.plan.count, ck.plan.keep) == (
        plan["total_bytes"], plan["scale"], plan["count"], plan["keep"])
    assert (ck.completed, ck.write_mib_s, ck.stall_model) == (
        recorded["completed"], recorded["write_mib_s"], recorded["stall_model"])
    assert ck.persist_last_done_s.max == recorded["persist_last_done_s"]["max"]
    assert ck.stall_s.mean == recorded["stall_s"]["mean"]
    assert ck.read_mib_s == recorded.get("read_mib_s")
    assert [b.n for b in ck.bursts] == [b["n"] for b in recorded["checkpoints"]]
    assert [b.restore_gap_s for b in ck.bursts] == \
        [b.get("restore_gap_s") for b in recorded["checkpoints"]]
    assert result.load(_folder("load-demo-c2")).checkpoint is None


def test_a_number_that_is_not_finite_reads_as_missing_not_a_traceback(tmp_path: Path) -> None:
    doc = _doc(_folder("230529-train-demo-c2"))
    doc["aggregate"]["bytes"] = float("nan")  # json writes NaN and reads it back as a float
    doc["clients"][0]["bytes"] = float("inf")
    (tmp_path / "result.json").write_text(json.dumps(doc))
    assert result.load(tmp_path).section("read").bytes is None
    assert call_cli("report", str(tmp_path)).returncode == 0


LATER = Path(__file__).parent / "data" / "results-v2"


def test_the_figures_beside_the_sections_read_as_types() -> None:
    train = result.load(_folder("230529-train-demo-c2"))
    recorded = _doc(_folder("230529-train-demo-c2"))
    agg, first = recorded["aggregate"], recorded["clients"][0]
    assert (train.summary.samples, train.summary.samples_per_s, train.summary.consumed_bytes) \
        == (agg["samples"], agg["samples_per_s"], agg["consumed_bytes"])
    assert train.summary.demand_mib_s_per_client == agg["demand_mib_s_per_client"]
    assert train.summary.au.passed is agg["au_pass"] and train.summary.verify is None
    client = train.clients[0]
    assert (client.au, client.wait_s, client.consumed_bytes, client.measured_steps) == (
        first["au"], first["wait_s"], first["consumed_bytes"], first["measured_steps"])
    assert [tuple(s.__dict__.values()) for s in client.step_log] == \
        [tuple(row) for row in first["step_log"]]
    assert train.workload.name == "demo" and train.workload.compute_s() == \
        recorded["workload"]["train"]["compute_time"][recorded["workload"]["train"]["accelerator"]]
    load = result.load(_folder("load-demo-c2")).model_load
    model = _doc(_folder("load-demo-c2"))["aggregate"]
    assert (load.weights.files, load.replicas, load.last_ready_s, load.load_s.max) == (
        model["model"]["files"], model["replicas"], model["last_ready_s"], model["load_s"]["max"])


def test_hosts_verify_and_stages_read_as_types() -> None:
    mpi = result.load(next(LATER.glob("*-train-demo-c4")))
    hosts = _doc(next(LATER.glob("*-train-demo-c4")))["hosts"]
    assert mpi.ranks == 2 and [h.rank for h in mpi.hosts] == [h["rank"] for h in hosts]
    assert [h.io.bytes for h in mpi.hosts] == [h["aggregate"]["bytes"] for h in hosts]
    mix = result.load(next(LATER.glob("*-randrw-demo-c2")))
    verify = _doc(next(LATER.glob("*-randrw-demo-c2")))["aggregate"]["verify"]
    assert (mix.summary.verify.blocks_checked, mix.summary.verify.mismatches) == (
        verify["blocks_checked"], verify["mismatches"])
    lifecycle = result.load(_folder("all-demo-c2"))
    assert lifecycle.stages == ("prep", "train", "load")
    assert lifecycle.stage("load").model_load.replicas == \
        _doc(_folder("all-demo-c2"))["aggregate"]["load"]["replicas"]


@pytest.mark.parametrize("recorded", [0, None], ids=["zero", "missing"])
def test_clients_requested_has_one_reading(recorded: int | None) -> None:
    # the fio pairing read a recorded 0 as "not recorded" (the clients reported) and the
    # history as 0 clients ("run train demo c0"); a run asks for one client at least
    from aiio.fio import hero
    from aiio.report.run import clients_line
    from aiio.results import history

    doc = _doc(STORED / "20261130-230529-train-demo-c2")
    reported = len(doc["clients"])
    if recorded is None:
        del doc["clients_requested"]
    else:
        doc["clients_requested"] = recorded
    assert result.model(doc).clients_requested == reported == 2
    assert history.run_record(doc).clients == str(reported)
    assert history.run_record(doc).name.endswith(f" c{reported}")
    assert f"--clients {reported} " in hero.pairing.fio_command(doc["target"]["path"], doc,
                                                                ["seq_read"])
    assert "requested" not in clients_line(doc)  # the page: no "2 reported of 0 requested"


def test_clients_requested_is_the_count_asked_for() -> None:
    # a run that ended with fewer clients reporting than it asked for is named by the ask
    from aiio.report.run import clients_line

    doc = _doc(STORED / "20261130-230529-train-demo-c2")
    doc["clients"] = doc["clients"][:1]
    assert result.model(doc).clients_requested == doc["clients_requested"] == 2
    assert clients_line(doc).startswith("1 reported of 2 requested")


@pytest.mark.parametrize("recorded", [0, None], ids=["zero", "missing"])
def test_a_run_with_no_client_reported_still_asked_for_one_at_least(recorded: int | None) -> None:
    # a failed run that no client reported, its count recorded as 0 or not at all: the count
    # read 0, the history named its series "c0" and compare pasted `aiio fio --clients 0`,
    # which aiio fio refuses; the resolved workload records the count asked for as well
    from aiio.fio import hero
    from aiio.report.run import clients_line
    from aiio.results import history

    doc = _doc(STORED / "20261130-230529-train-demo-c2")
    doc.update(status="failed", error="no client started", clients=[])
    if recorded is None:
        del doc["clients_requested"]
    else:
        doc["clients_requested"] = recorded
    assert result.model(doc).clients_requested == doc["workload"]["run"]["clients"] == 2
    assert history.run_record(doc).name.endswith(" c2")
    command = hero.pairing.fio_command(doc["target"]["path"], doc, ["seq_read"])
    assert "--clients 2 " in command
    assert clients_line(doc).startswith("0 reported of 2 requested")
    del doc["workload"]  # nothing records the count: a run asks for one at least
    assert result.model(doc).clients_requested == 1
    assert clients_line(doc) == "0 reported"  # the page makes up no count asked for
    assert "--clients 1 " in hero.pairing.fio_command(doc["target"]["path"], doc, ["seq_read"])
