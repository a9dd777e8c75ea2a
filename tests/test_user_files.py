"""A file written where the user said (`report -o`, `accept --junit`, `--history`): the
folders missing above it are made (the page, the JUnit copy and the history may go into a new
folder), and a write that then fails removes the folders it made, whether the path was given
plainly or through a symlink into a missing folder, and leaves what was there before."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest

from aiio.accept.junit import write_junit
from aiio.results.history import History, HistoryError

from .conftest import REPO, call_cli
from .storage import small_tmpfs

STORED = REPO / "tests" / "data" / "results-v1"
TRAIN = STORED / "20261130-230529-train-demo-c2"
ACCEPT = STORED / "20261130-230606-accept-tiny" / "result.json"
TINY = REPO / "workloads" / "acceptance" / "tiny.toml"
# a name past NAME_MAX (255 bytes): the folders above it can be made, the file cannot
LONG = "p" * 252


@pytest.mark.parametrize("link", [False, True], ids=["path", "dangling-link"])
def test_a_report_into_a_missing_folder_makes_it(tmp_path: Path, link: bool) -> None:
    page = given = tmp_path / "new" / "sub" / "page.html"
    if link:  # the page goes where the link points, the link stays
        given = tmp_path / "latest.html"
        given.symlink_to(page)
    out = call_cli("report", str(TRAIN), "-o", str(given), "--no-charts")
    assert out.returncode == 0, out.stderr
    assert page.read_text().rstrip().endswith("</html>")
    assert not link or given.is_symlink()


@pytest.mark.parametrize("link", [False, True], ids=["path", "dangling-link"])
def test_a_report_that_cannot_be_written_leaves_no_folder_it_made(tmp_path: Path,
                                                                  link: bool) -> None:
    # the folders were made before the page failed to take its place, and stayed
    (tmp_path / "kept").mkdir()
    given = tmp_path / "kept" / "missing" / "deeper" / f"{LONG}.html"
    if link:
        (tmp_path / "page.html").symlink_to(given)
        given = tmp_path / "page.html"
    out = call_cli("report", str(TRAIN), "-o", str(given), "--no-charts")
    assert out.returncode == 2
    assert out.stderr.strip() == f"aiio: cannot write the report to {given}: File name too long"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept", *(["page.html"] if link else [])]
    assert not any((tmp_path / "kept").iterdir())
    assert not link or given.is_symlink()


def test_a_junit_file_that_cannot_be_written_leaves_no_folder_it_made(tmp_path: Path) -> None:
    res = json.loads(ACCEPT.read_text())
    with pytest.raises(OSError):
        write_junit(res, tmp_path / "ci" / "nightly" / f"{LONG}.xml")
    assert list(tmp_path.iterdir()) == []
    made = write_junit(res, tmp_path / "ci" / "results.xml")
    assert made.read_text().startswith("<?xml") and list(tmp_path.iterdir()) == [made.parent]


def _folder(tmp_path: Path, kind: str) -> Path:
    """A place no folder can be made at: a file, a link to nothing, a loop of links."""
    place = tmp_path / "afile"
    if kind == "file":
        place.write_text("kept")
    elif kind == "dangling-link":
        place.symlink_to(tmp_path / "gone")
    else:
        (tmp_path / "other").symlink_to(place)
        place.symlink_to(tmp_path / "other")
    return place


# a place above the file that is a link to nothing, or a loop: mkdir said "File exists"
# after the checks had run
UNMADE = {"file": "Not a directory", "dangling-link": "No such file or directory",
          "link-loop": "Too many levels of symbolic links"}


@pytest.mark.parametrize("kind", list(UNMADE))
def test_accept_refuses_a_junit_path_under_a_file_before_it_runs(tmp_path: Path, target: Path,
                                                                 results: Path, kind: str) -> None:
    # the checks ran, then writing the copy said "File exists" in a traceback
    place = _folder(tmp_path, kind)
    junit = place / "results.xml"
    out = call_cli("accept", str(TINY), "--target", str(target), "--results", str(results),
                   "--junit", str(junit), "--no-report", "--no-history", "-q")
    assert out.returncode == 2
    assert out.stderr.strip() == f"aiio: --junit {junit}: {UNMADE[kind]}", out.stderr
    assert not results.exists() and not (tmp_path / "gone").exists()
    assert kind != "file" or place.read_text() == "kept"


@pytest.mark.parametrize("kind", list(UNMADE))
def test_a_report_under_a_place_no_folder_can_be_made_at_says_why(tmp_path: Path,
                                                                  kind: str) -> None:
    page = _folder(tmp_path, kind) / "sub" / "page.html"
    out = call_cli("report", str(TRAIN), "-o", str(page), "--no-charts")
    assert out.returncode == 2
    assert out.stderr.strip() == f"aiio: cannot write the report to {page}: {UNMADE[kind]}"
    assert not (tmp_path / "gone").exists()


def test_a_history_that_cannot_be_created_leaves_no_folder_it_made(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="cannot open history"):
        History(tmp_path / "new" / "sub" / f"{LONG}.sqlite")
    assert list(tmp_path.iterdir()) == []
    with History(tmp_path / "new" / "history.sqlite") as h:
        assert h.records() == []


def test_a_report_whose_name_is_as_long_as_a_name_can_be_is_written(tmp_path: Path) -> None:
    # the temporary file beside it was named after it, plus ".PID.tmp": past NAME_MAX, so a
    # valid name of 255 bytes said "File name too long"
    page = tmp_path / f"{'é' * 100}{LONG[:50]}.html"
    assert len(bytes(page.name, "utf-8")) == 255
    out = call_cli("report", str(TRAIN), "-o", str(page), "--no-charts")
    assert out.returncode == 0, out.stderr
    assert [p.name for p in tmp_path.iterdir()] == [page.name]


@pytest.mark.parametrize("kind", list(UNMADE))
def test_a_history_under_a_place_no_folder_can_be_made_at_says_why(tmp_path: Path,
                                                                   kind: str) -> None:
    # a link to nothing (or a loop) above a new history said "File exists"
    db = _folder(tmp_path, kind) / "sub" / "history.sqlite"
    with pytest.raises(HistoryError) as got:
        History(db)
    assert str(got.value) == f"cannot open history {db}: {UNMADE[kind]}"
    assert not (tmp_path / "gone").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a small tmpfs")
def test_a_history_a_full_disk_stops_creating_leaves_nothing(tmp_path: Path) -> None:
    # the new file and the folders made for it stayed, and the error called the new file
    # unreadable, "left untouched: move it aside"
    with small_tmpfs(tmp_path, 1) as disk:
        with open(disk / "fill", "wb", buffering=0) as fill, contextlib.suppress(OSError):
            while True:
                fill.write(b"\0" * 4096)  # until the disk is full (ENOSPC)
        db = disk / "new" / "sub" / "history.sqlite"
        with pytest.raises(HistoryError) as got:
            History(db)
        assert str(got.value) == f"cannot create history {db}: database or disk is full"
        assert [p.name for p in disk.iterdir()] == ["fill"]
        (disk / "fill").unlink()  # room again: the history is made where it was asked for
        with History(db) as h:
            assert h.records() == []


def test_a_history_whose_name_is_no_utf8_is_made_and_read(tmp_path: Path) -> None:
    # its path went into SQLite's URI as text: a name that is no UTF-8 (bytes b"h\xff", as a
    # Latin-1 system names "hÿ") stopped `aiio history` with a UnicodeEncodeError traceback
    db = tmp_path / os.fsdecode(b"h\xff") / "history.sqlite"
    with History(db) as h:
        assert h.records() == []
    assert os.listdir(os.fsencode(tmp_path / db.parent)) == [b"history.sqlite"]
    out = call_cli("history", "--history", str(db), "--json")
    assert out.returncode == 0 and json.loads(out.stdout) == [], out.stderr


@pytest.mark.parametrize("name", [os.fsdecode(b"/mnt/t\xff"), "/mnt/t\ud800"],
                         ids=["bytes", "edited"])
def test_a_page_naming_a_path_that_is_no_utf8_is_written_as_utf8(tmp_path: Path,
                                                                 name: str) -> None:
    # a run on a target whose name is no UTF-8 (bytes b"t\xff") saved its result, then its
    # page, whose text names the target, stopped with a UnicodeEncodeError traceback (and a
    # result edited to hold a lone surrogate, "\ud800" in its JSON, alike)
    doc = json.loads((TRAIN / "result.json").read_text())
    doc["target"]["path"] = name
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "result.json").write_text(json.dumps(doc))
    out = call_cli("report", str(folder), "--no-charts")
    assert out.returncode == 0, out.stderr
    page = (folder / "report.html").read_bytes().decode("utf-8")  # UTF-8 throughout
    assert "/mnt/t\ufffd" in page  # what no UTF-8 reader can show, as one shows it
