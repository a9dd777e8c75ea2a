"""A hand-damaged result never stops a command with a traceback. Every field the commands read
is typed and checked where a result is loaded: one of another type reads as missing, with a
notice naming the file and the field, and a result too damaged to read is one line and exit
code 2. Fuzzed over a fresh real result of each phase, of a sweep and of a fio run."""

from __future__ import annotations

import json
import shutil
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aiio.report import html
from aiio.results import history, result

from .conftest import TINY_ARGS, TINY_DATA, call_cli, run_cli

STORED = Path(__file__).parent / "data" / "results-v1"
TRAIN = STORED / "20261130-230529-train-demo-c2"


def _damaged_copy(tmp_path: Path, source: Path, **fields: Any) -> Path:
    doc = json.loads((source / "result.json").read_text())
    doc.update(fields)
    folder = tmp_path / source.name
    folder.mkdir()
    (folder / "result.json").write_text(json.dumps(doc))
    return folder


def _one_line_or_success(out: Any) -> None:
    """Success (notices on stderr allowed), or exit code 2 and one line saying why (after
    the notices of the fields read as missing before it)."""
    assert out.returncode in (0, 2), out.stderr
    if out.returncode == 2:
        said = [line for line in out.stderr.strip().splitlines()
                if not line.startswith("aiio: notice: ")]
        assert len(said) == 1, out.stderr


# The damage a reviewer found stopping `aiio compare` with a traceback.
FOUND = {"clients": None, "hero": "paired", "target": 3, "clients_requested": "two",
         "workload": "demo"}


@pytest.mark.parametrize(("key", "junk"), FOUND.items(), ids=list(FOUND))
def test_a_field_of_the_wrong_type_reads_as_missing_with_a_notice(
        tmp_path: Path, key: str, junk: Any) -> None:
    folder = _damaged_copy(tmp_path, TRAIN, **{key: junk})
    for args in (("compare", str(folder)), ("report", str(folder)),
                 ("size", "--workload", "demo", "--from", str(folder))):
        out = call_cli(*args)
        _one_line_or_success(out)
        if out.returncode == 0:  # size lists it among its notes, the others on stderr
            said = " ".join((out.stderr + out.stdout).split())
            assert f"{key} is" in said and "read as missing" in said, args


def test_the_notice_names_the_file_and_the_field(tmp_path: Path) -> None:
    folder = _damaged_copy(tmp_path, TRAIN, clients=None)
    res = result.load(folder)
    assert res.notices == (f"{folder / 'result.json'}: clients is null, not a list; "
                           "read as missing",)
    assert "clients" not in res and res.clients == ()


def test_a_kind_that_is_no_string_is_a_damaged_result(tmp_path: Path) -> None:
    folder = _damaged_copy(tmp_path, TRAIN, kind=["run"])
    out = call_cli("compare", str(folder))
    assert out.returncode == 2 and "is damaged: its kind is a list" in out.stderr
    assert str(folder / "result.json") in out.stderr
    _one_line_or_success(out)


def test_an_intact_result_loads_as_saved_with_no_notice() -> None:
    for path in STORED.rglob("result.json"):
        res = result.load(path)
        assert res.notices == () and dict(res.doc) == json.loads(path.read_text()), path


# --- the fuzz ------------------------------------------------------------------------------

QUICK_FIO = ("--tests", "seq_read,seq_write,rand_mix", "--runtime", "300ms", "--ramp-time",
             "0", "--size", "4MiB", "--clients", "2")
