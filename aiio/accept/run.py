"""Acceptance runs: each check of a spec (`aiio.accept.spec`) run through the same runner as
`aiio run`, judged from the saved result's figures (`aiio.results.figures`), and recorded in the
history. A check that crashes is an errored check with its reason; the others still run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiio.accept.spec import THRESHOLDS, Check, Require, Spec, load_spec
from aiio.errors import AiioError, RunInterrupted
from aiio.phases import REGISTRY, result_layout
from aiio.results import result as results
from aiio.results.figures import FIGURES, headline, label, run_figures, sweep_figures
from aiio.results.history import (
    History,
    Record,
    regressions,
    run_record,
    settings_of,
    sweep_record,
    target_key,
    variant_of,
)
from aiio.results.layout import Layout
from aiio.run.sysinfo import collect_environment
from aiio.run.wallclock import now_iso
from aiio.ui import UI

__all__ = ["Check", "Spec", "judge", "load_spec", "run_spec", "save", "exit_code"]


# --- judging -------------------------------------------------------------------------------

def _passes(value: float, op: str, limit: float) -> bool:
    return value >= limit if op == ">=" else value <= limit


def judge(require: Require, measured: dict[str, float], phase: str,
          hints: dict[str, str] | None = None) -> tuple[list[dict[str, Any]], list[str],
                                                       list[str]]:
    """(verdicts, failure messages, missing-figure messages) for every threshold that is set;
    `hints` says, per figure, why a result may lack it and what to do."""
    verdicts, failures, missing = [], [], []
    judged = _layout(phase)
    for threshold, limit in require.items():
        figure, op = THRESHOLDS[threshold]
        fig = FIGURES[figure]
        value = measured.get(figure)
        if value is None:
            hint = (hints or {}).get(figure)
            missing.append(f"{threshold}: this {phase} result has no {label(figure, judged)} "
                           f"({figure})" + (f": {hint}" if hint else ""))
            verdicts.append({"threshold": threshold, "figure": figure, "op": op,
                             "required": limit, "measured": None, "pass": None})
            continue
        ok = _passes(value, op, limit)
        verdicts.append({"threshold": threshold, "figure": figure, "op": op, "required": limit,
                         "measured": value, "pass": ok})
        if not ok:
            failures.append(f"{threshold}: {label(figure, judged)} measured {fig.format(value)}, "
                            f"required {op} {fig.format(limit)}")
    return verdicts, failures, missing


def _layout(phase: str) -> Layout | str:
    """The phase's layout as its results record it (how its headline is judged), its name
    when this aiio does not know it."""
    return result_layout({"phase": phase}) if phase in REGISTRY else phase


def required_figures(require: Require) -> dict[str, float]:
    """Thresholds keyed by the figure they judge, as the history stores them."""
    return {THRESHOLDS[t][0]: v for t, v in require.items()}


# --- running -------------------------------------------------------------------------------

Saved = tuple[dict[str, Any], Path]  # a result and the folder it was saved in

@dataclass
class Measured:
    """What running a check produced: its figures and the results they came from."""

    figures: dict[str, float]
    result_id: str
    runs: list[dict[str, Any]]
    warnings: list[dict[str, str]]
    hints: dict[str, str] = field(default_factory=dict)
    sweep: dict[str, Any] | None = None
    folder: str = ""  # the result's folder in the results folder (an id may get a -2 suffix)


def figure_hints(res: dict[str, Any]) -> dict[str, str]:
    """Why a result lacks a figure, in the words of the result itself where it has them."""
    hints = {"checkpoint_s": f"phase {res.get('phase')} wrote no checkpoint",
             "restore_s": f"phase {res.get('phase')} restored no checkpoint",
             "load_s": f"phase {res.get('phase')} loaded no model",
             "au_min": f"phase {res.get('phase')} has no accelerators"}
    section = headline(res)[0]
    note = section.au.note if section is not None and section.au is not None else None
    if note:  # training without an AU figure says why (compute 0, no measured step)
        hints["au_min"] = note
    hints["au_mean"] = hints["au_min"]
    hero = res.get("hero")
    if isinstance(hero, dict) and hero.get("text"):
        hints["hero_fraction"] = hero["text"]
    else:
        hints["hero_fraction"] = "no fio hero number was compared; run aiio fio on the target"
    return hints


def _measure_run(check: Check, target: str, results_dir: str, ui: UI,
                 saved: list[Saved]) -> Measured:
    from aiio.fio import hero
    from aiio.run import runner

    # the runner saves a failed or interrupted run too; keep it for the history
    req = runner.RunRequest(check.phase, check.workload, target, results_dir, check.cache,
                            check.options,
                            on_saved=lambda res, folder: saved.append((res, folder)),
                            hero=hero.Pairing(results_dir), engine=check.engine)
    res, folder = runner.run(req, ui)
    return Measured(run_figures(res, check.latency_op or None), res["id"], [res],
                    res.get("warnings", []), figure_hints(res), folder=folder.name)


def _measure_sweep(check: Check, target: str, results_dir: str, ui: UI,
                   saved: list[Saved]) -> Measured:
    from aiio.sweep.run import SweepRequest, SweepStopped, sweep

    req = SweepRequest(check.phase, check.workload, target, list(check.clients),
                       threshold=check.require.min_scaling_efficiency or 0.9,
                       results_dir=results_dir, method=check.cache, options=check.options,
                       engine=check.engine)
    try:
        out, folder = sweep(req, ui)
    except SweepStopped as exc:
        saved.append((exc.sweep, exc.folder))
        if exc.exit_code == RunInterrupted.exit_code:
            raise RunInterrupted(str(exc)) from None
        raise
    top = max(out["points"], key=lambda p: p["clients"])["result"]
    return Measured(sweep_figures(out, check.latency_op or None), out["id"],
                    [p["result"] for p in out["points"]], top.get("warnings", []),
                    {**figure_hints(top), **sweep_hints(out)}, sweep=out, folder=folder.name)


def sweep_hints(sweep: dict[str, Any]) -> dict[str, str]:
    """Why a sweep lacks its scaling efficiency: its verdict's words, when it judged none
    (a baseline that moved nothing)."""
    from aiio.sweep.verdict import NOT_MEASURABLE

    verdict = sweep.get("verdict") or {}
    if verdict.get("shape") != NOT_MEASURABLE or not verdict.get("statements"):
        return {}
    why = str(verdict["statements"][0])
    return {"scaling_efficiency": why, "scaling_efficiency_min": why}


def measure(check: Check, target: str, results_dir: str, ui: UI,
            saved: list[Saved] | None = None) -> Measured:
    """Run the check's phase (one run, or a sweep over its client list) and read its figures.
    A run or sweep that stops early is still saved; its result is appended to `saved`."""
    saved = [] if saved is None else saved
    if check.sweep:
        return _measure_sweep(check, target, results_dir, ui, saved)
    return _measure_run(check, target, results_dir, ui, saved)


def _stopped(saved: list[Saved]) -> Measured | None:
    """What a check that stopped early left: its partial run or sweep, for the history."""
    if not saved:
        return None
    res, folder = saved[-1]
    if res.get("kind") == "sweep":
        return Measured({}, res.get("id", ""), [p["result"] for p in res.get("points") or []],
                        [], sweep=res, folder=folder.name)
    return Measured({}, res.get("id", ""), [res], res.get("warnings", []), folder=folder.name)


def _partial(entry: dict[str, Any], saved: list[Saved]) -> Measured | None:
    """The partial run of a check that stopped early; the entry links to it."""
    m = _stopped(saved)
    if m is not None:
        entry["result_id"], entry["result_folder"] = m.result_id, m.folder
        entry["series"] = series_of(entry["name"], m)
    return m


def series_of(name: str, m: Measured) -> str:
    """A check's series in the history: its name, and the read loop's when another than the
    compiled one timed its reads (history.loop_variant): their figures are not alike."""
    what = m.sweep if m.sweep is not None else m.runs[-1] if m.runs else None
    return name + (variant_of(what) if what is not None else "")


def check_settings(m: Measured | None) -> str:
    """The settings a check's record is compared within: those of what it measured (its
    sweep, or its last run); none when it measured nothing."""
    what = None if m is None else m.sweep if m.sweep is not None else \
        m.runs[-1] if m.runs else None
    return settings_of(what) if what is not None else ""


class CheckInterrupted(RunInterrupted):
    """Ctrl-C during a check; carries the check's entry and its partial run for the history."""

    def __init__(self, message: str, entry: dict[str, Any], measured: Measured | None) -> None:
        super().__init__(message)
        self.entry, self.measured = entry, measured


