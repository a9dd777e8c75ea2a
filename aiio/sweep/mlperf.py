"""`aiio mlperf`: a workload run by MLPerf Storage v3.0's rules, on one client host or on
several (MPI ranks), the same accelerator count on each.

Training: one warm-up run and five scored runs, consecutive, at one accelerator count; the
dataset size rule judged over the scored runs' hosts and, when not met, stated in the summary
(valid: false) and on screen rather than refused, so a small host can still predict a
submission's figures. Checkpointing: ten checkpoints written, then the ten read back (the page
cache defeated by the run's method, O_DIRECT where the filesystem takes it, rather than by
dropping caches), with both rate definitions. Every run is an ordinary aiio result in
<folder>/runs; the summary is <folder>/mlperf.json.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiio.errors import AiioError, ConfigError, RunFailed, RunInterrupted
from aiio.options import RunOptions
from aiio.results import result
from aiio.results.files import write_atomic
from aiio.run import memcheck, runner
from aiio.run.comm import world
from aiio.sweep import find_max
from aiio.sweep import mlperf_checks as checks
from aiio.sweep import mlperf_rules as rules
from aiio.sweep.run import with_clients, with_value
from aiio.ui import UI
from aiio.workload import Workload


@dataclass
class MlperfRequest:
    workload: Workload
    target: str
    results_dir: str = "reports"
    method: str = "auto"
    options: RunOptions = RunOptions()
    runs: int = rules.SCORED_RUNS
    # Search (find-max) for the most accelerators at the AU floor up to this many, then run
    # the rules at that count: MLPerf's published answer. 0: at the workload's clients.
    find_max: int = 0


def phase_of(w: Workload) -> str:
    """A model workload checkpoints; a dataset workload trains."""
    return "checkpoint" if "dataset" not in w.given and "model" in w.given else "train"


class Stopped(AiioError):
    """A run stopped (Ctrl-C, SIGTERM, a failure) after a scored run was done: the summary of
    the runs done is saved (marked, never valid) and carried, so that its page can be drawn
    too. Exit code the stop's own: 130 for Ctrl-C, 1 for SIGTERM or a failure."""

    def __init__(self, message: str, summary: dict[str, Any], folder: Path,
                 exit_code: int) -> None:
        super().__init__(message)
        self.summary, self.folder, self.exit_code = summary, folder, exit_code


def run(req: MlperfRequest, ui: UI) -> tuple[dict[str, Any], Path]:
    """Every run of the rules, then the summary, saved; returns (summary, folder)."""
    phase = phase_of(req.workload)
    if req.find_max:
        _check_search(req)
    folder = result.unique_folder(Path(req.results_dir),
                                  result.new_id("mlperf", phase, req.workload.name))
    state: dict[str, Any] = {"done": [], "search": None}  # training's runs as they end
    try:
        summary = _rules(req, phase, folder, ui, state)
    except (AiioError, KeyboardInterrupt) as exc:
        if len(state["done"]) < 2:  # no scored run finished: nothing to sum up
            _discard_if_empty(folder)
            raise
        raise _stopped(req, folder, state, exc) from exc
    except BaseException:
        _discard_if_empty(folder)
        raise
    _save(summary, folder)
    return summary, folder


def _stopped(req: MlperfRequest, folder: Path, state: dict[str, Any],
             exc: BaseException) -> Stopped:
    """The summary of the scored runs done before `exc` stopped the rules, saved."""
    code = getattr(exc, "exit_code", RunInterrupted.exit_code)
    why = str(exc) or "interrupted by the user"
    summary = _training(req, folder, state, "interrupted" if code == 130 else "failed")
    summary["stopped_by"] = why.split(";")[0]
    summary["marks"] = rules.marks(summary)
    path = _save(summary, folder)
    return Stopped(f"{why}; the summary of the {len(state['done']) - 1} scored run(s) done: "
                   f"{path}", summary, folder, code)


def _save(summary: dict[str, Any], folder: Path) -> Path:
    path = folder / "mlperf.json"
    write_atomic(path, json.dumps(summary, indent=2))
    return path


def _discard_if_empty(folder: Path) -> None:
    """Remove the summary's folder when no run was saved in it: input refused before the
    first run (exit 2) leaves nothing behind; a run stopped later keeps what it saved."""
    for empty in (folder / "runs", folder):
        with contextlib.suppress(OSError):
            empty.rmdir()