# name -> the command making it; fio first, so the runs after it are paired with a hero
MADE = {
    "fio": ("fio", *QUICK_FIO),
    "train": ("run", *TINY_ARGS),
    "prep": ("run", "--phase", "prep", *TINY_ARGS, "--set", "prep.threads=1",
             "--set", "prep.shard_size=256KiB", "--set", "prep.transfer_size=64KiB"),
    "checkpoint": ("run", "--phase", "checkpoint", "--clients", "2",
                   "--set", "checkpoint.size=2MiB"),
    "load": ("run", "--phase", "load", "--set", "load.size=2MiB", "--set", "load.files=2",
             "--clients", "2"),
    "randrw": ("run", "--phase", "randrw", "--set", "prep.file_size=2MiB",
               "--set", "prep.duration=300ms", "--clients", "2"),
    "kvcache": ("run", "--phase", "kvcache", "--set", "kvcache.model=tiny", "--set",
                "kvcache.layers=2", "--set", "kvcache.kv_heads=2", "--set", "kvcache.head_dim=64",
                "--set", "kvcache.block_tokens=64", "--set", "kvcache.duration=300ms",
                "--clients", "2"),
    "sweep": ("scale", *TINY_DATA, "--batch-size", "2", "--clients", "1,2", "--duration",
              "1s", "--no-charts"),
}
# The cap, to keep the module fast. Key paths: every one down to DEPTH steps (a list position
# counts as a step; of a list, its first item only, the others are laid out alike), deeper
# ones (to DEEP) under the parts read field by field (a client's entry, a fio test's figures,
# a sweep point's result), and none below the machine facts only the page lists (SHALLOW:
# those get the top-level damage alone). Each path gets every damage from compare, history
# and, for the results it reads (train, checkpoint, a sweep), size, as JSON; their tables and
# the page every top-level field, with its wrong value (test_report.py damages the page's
# sections). A top-level path is deleted and given one wrong value; a deeper one gets one of
# the five damages, in turn over the paths: the loader reads every wrong type and a missing
# field alike (as missing), and all five damages on every path made the module cost five
# minutes of CPU. The page is drawn without its charts (--no-charts):
# drawn, they were most of the module's time (so only one top-level field in five got a
# page) and could fail nothing here, as every chart is drawn inside a guarded section (a
# chart that raises costs its section, and the page is still written).
DEPTH, DEEP = 2, 4
DEEPER = ("clients", "tests", "points")
SHALLOW = ("environment", "monitor", "writer", "timing")
SIZED = ("train", "checkpoint", "sweep")
DELETE = object()
DAMAGE = (None, "junk", 7, [], DELETE)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """name -> folder of a fresh real result of each kind, made once for the module."""
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed")
    base = tmp_path_factory.mktemp("damaged")
    target, results = base / "target", base / "reports"
    target.mkdir()
    out = {}
    for name, args in MADE.items():
        before = set(results.glob("*/")) if results.exists() else set()
        proc = run_cli(*args, "--target", str(target), "--results", str(results), "-q",
                       *(("--no-report",) if args[0] in ("run", "scale") else ()))
        assert proc.returncode == 0, (name, proc.stderr)
        (out[name],) = set(results.glob("*/")) - before
    return out


def key_paths(doc: Any, depth: int = DEEP, base: tuple = ()) -> Iterator[tuple]:
    """The key paths damaged in doc (see DEPTH); of a list, its first item only."""
    if len(base) >= depth or (base and base[0] in SHALLOW):
        return
    if len(base) >= DEPTH and base[0] not in DEEPER:
        return
    items = doc.items() if isinstance(doc, dict) else \
        [(0, doc[0])] if isinstance(doc, list) and doc else []
    for key, value in items:
        yield (*base, key)
        yield from key_paths(value, depth, (*base, key))


def _damage(saved: str, path: tuple, junk: Any) -> dict:
    """The result saved as `saved` (its JSON text), with the field at `path` damaged: parsed
    again for each damage, which is several times faster than a deep copy of the document."""
    out = json.loads(saved)
    part = result.dig(out, *path[:-1]) if len(path) > 1 else out
    if junk is DELETE:
        del part[path[-1]]
    else:
        part[path[-1]] = junk
    return out


def _recorded(folder: Path, db: history.History) -> str | None:
    """The damaged result as the history records it (`aiio history` then reads every record
    once): None when it was recorded or refused in one line, else what went wrong."""
    try:
        res = result.load(folder)
        record = {"run": history.run_record, "sweep": history.sweep_record}.get(res.kind)
        if record is not None:
            db.add(record(res))
    except result.AiioError:
        return None  # too damaged to read: the commands said so in one line
    except Exception as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        return f"history record: {exc!r} at {Path(frame.filename).name}:{frame.lineno}"
    return None


def _outcome(args: tuple[str, ...]) -> str | None:
    """None when the command succeeded or refused in one line; else what went wrong."""
    try:
        _one_line_or_success(call_cli(*args))
    except AssertionError as exc:
        return f"{args[0]}: {exc}"
    except Exception as exc:  # a traceback the user would have seen: where it was raised
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        return f"{args[0]}: {exc!r} at {Path(frame.filename).name}:{frame.lineno}"
    return None


@pytest.mark.parametrize("name", MADE)
@pytest.mark.heavy  # make test-lab: many seconds of CPU (setup.cfg)
def test_a_fresh_result_loads_with_no_notice(made: dict[str, Path], name: str) -> None:
    # what the loader checks beyond types (a run's client counts against its clients) holds
    # for every result aiio writes, of every phase
    assert result.load(made[name]).notices == ()


