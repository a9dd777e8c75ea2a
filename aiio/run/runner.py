"""Run one phase at one client count: prepare, start the clients, summarize, save.

On any failure the partial result is saved with its status, the phase removes its own partial
files, and the error is raised again for the CLI to turn into a message and an exit code. A
refusal of bad input (exit code 2) before the run wrote anything on the target or started a
client leaves no result: nothing ran (docs/ARCHITECTURE.md, "A run's stages").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import psutil

from aiio import engines, honesty, interrupts
from aiio.cache_methods import METHOD_NULL, choose_method
from aiio.errors import AiioError, RunFailed, RunInterrupted, TargetChanged, Terminated
from aiio.options import RunOptions
from aiio.phases import get_phase, result_layout
from aiio.phases.base import Phase, RunContext
from aiio.results import figures, result
from aiio.run import hosts, memcheck, procsetup
from aiio.run.clients import RunAborted
from aiio.run.comm import world
from aiio.run.sysinfo import Monitor, collect_environment
from aiio.run.wallclock import now_iso, now_unix
from aiio.s3.location import is_s3
from aiio.storage.target import Target, TargetInfo, check_shared, probe
from aiio.ui import UI, QuietUI
from aiio.workload import Workload


class Hero(Protocol):
    """What a run is set against, handed down by the layer that knows fio's results."""

    def live(self, target_path: str, phase: str, w: Workload) -> dict[str, Any] | None:
        """The fio figure the live view shows beside the run's rate (the test and concurrency
        of the run's pairing); None when there is none."""

    def entry(self, res: dict[str, Any]) -> dict[str, Any]:
        """The `hero` field of the finished result: what was paired with what."""


@dataclass
class RunRequest:
    phase: str
    workload: Workload
    target: str
    results_dir: str = "reports"
    method: str = "auto"
    options: RunOptions = RunOptions()
    # Called with (result, folder) once result.json is saved, also for a partial result.
    on_saved: Callable[[dict[str, Any], Path], None] | None = None
    # The fio results the run is set against (fio.hero.Pairing). None: no hero in the live view
    # and no `hero` field in the result.
    hero: Hero | None = None
    # The directory target when the caller holds it across several runs (a sweep's points,
    # `Target.kept`): the run uses it, and its locks stay taken after the run's end.
    held: Target | None = None
    # The storage engine (aiio.engines: a registered name or external:MODULE). None: the
    # target's own (psync for a directory, s3 for a bucket, null for the null method).
    engine: str | None = None


@dataclass
class _Run:
    """One run on its way: what its stages and its failure handling share."""

    req: RunRequest
    ui: UI
    phase: Phase
    phase_name: str  # what the clients run
    split: list[int]  # each host's clients
    each: memcheck.Need  # what one client needs, alone in a process or sharing one
    rc: RunContext
    out: dict[str, Any]
    folder: Path
    here: dict[str, Any]  # this host's entry
    shown: dict[str, Any] | None  # the fio figure the live view shows beside the rate
    args: Any = None
    started: bool = False  # the clients: from here a failure has figures, or their absence


def run(req: RunRequest, ui: UI | None = None) -> tuple[dict[str, Any], Path]:
    """Run and save; returns (result, folder). Raises the phase's error after saving."""
    interrupts.pending()  # a Ctrl-C held as the last run ended stops a table or sweep here
    r = _open(req, ui or QuietUI())
    try:
        _measure(r)
    except (RunAborted, KeyboardInterrupt, AiioError, OSError) as exc:
        with interrupts.held(_ENDING):
            _ended_early(r, exc)  # raises, once saved and cleaned up
    # a Ctrl-C held here stops what was to come (a table's next run, the command's end)
    with interrupts.held(_ENDING, then=f"interrupted by the user as the run ended; its "
                         f"result, {r.out['status']}, saved in {r.folder}"):
        _finish(r.phase, r.rc, r.args, r.out, r.folder, req.on_saved)
    return r.out, r.folder


