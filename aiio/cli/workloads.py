"""`aiio workloads`: what is shipped, with each one's key figures."""

from __future__ import annotations

import click


@click.command()
@click.option("--json", "as_json", is_flag=True)
@click.option("--wide", is_flag=True, help="every column (the default fits 80 columns)")
def workloads(as_json: bool, wide: bool) -> None:
    """List the workloads (shipped and your own), their key figures and where each came from."""

    from aiio.cli.common import emit_json
    from aiio.errors import ConfigError
    from aiio.term.fit import fit
    from aiio.term.screen import out_console
    from aiio.workload import find_specs, workload_folders

    (rows, models, mixes), broken = _collect()
    specs = {name: {"source": source, "path": str(path)}
             for name, (source, path) in find_specs().items()}
    if as_json:
        emit_json({"datasets": rows, "models": models, "mixes": mixes, "specs": specs})
    else:
        console = out_console()
        shown = fit if not wide else _as_asked
        console.print(shown(_datasets(rows, wide)))
        if models:
            console.print(shown(_models(models, wide)))
        if mixes:
            console.print(shown(_mixes(mixes, wide)))
        console.print(f"acceptance specs (aiio accept NAME): {', '.join(specs) or 'none'}",
                      highlight=False)
        for source, folder in workload_folders():
            state = "" if folder.is_dir() else " (absent)"
            console.print(f"{source}: {folder}{state}", highlight=False, soft_wrap=True)
    if broken:  # listed what could be read; a file that cannot is still an error
        raise ConfigError("; ".join(broken))


def _collect() -> tuple[tuple[list[dict], list[dict], list[dict]], list[str]]:
    """(training, model, mix) rows of every workload found, and why any file could not be
    read: one broken file in a shared folder must not hide the others."""
    from aiio.errors import ConfigError
    from aiio.workload import find_workloads, load_workload

    rows, models, mixes, broken = [], [], [], []
    for name, (source, path) in find_workloads().items():
        try:
            w = load_workload(str(path))
        except ConfigError as exc:
            broken.append(str(exc))
            continue
        where = {"source": source, "path": str(path)}
        if "dataset" not in w.given and "model" not in w.given:
            p = w.prep  # a prep workload of its own files (randrw), no dataset or model
            mixes.append({"name": name, "description": w.workload.description,
                          "mode": p.mode, "file_size": p.file_size, "block_size": p.block_size,
                          "read_share": p.read_share, "duration": p.duration,
                          "threads": p.threads, **where})
        elif "dataset" not in w.given:
            models.append({"name": name, "description": w.workload.description,
                           "parameters": w.model.parameters,
                           "bytes_per_parameter": w.model.bytes_per_parameter,
                           **_checkpoint(w), "ranks": w.model.ranks,
                           "sections": list(w.given), **where})
        else:
            rows.append(_training_row(name, w, where))
    return (rows, models, mixes), broken


def _checkpoint(w) -> dict:
    """A model's checkpoint: by DLIO's layout when it gives its shape (files counted), else
    parameters x bytes per parameter."""
    from aiio.phases.checkpoint_layout import shape_of, totals

    shape = shape_of(w)
    if shape is None:
        return {"checkpoint_bytes": w.model.parameters * w.model.bytes_per_parameter,
                "checkpoint_files": None}
    nbytes, files = totals(shape)
    return {"checkpoint_bytes": nbytes, "checkpoint_files": files}


def _training_row(name: str, w, where: dict) -> dict:
    d, t = w.dataset, w.train
    return {
        "name": name, "description": w.workload.description, "format": d.format,
        "sample_size": d.sample_size, "sample_size_stdev": d.sample_size_stdev,
        "samples_per_file": d.samples_per_file, "files": d.num_files,
        "dataset_bytes": w.dataset_bytes, "batch_size": t.batch_size,
        "read_threads": t.read_threads, "compute_time": t.compute_time,
        "au_goal": t.au_goal, "demand_mib_s": w.demand_mib_s(),
        "accelerator": t.accelerator, "model_parameters": w.model.parameters,
        **where}


# Where the columns a narrow terminal leaves out are shown (aiio.term.fit)
LEFT_OUT_WHERE = "aiio workloads --json shows every figure"


def _as_asked(table):
    """--wide: every column, however wide the terminal."""
    return table


def _columns(table, names: tuple[str, ...], left: tuple[str, ...]) -> None:
    for col in names:
        table.add_column(col, justify="left" if col in left else "right")


def _datasets(rows: list[dict], wide: bool):
    """Training workloads; the narrow view keeps what sizes the storage."""
    from rich import box
    from rich.table import Table

    from aiio.term.fit import may_leave_out
    from aiio.units import format_size

    table = Table(title="training workloads (demand: MiB/s per accelerator at its default type)",
                  box=box.SIMPLE_HEAD)
    extra = ("samples/file", "batch", "threads", "compute s/batch", "AU goal") if wide else ()
    _columns(table, ("name", "format", "sample", "files", "dataset", *extra, "demand MiB/s",
                     "on", "from"), ("name", "format", "on", "from"))
    for r in rows:
        compute = ", ".join(f"{k} {v:g}" for k, v in r["compute_time"].items())
        more = (f"{r['samples_per_file']:,}", f"{r['batch_size']:,}", str(r["read_threads"]),
                compute, f"{r['au_goal']:.0%}") if wide else ()
        table.add_row(r["name"], r["format"], format_size(r["sample_size"]), f"{r['files']:,}",
                      format_size(r["dataset_bytes"]), *more,
                      f"{r['demand_mib_s']:,.0f}", r["accelerator"], r["source"])
    # 85 columns at least: at 80 a row wrapped its cells over two lines
    return may_leave_out(table, ("from", "on", "format", "files"), LEFT_OUT_WHERE)


def _models(models: list[dict], wide: bool):
    from rich import box
    from rich.table import Table

    from aiio.term.fit import may_leave_out
    from aiio.units import format_size

    table = Table(title="model workloads (checkpoint, load, sizing)", box=box.SIMPLE_HEAD)
    extra = ("bytes/param", "description") if wide else ()
    _columns(table, ("name", "parameters", "checkpoint", "files", "MLPerf ranks", *extra,
                     "from"),
             ("name", "description", "from"))
    for m in models:
        more = (f"{m['bytes_per_parameter']:g}", m["description"]) if wide else ()
        table.add_row(m["name"], f"{m['parameters'] / 1e9:,.1f} B",
                      format_size(m["checkpoint_bytes"]),
                      f"{m['checkpoint_files']:,}" if m["checkpoint_files"] else "-",
                      str(m["ranks"] or "-"), *more,
                      m["source"])
    return may_leave_out(table, ("from", "files"), LEFT_OUT_WHERE)


def _mixes(mixes: list[dict], wide: bool):
    from rich import box
    from rich.table import Table

    from aiio.term.fit import may_leave_out
    from aiio.units import format_size

    table = Table(title="random read/write mixes (aiio run --phase prep)", box=box.SIMPLE_HEAD)
    extra = ("description",) if wide else ()
    _columns(table, ("name", "file per client", "block", "reads", "threads", "duration",
                     *extra, "from"), ("name", "description", "from"))
    for m in mixes:
        more = (m["description"],) if wide else ()
        table.add_row(m["name"], format_size(m["file_size"]), format_size(m["block_size"]),
                      f"{m['read_share']:.0%}", str(m["threads"]), f"{m['duration']:g} s",
                      *more, m["source"])
    return may_leave_out(table, ("from", "duration", "threads"), LEFT_OUT_WHERE)