@pytest.mark.parametrize("name", MADE)
@pytest.mark.heavy  # make test-lab: many seconds of CPU (setup.cfg)
def test_every_damaged_field_is_a_notice_or_one_line(made: dict[str, Path], name: str,
                                                     tmp_path: Path) -> None:
    saved = (made[name] / "result.json").read_text()
    doc = json.loads(saved)
    folder = tmp_path / made[name].name
    folder.mkdir()
    db = tmp_path / "history.sqlite"
    wrong = []
    with history.History(db) as recorded:
        for n, path in enumerate(key_paths(doc)):
            page = len(path) == 1  # the tables and the page: every top-level field
            # a top-level field is given a wrong value and deleted; a deeper one, one damage
            # in turn (the loader reads a wrong type and a missing field alike, as missing)
            damages = (DAMAGE[n % (len(DAMAGE) - 1)], DELETE) if page else \
                (DAMAGE[n % len(DAMAGE)],)
            for junk in damages:
                (folder / "result.json").write_text(json.dumps(_damage(saved, path, junk)))
                commands = [("compare", str(folder)),
                            ("size", "--workload", "demo", "--from", str(folder))]
                commands = commands if name in SIZED else commands[:1]
                if not page or junk is DELETE:
                    commands = [(*args, "--json") for args in commands]  # no tables drawn
                else:
                    commands.append(("report", str(folder), "-o", str(tmp_path / "page.html"),
                                     "--no-charts"))
                found = [_outcome(args) for args in commands] + [_recorded(folder, recorded)]
                damage = "deleted" if junk is DELETE else repr(junk)
                wrong += [f"{_dotted(path)} {damage}: {w}" for w in found if w is not None]
    wrong += [f"history: {w}" for w in [_outcome(("history", "--history", str(db)))] if w]
    assert not wrong, "\n".join(wrong)


def _dotted(path: tuple) -> str:
    return ".".join(str(k) for k in path)


def test_a_result_without_a_kind_reads_as_a_run_in_every_command(tmp_path: Path) -> None:
    # the loader, the model's sections and the report read it as a run; compare refused it
    # as "a None result" and size --from as "kind ''"
    doc = json.loads((TRAIN / "result.json").read_text())
    del doc["kind"]
    folder = tmp_path / "kindless"
    folder.mkdir()
    (folder / "result.json").write_text(json.dumps(doc))
    assert result.load(folder).kind == "run"
    for args in (("compare", str(folder)), ("report", str(folder)),
                 ("size", "--workload", "demo", "--from", str(folder))):
        out = call_cli(*args)
        assert out.returncode == 0, (args, out.stderr)


RANDRW = Path(__file__).parent / "data" / "results-v2" / "20261201-124012-randrw-demo-c2"


@pytest.mark.parametrize("junk", [-1, 7, True])
def test_a_verify_record_whose_corrupt_blocks_are_no_list_reads_as_none_corrupt(
        tmp_path: Path, junk: Any) -> None:
    # found below the fuzz's depth: the typed --verify record iterated a number
    doc = json.loads((RANDRW / "result.json").read_text())
    doc["aggregate"]["verify"]["corrupt"] = junk
    folder = tmp_path / RANDRW.name
    folder.mkdir()
    (folder / "result.json").write_text(json.dumps(doc))
    assert result.load(folder).summary.verify.corrupt == ()
    for args in (("compare", str(folder)), ("report", str(folder))):
        _one_line_or_success(call_cli(*args))
    with history.History(tmp_path / "history.sqlite") as db:
        assert _recorded(folder, db) is None


def test_an_integer_too_large_for_a_float_reads_as_no_finite_number(tmp_path: Path) -> None:
    # JSON integers have no bound: the finite-number check overflowed converting one to a
    # float (a traceback in report, compare and size --from)
    folder = _damaged_copy(tmp_path, TRAIN, clients_requested=10**400)
    assert result.number(10**400) is None and html.finite(10**400) is None
    assert "clients_requested is not a finite number" in " ".join(result.load(folder).notices)
    for args in (("compare", str(folder)), ("report", str(folder)),
                 ("size", "--workload", "demo", "--from", str(folder))):
        _one_line_or_success(call_cli(*args))
    doc = json.loads((TRAIN / "result.json").read_text())
    doc["aggregate"]["first_done"]["mib_s"] = 10**400  # the page's headline reads it as is
    (folder / "result.json").write_text(json.dumps(doc))
    assert call_cli("report", str(folder)).returncode == 0
    assert "could not be drawn" not in (folder / "report.html").read_text()


@pytest.mark.parametrize(("section", "key", "junk"), [
    ("dataset", "sample_size", 1e308), ("train", "batch_size", 0),
    ("train", "compute_time", {"a100": 0, "h100": 0, "b200": 0})])