# what a run does as it ends, a Ctrl-C meanwhile held (aiio.interrupts.held)
_ENDING = "saving the result and removing this run's files"


def _ended_early(r: _Run, exc: BaseException) -> None:
    """Save and clean up a run that did not end ok, and raise why."""
    if isinstance(exc, RunAborted):
        _aborted(r, exc)
    elif isinstance(exc, KeyboardInterrupt):  # before the clients started (generating data)
        _interrupted(r)
    else:
        _failed(r, exc)


def _open(req: RunRequest, ui: UI) -> _Run:
    """Refuse what cannot run (one line, nothing written), open the target, pick the engine
    and save the result "running"."""
    w = req.workload
    phase = get_phase(req.phase).variant(w)
    phase_name = phase.name  # what the clients run, on every engine
    clients = w.run.clients
    phase.validate(w, req.options)  # impossible values: one line, nothing written
    split = hosts.split_clients(clients, world().size)  # under MPI, each host's share
    objects = memcheck.on_objects(req.target, req.method, req.engine)
    each = memcheck.need_for(w, phase_name, clients, objects)  # this phase's, no other's
    memcheck.check_need(each, split[0])
    memcheck.check_prepare(phase.prepare_memory(w, req.target))  # prepare runs on this host
    procsetup.allow_open_files(split[0])  # refused here, not once the files are written
    target, info, method = open_target(req.target, req.options, req.method, req.held)
    if isinstance(target, Target):
        target.note = ui.note  # the run lock's wait and warning (Target.hold)
    # asked here, before measuring: the fio results are read once, and what lands meanwhile
    # pairs with nothing
    shown = req.hero.live(str(target.path), phase.name, w) if req.hero else None
    try:
        eng = engines.make(engines.choose(req.target, method, req.engine), target, method)
    except AiioError:  # an engine of one's own refused as it is made: nothing was written
        target.unclaim()
        raise
    rc = RunContext(w, target, info, method, clients, req.options, note=ui.note,
                    progress=ui.progress, ranks=world(), engine=eng)
    out = _skeleton(req, info, method)
    out["engine"] = eng.name  # which engine's calls the figures timed
    out["split"] = split
    folder = result.unique_folder(Path(req.results_dir), out["id"])
    # Saved "running" before anything is prepared or measured: a SIGKILL (an OOM kill, a batch
    # system's limit, MPI's launcher) then leaves a result its next reader shows as interrupted.
    result.save(out, folder, result_layout(out))
    return _Run(req, ui, phase, phase_name, split, each, rc, out, folder,
                hosts.host_entry(world(), info), shown)


def _measure(r: _Run) -> None:
    """Prepare, run the clients on every host, and summarize into the result."""
    req, ui, phase, rc, out = r.req, r.ui, r.phase, r.rc, r.out
    target, w = rc.target, rc.workload
    if isinstance(target, Target):  # a directory (a bucket prefix has no inode to pin)
        target.pin()  # from here to the end the run holds the directory it started on
        check_shared(target, world())
        for line in target.remove_leftovers():  # before the space checks: it frees space
            ui.note(line)
    r.args = args = phase.prepare(rc)
    out["method"] = getattr(args, "method", rc.method)
    out["workload"] = rc.workload.to_dict()
    monitor = Monitor(rc.info.device)

    def on_tick(nbytes: list[int], units: list[int], elapsed: float) -> None:
        monitor.sample()
        ui.tick(nbytes, units, elapsed)

    title = f"{req.phase} {w.name}" + (" (null method: NO I/O)" if rc.method == METHOD_NULL
                                       else "")
    ui.start(title, phase.total_units(args, rc.clients), rc.clients,
             compute_s=getattr(args, "compute_s", None) if phase.accelerators else None,
             hero=r.shown)
    r.started = True
    try:
        per_client, others, start_ns = hosts.run_everywhere(
            r.phase_name, args, str(target.path), r.split, r.each, on_tick, engine=rc.engine)
    finally:
        ui.stop()
    out["timing"] = {"command_to_first_io_s": _since_process_start(start_ns)}
    out["clients"] = per_client
    out["monitor"] = r.here["monitor"] = monitor.finish()
    if isinstance(target, Target) and (moved := target.changed()):
        raise TargetChanged(moved)  # before clean-up, which goes where the run started
    r.here.update(status="ok", error=None)
    out["hosts"] = _host_figures(phase, rc, args, [r.here, *others], out)
    out["aggregate"] = phase.summarize(rc, args, per_client)
    result.record_layout(out, result_layout(out))  # the sections just summarized
    out["warnings"] += honesty.true_of(
        out["method"], _warnings(phase, rc, args, out) + phase.warnings(rc, args, out))
    _require_measured(out)
    if req.hero:
        out["hero"] = req.hero.entry(out)
    out["status"] = "ok"


