"""`aiio fio`: the FIO hero suite on a target, or (--emit) the fio job closest to a phase."""

from __future__ import annotations

import click

from aiio.cli.common import emit_json, resolve_workload, workload_options
from aiio.cli.run import DEFAULT_TARGET, _make_default_target
from aiio.cli.s3opts import access_for, s3_options
from aiio.errors import ConfigError

TESTS_HELP = "comma-separated subset of: seq_read, seq_write, rand_read, rand_write, rand_mix"


@click.command()
@click.option("--target", "-t", default=DEFAULT_TARGET, show_default=True,
              help="directory on the filesystem under test (files go to TARGET/aiio/fio), or "
                   "s3://BUCKET/PREFIX (objects go below PREFIX/aiio/fio/hero/)")
@workload_options
@click.option("--runtime", default="10s", show_default=True, help="measured time per test")
@click.option("--ramp-time", default="1s", show_default=True,
              help="warm-up per test, excluded from the figures")
@click.option("--size", default="1GiB", show_default=True,
              help="file size per client (s3://: bytes of objects per client)")
@click.option("--object-size", default=None, metavar="SIZE",
              help="s3:// targets: bytes per object, one PUT or GET each [default: 8MiB]")
@click.option("--fio", "program", default="fio", envvar="AIIO_FIO", show_default=True,
              help="the fio executable (env AIIO_FIO); s3:// targets need one built with the "
                   "http engine")
@click.option("--iodepth", default=1, show_default=True, type=int,
              help="queue depth per client (psync at 1, libaio deeper)")
@click.option("--ioengine", default="auto", show_default=True,
              help="fio ioengine; auto: psync at iodepth 1, libaio deeper")
@click.option("--tests", default="all", show_default=True, help=TESTS_HELP)
@click.option("--keep", is_flag=True, help="keep the fio files for the next run")
@click.option("--results", default="reports", show_default=True, help="folder for results")
@click.option("--emit", is_flag=True,
              help="print the fio job file closest to --phase of --workload instead")
@click.option("--phase", "-p", default="train", show_default=True, help="phase for --emit")
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON on stdout")
@click.option("--quiet", "-q", is_flag=True, help="no progress")
@s3_options
def fio(target: str, runtime: str, ramp_time: str, size: str, object_size: str | None,
        program: str, iodepth: int, ioengine: str, tests: str, keep: bool, results: str,
        emit: bool, phase: str, as_json: bool, quiet: bool, endpoint: str | None,
        profile: str | None, **kwargs) -> None:
    """Run the FIO hero suite (one fio job per client) and store it as an aiio result."""
    w = resolve_workload(kwargs)
    access = access_for(target, endpoint, profile)
    if access is not None:
        _s3(target, access, w.run.clients, size, object_size, program, tests, keep, results,
            as_json, quiet)
        return
    if object_size is not None:
        raise ConfigError(f"--object-size is for s3:// targets; {target} is a directory")
    if target == DEFAULT_TARGET:
        _make_default_target(target)
    if emit:
        _emit(phase, w, target)
        return
    from aiio.fio.suite import HERO_TESTS, SuiteRequest, run_suite
    from aiio.term.console import RichUI
    from aiio.units import parse_duration, parse_size

    chosen = tuple(HERO_TESTS) if tests == "all" else tuple(
        t.strip() for t in tests.split(",") if t.strip())
    req = SuiteRequest(target, clients=w.run.clients, size=parse_size(size),
                       runtime_s=parse_duration(runtime), ramp_s=parse_duration(ramp_time),
                       iodepth=iodepth, ioengine=ioengine, tests=chosen, keep=keep,
                       results_dir=results, program=program)
    res, folder = run_suite(req, RichUI(quiet=quiet or as_json))
    _show(res, folder, as_json)


def _show(res: dict, folder, as_json: bool) -> None:
    from aiio.term.console import fio_table, print_result

    if as_json:
        emit_json(res)
    else:
        print_result(res, folder, [fio_table(res)])


# Options of the time-based mount suite that fio's http engine has no use for.
MOUNT_ONLY = ("runtime", "ramp_time", "iodepth", "ioengine", "emit", "phase")


def _s3(target: str, access, clients: int, size: str, object_size: str | None, program: str,
        tests: str, keep: bool, results: str, as_json: bool, quiet: bool) -> None:
    """fio's http engine against the bucket: PUT, then GET, each object once."""
    from click.core import ParameterSource

    from aiio.fio.bucket import S3_TESTS, S3SuiteRequest, run_s3_suite
    from aiio.term.console import RichUI
    from aiio.units import MiB, parse_size

    ctx = click.get_current_context()
    given = [n for n in MOUNT_ONLY if ctx.get_parameter_source(n) != ParameterSource.DEFAULT]
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise ConfigError(f"{flag} is for directories; against s3:// fio PUTs and GETs every "
                          "object once (size it with --size and --object-size)")
    chosen = tuple(S3_TESTS) if tests == "all" else tuple(
        t.strip() for t in tests.split(",") if t.strip())
    req = S3SuiteRequest(target, access, clients=clients, size=parse_size(size),
                         object_size=parse_size(object_size or 8 * MiB), tests=chosen,
                         keep=keep, results_dir=results, program=program)
    res, folder = run_s3_suite(req, RichUI(quiet=quiet or as_json))
    _show(res, folder, as_json)


def _emit(phase: str, w, target: str) -> None:
    """Print the job file; its files go to TARGET/aiio/fio/emit-<phase>-<workload>."""
    from aiio.fio.emit import emit, emitter_for
    from aiio.storage.target import Target

    emitter_for(phase, w)  # a phase without a fio job fails before anything is created
    folder = Target(target).subdir("fio", f"emit-{phase}-{w.name}")
    click.echo(emit(phase, w, folder), nl=False)
