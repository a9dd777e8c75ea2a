"""Results of schema aiio.result/3 record their own layout (`io`: every section of the aggregate
and of each client, the parts their phase declares, how it is judged), so they open without
asking the phases; they open in `aiio report`, `aiio compare`, `aiio history` and `aiio size
--from` as /1 and /2 results do.

tests/data/results-v3/ holds real results of tiny runs made with the /3 code (train with
checkpoints, prep, checkpoint, load with a stagger, all, a sweep and the history they
recorded). Expected numbers are read from the stored JSON with plain dict access.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from aiio.report import html as h
from aiio.results import history, result
from aiio.results.layout import LEGACY, index_of, layout_of

from .test_results_v1 import _aiio

STORED = Path(__file__).parent / "data" / "results-v3"
FIO = Path(__file__).parent / "data" / "results-v1" / "20261130-230552-fio-c2"
RUNS = ("train-demo-c2", "prep-demo-c2", "checkpoint-demo-c2", "load-demo-c2", "all-demo-c2")


def _folder(name: str) -> Path:
    [folder] = [p for p in STORED.iterdir() if p.name.endswith(f"-{name}")]
    return folder


def _doc(name: str) -> dict:
    return json.loads((_folder(name) / "result.json").read_text())


def _bursts(part: dict, sides: tuple[str, ...]) -> list[dict]:
    return [b[side] for b in part["checkpoints"] for side in sides]


IO_SECTIONS = {  # where each stored run keeps its I/O aggregates, spelled out by hand
    "train-demo-c2": lambda a: [a, a["delivered"], *_bursts(a["checkpoint"], ("write",))],
    "prep-demo-c2": lambda a: [a["read"], a["write"]],
    "checkpoint-demo-c2": lambda a: _bursts(a, ("write", "read")),
    "load-demo-c2": lambda a: [a],
    "all-demo-c2": lambda a: [a["prep"]["read"], a["prep"]["write"], a["train"],
                              a["train"]["delivered"],
                              *_bursts(a["train"]["checkpoint"], ("write",)), a["load"]],
}
# the sections whose windows the report's headline tables show (a burst's are in its own table)
SHOWN = {"train-demo-c2": lambda a: [a, a["delivered"]],
         "prep-demo-c2": lambda a: [a["read"], a["write"]],
         "load-demo-c2": lambda a: [a],
         "all-demo-c2": lambda a: [a["prep"]["read"], a["prep"]["write"], a["train"], a["load"]]}


def _windows(section: dict) -> list[str]:
    """A section's first- and last-done figures as the report's headline table shows them
    (in its units: the report's own formatting, the figures the stored JSON's)."""
    return [f"{h.mib_s(section[w]['mib_s'])} over {h.seconds(section[w]['seconds'])}"
            for w in ("first_done", "last_done")]


def _report_text(name: str, tmp_path: Path) -> str:
    out = tmp_path / f"{name}.html"
    _aiio("report", str(_folder(name)), "-o", str(out), "--no-charts")
    page = re.sub(r"<(script|style).*?</\1>", "", out.read_text(), flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def test_the_stored_results_are_of_schema_3() -> None:
    for path in STORED.rglob("result.json"):
        assert json.loads(path.read_text())["schema"] == "aiio.result/3", path


@pytest.mark.parametrize("name", sorted(IO_SECTIONS))
def test_report_shows_each_io_section_of_a_stored_run(name: str, tmp_path: Path) -> None:
    text = _report_text(name, tmp_path)
    agg = _doc(name)["aggregate"]
    assert [s.figures for s in result.load(_folder(name)).io.values()] == IO_SECTIONS[name](agg)
    for section in SHOWN.get(name, lambda a: [])(agg):
        for shown in _windows(section):
            assert shown in text, (name, shown)


def test_report_shows_a_stored_sweep(tmp_path: Path) -> None:
    sweep = _doc("scale-train-demo-c1_2")
    peak = max(sweep["table"], key=lambda row: row["aggregate_mib_s"])
    assert (f"peak aggregate {peak['aggregate_mib_s']:.1f} MiB/s at {peak['clients']} clients"
            in _report_text("scale-train-demo-c1_2", tmp_path))


def test_compare_sets_stored_runs_against_a_stored_fio_suite() -> None:
    shown = json.loads(_aiio("compare", str(_folder("load-demo-c2")),
                             str(_folder("checkpoint-demo-c2")), "--fio", str(FIO), "--json"))
    [load, ckpt] = shown
    agg = _doc("load-demo-c2")["aggregate"]
    rows = {r["figure"]: r for r in load["rows"]}
    assert rows["aggregate MiB/s, first done"]["phase"] == agg["first_done"]["mib_s"]
    assert rows["read latency p99"]["phase"] == agg["latency"]["read"]["p99_ns"]
    [head] = [r for r in ckpt["rows"] if r["figure"].startswith("aggregate MiB/s (the %")]
    assert head["phase"] == pytest.approx(_doc("checkpoint-demo-c2")["aggregate"]["write_mib_s"])


def test_size_from_reads_a_stored_sweep_and_checkpoint_run() -> None:
    out = json.loads(_aiio("size", "--json", "-w", "demo",
                           "--from", str(_folder("scale-train-demo-c1_2")),
                           "--from", str(_folder("checkpoint-demo-c2"))))["values"]
    points = _doc("scale-train-demo-c1_2")["points"]
    assert out["peak_mib_s"] == max(p["result"]["aggregate"]["first_done"]["mib_s"]
                                    for p in points)
    assert out["checkpoint_measured_mib_s"] == _doc("checkpoint-demo-c2")["aggregate"][
        "write_mib_s"]


def _history() -> dict[str, dict]:
    records = json.loads(_aiio("history", "--history", str(STORED / "history.sqlite"),
                               "--json", "--last", "100"))
    return {r["result_id"]: r for r in records}


@pytest.mark.parametrize("name", RUNS)
def test_a_stored_run_loads_into_the_history_record_it_made(name: str) -> None:
    stored = _history()[_doc(name)["id"]]
    rec = history.run_record(result.load(_folder(name)))
    assert (rec.name, rec.status, rec.figures) == (stored["name"], stored["status"],
                                                   stored["figures"])
    assert rec.figures.get("aggregate_mib_s") is not None


def test_a_stored_sweep_loads_into_the_history_record_it_made() -> None:
    stored = _history()[_doc("scale-train-demo-c1_2")["id"]]
    rec = history.sweep_record(result.load(_folder("scale-train-demo-c1_2")))
    assert (rec.name, rec.figures) == (stored["name"], stored["figures"])


def _seen(res: result.Result) -> tuple:
    """Everything the model finds by layout: sections, each client's, the declared parts."""
    clients = [(c.io, c.totals, c.series, c.events, c.metadata) for c in res.clients]
    stages = [_seen(res.stage(s)) for s in res.stages]
    return (res.io, clients, res.checkpoint, res.model_load, res.metadata, res.stages,
            res.main_op, stages)


