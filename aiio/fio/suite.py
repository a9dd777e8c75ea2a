"""The FIO hero suite: what the storage does at its best, measured by fio itself.

Sequential read and write at 1 MiB, random read and write at 4 KiB, and a 70/30 random mix, each
time-based, O_DIRECT (buffered with invalidation and a final fsync where the target refuses it),
one fio job per client on its own file in TARGET/aiio/fio/hero/. The result is stored like any
aiio result (kind "fio"), with every job's figures, the aggregate, latency and fio's version.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiio import honesty, interrupts
from aiio.cache_methods import METHOD_DIRECT, METHOD_FADVISE
from aiio.errors import AiioError, ConfigError, RunFailed, RunInterrupted
from aiio.fio import job
from aiio.fio.job import (
    aggregate,
    clients_of,
    disk_util,
    escape,
    find_fio,
    fio_version,
    render,
    run,
    size_opt,
)
from aiio.results import result
from aiio.run.sysinfo import collect_environment
from aiio.run.wallclock import now_iso, now_unix
from aiio.storage.target import Target, TargetInfo, probe, remove_tree
from aiio.ui import UI, QuietUI
from aiio.units import GiB, KiB, MiB, format_size

FOLDER = ("fio", "hero")
FILE_FORMAT = "hero.$jobnum"  # the same file per client in every test


@dataclass(frozen=True)
class HeroTest:
    name: str
    rw: str
    block_size: int
    description: str
    extra: dict[str, Any] = field(default_factory=dict)


HERO_TESTS = {t.name: t for t in (
    HeroTest("seq_read", "read", MiB, "sequential read, 1 MiB"),
    HeroTest("seq_write", "write", MiB, "sequential write, 1 MiB"),
    HeroTest("rand_read", "randread", 4 * KiB, "random read, 4 KiB"),
    HeroTest("rand_write", "randwrite", 4 * KiB, "random write, 4 KiB"),
    HeroTest("rand_mix", "randrw", 4 * KiB, "random 70 % read / 30 % write, 4 KiB",
             {"rwmixread": 70}),
)}


@dataclass
class SuiteRequest:
    target: str
    clients: int = 2
    size: int = 1 * GiB           # per client file
    runtime_s: float = 10.0       # per test, measured
    ramp_s: float = 1.0           # per test, excluded warm-up
    iodepth: int = 1
    ioengine: str = "auto"        # psync at queue depth 1, libaio deeper
    tests: tuple[str, ...] = tuple(HERO_TESTS)
    keep: bool = False
    results_dir: str = "reports"
    program: str = "fio"          # the fio executable (--fio)

    def check(self) -> None:
        """Impossible values are one-line errors naming the fix."""
        unknown = [t for t in self.tests if t not in HERO_TESTS]
        if unknown or not self.tests:
            raise ConfigError(f"unknown fio test(s) {', '.join(unknown) or '(none)'}; "
                              f"choose from: {', '.join(HERO_TESTS)}")
        job.check_jobs(self.clients)
        if self.size < MiB or self.size % (4 * KiB):
            raise ConfigError(f"--size {self.size} B: each client's file must be at least "
                              "1 MiB and a multiple of 4 KiB")
        if self.runtime_s < 0.1 or self.ramp_s < 0:
            raise ConfigError("--runtime must be at least 100ms and --ramp-time at least 0s")
        if not 1 <= self.iodepth <= 4096:
            raise ConfigError(f"--iodepth {self.iodepth} must be within 1..4096")

    @property
    def engine(self) -> str:
        if self.ioengine != "auto":
            return self.ioengine
        return "psync" if self.iodepth == 1 else "libaio"


def _ms(seconds: float) -> str:
    return f"{int(round(seconds * 1000))}ms"


def global_options(req: SuiteRequest, folder: Path, direct: bool) -> dict[str, Any]:
    """Options every hero test shares."""
    return {"directory": escape(str(folder)), "filename_format": FILE_FORMAT,
            "size": size_opt(req.size), "ioengine": req.engine, "iodepth": req.iodepth,
            "direct": direct, "invalidate": 1, "time_based": 1,
            "runtime": _ms(req.runtime_s), "ramp_time": _ms(req.ramp_s) if req.ramp_s else None,
            "norandommap": 1, "randrepeat": 0}


def hero_job(req: SuiteRequest, test: HeroTest, folder: Path, direct: bool) -> str:
    """The job file for one hero test: numjobs = clients, never group_reporting."""
    job = {"rw": test.rw, "bs": size_opt(test.block_size), **test.extra,
           # writes count the final flush, so buffered writes cannot hide in the page cache
           "end_fsync": 1 if test.rw != "read" and test.rw != "randread" else None,
           "numjobs": req.clients}
    return render(global_options(req, folder, direct), [(test.name, job)],
                  [f"aiio hero test {test.name}: {test.description}, {req.clients} jobs"])


def layout_job(req: SuiteRequest, folder: Path, direct: bool) -> str:
    """Lay the files out fully written (create_only), so reads never hit unwritten extents."""
    opts = global_options(req, folder, direct)
    for k in ("time_based", "runtime", "ramp_time"):
        opts.pop(k)
    return render(opts, [("layout", {"rw": "read", "bs": "1m", "create_only": 1,
                                     "numjobs": req.clients})],
                  ["aiio: lay out the hero files before measuring"])


def run_suite(req: SuiteRequest, ui: UI | None = None) -> tuple[dict[str, Any], Path]:
    """Run the hero tests, save the result; returns (result, folder). Raises after saving."""
    ui = ui or QuietUI()
    req.check()
    fio_path = find_fio(req.program)
    target = Target(req.target)
    target.check_usable()
    info = probe(target)
    out = _skeleton(req, info, fio_version(fio_path))
    folder = result.unique_folder(Path(req.results_dir), out["id"])
    data = target.root.joinpath(*FOLDER)
    try:
        out["warnings"] += _prepare(req, target, info, data, ui,
                                    out["environment"]["ram_bytes"])
        for name in req.tests:
            result.add_fio_test(out, name, _run_test(req, HERO_TESTS[name], data,
                                                      info.o_direct, ui))
        out["status"] = "ok"
    except KeyboardInterrupt:
        with interrupts.held(_ENDING):
            _fail(out, "interrupted", "interrupted by the user", req, target, data, folder)
        raise RunInterrupted(f"interrupted; partial result saved in {folder}") from None
    except (AiioError, OSError) as exc:
        msg = str(exc) if isinstance(exc, AiioError) else f"{exc.strerror}: {exc.filename}"
        with interrupts.held(_ENDING):
            _fail(out, "failed", msg, req, target, data, folder)
        cls = type(exc) if isinstance(exc, AiioError) else RunFailed
        raise cls(f"{msg}; partial result saved in {folder}") from None
    with interrupts.held(_ENDING, then=f"interrupted by the user as the suite ended; its "
                         f"result saved in {folder}"):
        _finish(out, req, target, data, folder)
    return out, folder


# what the suite does as it ends, a Ctrl-C meanwhile held (aiio.interrupts.held)
_ENDING = "saving the result and removing the hero files"


def _skeleton(req: SuiteRequest, info: TargetInfo, version: str) -> dict[str, Any]:
    method = METHOD_DIRECT if info.o_direct else METHOD_FADVISE
    return result.new(
        "fio", result.new_id("fio", f"c{req.clients}"), now_iso(), phase=None,
        environment=collect_environment(), target=info.to_dict(), method=method,
        fio_version=version,
        options={"clients": req.clients, "size": req.size, "runtime_s": req.runtime_s,
                 "ramp_s": req.ramp_s, "iodepth": req.iodepth, "ioengine": req.engine,
                 "direct": info.o_direct, "tests": list(req.tests), "keep": req.keep},
        clients_requested=req.clients, tests={}, aggregate={}, warnings=[])


def _prepare(req: SuiteRequest, target: Target, info: TargetInfo, data: Path, ui: UI,
             ram: int) -> list[dict[str, str]]:
    """Claim the folder, check space, lay out the files; returns warnings."""
    method = METHOD_DIRECT if info.o_direct else METHOD_FADVISE
    warnings = honesty.target_warnings(info, method, req.clients * req.size, ram)
    if not info.o_direct:
        ui.note(f"warning: {info.fstype} refuses O_DIRECT; fio runs buffered (direct=0) with "
                "its cache invalidated before each test and writes flushed (end_fsync)")
    target.subdir(*FOLDER)
    warnings += _check_space(target, req, data)
    jobfile = data / "layout.fio"
    write_job(jobfile, layout_job(req, data, info.o_direct))
    ui.note(f"laying out {req.clients} x {format_size(req.size)} in {data}")
    run(jobfile, program=req.program)
    return warnings


def write_job(path: Path, text: str) -> None:
    """A job file, the paths in it written as the bytes the system names them by (a name
    that is no UTF-8 is held as lone surrogates, which plain UTF-8 refuses to write)."""
    path.write_text(text, encoding="utf-8", errors="surrogateescape")


def _check_space(target: Target, req: SuiteRequest, data: Path) -> list[dict[str, str]]:
    """Refuse when the files do not fit; a filesystem that reports no capacity (ramfs)
    cannot be checked, which is said."""
    st = os.statvfs(target.path)
    if st.f_blocks == 0:
        return [{"code": "space_unknown", "message": f"{target.path} reports no capacity "
                 "(ramfs?): free space could not be checked before writing"}]
    present = sum(_size(data / f"hero.{i}") for i in range(req.clients))
    target.require_space(max(0, req.clients * req.size - present),
                         f"fio hero files ({req.clients} x {format_size(req.size)})")
    return []


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _run_test(req: SuiteRequest, test: HeroTest, data: Path, direct: bool,
              ui: UI) -> dict[str, Any]:
    text = hero_job(req, test, data, direct)
    jobfile = data / f"{test.name}.fio"
    write_job(jobfile, text)
    total = req.runtime_s + req.ramp_s
    ui.note(f"fio {test.name}: {test.description}, {req.clients} jobs, {req.engine} "
            f"iodepth {req.iodepth}, {total:g} s")
    label, ticks = f"fio {test.name} (seconds)", max(1, math.ceil(total))
    report = run(jobfile, on_wait=lambda s: ui.progress(label, min(int(s), ticks - 1), ticks),
                 program=req.program)
    ui.progress(label, ticks, ticks)
    clients = clients_of(report)
    if len(clients) != req.clients:
        raise RunFailed(f"fio reported {len(clients)} jobs for {test.name}, "
                        f"expected {req.clients}")
    return result.fio_test(test.description, test.rw, test.block_size, text, clients,
                           aggregate(clients), disk_util(report))


def _fail(out: dict[str, Any], status: str, msg: str, req: SuiteRequest, target: Target,
          data: Path, folder: Path) -> None:
    out["status"], out["error"] = status, msg
    _finish(out, req, target, data, folder)


def _finish(out: dict[str, Any], req: SuiteRequest, target: Target, data: Path,
            folder: Path) -> None:
    """Remove the hero files (unless --keep on success) and save the result."""
    try:
        if data.exists() and not (req.keep and out["status"] == "ok"):
            remove_tree(data, target.root)
    finally:
        out["finished"] = now_iso()
        out["saved_at"] = now_unix()
        result.save(out, folder)
