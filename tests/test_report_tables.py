"""The page of a table over users or over the offered rate (`aiio scale --phase kvcache
--users` / `--rates`): every row's figures as the console shows them, the statement, the
settings and a link to each row's own run report; `aiio report` draws it again."""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path

import pytest

from aiio.sweep import rates_sweep, users_sweep

from .conftest import call_cli, widest
from .devtools import Browser, find_chromium
from .test_kvcache import TINY

SETS = tuple(x for k, v in TINY.items() if k != "kvcache__duration"
             for x in ("--set", f"{k.replace('__', '.')}={v}"))
GOALS = ("--set", "kvcache.goals.lenient=100")
CHROMIUM = find_chromium()


def table(target: Path, results: Path, *args: str) -> tuple[str, Path]:
    """The console's output of a tiny table at 80 columns, and the table's folder."""
    got = call_cli("scale", "-p", "kvcache", "-t", str(target), "--results", str(results),
                   "--clients", "2", "--duration", "1s", *GOALS, *SETS, "--goal", "lenient",
                   *args, env={"COLUMNS": "80"})
    assert got.returncode == 0, got.stderr
    (folder,) = [p for p in results.iterdir() if re.search(r"-(users|rates)-kvcache$", p.name)]
    return got.stdout, folder


def page_rows(page: str) -> list[list[str]]:
    """Every table row of the page as its cells' text."""
    return [[html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
             for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr, re.S)]
            for tr in re.findall(r"<tr>(.*?)</tr>", page, re.S)]


def text(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def check_page(out: str, folder: Path, lines: list[str]) -> str:
    """The page holds every row's figures as the console printed them, the statement and a
    link to each row's run report, which is there; the console is the table as before."""
    saved = json.loads((folder / "result.json").read_text())
    assert widest(out) <= 80, out
    assert out.splitlines()[:len(lines)] == lines  # the console's table, as it printed it
    assert f"report: {folder / 'report.html'}" in out
    page = (folder / "report.html").read_text()
    rows = page_rows(page)
    for r, line in zip(saved["rows"], lines[1:], strict=False):
        # a verdict such as "not judged" is one cell of two words: compare the words
        shown = line.split()
        assert [c for c in rows if " ".join(c).split()[:len(shown)] == shown], (line, rows)
        for run in r["runs"]:
            link = f'href="../{run["folder"]}/report.html"'
            assert link in page and (folder.parent / run["folder"] / "report.html").is_file()
    assert " ".join(saved["statement"].split()) in text(page)
    assert "lenient" in text(page) and "P95 within 100000 ms" in text(page)
    return page


@pytest.fixture(scope="module")
def users_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """One table over users, its page read by the page test and loaded in Chromium."""
    base = tmp_path_factory.mktemp("users")
    (base / "target").mkdir()
    return table(base / "target", base / "reports", "--users", "1,2")


def test_the_users_table_page_holds_every_row_as_the_console_shows_it(
        users_table: tuple[str, Path]) -> None:
    out, folder = users_table
    target = folder.parent.parent / "target"
    saved = json.loads((folder / "result.json").read_text())
    lines = users_sweep.text_table(saved)
    page = check_page(out, folder, lines)
    settings = dict(r for r in page_rows(page) if len(r) == 2)
    assert settings["users per client"] == "1, 2" and settings["clients"] == "2"
    assert settings["each run lasts"] == "1.000 s" and settings["target"] == str(target)
    # drawn again from the saved table, the same page
    first = (folder / "report.html").read_text()
    (folder / "report.html").unlink()
    again = call_cli("report", str(folder))
    assert again.returncode == 0, again.stderr
    assert page_rows((folder / "report.html").read_text()) == page_rows(first)


def test_the_rates_table_page_holds_every_row_as_the_console_shows_it(
        target: Path, results: Path) -> None:
    out, folder = table(target, results, "--set", "kvcache.load=open", "--rates", "5,10")
    saved = json.loads((folder / "result.json").read_text())
    lines = rates_sweep.text_table(saved)
    page = check_page(out, folder, lines[:1 + len(saved["rows"])])
    settings = dict(r for r in page_rows(page) if len(r) == 2)
    assert settings["offered rates"] == "5, 10 requests/s offered per client"
    assert settings["users per client"] == "3"


def test_the_table_page_loads_clean_in_chromium(users_table: tuple[str, Path],
                                                 tmp_path: Path) -> None:
    """No console message, blocked fetch or sideways scroll at laptop width; its run links
    open the runs' pages."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's chromium package)")
    _, folder = users_table
    b = Browser(CHROMIUM)
    try:
        assert b.load((folder / "report.html").as_uri(), width=1280, height=800) == []
        assert b.eval("document.documentElement.scrollWidth <= window.innerWidth")
        hrefs = b.eval("Array.from(document.querySelectorAll('a[href$=\"report.html\"]'))"
                       ".map(a => a.href)")
        assert len(hrefs) == 2
        b.screenshot(Path(os.environ.get("AIIO_SCREENSHOTS", tmp_path)) / "report-table.png")
        assert b.load(hrefs[0], width=1280, height=800) == []
    finally:
        b.close()


def test_no_report_writes_no_page_of_the_table_nor_of_its_runs(target: Path,
                                                               results: Path) -> None:
    out, folder = table(target, results, "--users", "1,2", "--no-report")
    assert "report: " not in out and (folder / "result.json").is_file()
    assert not list(results.rglob("report.html"))
