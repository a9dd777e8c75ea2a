"""Reading results through the typed model leaves what a reader shows unchanged: the report's
sections that read I/O figures and the console's tables, rendered from every stored result,
match what they showed when these readers still found the figures by their shape."""

from __future__ import annotations

import hashlib
import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from aiio import __version__, report
from aiio.results import charts, result
from aiio.sweep import run as sweep_run
from aiio.term import console as tc
from aiio.term import sweep_console as sc

from .stored_pages import STORED_PAGES, stored_page

DATA = Path(__file__).parent / "data"
STORED = DATA / "results-v1"
# results of today's schema the v1 set has no case of: an MPI run with its hosts, a random mix
# with --verify, and a sweep that ended at its second point before it was judged (the first
# point's run saved, no table: its rows are read from the point; derived from a finished
# sweep by dropping its second point, table and verdict)
LATER = DATA / "results-v2"
# the page's sections whose figures come from the result's I/O sections, clients and events
SECTIONS = ("headline", "bandwidth", "timeline", "latency", "clients")


def _pins(*digests: str) -> dict[str, str]:
    return dict(zip((*SECTIONS, "console"), digests, strict=True))


# sha256 (first 16 hex digits) of each section's HTML and of the console's tables, as
# rendered before the move onto the typed model. A change meant to alter one of these
# sections or tables recomputes its digests with `rendered(folder)` and says so.
# Recomputed on purpose (Dec 3): the console's "% of fio hero" row keeps its reason and the
# fio command is printed whole below the tables; a checkpoint page's headline is the console's
# tables; every page's run table names the processes and the start-up, and no page lists the
# writer's provenance; a sweep's compute-paced E(N) bars are grey and its "scales linearly up
# to" says why it was not judged; the fio page names vector runs beside rand_read.
PINNED: dict[str, dict[str, str]] = {
    "20261130-230529-train-demo-c2":
        _pins("ec71e23969ba58e6", "99e6f0fa450fc0cc", "e3b0c44298fc1c14",
              "53fe941c1154cc12", "521d52843dd59233", "dde1d79a9bd6da7b"),
    "20261130-230534-prep-demo-c2":
        _pins("438ccc24b7d7833b", "0b7cd3bb71cc0187", "e3b0c44298fc1c14",
              "a1c02872bc06176b", "018ed0cf5ce1f53d", "53150658512352c0"),
    "20261130-230539-checkpoint-demo-c2":
        _pins("25f187bcb3d22aa8", "e3b0c44298fc1c14", "6a6767d56b19f726",
              "1efec9e22b5ee80a", "e1e9b7d1ed30fc5c", "d9c584bd0dfb8fcf"),
    "20261130-230542-load-demo-c2":
        _pins("4319c4d60729e50c", "4cf40727de5cd16e", "643245d0e265873e",
              "6ba5b48bec76e309", "dfef474663274c33", "f84ae4b8d0fdfd65"),
    "20261130-230544-all-demo-c2":
        _pins("791d91ec557a0ad4", "252d76f9fab14e29", "c5bcb094c833db6d",
              "9ac60b0d837b983b", "7c09071e33ac4433", "82f63440ef170e9c"),
    "20261130-230552-fio-c2":
        _pins("e3b0c44298fc1c14", "e3b0c44298fc1c14", "e3b0c44298fc1c14",
              "e3b0c44298fc1c14", "e3b0c44298fc1c14", "5b27da489550c642"),
    "20261130-230558-scale-train-demo-c1_2":
        _pins("e3b0c44298fc1c14", "e3b0c44298fc1c14", "e3b0c44298fc1c14",
              "e3b0c44298fc1c14", "faeabac888ff1d96", "1a65c1e5c80bb187"),
    "20261130-230558-scale-train-demo-c1_2/points/20261130-230558-train-demo-c1":
        _pins("97330ba31b7c8e2d", "f9a43586a6dba7aa", "e3b0c44298fc1c14",
              "3683d4d1bf7b7674", "faeabac888ff1d96", "d6c4b61145e8bb7a"),
    "20261130-230558-scale-train-demo-c1_2/points/20261130-230601-train-demo-c2":
        _pins("efaa7bab974d6ecd", "cc7cf087ad4212af", "e3b0c44298fc1c14",
              "26c36e5a2afc3adb", "652976675226a01b", "22abaa08cf0dddcf"),
    "20261130-230606-accept-tiny":
        _pins("e3b0c44298fc1c14", "e3b0c44298fc1c14", "e3b0c44298fc1c14",
              "e3b0c44298fc1c14", "e3b0c44298fc1c14", "e3b0c44298fc1c14"),
    "20261130-230606-train-demo-c2":
        _pins("4d8adeb992d8ab8e", "47cd7c24078501b1", "e3b0c44298fc1c14",
              "08446114be22a8a5", "dc3c5863e415e682", "878d82012b188984"),
    "20261201-124012-randrw-demo-c2":
        _pins("56e4ca023904977d", "9d2fd566dd06da51", "e3b0c44298fc1c14",
              "3c1e43ac3431dee0", "187ef0859c1d9047", "a0a503204f6c921a"),
    "20261201-124017-train-demo-c4":
        _pins("28f0e2ecbe28e094", "77e8d7d8e8b4c1e5", "e3b0c44298fc1c14",
              "629eae8effd46e40", "d4e65bdb4e9ee546", "8fd1def0e8644377"),
    "20261201-124028-scale-train-demo-c1_2":
        _pins("e3b0c44298fc1c14", "e3b0c44298fc1c14", "e3b0c44298fc1c14",
              "e3b0c44298fc1c14", "dfb5f1946c93dad0", "e3b0c44298fc1c14"),
}
# sha256 (first 16 hex digits) of each stored result's whole page, as rendered before the
# figures beside the I/O sections (hosts, AU, the verdict, a sweep's rows) were read through
# the typed model
PAGES: dict[str, str] = {
    "20261130-230529-train-demo-c2": "d5d72dca03bf8bee",
    "20261130-230534-prep-demo-c2": "840d96eb769601ae",
    # its verdict cards lead with the write rate until every shard is durable (not the worst
    # checkpoint's first done), a change made on purpose
    "20261130-230539-checkpoint-demo-c2": "6f39a035bb857980",
    "20261130-230542-load-demo-c2": "f4ddf3aea0e5c18a",
    "20261130-230544-all-demo-c2": "9985d1594ff7e022",
    "20261130-230552-fio-c2": "ecb586b62a8930ba",
    "20261130-230558-scale-train-demo-c1_2": "4bb659593a174143",
    "20261130-230558-scale-train-demo-c1_2/points/20261130-230558-train-demo-c1":
        "0e4ea92263edd0de",
    "20261130-230558-scale-train-demo-c1_2/points/20261130-230601-train-demo-c2":
        "f19b3bd82ebe6ece",
    "20261130-230606-accept-tiny": "60de135e96d4e63f",
    "20261130-230606-train-demo-c2": "6faeee283125cf75",
    "20261201-124012-randrw-demo-c2": "d2c24b26df5a7129",
    "20261201-124017-train-demo-c4": "d2f49f820a541add",
    "20261201-124028-scale-train-demo-c1_2": "16f39bf63691fd62",
}


