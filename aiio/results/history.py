"""The results history: every run, sweep and acceptance check in one SQLite file, and the
regression rule that reads it.

Several scheduled runs may write one history at once, so the database runs in WAL mode with a
busy timeout and every write is one short IMMEDIATE transaction. A file that is not an intact
aiio history is reported and never written to: history is evidence, and a "repair" that starts
it over would destroy it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import re
import socket
import sqlite3
import statistics
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from aiio import __version__, engines
from aiio.errors import AiioError
from aiio.results.figures import FIGURES, LOWER, run_figures, sweep_figures
from aiio.results.files import made_folders
from aiio.results.layout import layout_of, legacy_sections
from aiio.results.result import Result, RunSummary, dig, model
from aiio.workload import inert_keys

SCHEMA_VERSION = 2  # 2: records keep the settings that change their figures
SQLITE_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_S = 60.0          # a nightly run may wait behind another one's short write
DEFAULT_FRACTION = 0.10        # regression: more than 10 % worse than the baseline ...
DEFAULT_BASELINE_RUNS = 5      # ... which is the median of the last 5 passing records
# Watched for regressions besides thresholded ones: the headline aggregate, AU, and the
# throughputs of phases that serve requests (a vector search's queries, a KV cache's tokens).
# Their latencies are recorded and judged by thresholds; --figure trends them.
HEADLINE = ("aggregate_mib_s", "au_min", "queries_per_s", "tokens_per_s")
# A CV near zero doubles on noise alone: a relative change of it says nothing (its threshold
# still judges it).
UNWATCHED = ("cv",)
# One or two earlier runs are not a baseline: noise between two runs would be an alarm.
MIN_BASELINE_RUNS = 3

_SCHEMA = """
CREATE TABLE records (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL NOT NULL, host TEXT NOT NULL, version TEXT NOT NULL,
    kind TEXT NOT NULL, name TEXT NOT NULL, target TEXT NOT NULL,
    phase TEXT, workload TEXT, clients TEXT,
    status TEXT NOT NULL, passed INTEGER NOT NULL,
    result_id TEXT, spec TEXT, settings TEXT NOT NULL DEFAULT '');
CREATE INDEX records_series ON records (name, target, ts);
CREATE TABLE figures (
    record_id INTEGER NOT NULL REFERENCES records(id),
    name TEXT NOT NULL, value REAL, required REAL,
    PRIMARY KEY (record_id, name));
"""


class HistoryError(AiioError):
    """The history database is missing its parts, damaged or not aiio's."""


@dataclass
class Record:
    """One row of the history: a run, a sweep or a check, with its figures."""

    kind: str                   # "run", "sweep" or "check"
    name: str                   # the series: a check's name, or "run train demo c2"
    target: str
    status: str                 # run/sweep: ok, failed, ...; check: pass, fail, error
    passed: bool                # counts towards the baseline
    figures: dict[str, float] = field(default_factory=dict)
    required: dict[str, float] = field(default_factory=dict)
    phase: str = ""
    workload: str = ""
    clients: str = ""
    result_id: str = ""
    spec: str = ""
    host: str = field(default_factory=socket.gethostname)
    version: str = __version__
    ts: float = field(default_factory=time.time)
    id: int | None = None
    # the settings that may change its figures, canonical JSON (`settings_of`): its key holds
    # those its phase read (`compared_settings`); "" for a record written before they were kept
    settings: str = ""

    @property
    def series(self) -> tuple[str, str]:
        """What a reader follows over time: a check, or runs of one shape, on one target."""
        return self.name, self.target

    @property
    def key(self) -> tuple[str, str, str]:
        """What a record is compared within: its series and the hash of the settings its
        phase's figures follow (`compared_settings`)."""
        return self.name, self.target, settings_key(self.compared)

    @property
    def compared(self) -> str:
        """Its settings as its key holds them: its phase's sections and the run's own."""
        return compared_settings(self.settings, self.phase, self.target)


@dataclass(frozen=True)
class Regression:
    figure: str
    value: float
    baseline: float
    change: float    # signed fraction of the baseline: -0.15 is 15 % lower
    runs: int        # passing records the baseline is the median of

    def describe(self) -> str:
        f = FIGURES.get(self.figure)
        fmt = f.format if f else (lambda v: f"{v:g}")
        return (f"{self.figure} {fmt(self.value)} is {abs(self.change):.0%} "
                f"{'above' if self.change > 0 else 'below'} its baseline {fmt(self.baseline)} "
                f"(median of the last {self.runs} passing)")