def _entry(check: Check) -> dict[str, Any]:
    return {"name": check.name, "description": check.description, "phase": check.phase,
            "workload": check.workload.name, "clients": check.clients_value(),
            "status": "error", "measured": {}, "required": dict(check.require.items()),
            "verdicts": [], "failures": [], "reason": "", "result_id": None,
            "result_folder": None,
            "warnings": [], "regressions": [], "seconds": 0.0}


def run_check(check: Check, target: str, results_dir: str,
              ui: UI) -> tuple[dict[str, Any], Measured | None]:
    """The check's entry of the accept result, and what was measured. Any error while
    measuring makes the check `error` with its reason; Ctrl-C is raised on as CheckInterrupted,
    carrying the entry (status `interrupted`) and the partial run."""
    out = _entry(check)
    t0 = time.monotonic()
    saved: list[Saved] = []
    try:
        m = measure(check, target, results_dir, ui, saved)
    except (RunInterrupted, KeyboardInterrupt) as exc:
        out["status"], out["reason"] = "interrupted", str(exc) or "interrupted"
        raise CheckInterrupted(out["reason"], out, _partial(out, saved)) from None
    except AiioError as exc:
        out["reason"] = str(exc)
        return out, _partial(out, saved)
    except Exception as exc:  # a crash in one check must not stop the others
        out["reason"] = f"crashed: {type(exc).__name__}: {exc}"
        return out, _partial(out, saved)
    finally:
        out["seconds"] = time.monotonic() - t0
    verdicts, failures, missing = judge(check.require, m.figures, check.phase, m.hints)
    out.update(measured=m.figures, verdicts=verdicts, failures=failures,
               result_id=m.result_id, result_folder=m.folder, warnings=m.warnings,
               series=series_of(check.name, m))
    if missing:
        out["reason"] = "; ".join(missing)
    else:
        out["status"] = "fail" if failures else "pass"
        out["reason"] = "; ".join(failures)
    return out, m