def _folders() -> list[Path]:
    return sorted(p.parent for base in (STORED, LATER) for p in base.rglob("result.json"))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _section(page: str, anchor: str) -> str:
    found = re.search(rf'<section id="{anchor}">.*?</section>', page, re.S)
    return found.group(0) if found else ""


def _console(res: result.Result) -> str:
    con = Console(record=True, width=160, file=io.StringIO(), color_system=None)
    doc = dict(res.doc)
    if res.kind == "run":
        tables = tc.phase_tables(doc)
        if len(doc.get("hosts") or []) > 1:  # as `aiio run` prints it under MPI
            tables.append(tc.host_table(doc))
    elif res.kind == "fio":
        tables = [tc.fio_table(doc)]
    elif res.kind == "sweep" and "table" in doc:  # a sweep's table: once it was judged
        tables = [sc.aggregate_table(doc), sc.client_table(doc)]
    else:
        tables = []
    for table in tables:
        con.print(table)
    return con.export_text()


def rendered(folder: Path) -> dict[str, str]:
    """Digests of the pinned page sections and of the console tables of one stored result, and
    (as "page") of its whole page, every section (the hosts, the accelerators' utilization,
    the verdict, a sweep's scaling rows) included; the version is left out."""
    res = result.load(folder)
    page = stored_page(folder)
    return {**{s: _digest(_section(page, s)) for s in SECTIONS}, "console": _digest(_console(res)),
            "page": _digest(page.replace(f"aiio {__version__} ", "aiio VERSION "))}


