"""`aiio accept`: run an acceptance spec, print measured against required, write JUnit XML,
record the history. Exit 0 when every check passes, 1 when any fails, 2 on bad input."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from aiio.cli.common import check_engine, emit_json, engine_option
from aiio.cli.history import default_history, history_options
from aiio.cli.s3opts import access_for, s3_options
from aiio.errors import AiioError, ConfigError
from aiio.options import RunOptions


@click.command()
@click.argument("spec_path", metavar="SPEC")
@click.option("--target", "-t", default=None,
              help="directory under test (default: the spec's target)")
@click.option("--junit", "junit_path", default=None, metavar="FILE",
              help="also write JUnit XML here (always written next to the result)")
@click.option("--check", "names", multiple=True, metavar="NAME",
              help="run only this check; repeatable")
@click.option("--results", default="reports", show_default=True, help="folder for results")
@history_options
@click.option("--fail-on-regression", is_flag=True,
              help="exit 1 when a check regressed, even if it passed its thresholds")
@click.option("--prometheus", "prom_path", default=None, metavar="FILE.prom",
              help="also write the checks' figures for node_exporter's textfile collector")
@click.option("--json", "as_json", is_flag=True, help="print the accept result as JSON")
@click.option("--quiet", "-q", is_flag=True, help="no progress bars")
@click.option("--no-report", is_flag=True, help="do not write report.html pages")
@engine_option
@s3_options
def accept(spec_path: str, target: str | None, junit_path: str | None, names: tuple[str, ...],
           results: str, history_path: str | None, no_history: bool,
           fail_on_regression: bool, prom_path: str | None, as_json: bool, quiet: bool,
           no_report: bool, engine: str | None, endpoint: str | None,
           profile: str | None) -> None:
    """Run the acceptance checks of SPEC against the target; pass or fail each one."""
    from aiio.accept import run as acc
    from aiio.accept.junit import write_junit
    from aiio.results import monitoring
    from aiio.results.history import History
    from aiio.run import memcheck, runner
    from aiio.storage.target import Target
    from aiio.term.console import RichUI

    spec = acc.load_spec(spec_path)
    checks = spec.select(names)
    target = target or spec.info.target
    if not target:
        raise ConfigError(f"{spec_path}: no target; pass --target DIR or set target in [spec]")
    for check in checks:  # each check's cache method with the engine, before anything runs
        check_engine(target, check.cache, engine)
    checks = tuple(replace(c, engine=engine) for c in checks)
    access = access_for(target, endpoint, profile)
    if access is not None:  # --endpoint/--profile, else the AWS chain (AWS_ENDPOINT_URL, config)
        runner.open_target(target, RunOptions(s3=access))
        checks = tuple(replace(c, options=replace(c.options, s3=access)) for c in checks)
    else:
        target = os.path.abspath(target)
        Target(target).check_usable()
    if prom_path:
        monitoring.check_path(prom_path)
    if junit_path:
        _check_junit(Path(junit_path))
    for check in checks:  # refuse what cannot fit before anything runs
        largest = max(check.clients)
        memcheck.check_need(memcheck.target_need(check.workload, check.phase, target, largest,
                                                 check.cache, engine), largest)
    history = None if no_history else History(default_history(results, history_path))
    ui = RichUI(quiet=quiet or as_json)

    def on_check(i: int, n: int, check: acc.Check) -> None:
        ui.note(f"[bold]check {i + 1}/{n}[/] {check.name}: {check.phase} "
                f"{check.workload.name}, clients {check.clients_value()}")

    try:
        out = acc.run_spec(spec, checks, target, results, ui, history, on_check)
        out["engine"] = engine  # asked for every check (None: each ran on the target's)
        exported = acc.judged_checks(spec, checks, out) if prom_path else []
        if history is not None and prom_path:  # --check runs keep the other checks' series
            exported += monitoring.other_checks(history, spec.name, out["target"], exported)
    finally:
        if history is not None:
            history.close()
    folder = acc.save(out, results)
    junit = [write_junit(out, folder / "junit.xml")]
    if junit_path:
        junit.append(_write_junit_copy(out, Path(junit_path)))
    pages = [] if no_report else _write_reports(out, folder, Path(results))
    if prom_path:
        monitoring.write(prom_path, exported)
    if as_json:
        emit_json(out)
    else:
        print_accept(out, folder, junit[-1])
        for page in pages:
            click.echo(f"report:  {page}")
        if prom_path:
            click.echo(f"prometheus: {prom_path}")
    _end(out, folder, fail_on_regression)


def _check_junit(path: Path) -> None:
    """Refuse, before any check runs, a --junit path no file can be written at."""
    from aiio.results.files import check_place

    try:
        check_place(path)
    except OSError as exc:
        raise ConfigError(f"--junit {path}: {exc.strerror}") from None


def _write_junit_copy(out: dict[str, Any], path: Path) -> Path:
    """The --junit copy; a place that failed since the check is one line (the result and
    its own junit.xml are saved already)."""
    from aiio.accept.junit import write_junit

    try:
        return write_junit(out, path)
    except OSError as exc:
        raise AiioError(f"cannot write the JUnit XML to {path}: {exc.strerror}") from None


def _write_reports(out: dict[str, Any], folder: Path, results: Path) -> list[Path]:
    """The acceptance run's page, and the page of each run its checks link to."""
    from aiio.cli.run import write_report
    from aiio.results import result

    for check in out["checks"]:
        where = check.get("result_folder") or check.get("result_id")
        run = results / str(where or "")
        if where and (run / "result.json").exists() and not (run / "report.html").exists():
            try:
                write_report(result.load(run), run)
            except AiioError:  # an unreadable run result costs its page, not the others
                continue
    return write_report(out, folder)