def _aborted(r: _Run, exc: RunAborted) -> None:
    """The clients stopped (a failure, Ctrl-C, SIGTERM): keep what they measured, raise."""
    out, target = r.out, r.rc.target
    out["status"] = "interrupted" if exc.exit_code == 130 else "failed"
    out["error"] = _cause(target, str(exc)) + _stuck(exc.stuck)
    out["clients"] = [exc.results[i] for i in sorted(exc.results)]
    r.here.update(status=out["status"], error=str(exc))
    out["hosts"] = _host_figures(r.phase, r.rc, r.args, [r.here, *getattr(exc, "hosts", [])],
                                 out)
    if exc.stuck:  # removing the run's files waits on the same storage, for good maybe
        _save(out, r.folder)
        r.ui.alert(_waiting_on_storage(target, exc.stuck, r.folder, r.req.target))
    _finish(r.phase, r.rc, r.args, out, r.folder, r.req.on_saved)
    raise exc.cause(f"{out['error']}; partial result saved in {r.folder}") from None


def _interrupted(r: _Run) -> None:
    """Ctrl-C before the clients started: no result when nothing was written yet."""
    if not r.started and not r.rc.target.written:  # e.g. waiting for another run's lock
        _discard(r.phase, r.rc, r.args, r.folder)
        raise RunInterrupted("interrupted by the user before the run wrote anything on "
                             "the target; no result saved") from None
    r.out["status"], r.out["error"] = "interrupted", "interrupted by the user before measuring"
    _finish(r.phase, r.rc, r.args, r.out, r.folder, r.req.on_saved)
    raise RunInterrupted(f"{r.out['error']}; partial result saved in {r.folder}") from None


def _failed(r: _Run, exc: AiioError | OSError) -> None:
    """A refusal before anything was written leaves no result; any other failure saves its
    partial result and raises one line."""
    target = r.rc.target
    if not r.started and _refusal(exc, target):
        _discard(r.phase, r.rc, r.args, r.folder)
        raise exc
    if not r.started and isinstance(exc, Terminated) and not target.written:
        _discard(r.phase, r.rc, r.args, r.folder)  # as a Ctrl-C there: it measured nothing
        raise type(exc)(f"{exc} before the run wrote anything on the target; no result "
                        "saved") from None
    r.out["status"] = "failed"
    r.out["error"] = _cause(target, _message(exc))
    _finish(r.phase, r.rc, r.args, r.out, r.folder, r.req.on_saved)
    cls = type(exc) if isinstance(exc, AiioError) else RunFailed
    raise cls(f"{r.out['error']}; partial result saved in {r.folder}") from None


def _require_measured(out: dict[str, Any]) -> None:
    """A run whose headline rests on no bytes, or that its phase says it could not measure,
    ends failed (exit code 1), saying why: kept as "ok" at 0 MiB/s it became a history
    baseline and an acceptance figure. The phase's own reason comes first: it says what
    length or size would be measurable."""
    empty = figures.nothing_measured(out)
    if empty is not None:
        out["warnings"].append(empty)
    why = out["aggregate"].get("not_measured") or (empty or {}).get("message")
    if why:
        raise RunFailed(why)