def check_record(check: Check, entry: dict[str, Any], target: str, spec: str,
                 settings: str = "") -> Record:
    """A check's entry as a history record, in the series its entry names."""
    clients = check.clients_value()
    return Record(kind="check", name=entry.get("series") or check.name, target=target,
                  status=entry["status"],
                  passed=entry["status"] == "pass", figures=dict(entry["measured"]),
                  required=required_figures(check.require), phase=check.phase,
                  workload=check.workload.name,
                  clients=",".join(map(str, clients)) if isinstance(clients, list)
                  else str(clients), result_id=entry["result_id"] or "", spec=spec,
                  settings=settings)


def record_check(history: History, spec: Spec, check: Check, entry: dict[str, Any],
                 measured: Measured | None, target: str) -> None:
    """Store the check, its runs and its sweep; its regressions against its own past go in
    the entry."""
    if measured is not None:
        for res in measured.runs:
            history.add(run_record(res))
        if measured.sweep is not None:
            history.add(sweep_record(measured.sweep))
    rec = check_record(check, entry, target, spec.name, check_settings(measured))
    # judged within its settings: a spec that changed a setting starts a key of its own
    prior = [r for r in history.records(name=rec.name, target=target) if r.key == rec.key]
    found = regressions(rec, prior, spec.info.regression_fraction, spec.info.baseline_runs)
    entry["regressions"] = [{"figure": r.figure, "value": r.value, "baseline": r.baseline,
                             "change": r.change, "runs": r.runs, "message": r.describe()}
                            for r in found]
    history.add(rec)