def test_a_recorded_workload_whose_demand_is_no_finite_rate_is_one_line(
        tmp_path: Path, section: str, key: str, junk: Any) -> None:
    # found below the fuzz's depth: size --from divided by a zero compute time or floored an
    # infinite demand (OverflowError, ZeroDivisionError)
    doc = json.loads((TRAIN / "result.json").read_text())
    doc["workload"][section][key] = junk
    folder = _damaged_copy(tmp_path, TRAIN, workload=doc["workload"])
    _one_line_or_success(call_cli("size", "--workload", "demo", "--from", str(folder)))


def _made(folder: Path) -> Path:
    """`folder`, made: a place for another damaged copy of the same result."""
    folder.mkdir()
    return folder


def _asked(tmp_path: Path, folder: Path) -> tuple[result.Result, str, str]:
    """The loaded result, its history series and the fio command compare names for it."""
    res = result.load(folder)
    out = call_cli("compare", str(folder), "--json")
    assert out.returncode == 0, out.stderr
    (item,) = json.loads(out.stdout)
    return res, history.run_record(res).name, item["note"]


@pytest.mark.parametrize("asked", [1_000_000_000, 3, 1, 0, -2, 2.5, 2.0, 1e9],
                         ids=["1e9", "3", "1", "0", "-2", "2.5", "2.0", "1e9-float"])
def test_a_client_count_the_run_cannot_have_asked_for_reads_as_missing(
        tmp_path: Path, asked: Any) -> None:
    # an edited count was taken as recorded: the history's series "c1000000000", compare's
    # fio command "--clients 1000000000" and the page's "2 reported of 1000000000 requested"
    folder = _damaged_copy(tmp_path, TRAIN, clients_requested=asked)
    res, series, note = _asked(tmp_path, folder)
    (notice,) = res.notices
    assert notice.startswith(f"{folder / 'result.json'}: clients_requested is ") and \
        notice.endswith("; read as missing"), notice
    assert "clients_requested" not in res and res.clients_requested == 2
    assert series == "run train demo c2"
    assert "--clients 2 " in note, note
    page = tmp_path / "page.html"
    assert call_cli("report", str(folder), "-o", str(page), "--no-charts").returncode == 0
    row = page.read_text().split(">clients</td>", 1)[1].split("</tr>", 1)[0]
    assert ">2 reported on " in row and "requested" not in row, row


def test_a_workload_count_that_disagrees_with_the_count_asked_reads_as_missing(
        tmp_path: Path) -> None:
    # the two record one ask; in a run that ended ok the one its clients contradict is left
    # out, the other believed
    doc = json.loads((TRAIN / "result.json").read_text())
    doc["workload"]["run"]["clients"] = 1_000_000_000
    folder = _damaged_copy(tmp_path, TRAIN, workload=doc["workload"])
    res, series, note = _asked(tmp_path, folder)
    (notice,) = res.notices
    assert "workload.run.clients is 1000000000, more than the 2 clients" in notice, notice
    assert res["clients_requested"] == 2 and "clients" not in res["workload"]["run"]
    assert series == "run train demo c2" and "--clients 2 " in note, note
    assert call_cli("size", "--workload", "demo", "--from", str(folder)).returncode == 0
    # in a run that failed (it may report fewer than it asked for) which one was edited
    # cannot be told: neither is believed, and the count read is the clients it reports
    doc["workload"]["run"]["clients"] = 4
    folder = _damaged_copy(_made(tmp_path / "failed"), TRAIN, workload=doc["workload"],
                           status="failed", clients_requested=3)
    res = result.load(folder)
    (notice,) = res.notices
    assert "clients_requested is 3 and workload.run.clients is 4" in notice, notice
    assert "clients_requested" not in res and "clients" not in res["workload"]["run"]
    assert res.clients_requested == 2 and result.recorded_clients(res) is None


def test_a_sweep_points_client_count_is_believed_as_a_runs_own(tmp_path: Path) -> None:
    sweep = STORED / "20261130-230558-scale-train-demo-c1_2"
    doc = json.loads((sweep / "result.json").read_text())
    doc["points"][1]["result"]["clients_requested"] = 1_000_000_000
    folder = _damaged_copy(tmp_path, sweep, points=doc["points"])
    res = result.load(folder)
    (notice,) = res.notices
    assert "points[1].result.clients_requested is 1000000000, more than the 2" in notice, notice
    assert [p.clients_requested for p in res.points] == [1, 2]
    assert call_cli("report", str(folder), "--no-charts").returncode == 0


