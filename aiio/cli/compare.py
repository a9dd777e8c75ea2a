"""`aiio compare`: a phase run's figures next to the matching fio hero numbers."""

from __future__ import annotations

from pathlib import Path

import click

from aiio.cli.common import emit_json, print_notices
from aiio.units import format_rate


@click.command()
@click.argument("runs", nargs=-1, required=True, metavar="RESULT...")
@click.option("--fio", "fio_path", default=None,
              help="compare with this fio result (default: the latest on the run's target)")
@click.option("--json", "as_json", is_flag=True, help="print the rows as JSON on stdout")
def compare(runs: tuple[str, ...], fio_path: str | None, as_json: bool) -> None:
    """List each run's aggregate, per-client and latency figures beside the fio hero's."""
    from aiio.errors import ConfigError
    from aiio.fio import hero
    from aiio.results import result

    fixed = result.load(fio_path) if fio_path else None
    if fixed is not None:
        print_notices(fixed)
    if fixed is not None and fixed.kind != "fio":
        raise ConfigError(f"--fio {fio_path} is a result of kind {fixed.kind!r}, not a fio result")
    report = []
    for path in runs:
        run = result.load(path)
        print_notices(run)
        if run.kind != "run":
            raise ConfigError(f"{path} is a result of kind {run.kind!r}; compare takes phase runs "
                              "(reports/<run-id> written by aiio run)")
        folder = Path(path) if Path(path).is_dir() else Path(path).parent
        fio_res = fixed or hero.fio_result_for(run, folder)
        report.append({"run": run.id or folder.name, "phase": run.get("phase"),
                       "stage": hero.compared_stage(run), **hero.compared(run, fio_res),
                       "note": _missing(run, folder, fio_res)})
    if as_json:
        emit_json(report)
        return
    for item in report:
        _print(item)


def _missing(run: dict, folder: Path, fio_res) -> str | None:
    """One line naming the fio figure the comparison lacks, and how to make it; None when
    nothing is missing."""
    from aiio.fio import hero
    from aiio.results.result import dig

    test = hero.run_hero_test(run)
    if test is None:  # nothing to make: no fio test has the phase's pattern, or no I/O was done
        return hero.unpaired(run)
    if fio_res is None:
        why = hero.hero_entry(run, hero.results_dir_of(folder))["text"]
        return f"fio {test} missing: {why}"  # unbracketed: the command it ends with is pasted
    if fio_res.section(test) is None:
        return (f"fio {test} missing: fio result {fio_res.id} has no {test} test; run the "
                f"full suite: aiio fio --target {dig(run, 'target', 'path', default='TARGET')}")
    return hero.ramp_note(run, fio_res)


def _print(item: dict) -> None:
    from rich.table import Table

    from aiio.term.screen import out_console
    from aiio.units import format_latency_ns

    console = out_console()
    test = item["fio_test"]
    source = f"from {item['fio_result']}" if item["fio_result"] else "(no fio result)"
    stage = f", its {item['stage']} stage" if item["stage"] else ""
    head = f"{item['run']} ({item['phase']}{stage})"
    # a phase no fio test pairs with has no fio side: its own figures alone
    title = f"{head} vs fio {test} {source}" if test else f"{head}: no fio counterpart"
    # two columns are narrower than the title: widen the table rather than wrap it
    table = Table(title=title, min_width=None if test else len(title))
    cols = ("figure", "phase", f"fio {test}", "% of fio") if test else ("figure", "phase")
    for col in cols:
        table.add_column(col, justify="left" if col == "figure" else "right")
    for r in item["rows"]:
        cells = [r["figure"], _value(r["phase"], r["unit"], format_latency_ns)]
        if test:
            cells += [_value(r["fio"], r["unit"], format_latency_ns),
                      f"{r['percent']:.1f} %" if r["percent"] is not None else "-"]
        table.add_row(*cells)
    console.print(table)
    if item["note"]:  # the fio side is missing: its one line, and no suite to list
        console.print(f"{item['run']}: {item['note']}", highlight=False)
        return
    suite = " · ".join(_suite_test(name, fig) for name, fig in item["hero_suite"].items())
    console.print(f"fio {item['fio_result']}: {suite}", highlight=False)


def _suite_test(name: str, fig: dict) -> str:
    """One fio test of the suite: its MiB/s and IOPS ("-" where the result lacks one)."""
    rate, iops = fig.get("mib_s"), fig.get("iops")
    return (f"{name} {format_rate(rate) if rate is not None else '- MiB/s'} "
            f"({f'{iops:,.0f}' if iops is not None else '-'} IOPS)")


def _value(value, unit: str | None, fmt_ns) -> str:
    if value is None:
        return "-"
    if unit == "ns":
        return fmt_ns(value)
    if unit == "MiB/s":
        return format_rate(value)
    return f"{value:,}"