def _stuck(clients: list[int]) -> str:
    """What the result says of clients that could send no figures, stuck in the kernel."""
    if not clients:
        return ""
    return (f"; {_clients(clients)} sent no figures: stuck in the kernel on I/O the storage "
            "did not answer")


def _clients(numbers: list[int]) -> str:
    return f"client {numbers[0]}" if len(numbers) == 1 else \
        f"{len(numbers)} clients ({', '.join(map(str, numbers))})"


def _waiting_on_storage(target: Any, clients: list[int], folder: Path, where: str) -> str:
    """The one line said while the run waits on storage that does not answer: what was
    saved, what may stay on the target, how to remove it."""
    return (f"the storage at {target.path} did not answer: {_clients(clients)} stuck in the "
            f"kernel, no figures from them; result saved in {folder}; the run's files below "
            f"{target.root} may stay until it answers, and `aiio clean --target {where}` then "
            "removes them")


def _refusal(exc: BaseException, target: Any) -> bool:
    """Bad input refused (exit code 2) while the run has written nothing on the target (a
    directory or a bucket prefix): it ran nothing."""
    return isinstance(exc, AiioError) and exc.exit_code == 2 and not target.written


def _discard(phase: Any, rc: RunContext, args: Any, folder: Path) -> None:
    """Undo a refused run: what the phase made goes, and so does the result saved "running"
    at the start (the history and the results folder keep runs, not refusals)."""
    try:
        phase.cleanup(rc, args, "failed")
    finally:
        rc.target.release()
        rc.target.unclaim()  # aiio's folder too, when this run made it for nothing
        result.discard(folder)


def _cause(target: Any, error: str) -> str:
    """A failure's message, led by the target having changed under the run when it did (a
    client that found its files gone is its symptom)."""
    moved = target.changed() if isinstance(target, Target) else None
    return f"{moved} ({error})" if moved and moved not in error else error


def open_target(where: str, options: RunOptions = RunOptions(), method: str = "auto",
                held: Target | None = None) -> tuple[Any, TargetInfo, str]:
    """The checked target, what it is, and how reads avoid a cache: a directory (`held`,
    when the caller holds it across runs), or an s3:// bucket prefix (aiio.s3)."""
    if is_s3(where):
        from aiio.s3 import backend
        return backend.open_target(where, options)
    target = held or Target(where)
    target.check_usable()
    info = probe(target)
    return target, info, choose_method(info.o_direct, method)


def _since_process_start(start_ns: int) -> float:
    """Seconds from this command's start to the clients' common start instant."""
    start_wall = time.time() - (time.monotonic_ns() - start_ns) / 1e9
    return round(start_wall - psutil.Process().create_time(), 3)


def _skeleton(req: RunRequest, info: Any, method: str) -> dict[str, Any]:
    w = req.workload
    return result.new(
        "run", result.new_id(req.phase, w.name, f"c{w.run.clients}"), now_iso(),
        phase=req.phase, workload=w.to_dict(), options=req.options.to_dict(),
        clients_requested=w.run.clients, environment=collect_environment(),
        target=info.to_dict(), method=method, clients=[], aggregate={}, warnings=[],
        ranks=world().size, hosts=[])


def _host_figures(phase: Any, rc: RunContext, args: Any, entries: list[dict],
                  out: dict[str, Any]) -> list[dict]:
    """Per-host figures; a partial result's clients may not summarize, and that is no error."""
    def summarize(clients: list[dict]) -> dict[str, Any]:
        try:
            return phase.summarize(rc, args, clients)
        except Exception:  # partial figures of a stopped run: keep the clients' own numbers
            return {}
    return hosts.host_figures(entries, out["clients"], out["split"], summarize)


def bytes_read(phase: Phase, agg: Mapping[str, Any]) -> int:
    """The bytes the clients read, set against the block device's reads: what a phase that
    also writes records apart ("read_bytes"), else all its bytes if reading is its main
    operation, and none if it only writes (its bytes are writes the device need not read)."""
    if "read_bytes" in agg:
        return agg["read_bytes"]
    return agg.get("bytes", 0) if phase.main_op == "read" else 0


