"""What the console prints and what the report page shows for every stored result, compared
with golden text checked into tests/data/golden/: a reader moved onto the typed result model
(or any other change to a reader) must leave both byte-identical, unless the change means to
alter them and rewrites the golden files (`python -m tests.test_reader_golden`), so the diff
shows what changed.

The stored results: each schema's (results-v1, -v2, -v3) and, in results-v3-readers, the
phases those sets have no case of (a KV-cache run, an open-loop vector search), a random mix
of /3 and a training run held against an fio result (its % of fio hero). A page's charts are
kept as a digest of each: their pixels are pinned, their text would be megabytes of SVG.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import itertools
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from aiio import __version__, report
from aiio.results import charts, result
from aiio.term import console as tc
from aiio.term import sweep_console as sc

from .stored_pages import STORED_PAGES, stored_page

DATA = Path(__file__).parent / "data"
SETS = ("results-v1", "results-v2", "results-v3", "results-v3-readers")
GOLDEN = DATA / "golden"
WIDTH = 160


def stored() -> list[Path]:
    """Every stored result's folder (a sweep's points included)."""
    return sorted(p.parent for s in SETS for p in (DATA / s).rglob("result.json"))


def _name(folder: Path) -> str:
    return str(folder.relative_to(DATA)).replace("/", "__")


def console_text(res: result.Result, folder: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """What `aiio run` (or `aiio fio`, a judged sweep) prints after the run: the summary tables,
    the per-host table under MPI, the warnings, the fio command to pair with, the result's
    path (as the folder's name)."""
    con = Console(record=True, width=WIDTH, file=io.StringIO(), color_system=None)
    monkeypatch.setattr(tc, "out_console", lambda: con)
    doc = dict(res.doc)
    if res.kind == "run":
        tc.print_result(doc, folder.name, tc.phase_tables(doc))
    elif res.kind == "fio":
        con.print(tc.fio_table(doc))
    elif res.kind == "sweep" and "table" in doc:  # a sweep's table: once it was judged
        for table in (sc.aggregate_table(doc), sc.client_table(doc)):
            con.print(table)
    return con.export_text()


def _svg(found: re.Match[str]) -> str:
    return f"<svg sha256={hashlib.sha256(found.group(0).encode()).hexdigest()[:16]}/>"


def page_text(folder: Path) -> str:
    """The report page's body (the style sheet left out), its version left out, each chart
    as its digest and each section on a line of its own (for a readable diff)."""
    return _body(stored_page(folder))


def history_text(db: Path) -> str:
    """The history page `aiio report --history-db` draws from a stored history database."""
    from aiio.cli.report import _history_records

    charts._ids = itertools.count(1)
    with _utc():  # the page shows each record's time in local time
        return _body(report.render_history(_history_records(db), source=db.name))


@contextlib.contextmanager
def _utc() -> Iterator[None]:
    was = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    try:
        yield
    finally:
        if was is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = was
        time.tzset()


def _body(page: str) -> str:
    page = page.replace(f"aiio {__version__} ", "aiio VERSION ").replace(
        f"aiio {__version__}.", "aiio VERSION.")
    body = re.sub(r"<svg.*?</svg>", _svg, page[page.index("<body>"):], flags=re.S)
    return body.replace("<section", "\n<section")


def rendered(folder: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    res = result.load(folder)
    return {"console.txt": console_text(res, folder, monkeypatch), "page.html": page_text(folder)}


@STORED_PAGES
@pytest.mark.parametrize("folder", stored(), ids=_name)
def test_console_and_page_of_a_stored_result_match_the_golden_text(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for suffix, text in rendered(folder, monkeypatch).items():
        golden = GOLDEN / f"{_name(folder)}.{suffix}"
        assert text == golden.read_text(), f"{golden.name} changed"


HISTORIES = ("results-v1", "results-v3")  # the sets that keep the history their runs recorded


@pytest.mark.parametrize("name", HISTORIES)
def test_the_history_page_of_a_stored_history_matches_the_golden_text(name: str) -> None:
    golden = GOLDEN / f"{name}__history.page.html"
    assert history_text(DATA / name / "history.sqlite") == golden.read_text()


def test_every_stored_set_is_covered() -> None:
    """A stored result's reader output is compared (a set renamed would skip it silently)."""
    assert {f.relative_to(DATA).parts[0] for f in stored()} == set(SETS)
    assert len(list(GOLDEN.iterdir())) == 2 * len(stored()) + len(HISTORIES)


def write_golden() -> None:
    """Render every stored result and write its golden text (after a change meant to alter
    what a reader shows)."""
    GOLDEN.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as mp:
        for folder in stored():
            for suffix, text in rendered(folder, mp).items():
                (GOLDEN / f"{_name(folder)}.{suffix}").write_text(text)
    for name in HISTORIES:
        (GOLDEN / f"{name}__history.page.html").write_text(
            history_text(DATA / name / "history.sqlite"))


if __name__ == "__main__":
    write_golden()
    sys.exit(0)
