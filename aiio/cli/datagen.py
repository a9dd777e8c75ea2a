"""`aiio datagen`: generate (or confirm) a workload's dataset on the target."""

from __future__ import annotations

import click

from aiio.cli.common import resolve_workload, workload_options
from aiio.cli.run import DEFAULT_TARGET, _make_default_target
from aiio.cli.s3opts import access_for, part_size_option, part_size_sets, s3_options


@click.command()
@workload_options
@click.option("--target", "-t", default=DEFAULT_TARGET, show_default=True)
@click.option("--force", is_flag=True, help="regenerate even when a matching dataset exists")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="generator processes per host (default: its CPUs, at most 8)")
@s3_options
@part_size_option
def datagen(target: str, force: bool, workers: int | None, endpoint: str | None,
            profile: str | None, part_size: str | None, **kwargs) -> None:
    """Generate the workload's dataset: incompressible, unique per file, with a manifest."""
    from aiio import dataset as ds
    from aiio.comm import world
    from aiio.target import Target
    from aiio.term.console import RichUI
    from aiio.term.screen import out_console
    from aiio.units import format_size

    kwargs["sets"] = (*kwargs.get("sets", ()), *part_size_sets(target, part_size))
    w = resolve_workload(kwargs)
    access = access_for(target, endpoint, profile)
    if access is not None:
        _upload(target, access, w, force)
        return
    if target == DEFAULT_TARGET:
        _make_default_target(target)
    tgt = Target(target)
    tgt.check_usable()
    tgt.claim()
    ui = RichUI()
    data, generated = ds.ensure(
        tgt, w, progress=lambda n, b: ui.progress("generating", n, w.dataset.num_files),
        note=ui.note, ranks=world(), force=force, workers=workers)
    if not generated:
        out_console().print(f"dataset {w.name} already present and matching: "
                            f"{data.num_files:,} files, {format_size(data.total_bytes)}"
                            f" in {data.folder}", highlight=False)
        return
    out_console().print(f"dataset {w.name}: {data.num_files:,} files, {data.num_samples:,} "
                        f"samples, {format_size(data.total_bytes)} in {data.folder} "
                        f"({data.manifest['generated_s']:.1f} s)", highlight=False)


def _upload(url: str, access, w, force: bool) -> None:
    """The dataset as objects: PUT (multipart above the part size), with upload figures."""
    from aiio.s3 import dataset as s3ds
    from aiio.s3.objectio import ObjectIO
    from aiio.s3.target import S3Target
    from aiio.term.console import RichUI
    from aiio.term.screen import out_console
    from aiio.units import format_rate, format_size

    tgt = S3Target(url, access)
    tgt.check_usable()
    io = ObjectIO(access, tgt.loc.bucket, s3ds.UPLOAD_STREAMS)
    existing, why = s3ds.check(tgt, io, w)
    if existing is not None:
        existing.discard_local()
        if not force:
            out_console().print(f"dataset {w.name} already present and matching: "
                                f"{existing.num_files:,} objects, "
                                f"{format_size(existing.total_bytes)} below "
                                f"s3://{tgt.loc.bucket}/{existing.base}/", highlight=False)
            return
    ui = RichUI()
    ui.note(f"uploading dataset {w.name}: {why or 'forced'}")
    data, figures = s3ds.generate(
        tgt, io, w, progress=lambda n, b: ui.progress("uploading", n, w.dataset.num_files))
    data.discard_local()
    put = figures["latency"].get("put", {})
    out_console().print(
        f"dataset {w.name}: {data.num_files:,} objects, {format_size(data.total_bytes)} below "
        f"s3://{tgt.loc.bucket}/{data.base}/ (multipart in parts of "
        f"{format_size(w.s3.part_size)}) in {figures['seconds']:.1f} s "
        f"({format_rate(figures['mib_s'])} with generation; PUT p50 "
        f"{put.get('p50_ns', 0) / 1e6:.1f} ms, p99 {put.get('p99_ns', 0) / 1e6:.1f} ms)",
        highlight=False)