def readable(text: str) -> str:
    """`text` as valid UTF-8: a file name that is not (Linux allows any bytes) keeps its odd
    bytes as \\xff escapes, the same every time, so its series does not split."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


# --- opening without ever damaging ---------------------------------------------------------

def _damaged(path: Path, why: str) -> HistoryError:
    return HistoryError(f"history {path} {why}; it was left untouched: move it aside to start "
                        "a new history, or pass another --history PATH")


def _check_header(path: Path) -> None:
    if not path.is_file():
        raise HistoryError(f"history {path} is not a regular file; pass a file with --history")
    with path.open("rb") as fh:
        head = fh.read(len(SQLITE_HEADER))
    if head and head != SQLITE_HEADER:
        raise _damaged(path, "is not an SQLite database (damaged or another file)")


def _check_intact(conn: sqlite3.Connection, path: Path) -> int:
    """Read-only checks of an existing file; returns its schema version (0: empty)."""
    problems = [r[0] for r in conn.execute("PRAGMA quick_check")]
    if problems != ["ok"]:
        raise _damaged(path, f"is damaged ({problems[0]})")
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if version == 0 and tables - {"sqlite_sequence"}:
        raise _damaged(path, "is an SQLite database but not an aiio history")
    if version > SCHEMA_VERSION:
        raise HistoryError(f"history {path} has schema {version}, newer than this aiio "
                           f"understands ({SCHEMA_VERSION}); upgrade aiio to use it")
    if version and not {"records", "figures"} <= tables:
        raise _damaged(path, "is missing its tables")
    return version


@contextlib.contextmanager
def _immediate(conn: sqlite3.Connection) -> Iterator[int]:
    """One schema change at a time: two processes racing meet in the IMMEDIATE lock, and the
    loser finds the schema version the winner left. Yields that version."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn.execute("PRAGMA user_version").fetchone()[0]
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _create_schema(conn: sqlite3.Connection) -> None:
    """Create the tables once."""
    with _immediate(conn) as version:
        if version == 0:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _migrate(conn: sqlite3.Connection) -> None:
    """Bring a schema-1 history to this one, before the first record this aiio adds to it
    (reading one changes nothing): one column added, every record kept as written. Its
    records have no settings (""): a key of their own, never a baseline for records that keep
    theirs."""
    with _immediate(conn) as version:
        if version == 1:
            conn.execute("ALTER TABLE records ADD COLUMN settings TEXT NOT NULL DEFAULT ''")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _version(conn: sqlite3.Connection) -> int:
    return conn.execute("PRAGMA user_version").fetchone()[0]


def _use_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL (persistent: readers never block the writer). The switch fails at once,
    without the busy handler, while another process holds the file, so it is retried."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if not _locked(exc) or time.monotonic() > deadline:
                raise
            time.sleep(random.uniform(0.005, 0.05))


def _locked(exc: sqlite3.Error) -> bool:
    return "locked" in str(exc) or "busy" in str(exc)


def _connect(path: Path) -> sqlite3.Connection:
    """The history at `path`, checked; a new one, in new folders if need be, when none is."""
    if path.exists():
        _check_header(path)
        return _open(path, existed=True)
    with made_folders(path.parent):  # a history that cannot be created leaves no folder
        try:
            return _open(path, existed=False)
        except sqlite3.DatabaseError as exc:
            if _locked(exc) or "unable to open" in str(exc):
                raise  # another process is creating it; or no file was made: as for any
            _remove_unwritten(path)
            raise HistoryError(f"cannot create history {path}: {exc}") from None


def _remove_unwritten(path: Path) -> None:
    """Remove the file a history failed to be created in while nothing was written in it (a
    full disk), and SQLite's empty files beside it: it is nobody's history, and its folder,
    if made for it, can go too. One with a page in it may be another process's: it stays,
    and so does everything beside it."""
    with contextlib.suppress(OSError):  # not there, or gone meanwhile
        if path.stat().st_size:
            return
        path.unlink()
    for end in ("-journal", "-wal", "-shm"):
        side = path.with_name(path.name + end)
        with contextlib.suppress(OSError):
            if side.stat().st_size == 0:
                side.unlink()


