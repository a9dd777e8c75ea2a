"""`aiio workloads`: what is shipped, with each one's key figures."""

from __future__ import annotations

import click


@click.command()
@click.option("--json", "as_json", is_flag=True)
def workloads(as_json: bool) -> None:
    """List the shipped workloads and their key figures."""
    from rich.console import Console
    from rich.table import Table

    from aiio.cli.common import emit_json
    from aiio.units import format_size
    from aiio.workload import load_workload, shipped_workloads

    rows, models, mixes = [], [], []
    for name in shipped_workloads():
        w = load_workload(name)
        if "dataset" not in w.given and "model" not in w.given:
            p = w.prep  # a prep workload of its own files (randrw), no dataset or model
            mixes.append({"name": name, "description": w.workload.description,
                          "mode": p.mode, "file_size": p.file_size, "block_size": p.block_size,
                          "read_share": p.read_share, "duration": p.duration,
                          "threads": p.threads})
            continue
        if "dataset" not in w.given:
            models.append({"name": name, "description": w.workload.description,
                           "parameters": w.model.parameters,
                           "bytes_per_parameter": w.model.bytes_per_parameter,
                           "checkpoint_bytes": w.model.parameters * w.model.bytes_per_parameter,
                           "ranks": w.model.ranks, "sections": list(w.given)})
            continue
        d, t = w.dataset, w.train
        rows.append({
            "name": name, "description": w.workload.description, "format": d.format,
            "sample_size": d.sample_size, "sample_size_stdev": d.sample_size_stdev,
            "samples_per_file": d.samples_per_file, "files": d.num_files,
            "dataset_bytes": w.dataset_bytes, "batch_size": t.batch_size,
            "read_threads": t.read_threads, "compute_time": t.compute_time,
            "au_goal": t.au_goal, "demand_mib_s": w.demand_mib_s(),
            "accelerator": t.accelerator, "model_parameters": w.model.parameters})
    if as_json:
        emit_json({"datasets": rows, "models": models, "mixes": mixes})
        return
    table = Table(title="training workloads (demand: MiB/s per accelerator at its default type)")
    for col in ("name", "format", "sample", "samples/file", "files", "dataset", "batch",
                "threads", "compute s/batch", "AU goal", "demand MiB/s"):
        table.add_column(col, justify="left" if col in ("name", "format") else "right")
    for r in rows:
        compute = ", ".join(f"{k} {v:g}" for k, v in r["compute_time"].items())
        table.add_row(r["name"], r["format"], format_size(r["sample_size"]),
                      f"{r['samples_per_file']:,}", f"{r['files']:,}",
                      format_size(r["dataset_bytes"]), f"{r['batch_size']:,}",
                      str(r["read_threads"]), compute, f"{r['au_goal']:.0%}",
                      f"{r['demand_mib_s']:,.0f} ({r['accelerator']})")
    console = Console()
    console.print(table)
    if models:
        mt = Table(title="model workloads (checkpoint, load, sizing)")
        for col in ("name", "parameters", "bytes/param", "checkpoint", "MLPerf ranks",
                    "description"):
            mt.add_column(col, justify="left" if col in ("name", "description") else "right")
        for m in models:
            mt.add_row(m["name"], f"{m['parameters'] / 1e9:,.1f} B",
                       f"{m['bytes_per_parameter']:g}", format_size(m["checkpoint_bytes"]),
                       str(m["ranks"] or "-"), m["description"])
        console.print(mt)
    if mixes:
        xt = Table(title="random read/write mixes (aiio run --phase prep)")
        for col in ("name", "file per client", "block", "reads", "threads", "duration",
                    "description"):
            xt.add_column(col, justify="left" if col in ("name", "description") else "right")
        for m in mixes:
            xt.add_row(m["name"], format_size(m["file_size"]), format_size(m["block_size"]),
                       f"{m['read_share']:.0%}", str(m["threads"]), f"{m['duration']:g} s",
                       m["description"])
        console.print(xt)