def _end(out: dict[str, Any], folder: Path, fail_on_regression: bool) -> None:
    """Leave through the CLI's error boundary, which tells every MPI rank the exit code:
    0 all passed, 1 any failed or errored (or regressed, when asked), 130 interrupted."""
    from aiio.accept.run import exit_code
    from aiio.errors import ChecksFailed, RunInterrupted

    code = exit_code(out)
    if code == RunInterrupted.exit_code:
        raise RunInterrupted(f"interrupted after {len(out['checks'])} checks; the checks done "
                             f"are in {folder}")
    if code:
        raise ChecksFailed(f"acceptance failed: {out['failed']} failed and {out['errors']} "
                           f"errored of {len(out['checks'])} checks; see {folder}")
    regressed = [c["name"] for c in out["checks"] if c["regressions"]]
    if fail_on_regression and regressed:
        raise ChecksFailed(f"every check passed, but {', '.join(regressed)} regressed "
                           "(--fail-on-regression)")


STATUS_STYLE = {"pass": "[green]PASS[/]", "fail": "[red]FAIL[/]", "error": "[red]ERROR[/]"}


def _check_rows(check: dict[str, Any]) -> list[tuple[str, ...]]:
    """Rows of one check: one per threshold, then its error and its regressions."""
    from aiio.results.figures import FIGURES

    rows = []
    for v in check["verdicts"]:
        fig = FIGURES[v["figure"]]
        measured = "-" if v["measured"] is None else fig.format(v["measured"])
        verdict = {True: "[green]pass[/]", False: "[red]FAIL[/]", None: "[red]no figure[/]"}
        rows.append((v["threshold"], measured, f"{v['op']} {fig.format(v['required'])}",
                     verdict[v["pass"]]))
    if check["status"] == "error" and not rows:
        rows.append(("(no result)", "-", "", "[red]ERROR[/]"))
    for r in check["regressions"]:
        fig = FIGURES[r["figure"]]
        rows.append((f"regression {r['figure']}", fig.format(r["value"]),
                     f"baseline {fig.format(r['baseline'])} ({r['change']:+.0%})",
                     "[yellow]REGRESSION[/]"))
    return rows


def _clients_text(clients: Any) -> str:
    if isinstance(clients, list):
        return f"clients {','.join(map(str, clients))}"
    return f"{clients} client{'s' if clients != 1 else ''}"


def accept_table(out: dict[str, Any]) -> Any:
    """Measured against required, one row per threshold, grouped by check."""
    from rich import box
    from rich.table import Table

    table = Table(title=f"accept: {out['spec']} on {out['target']}", box=box.SIMPLE_HEAD)
    table.add_column("check", no_wrap=True)
    table.add_column("threshold", no_wrap=True)
    table.add_column("measured", justify="right", overflow="fold")
    table.add_column("required", overflow="fold")
    table.add_column("verdict", no_wrap=True)
    for check in out["checks"]:
        rows = _check_rows(check)
        label = [f"[bold]{check['name']}[/]", _clients_text(check["clients"]),
                 STATUS_STYLE[check["status"]]]
        while len(rows) < len(label):
            rows.append(("", "", "", ""))
        for i, row in enumerate(rows):
            table.add_row(label[i] if i < len(label) else "", *row,
                          end_section=i == len(rows) - 1)
    for name in out.get("not_run", []):
        table.add_row(f"[bold]{name}[/]", "", "", "", "[yellow]NOT RUN[/]")
    return table


def print_accept(out: dict[str, Any], folder: Path, junit: Path) -> None:
    from aiio.term.console import print_warnings
    from aiio.term.screen import out_console

    console = out_console()
    console.print(accept_table(out))
    for check in out["checks"]:
        if check["status"] == "error":
            console.print(f"[red]{check['name']}[/]: {check['reason']}", highlight=False)
        for r in check["regressions"]:
            console.print(f"[yellow]regression[/] {check['name']}: {r['message']}",
                          highlight=False)
        print_warnings(console, [dict(w, message=f"{check['name']}: {w['message']}")
                                 for w in check["warnings"]])
    n = len(out["checks"])
    verdict = {"pass": "[green]PASS[/]", "fail": "[red]FAIL[/]",
               "interrupted": "[yellow]INTERRUPTED[/]"}[out["status"]]
    console.print(f"{verdict}: {n} checks, {out['passed']} passed, {out['failed']} failed, "
                  f"{out['errors']} errors", highlight=False)
    if out.get("error"):
        console.print(f"[yellow]note[/]: {out['error']}", highlight=False)
    console.print(f"result:  {folder}/result.json", highlight=False, soft_wrap=True)
    console.print(f"junit:   {junit}", highlight=False, soft_wrap=True)
    if out["history"]:
        console.print(f"history: {out['history']}", highlight=False, soft_wrap=True)