def _open(path: Path, existed: bool) -> sqlite3.Connection:
    """The connection to the history at `path`, its schema checked (and made when new)."""
    # mode=rw never creates: if the file vanished since the check, opening fails, not recreates
    # quoted as the bytes the system names it by: a name that is no UTF-8 is still a name
    uri = f"file:{quote(os.fsencode(path.resolve()))}?mode={'rw' if existed else 'rwc'}"
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        conn.execute("BEGIN")  # one snapshot: another process may be creating the schema
        try:
            version = _check_intact(conn, path)
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
        _use_wal(conn)
        if version == 0:
            _create_schema(conn)
    except BaseException:
        conn.close()
        raise
    return conn


class History:
    """An open history file. Use as a context manager; every `add` is its own transaction."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.conn = _connect(self.path)
        except sqlite3.DatabaseError as exc:
            if _locked(exc):
                raise self._busy() from None
            if "unable to open" in str(exc):  # permissions, a missing folder: not damage
                raise HistoryError(f"cannot open history {self.path}: {exc}") from None
            raise _damaged(self.path, f"cannot be read ({exc})") from None
        except OSError as exc:
            raise HistoryError(f"cannot open history {self.path}: {exc.strerror}") from None

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.conn.close()

    def add(self, rec: Record) -> int:
        """Append one record and its figures atomically; returns its id."""
        try:
            return self._insert(rec)
        except sqlite3.DatabaseError as exc:
            if _locked(exc):
                raise self._busy() from None
            raise HistoryError(f"cannot write to history {self.path}: {exc}") from None

    def _busy(self) -> HistoryError:
        return HistoryError(f"history {self.path} stayed locked by another process for "
                            f"{BUSY_TIMEOUT_S:.0f} s; try again when it has finished")

    def _insert(self, rec: Record) -> int:
        c = self.conn
        if _version(c) < SCHEMA_VERSION:
            _migrate(c)
        texts = [readable(t) for t in (rec.host, rec.version, rec.kind, rec.name, rec.target,
                                       rec.phase, rec.workload, rec.clients, rec.status,
                                       rec.result_id, rec.spec, rec.settings)]
        c.execute("BEGIN IMMEDIATE")
        try:
            cur = c.execute(
                "INSERT INTO records (ts, host, version, kind, name, target, phase, workload, "
                "clients, status, passed, result_id, spec, settings) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (rec.ts, *texts[:9], int(rec.passed), *texts[9:]))
            rec.id = cur.lastrowid
            # a required figure the run never produced (an errored check) is kept with no value
            names = sorted(set(rec.figures) | set(rec.required))
            c.executemany(
                "INSERT INTO figures (record_id, name, value, required) VALUES (?,?,?,?)",
                [(rec.id, n, rec.figures.get(n), rec.required.get(n)) for n in names])
            c.execute("COMMIT")
        except BaseException:
            c.execute("ROLLBACK")
            raise
        return rec.id

    def records(self, name: str | None = None, target: str | None = None,
                kind: str | None = None) -> list[Record]:
        """Records in time order, optionally of one series name, target or kind."""
        where, params = [], []
        for column, value in (("name", name), ("target", target), ("kind", kind)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(readable(value))  # as _insert stored it
        cond = " WHERE " + " AND ".join(where) if where else ""
        try:
            self.conn.execute("BEGIN")  # records and figures from one snapshot
            # a schema-1 history, read as it is: its records kept no settings
            settings = "settings" if _version(self.conn) >= SCHEMA_VERSION else "''"
            rows = self.conn.execute(
                "SELECT id, ts, host, version, kind, name, target, phase, workload, clients, "
                f"status, passed, result_id, spec, {settings} FROM records{cond} "
                "ORDER BY ts, id",
                params).fetchall()
            figs = self.conn.execute(
                "SELECT record_id, name, value, required FROM figures WHERE record_id IN "
                f"(SELECT id FROM records{cond})", params).fetchall()
            self.conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            if _locked(exc):
                raise self._busy() from None
            raise _damaged(self.path, f"cannot be read ({exc})") from None
        by_record: dict[int, list[tuple]] = {}
        for rid, fname, value, required in figs:
            by_record.setdefault(rid, []).append((fname, value, required))
        return [_record(row, by_record.get(row[0], [])) for row in rows]


def _record(row: tuple, figs: list[tuple]) -> Record:
    (rid, ts, host, version, kind, name, target, phase, workload, clients, status, passed,
     result_id, spec, settings) = row
    return Record(kind=kind, name=name, target=target, status=status, passed=bool(passed),
                  figures={n: v for n, v, _ in figs if v is not None},
                  required={n: r for n, _, r in figs if r is not None},
                  phase=phase or "", workload=workload or "", clients=clients or "",
                  result_id=result_id or "", spec=spec or "", host=host, version=version,
                  ts=ts, id=rid, settings=settings or "")


# --- what a run, sweep or check becomes in the history ------------------------------------

def run_series(phase: str, workload: str, clients: Any) -> str:
    """The series name of plain runs and sweeps: 'run train demo c2'."""
    if isinstance(clients, (list, tuple)):
        return f"sweep {phase} {workload} c{','.join(str(c) for c in clients)}"
    return f"run {phase} {workload} c{clients}"


def loop_variant(read_loop: str | None) -> str:
    """What a series name adds for a run whose reads another loop timed: the same storage
    read through the Python loop (numba missing) or io_uring makes other figures, which must
    not be judged against the compiled loop's. Nothing for the compiled loop, for no reads,
    and for records that did not say (made before the loop was recorded). An MPI run whose
    hosts read through different loops lists each ("compiled (...) on 2 clients; python (...)
    on 2 clients", the compiled one first): "[mixed loops]", not the compiled loop's series."""
    return _variant(_loops(read_loop))


def _loops(read_loop: str | None) -> set[str]:
    """The loops (as `_one_loop` names them) a run's label lists; none when it says none."""
    return {_one_loop(loop) for loop in _EACH_LOOP.split(read_loop or "") if loop}


def _variant(loops: set[str]) -> str:
    """One loop's name, nothing for none, "[mixed loops]" for more than one."""
    if not loops:
        return ""
    return loops.pop() if len(loops) == 1 else " [mixed loops]"


_EACH_LOOP = re.compile(r" on \d+ clients?(?:; |$)")  # randrw.read_loops' list of loops


def _one_loop(loop: str) -> str:
    if loop.startswith(("compiled", "none")):
        return ""
    if loop.startswith("python"):
        return " [python loop]"
    # "io_uring (depth 16), compiled (numba 0.68.1)": the ring's series, whatever numba
    return f" [{loop.split(', ')[0]}]"


def of_check(series: str, name: str) -> bool:
    """True when `series` is the series `name` (a check's, or a run shape's) or that of the
    same name timed by another read loop (loop_variant: "NAME [python loop]")."""
    return series == name or (series.startswith(name + " [") and series.endswith("]"))


def check_of(series: str) -> str:
    """The check a check's series belongs to: NAME of "NAME [python loop]" (a check's name
    has no space, so its series names add nothing else)."""
    return series.split(" [", 1)[0]


def variant_of(res: Mapping[str, Any]) -> str:
    """`loop_variant` of a run, or of a sweep over every point's run: its figures (E(N)
    against its smallest count, the headline at its largest) set points against each other,
    so points timed by different loops are "[mixed loops]", as an MPI run's hosts are. A
    point that records no loop (it ended before its figures) says nothing of it."""
    if res.get("kind") == "sweep":
        points = dig(res, "points", default=[])
        runs = [p["result"] for p in points if isinstance(dig(p, "result"), Mapping)] \
            if isinstance(points, list) else []
        return _variant(set().union(*(_loops(_read_loop(r)) for r in runs)))
    return loop_variant(_read_loop(res))


def _read_loop(res: Mapping[str, Any]) -> str | None:
    """The loop a run's aggregate records as timing its reads (`RunSummary.read_loop`)."""
    return RunSummary.of(res.get("aggregate")).read_loop


# Workload keys that name or describe it and change no figure (the series name carries it).
# `run.client_processes` too: the key holds what it did, the most clients a process held
# (`_clients_per_process`), so a cap that changes nothing leaves the series as it was
IDENTITY = {"workload": ("name", "description"), "run": ("client_processes",)}
IDENTITY_TOP = ("source", "given")
SWEEP_SETTINGS = ("duration_s", "repeat")


def settings_of(res: Mapping[str, Any]) -> str:
    """The settings that may change a run's or sweep's figures, as canonical JSON: the resolved
    workload (every section: `--set`, batch size, threads, duration, epochs, sizes, the seed),
    the cache method it ran with, its run options and the engine asked for with --engine (a
    sweep's: also each point's length and its repeats, which its means are over); not its
    name, description or source file, which change no figure. With them, the sections its
    phase read (`sections`, as its result records them): its key holds only those
    (`compared_settings`), the whole workload is kept as evidence."""
    w = res.get("workload")
    workload = {k: v for k, v in w.items() if k not in IDENTITY_TOP} \
        if isinstance(w, Mapping) else {}
    for section, keys in IDENTITY.items():
        if isinstance(workload.get(section), Mapping):
            workload[section] = {k: v for k, v in workload[section].items() if k not in keys}
    kept = {"workload": workload, "method": res.get("method"), "options": res.get("options")}
    if (most := _clients_per_process(res)) > 1:  # clients as threads: a series of its own
        kept["clients_per_process"] = most
    if (engine := engines.asked_of(res)) is not None:
        kept["engine"] = engine
    sweep = res.get("sweep")
    if isinstance(sweep, Mapping):  # a sweep's: each point's length, the repeats it means
        kept["sweep"] = {k: sweep.get(k) for k in SWEEP_SETTINGS}
    if (sections := layout_of(res).workload_sections) is not None:
        kept["sections"] = list(sections)
    return _canonical(kept)


def _clients_per_process(res: Mapping[str, Any]) -> int:
    """The most clients one process of the run held (`process_clients`; 1: a process each,
    as every run before clients could share them); a sweep's: over its points' runs."""
    clients = res.get("clients")
    held = [c.get("process_clients") for c in clients if isinstance(c, Mapping)] \
        if isinstance(clients, list) else []
    points = res.get("points")
    held += [_clients_per_process(p["result"]) for p in points
             if isinstance(p, Mapping) and isinstance(p.get("result"), Mapping)] \
        if isinstance(points, list) else []
    return max((h for h in held if isinstance(h, int) and not isinstance(h, bool)), default=1)


def _canonical(kept: Mapping[str, Any]) -> str:
    return json.dumps(kept, sort_keys=True, separators=(",", ":"), default=str)


# Sections every run's figures follow, whatever its phase: [run] (its seed; its clients name
# the series), and on a bucket [s3] (the part size of everything it uploads).
RUN_SECTIONS = ("run",)
BUCKET_SECTIONS = ("s3",)


def compared_settings(settings: str, phase: str, target: str) -> str:
    """The settings a record is compared within, from those it keeps (`settings_of`): the
    workload sections its phase read (as it recorded them, else `legacy_sections`), [run],
    [s3] on a bucket, and the run's method, options and engine. A section only another phase
    reads, added to aiio or changed, leaves its key as it was."""
    if not settings:
        return ""
    kept = json.loads(settings)
    sections = kept.pop("sections", None)
    workload = kept.get("workload")
    if not isinstance(workload, Mapping):
        return _canonical(kept)
    if sections is None:
        sections = legacy_sections(phase, workload)
    if sections is not None:
        wanted = {*RUN_SECTIONS, *sections,
                  *(BUCKET_SECTIONS if target.startswith("s3://") else ())}
        workload = {k: v for k, v in workload.items() if k in wanted}
    # a key added later at the value that leaves a run as it was continues the series
    kept["workload"] = {k: _active(k, v) for k, v in workload.items()}
    return _canonical(kept)


def _active(section: str, values: Any) -> Any:
    """A section without its inert keys (`workload.inert_keys`)."""
    if not isinstance(values, Mapping):
        return values
    drop = inert_keys(section, dict(values))
    return {k: v for k, v in values.items() if k not in drop}


def key_of(res: Mapping[str, Any]) -> str:
    """The settings key of a run or sweep result, as its history record is keyed."""
    return settings_key(compared_settings(settings_of(res), str(res.get("phase") or ""),
                                          target_key(dig(res, "target", "path", default=""))))


def settings_key(settings: str) -> str:
    """A short hash of the settings ("" for a record written before they were kept)."""
    return hashlib.sha256(settings.encode()).hexdigest()[:8] if settings else ""


def flat_settings(settings: str) -> dict[str, Any]:
    """The settings as dotted names ("train.batch_size", "method") and their values."""
    out: dict[str, Any] = {}

    def walk(value: Any, name: str) -> None:
        if isinstance(value, Mapping) and value:
            for k, v in value.items():
                walk(v, f"{name}.{k}" if name else str(k))
        else:
            out[name] = value
    walk(json.loads(settings) if settings else {}, "")
    return {k.removeprefix("workload."): v for k, v in out.items()}


def differences(settings: list[str]) -> dict[str, str]:
    """Each settings key of one series, with what sets it apart from the others: the values
    of every setting that is not the same in all of them ("train.batch_size=8, method=...");
    a record written before settings were kept says so."""
    flat = {settings_key(s): flat_settings(s) for s in settings}
    names = sorted({n for f in flat.values() for n in f})
    differ = [n for n in names if len({json.dumps(f.get(n), default=str)
                                      for k, f in flat.items() if k}) > 1]
    return {k: (", ".join(f"{n}={_setting(f.get(n))}" for n in differ) if k
                else "settings not recorded (written before they were kept)")
            for k, f in flat.items()}


def _setting(value: Any) -> str:
    return "-" if value is None else value if isinstance(value, str) else json.dumps(value)


def target_key(path: str) -> str:
    """Targets as absolute paths, so a series does not split on how the path was typed; an
    s3:// URL is no path: it stays as typed, less a trailing slash (as the result names it)."""
    if not path or path.startswith("s3://"):
        return (path or "").rstrip("/")
    return os.path.abspath(path)


def run_record(res: Mapping[str, Any]) -> Record:
    """A saved run result (or one being saved) as a history record."""
    run = res if isinstance(res, Result) else model(res)
    workload = dig(run, "workload", "workload", "name", default="")
    clients = run.clients_requested
    return Record(kind="run", name=run_series(run.phase, workload, clients) + variant_of(run),
                  target=target_key(dig(run, "target", "path", default="")), status=run.status,
                  passed=run.status == "ok", figures=run_figures(run), phase=run.phase,
                  workload=workload, clients=str(clients), result_id=run.id,
                  settings=settings_of(run))


def sweep_record(sweep: Mapping[str, Any]) -> Record:
    """A saved sweep result as a history record, with the figures of its largest count."""
    workload = dig(sweep, "workload", "workload", "name", default="")
    clients = dig(sweep, "sweep", "clients", default=[])
    phase, status = str(sweep.get("phase") or ""), str(sweep.get("status") or "")
    return Record(kind="sweep", name=run_series(phase, workload, clients) + variant_of(sweep),
                  target=target_key(dig(sweep, "target", "path", default="")),
                  status=status, passed=status == "ok", figures=sweep_figures(sweep),
                  phase=phase, workload=workload, clients=",".join(map(str, clients)),
                  result_id=str(sweep.get("id") or ""), settings=settings_of(sweep))


# --- regressions ---------------------------------------------------------------------------

def watched(rec: Record) -> list[str]:
    """Figures judged for regressions: the thresholded ones, plus the headline figures."""
    names = list(rec.required) + [h for h in HEADLINE if h not in rec.required]
    return [n for n in names if n in rec.figures and n in FIGURES and n not in UNWATCHED]


def baseline(prior: list[Record], figure: str, runs: int,
             least: int = 1) -> tuple[float, int] | None:
    """Median of `figure` over the last `runs` passing records of `prior` (time order); None
    with fewer than `least` of them."""
    values = [r.figures[figure] for r in prior if r.passed and figure in r.figures][-runs:]
    if not values or len(values) < least:
        return None
    return statistics.median(values), len(values)


def regressions(rec: Record, prior: list[Record], fraction: float = DEFAULT_FRACTION,
                runs: int = DEFAULT_BASELINE_RUNS) -> list[Regression]:
    """Watched figures of `rec` more than `fraction` worse than their baseline in `prior`
    (records of the same series before it), whether or not `rec` passed its thresholds. No
    verdict until the series has MIN_BASELINE_RUNS passing records (or `runs`, if fewer)."""
    found = []
    for name in watched(rec):
        base = baseline(prior, name, runs, least=min(runs, MIN_BASELINE_RUNS))
        if base is None or base[0] == 0:
            continue
        value, (median, n) = rec.figures[name], base
        change = (value - median) / abs(median)
        worse = change > fraction if FIGURES[name].better == LOWER else change < -fraction
        if worse:
            found.append(Regression(name, value, median, change, n))
    return found


def with_regressions(records: list[Record], fraction: float = DEFAULT_FRACTION,
                     runs: int = DEFAULT_BASELINE_RUNS) -> list[tuple[Record, list[Regression]]]:
    """Each record (time order) with its regressions against the earlier records of its own
    series and settings (`Record.key`): never against records of other settings."""
    earlier: dict[tuple[str, str, str], list[Record]] = {}
    out = []
    for rec in records:
        prior = earlier.setdefault(rec.key, [])
        out.append((rec, regressions(rec, prior, fraction, runs)))
        prior.append(rec)
    return out