@pytest.mark.parametrize("name", RUNS)
def test_a_result_of_3_opens_from_its_own_index_without_its_phase(name: str,
                                                                   tmp_path: Path) -> None:
    """Under a phase name no code here knows, the result reads as under its own: everything
    the model finds by layout comes from the result itself."""
    doc = _doc(name)
    doc["phase"] = "from-elsewhere"
    (tmp_path / "result.json").write_text(json.dumps(doc))
    known, unknown = result.load(_folder(name)), result.load(tmp_path)
    assert _seen(unknown) == _seen(known)
    assert known.io and all(c.io for c in known.clients)


@pytest.mark.parametrize("name", RUNS)
def test_the_frozen_layouts_of_2_are_the_phases_declarations(name: str) -> None:
    """A /2 result is read with a frozen copy of the phases' declarations: it gives the
    index the phases wrote for the same run, and the same figures."""
    doc = _doc(name)
    old = {**doc, "schema": "aiio.result/2"}
    assert doc["phase"] in LEGACY
    assert index_of(layout_of(old), old) == doc["io"]
    assert _seen(result.model(old)) == _seen(result.model(doc))


@pytest.mark.parametrize("schema", ["v1", "v3"])
def test_a_sweep_point_reads_a_checkpoint_run_off_the_typed_result(schema: str) -> None:
    """A checkpoint point's figures come from the typed result (its checkpoints and its burst
    sections), the same as the stored JSON holds them."""
    from aiio.sweep import per_point

    folder = _folder("checkpoint-demo-c2") if schema == "v3" else next(
        (STORED.parent / "results-v1").glob("*-checkpoint-demo-c2"))
    agg = json.loads((folder / "result.json").read_text())["aggregate"]
    writes = [b["write"] for b in agg["checkpoints"]]
    got = per_point.point_figures("checkpoint", result.load(folder))
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    assert got.headline_mib_s == agg["write_mib_s"]
    assert got.extras == {"persist_s": agg["persist_last_done_s"]["mean"]}
    assert got.first_done_mib_s == mean([w["first_done"]["mib_s"] for w in writes])
    assert got.last_done_mib_s == mean([w["last_done"]["mib_s"] for w in writes])
    spread = got.per_client_mib_s
    assert (spread.mean, spread.min, spread.max, spread.cv) == (
        mean([w["per_client_mib_s"]["mean"] for w in writes]),
        min(w["per_client_mib_s"]["min"] for w in writes),
        max(w["per_client_mib_s"]["max"] for w in writes),
        mean([w["per_client_mib_s"]["cv"] for w in writes]))
    assert got.jain == mean([w["jain"] for w in writes])
    counts = {op: sum(w["histograms"][op]["count"] for w in writes if op in w["histograms"])
              for w in writes for op in w["histograms"]}
    assert {op: h["count"] for op, h in got.histograms.items()} == counts


def test_the_headline_label_of_a_result_comes_from_its_own_layout(tmp_path: Path) -> None:
    """A checkpoint result under a phase name no code here knows: its report still names its
    headline as its layout judges it (the write rate until every shard is durable)."""
    doc = _doc("checkpoint-demo-c2")
    doc["phase"] = "from-elsewhere"
    (tmp_path / "result.json").write_text(json.dumps(doc))
    out = tmp_path / "page.html"
    _aiio("report", str(tmp_path), "-o", str(out), "--no-charts")
    cards = out.read_text().split('class="cards"', 1)[-1].split("</div></div>", 1)[0]
    assert "write MiB/s (every shard durable)" in out.read_text()
    assert "aggregate MiB/s (first done)" not in cards