def _rules(req: MlperfRequest, phase: str, folder: Path, ui: UI,
           state: dict[str, Any]) -> dict[str, Any]:
    """Every run the rules make, then the summary of them (not saved yet); training's runs
    go into `state` as they end."""
    runs = str(folder / "runs")
    if phase == "checkpoint":
        w = req.workload
        for name, value in (("count", rules.CHECKPOINTS), ("keep", rules.CHECKPOINTS),
                            ("restore_after", "all_writes")):
            w = with_value(w, "checkpoint", name, value)
        res = _one(w, "checkpoint", req, runs, ui, "10 checkpoints written, then read back")
        return _judged(rules.checkpoint_summary(res), res, "checkpoint", req, folder)
    w = req.workload
    if req.find_max:
        search = state["search"] = _search(req, runs, ui)
        if search["supported"] is None:
            raise RunFailed(f"one accelerator already falls below the AU floor "
                            f"({w.train.au_goal:.0%}); runs in {runs}")
        w = with_clients(w, search["supported"])
    for i in range(1 + req.runs):
        state["done"].append(_one(w, "train", req, runs, ui, "warm-up" if i == 0
                                  else f"scored run {i} of {req.runs}"))
    return _training(req, folder, state, status="ok")


def _training(req: MlperfRequest, folder: Path, state: dict[str, Any],
              status: str) -> dict[str, Any]:
    """The training summary of the runs done (the warm-up first), the search's beside."""
    done = state["done"]
    summary = rules.training_summary(done[0], done[1:], _dataset_rule(done[1]))
    summary.update(status=status, runs_planned=req.runs)
    if state["search"] is not None:
        summary["search"] = state["search"]
    return _judged(summary, done[1], "train", req, folder)


def _judged(summary: dict[str, Any], judged: dict[str, Any], phase: str,
            req: MlperfRequest, folder: Path) -> dict[str, Any]:
    """The checks on the run the summary is judged on, the marks, and valid."""
    summary.update(kind=rules.KIND, id=folder.name, settings=checks.settings(judged, phase),
                   checks=_checks(judged, phase, req.results_dir))
    summary["marks"] = rules.marks(summary)
    summary["valid"] = not summary["marks"]
    return summary


def _checks(res: dict[str, Any], phase: str, results_dir: str) -> list[dict[str, Any]]:
    """What MLPerf's validator would say of the run the summary is judged on."""
    found = [checks.closed_check(res["workload"], phase), checks.o_direct_check(res),
             checks.apart_check(str((res.get("target") or {}).get("path", "")), results_dir)]
    if phase == "checkpoint":
        found += [checks.processes_check(res), checks.restore_cache_check(res),
                  checks.restore_gap_check(res)]
    else:
        found.append(checks.per_host_check(res))
    return found


def _one(w: Workload, phase: str, req: MlperfRequest, runs: str, ui: UI,
         what: str) -> dict[str, Any]:
    ui.note(f"mlperf: {what}")
    res, _ = runner.run(runner.RunRequest(phase, w, req.target, runs, req.method,
                                          req.options), ui)
    return res


def _check_search(req: MlperfRequest) -> None:
    """Refuse, before any run, a search whose largest count no host could hold (one line,
    exit 2), rather than after the probes below it; at least one accelerator a host."""
    hosts = world().size
    if req.find_max < hosts:
        raise ConfigError(f"--find-max {req.find_max} is under one accelerator on each of "
                          f"the {hosts} hosts")
    per_host = req.find_max // hosts
    try:
        memcheck.check_need(memcheck.target_need(req.workload, "train", req.target, per_host,
                                                  req.method), per_host)
    except AiioError as exc:  # the search's bound, not a client count the user gave
        raise ConfigError(f"--find-max {req.find_max}: {exc}") from exc


def _search(req: MlperfRequest, runs: str, ui: UI) -> dict[str, Any]:
    """The largest count whose run keeps MLPerf's AU at the floor (doubling, then bisecting);
    each probe one run. Under MPI the search steps by whole hosts: MLPerf asks the same
    count on every host. The confirming runs are the rules' own, at that count."""
    probes: list[dict[str, Any]] = []
    floor, hosts = req.workload.train.au_goal, world().size

    def probe(per_host: int) -> str:
        n = per_host * hosts
        res = _one(with_clients(req.workload, n), "train", req, runs, ui,
                   f"find-max: {n} accelerator(s)")
        au = rules.training_run(res)["au"]
        held = au is not None and au >= floor
        probes.append({"accelerators": n, "au": au, "holds": held, "id": res["id"]})
        return find_max.HOLDS if held else find_max.FAILS

    good, bad = find_max.search(probe, req.find_max // hosts)
    return {"supported": good and good * hosts, "first_failing": bad and bad * hosts,
            "upper": req.find_max // hosts * hosts, "probes": probes}


def _dataset_rule(res: dict[str, Any]) -> dict[str, Any]:
    """The rule over this run's hosts and their memory, and the dataset it read."""
    w, (hosts, ram) = res["workload"], rules.host_memory(res)
    d = w["dataset"]
    return rules.dataset_rule(w["train"]["batch_size"], len(res["clients"]), hosts, ram,
                              d["sample_size"], d["num_files"] * d["samples_per_file"])