def _skeleton(spec: Spec, target: str) -> dict[str, Any]:
    # the target keyed as run records key it (absolute path, no trailing slash on s3://), so
    # the checks, the spec's record and its runs are one series in the history
    return results.new("accept", results.new_id("accept", spec.name), now_iso(),
                       spec=spec.name, spec_path=spec.path,
                       description=spec.info.description, target=target_key(target),
                       environment=collect_environment(), checks=[], passed=0, failed=0,
                       errors=0, not_run=[], history=None)


def run_spec(spec: Spec, checks: tuple[Check, ...], target: str, results_dir: str, ui: UI,
             history: History | None = None,
             on_check: Callable[[int, int, Check], None] | None = None) -> dict[str, Any]:
    """Run the checks one after another and return the accept result (not yet saved).
    Ctrl-C ends the run with status `interrupted` and the checks done so far."""
    out = _skeleton(spec, target)
    out["history"] = str(history.path) if history else None
    for i, check in enumerate(checks):
        if on_check:
            on_check(i, len(checks), check)
        try:
            entry, measured = run_check(check, target, results_dir, ui)
        except CheckInterrupted as exc:
            out["status"], out["error"] = "interrupted", str(exc)
            out["not_run"] = [c.name for c in checks[i:]]
            out["interrupted_check"] = exc.entry  # judged apart: not run to the end
            _record(out, history, spec, check, exc.entry, exc.measured)
            break
        except KeyboardInterrupt:  # between checks
            out["status"], out["error"] = "interrupted", "interrupted"
            out["not_run"] = [c.name for c in checks[i:]]
            break
        out["checks"].append(entry)
        _record(out, history, spec, check, entry, measured)
    _count(out)
    return out


def _record(out: dict[str, Any], history: History | None, spec: Spec, check: Check,
            entry: dict[str, Any], measured: Measured | None) -> None:
    """Record the check (whatever its status) and what it ran; the verdict stands even if the
    history cannot keep it."""
    if history is None:
        return
    try:
        record_check(history, spec, check, entry, measured, out["target"])
    except AiioError as exc:
        out["error"] = f"history not updated: {exc}"


def _count(out: dict[str, Any]) -> None:
    statuses = [c["status"] for c in out["checks"]]
    out["passed"] = statuses.count("pass")
    out["failed"] = statuses.count("fail")
    out["errors"] = statuses.count("error")
    if out["status"] == "running":
        out["status"] = "pass" if out["passed"] == len(statuses) else "fail"
    out["finished"] = now_iso()


def save(out: dict[str, Any], results_dir: str) -> Path:
    """Save the accept result as reports/<id>/result.json; returns its folder."""
    folder = results.unique_folder(Path(results_dir), out["id"])
    results.save(out, folder)
    return folder


def exit_code(out: dict[str, Any]) -> int:
    """0 when every check passed, 1 when any failed or errored, 130 when interrupted."""
    if out["status"] == "interrupted":
        return 130
    return 0 if out["status"] == "pass" else 1


def judged_checks(spec: Spec, checks: tuple[Check, ...],
                  out: dict[str, Any]) -> list[tuple[Record, list[str]]]:
    """Each check run, as a history record with its regressed figures, then the spec as a
    whole (kind `accept`: its status and pass/fail): what the monitoring export writes."""
    by_name = {c.name: c for c in checks}
    judged = []
    stopped = [out["interrupted_check"]] if out.get("interrupted_check") else []
    for entry in [*out["checks"], *stopped]:
        rec = check_record(by_name[entry["name"]], entry, out["target"], spec.name)
        judged.append((rec, [r["figure"] for r in entry["regressions"]]))
    whole = Record(kind="accept", name=spec.name, target=out["target"], status=out["status"],
                   passed=out["status"] == "pass", spec=spec.name)
    return [*judged, (whole, [])]
