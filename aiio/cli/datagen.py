"""`aiio datagen`: generate (or confirm) a workload's dataset on the target."""

from __future__ import annotations

import click

from aiio.cli.common import resolve_workload, workload_options
from aiio.cli.run import DEFAULT_TARGET, _make_default_target


@click.command()
@workload_options
@click.option("--target", "-t", default=DEFAULT_TARGET, show_default=True)
@click.option("--force", is_flag=True, help="regenerate even when a matching dataset exists")
@click.option("--workers", type=int, default=None, help="generator processes (default: CPUs)")
def datagen(target: str, force: bool, workers: int | None, **kwargs) -> None:
    """Generate the workload's dataset: incompressible, unique per file, with a manifest."""
    from aiio import dataset as ds
    from aiio.console import RichUI
    from aiio.target import Target
    from aiio.term.screen import out_console
    from aiio.units import format_size

    w = resolve_workload(kwargs)
    if target == DEFAULT_TARGET:
        _make_default_target(target)
    tgt = Target(target)
    tgt.check_usable()
    tgt.claim()
    ui = RichUI()
    existing, why = ds.check(tgt, w)
    if existing is not None and not force:
        out_console().print(f"dataset {w.name} already present and matching: "
                            f"{existing.num_files:,} files, {format_size(existing.total_bytes)}"
                            f" in {existing.folder}", highlight=False)
        return
    if existing is None:
        ui.note(f"generating dataset {w.name}: {why}")
    data = ds.generate(tgt, w, workers=workers,
                       progress=lambda n, b: ui.progress("generating", n, w.dataset.num_files))
    out_console().print(f"dataset {w.name}: {data.num_files:,} files, {data.num_samples:,} "
                        f"samples, {format_size(data.total_bytes)} in {data.folder} "
                        f"({data.manifest['generated_s']:.1f} s)", highlight=False)
