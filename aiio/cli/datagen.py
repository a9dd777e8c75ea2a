"""`aiio datagen`: generate (or confirm) a workload's dataset on the target."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import click

from aiio.cli.common import resolve_workload, workload_options
from aiio.cli.run import DEFAULT_TARGET, _make_default_target
from aiio.cli.s3opts import access_for, part_size_option, part_size_sets, s3_options
from aiio.errors import AiioError, ConfigError
from aiio.phases import get_phase

if TYPE_CHECKING:
    from aiio.storage.target import Target


@click.command()
@workload_options
@click.option("--phase", "-p", default=None,
              help="vector: lay out the vector index of the [vector] settings for later runs "
              "(a mount's TARGET/aiio/indexes/); any other: the workload's dataset (the default)")
@click.option("--target", "-t", default=DEFAULT_TARGET, show_default=True)
@click.option("--force", is_flag=True, help="regenerate even when a matching dataset exists")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="generator processes per host (default: its CPUs, at most 8)")
@s3_options
@part_size_option
def datagen(phase: str | None, target: str, force: bool, workers: int | None,
            endpoint: str | None, profile: str | None, part_size: str | None,
            **kwargs) -> None:
    """Generate the workload's dataset: incompressible, unique per file, with a manifest (or,
    with --phase vector, the vector index)."""
    from aiio.run.comm import world
    from aiio.storage import dataset as ds
    from aiio.term.console import RichUI
    from aiio.term.screen import out_console
    from aiio.units import format_size

    kwargs["sets"] = (*kwargs.get("sets", ()), *part_size_sets(target, part_size))
    w = resolve_workload(kwargs)
    if phase is not None and get_phase(phase).name == "vector":
        return _vector_index(target, w, force)
    access = access_for(target, endpoint, profile)
    if access is not None:
        _upload(target, access, w, force)
        return
    ui = RichUI()
    with _claimed(target) as tgt:
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


def _vector_index(target: str, w, force: bool) -> None:
    """The vector index laid out on a mount for later runs (aiio.phases.vector_kept)."""
    from aiio.cache_methods import METHOD_NONE
    from aiio.engines.seam import OpLog, Writer
    from aiio.phases import vector as vp
    from aiio.phases import vector_index as vi
    from aiio.phases import vector_kept as vk
    from aiio.run import memcheck
    from aiio.term.console import RichUI
    from aiio.term.screen import out_console
    from aiio.units import format_size

    if target.startswith("s3://"):
        raise ConfigError("on a bucket each run writes its own index, removed at its end: "
                          "aiio datagen --phase vector lays one out on a mount only")
    shape = vp.shape_of(w)
    ui = RichUI()
    if w.vector.reader == "native":  # DiskANN's own index, built by diskannpy
        return _native_index(target, w, shape, ui, force)

    if force or not vk.present(target, shape):  # refused before the target is claimed
        memcheck.check_prepare(vp.layout_memory(w))

    def write(path: str) -> int:
        ui.note(f"writing the vector index: {shape.vectors:,} vectors, "
                f"{format_size(shape.file_size)}")
        writer = Writer(METHOD_NONE, vp.index_chunk(w, shape), OpLog(0))
        try:
            return writer.write_content(path, vi.chunks(shape, vi.medoid(vi.codes(shape)),
                                                        vp.index_chunk(w, shape)))
        finally:
            writer.close()

    with _claimed(target) as tgt:
        if force:
            _forget(tgt, vk.name(shape), "vector index", ui.note)
        folder, reused = vk.ensure(tgt, shape, write, ui.note)
    said = "already present and matching" if reused else "written"
    out_console().print(f"vector index {said}: {shape.vectors:,} vectors of "
                        f"{shape.dimensions} x {shape.element_size} B, R {shape.max_degree}, "
                        f"{shape.graph}, {format_size(shape.file_size)} in "
                        f"{folder / vi.INDEX_NAME}", highlight=False)


def _native_index(target: str, w, shape, ui, force: bool) -> None:
    """The DiskANN index `--reader native` searches, built once by diskannpy and kept."""
    from aiio.phases import vector_native as vn
    from aiio.term.screen import out_console

    vn.check_index(w)  # refused before the target is claimed
    with _claimed(target) as tgt:
        if force:
            _forget(tgt, vn.index_folder_name(shape), "DiskANN index", ui.note)
        folder, reused = vn.ensure_index(tgt, shape, w.vector.search_list, ui.note)
    said = "already present and matching" if reused else "built"
    out_console().print(f"DiskANN index {said}: {shape.vectors:,} vectors of "
                        f"{shape.dimensions} float32, R {shape.max_degree}, in {folder}",
                        highlight=False)


def _forget(tgt: Target, name: str, what: str, note) -> None:
    """--force: the kept index `name` removed, alone under its lock, to be laid out again."""
    from aiio.phases import vector_kept as vk
    from aiio.storage.target import remove_tree

    folder = tgt.root / vk.KIND / name
    if folder.exists():
        tgt.lock(vk.KIND, name, what).exclusive(note)
        tgt.hold()
        remove_tree(folder, tgt.root)


@contextlib.contextmanager
def _claimed(target: str) -> Iterator[Target]:
    """The target made (the default one), checked and claimed for the block; bad input
    refused before anything was written leaves it as it was, not even aiio's marker."""
    from aiio.storage.target import Target

    if target == DEFAULT_TARGET:
        _make_default_target(target)
    tgt = Target(target)
    tgt.check_usable()
    tgt.claim()
    try:
        yield tgt
    except AiioError as exc:
        if exc.exit_code == ConfigError.exit_code and not tgt.written:
            tgt.release()
            tgt.unclaim()
        raise