def test_an_ok_runs_count_above_the_clients_it_reports_reads_as_missing(tmp_path: Path) -> None:
    # both records edited alike: a run that ended ok reports every client it asked for, so
    # 1000000000 of them with 2 reported cannot be its ask
    doc = json.loads((TRAIN / "result.json").read_text())
    doc["workload"]["run"]["clients"] = 1_000_000_000
    folder = _damaged_copy(tmp_path, TRAIN, clients_requested=1_000_000_000,
                           workload=doc["workload"])
    res, series, _ = _asked(tmp_path, folder)
    assert len(res.notices) == 2 and all("more than the 2 clients" in n for n in res.notices)
    assert res.clients_requested == 2 and series == "run train demo c2"
    # one edited: that one alone is left out, the other kept
    folder = _damaged_copy(_made(tmp_path / "one"), TRAIN, clients_requested=3)
    res = result.load(folder)
    (notice,) = res.notices
    assert "clients_requested is 3, more than the 2 clients" in notice, notice
    assert res["workload"]["run"]["clients"] == 2
    # a run that failed may have reported fewer than it asked for: its ask is believed
    folder = _damaged_copy(_made(tmp_path / "failed"), TRAIN, status="failed", clients_requested=3,
                           workload={**doc["workload"], "run": {"clients": 3}})
    res = result.load(folder)
    assert res.notices == () and res.clients_requested == 3
    # an entry of the clients list damaged is no client fewer: the counts are not blamed
    damaged = json.loads((TRAIN / "result.json").read_text())["clients"]
    damaged[1] = "junk"
    folder = _damaged_copy(_made(tmp_path / "entry"), TRAIN, clients=damaged)
    res = result.load(folder)
    (notice,) = res.notices
    assert notice.endswith("clients[1] is a string, not an object; read as missing"), notice
    assert res.clients_requested == 2


SWEEP = STORED / "20261130-230558-scale-train-demo-c1_2"


def test_a_sweep_count_its_point_contradicts_reads_as_missing(tmp_path: Path) -> None:
    # the sweep's own records of a point's count (the point's `clients`, its table row) were
    # believed whatever its run recorded: edited to 1000000000 with the run's 2 clients left
    # alone, the page drew "1000000000 clients" for a point of 2 and E(N) at 1000000000
    doc = json.loads((SWEEP / "result.json").read_text())
    doc["points"][1]["clients"] = 1_000_000_000
    doc["table"][1]["clients"] = 1_000_000_000
    folder = _damaged_copy(tmp_path, SWEEP, points=doc["points"], table=doc["table"])
    res = result.load(folder)
    assert len(res.notices) == 2, res.notices
    assert "points[1].clients is 1000000000, not the 2 clients its run asked for" \
        in res.notices[0], res.notices
    assert "table is of counts no point has (table[1].clients is 1000000000)" \
        in res.notices[1], res.notices
    assert "clients" not in res["points"][1] and "table" not in res
    page = tmp_path / "page.html"
    assert call_cli("report", str(folder), "-o", str(page), "--no-charts").returncode == 0
    text = page.read_text()
    assert "1000000000" not in text
    assert "2 client counts measured: 1, 2" in text  # the point kept, at its run's count


@pytest.mark.parametrize("junk", [0, -2, 2.5, 2.0, True], ids=["0", "-2", "2.5", "2.0", "true"])
def test_a_sweep_count_that_is_no_count_reads_as_missing(tmp_path: Path, junk: Any) -> None:
    doc = json.loads((SWEEP / "result.json").read_text())
    doc["sweep"]["clients"] = [1, junk]
    doc["points"][0]["clients"] = junk
    folder = _damaged_copy(tmp_path, SWEEP, sweep=doc["sweep"], points=doc["points"])
    res = result.load(folder)
    assert [n.split(": ", 1)[1].split(" is ")[0] for n in res.notices] == \
        ["sweep.clients[1]", "points[0].clients"], res.notices
    assert res["sweep"]["clients"] == [1] and "clients" not in res["points"][0]
    page = tmp_path / "page.html"
    assert call_cli("report", str(folder), "-o", str(page), "--no-charts").returncode == 0
    assert "2 client counts measured: 1, 2" in page.read_text()


def test_a_sweep_point_whose_run_is_damaged_keeps_its_table_row(tmp_path: Path) -> None:
    # its count is still the point's own: the table's row of it is no edited row
    doc = json.loads((SWEEP / "result.json").read_text())
    doc["points"][1]["result"] = "junk"
    folder = _damaged_copy(tmp_path, SWEEP, points=doc["points"])
    res = result.load(folder)
    (notice,) = res.notices
    assert "points[1].result is a string, not an object" in notice, notice
    assert [r["clients"] for r in res["table"]] == [1, 2]
