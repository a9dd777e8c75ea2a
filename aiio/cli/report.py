"""`aiio report`: (re)render the HTML report of a run, sweep or acceptance run, or the history."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from aiio.errors import AiioError, ConfigError

DEFAULT_HISTORY_DB = "reports/history.sqlite"
MLPERF_SUMMARY = "mlperf.json"  # an `aiio mlperf` folder's summary (its runs are in runs/)


@click.command()
@click.argument("path", required=False)
@click.option("--history", "history", is_flag=True,
              help="trend of every check from the history database instead of one result")
@click.option("--history-db", default=None, metavar="PATH",
              help=f"history database [default: {DEFAULT_HISTORY_DB}]")
@click.option("--output", "-o", default=None, metavar="FILE",
              help="where to write the page [default: report.html beside the result, "
                   "history.html beside the database]")
@click.option("--no-charts", is_flag=True,
              help="every table, no chart drawn: a quick page of a large result")
def report(path: str | None, history: bool, history_db: str | None,
           output: str | None, no_charts: bool) -> None:
    """Write the self-contained HTML report of the result in PATH (a reports/<id> folder or
    its result.json), or with --history the trends of every check."""
    from aiio.results import charts

    if (history or history_db) and path:
        raise ConfigError("give either a result folder or --history, not both")
    if not (history or history_db or path):
        raise ConfigError("nothing to report: give a result folder (aiio report reports/<id>) "
                          "or --history")
    if output == "":  # an unset variable (-o "$PAGE"): not the default place, silently
        raise ConfigError("-o needs a file name (it was empty)")
    with charts.left_out() if no_charts else contextlib.nullcontext():
        written = _history(Path(history_db or DEFAULT_HISTORY_DB), output) if not path \
            else _result(Path(path), output)
    # a page sent into a pipe or a device (-o /dev/stdout) is that stream's content alone
    click.echo(f"report: {written}", err=not written.is_file())


def _result(path: Path, output: str | None) -> Path:
    from aiio import report
    from aiio.cli.common import print_notices
    from aiio.results import result

    summary = _mlperf_summary(path)
    res = summary if summary is not None else result.load(path)
    if summary is None:
        print_notices(res)
    folder = path if path.is_dir() else path.parent
    target = Path(output) if output else folder / report.REPORT_NAME
    source = path if not path.is_dir() else path / ("result.json" if summary is None
                                                    else MLPERF_SUMMARY)
    _not_the_source(target, source, "result")
    return _write(lambda: report.write(res, target.parent, target.name), target)


def _mlperf_summary(path: Path) -> dict | None:
    """The summary of an `aiio mlperf` folder (or its mlperf.json), None for anything else;
    one saved before it named its kind is read as one."""
    import json

    from aiio.sweep.mlperf_rules import KIND, RULES

    file = path / MLPERF_SUMMARY if path.is_dir() else path
    if file.name != MLPERF_SUMMARY or (path.is_dir() and (path / "result.json").exists()):
        return None
    try:
        data = json.loads(file.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as exc:
        raise AiioError(f"cannot read the summary {file}: {exc}") from None
    if not isinstance(data, dict) or data.get("rules") != RULES:
        raise AiioError(f"{file} is not an aiio mlperf summary")
    return {**data, "kind": KIND}


def _history(db: Path, output: str | None) -> Path:
    from aiio import report

    records = _history_records(db)
    target = Path(output) if output else db.with_name("history.html")
    _not_the_source(target, db, "history")
    return _write(lambda: report.write_history(records, target, source=str(db)), target)


def _history_records(db: Path) -> list[dict]:
    """Records {check, time, figure, value, passed, regression} from the history database:
    the figures each record is judged on, regressions as the history itself finds them."""
    from aiio.results import history

    if not db.exists():
        raise ConfigError(f"no history database at {db}; `aiio run` and `aiio accept` create "
                          "it (or pass --history-db PATH)")
    with history.History(db) as h:
        records = h.records()
    targets: dict[str, set[str]] = {}
    keys: dict[tuple[str, str], set[str]] = {}
    for rec in records:
        targets.setdefault(rec.name, set()).add(rec.target)
        keys.setdefault(rec.series, set()).add(rec.key[2])
    out = []
    for rec, regs in history.with_regressions(records):
        worse = {r.figure for r in regs}
        # A series is a name on a target; name the target only where it tells series apart.
        check = rec.name if len(targets[rec.name]) == 1 else f"{rec.name} on {rec.target}"
        if len(keys[rec.series]) > 1:  # runs of other settings: a line of their own each
            check += f" [settings {rec.key[2] or 'not recorded'}]"
        figures = history.watched(rec) or sorted(rec.figures)
        for figure in figures:
            out.append({"check": check, "time": rec.ts, "figure": figure,
                        "value": rec.figures[figure], "passed": rec.passed,
                        "regression": figure in worse, "status": rec.status})
        if not figures:  # a failed or interrupted run with nothing to draw is still a failure
            out.append({"check": check, "time": rec.ts, "figure": None, "value": None,
                        "passed": rec.passed, "regression": False, "status": rec.status})
    return out


def _not_the_source(target: Path, source: Path, what: str) -> None:
    """Refuse a page that would replace the file it is read from: the measurement is lost."""
    if target.exists() and source.exists() and target.samefile(source):
        raise ConfigError(f"-o {target} is the {what} this page is read from: give another file")


def _write(render, target: Path) -> Path:
    """Write the page; an unwritable place is a one-line error naming the place asked for
    (not the temporary file beside it), not a traceback."""
    try:
        return render()
    except OSError as exc:
        raise AiioError(f"cannot write the report to {target}: {exc.strerror}") from None