def _warnings(phase: Phase, rc: RunContext, args: Any,
              out: dict[str, Any]) -> list[dict[str, str]]:
    read_bytes = bytes_read(phase, out["aggregate"])
    data = getattr(args, "dataset", None)
    # the bytes a cache could hold, each once: repeated reads of them prove nothing
    data_bytes = figures.unique_bytes(out, data.total_bytes if data is not None else 0)
    # MLPerf's data-vs-memory rule counts the RAM of every client host under MPI
    client_ram = client_ram_bytes(out["hosts"], out["environment"]["ram_bytes"])
    found = [] if not rc.engine.caps.client_cache else honesty.target_warnings(
        rc.info, out["method"], data_bytes, client_ram)  # no client page cache before a bucket
    if len(out["hosts"]) == 1:
        return found + honesty.run_warnings(rc.info, out["monitor"], out["clients"], read_bytes)
    for group, mine in machines(out["hosts"], out["clients"]):
        found += [bound for h in group if (bound := hosts.binding_warning(h))]
        if not mine:
            continue  # a machine with no clients at this count measured nothing
        # each machine's own CPU, NICs and device (every rank on it saw them all, so the
        # first rank's monitor) against the clients of all its ranks
        h, ranks = group[0], [g["rank"] for g in group]
        read = sum(bytes_read(phase, g.get("aggregate", {})) for g in group)
        where = f"host {h['host']} ({'ranks' if len(ranks) > 1 else 'rank'} " \
                f"{', '.join(map(str, ranks))})"
        found += [{**warn, "message": f"{where}: {warn['message']}", "rank": ranks[0]}
                  for warn in honesty.run_warnings(hosts.target_info(h), h.get("monitor", {}),
                                                   mine, read)]
    return found


def machines(entries: list[dict], clients: list[dict]) -> list[tuple[list[dict], list[dict]]]:
    """The host entries grouped by machine (ranks on one host share its CPUs, NICs, device
    and RAM; hosts are told apart by name), each with the clients of its ranks."""
    groups: dict[str, list[dict]] = {}
    for h in sorted(entries, key=lambda e: e["rank"]):
        groups.setdefault(h["host"], []).append(h)
    return [(group, [c for c in clients if c.get("rank") in {g["rank"] for g in group}])
            for group in groups.values()]


def client_ram_bytes(entries: list[dict], own: int) -> int:
    """The RAM of every client machine, each counted once; `own` (this process's machine)
    when there is no host entry."""
    return sum(group[0].get("environment", {}).get("ram_bytes", own)
               for group, _ in machines(entries, [])) or own


def _finish(phase: Any, rc: RunContext, args: Any, out: dict[str, Any], folder: Path,
            on_saved: Callable[[dict[str, Any], Path], None] | None = None) -> None:
    """Save how the run ended, remove what the phase wrote, and save again. Saved first: the
    removal waits on storage that stopped answering for as long as it does (a request a FUSE
    daemon or an NFS server was handed is one the kernel cannot take back, whatever signal
    comes), and the result must not say "running" meanwhile. A run that failed keeps its
    cause when the removal fails too; the removal's error is added to it."""
    _save(out, folder)
    try:
        phase.cleanup(rc, args, out["status"])
    except (AiioError, OSError) as exc:
        if out["status"] == "ok":
            raise
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        out["error"] += f" (its files were not all removed: {why})"
    finally:
        if isinstance(rc.target, Target):
            rc.target.release()
        _save(out, folder)
        if on_saved is not None:
            on_saved(out, folder)


def _save(out: dict[str, Any], folder: Path) -> None:
    out["finished"] = now_iso()
    out["saved_at"] = now_unix()
    result.save(out, folder, result_layout(out))


def _message(exc: AiioError | OSError) -> str:
    """A failure as one line: an AiioError's own, an OSError's strerror and what it says."""
    return str(exc) if isinstance(exc, AiioError) else f"{exc.strerror}: {exc}"