def _name(folder: Path) -> str:
    return str(folder.relative_to(STORED if folder.is_relative_to(STORED) else LATER))


@STORED_PAGES
@pytest.mark.parametrize("folder", _folders(), ids=_name)
def test_the_page_and_console_of_a_stored_result_are_unchanged(folder: Path) -> None:
    got = rendered(folder)  # one page drawn for both checks: a page's charts take a second
    page = got.pop("page")
    assert got == PINNED[_name(folder)]  # the sections that read I/O figures, the console
    assert page == PAGES[_name(folder)]  # and every other section


def _writing_sweep() -> dict:
    """The stored sweep as one of a phase whose latency figure is its writes, which its
    points timed beside their reads."""
    sweep = json.loads((STORED / "20261130-230558-scale-train-demo-c1_2" /
                        "result.json").read_text())
    sweep.update(phase="scribble", io={"main_op": "write"})
    for row in sweep["table"]:
        row["latency"]["write"] = {"count": 9, "p50_ns": 7e6, "p99_ns": 8e6, "max_ns": 9e6}
    return sweep


def test_a_sweeps_client_table_shows_the_latency_of_the_phases_main_operation() -> None:
    table = sc.client_table(_writing_sweep())
    cells = {c.header: list(c.cells) for c in table.columns}
    assert cells["op"] == ["write", "write"]
    assert cells["p50"] == ["7.00 ms"] * 2 and cells["p99"] == ["8.00 ms"] * 2


def test_a_sweeps_page_shows_the_latency_of_the_phases_main_operation() -> None:
    page = report.render(result.model(_writing_sweep()))
    scaling = _section(page, "scaling")
    assert scaling.count("8.00 ms") == 2 and scaling.count("7.00 ms") == 2


# sha256 (first 16 hex digits) of the table a sweep computes from its points' results, as
# computed before the sweep read their aggregates through the typed model
TABLES = {"20261130-230558-scale-train-demo-c1_2": "62c77d9bc552556a",
          "20261201-124028-scale-train-demo-c1_2": "5538f511d2acec28"}


# and of the verdict judged on that table (the stopped sweep's: partial)
VERDICTS = {"20261130-230558-scale-train-demo-c1_2": "90afb975ee7aae58",
            "20261201-124028-scale-train-demo-c1_2": "5e80b114ed6caeca"}


@pytest.mark.parametrize("name", sorted(TABLES))
def test_a_sweeps_table_computed_from_its_points_is_unchanged(name: str) -> None:
    folder = next(base / name for base in (STORED, LATER) if (base / name).is_dir())
    doc = json.loads((folder / "result.json").read_text())
    rows = sweep_run.table_rows(doc["points"], doc["phase"])
    assert _digest(json.dumps(rows)) == TABLES[name]
    doc["table"] = rows
    assert _digest(json.dumps(sweep_run.verdict(doc, 0.9))) == VERDICTS[name]


# sha256 (first 16 hex digits) of the chart files a sweep writes (its date left out, svg ids
# salted), as drawn before the sweep's table was read through the typed model
CHART_FILES = {"20261130-230558-scale-train-demo-c1_2":
               {"aggregate.svg": "88fd31ab4961da8e", "per_client.svg": "eb543fadcd13cd17"}}


@pytest.mark.parametrize("name", sorted(CHART_FILES))
def test_a_sweeps_chart_files_are_unchanged(name: str, tmp_path: Path) -> None:
    import matplotlib

    doc = json.loads((STORED / name / "result.json").read_text())
    with matplotlib.rc_context({"svg.hashsalt": "aiio"}):
        names = charts.draw(doc, tmp_path)
    drawn = {n: _digest(re.sub(r"<dc:date>.*?</dc:date>", "", (tmp_path / n).read_text()))
             for n in names if n.endswith(".svg")}
    assert drawn == CHART_FILES[name]
