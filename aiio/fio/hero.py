"""The "% of hero" figure: a phase's aggregate next to the matching fio number, same target.

Reads results only, never measures. The hero for a phase is the latest successful fio result on
the same target that holds the matching test: sequential read for train and load, sequential
write for checkpoint, the random mix for prep.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

from aiio.cache_methods import METHOD_NULL
from aiio.errors import AiioError
from aiio.fio import pairing
from aiio.phases import REGISTRY, get_phase, layout_of
from aiio.results import result
from aiio.results.figures import headline
from aiio.results.result import IoFigures, Result, dig
from aiio.units import format_rate
from aiio.workload import Workload

ABOVE_HERO = 105.0  # % beyond which the hero number, not the phase, is suspect


def hero_test(phase: str) -> str | None:
    """The first fio test a phase is set against (`Phase.hero_test`; prep in shards mode also
    against seq_write: see fio/pairing); None for a phase, or a name, without one."""
    return get_phase(phase).hero_test if phase in REGISTRY else None


def same_target(a: str, b: str) -> bool:
    """Two target paths name the same directory (symlinks and relative paths resolved)."""
    return os.path.realpath(a) == os.path.realpath(b)


Found = list[tuple[Path, Result]]  # (folder, result) of successful fio runs


def fio_results(results_dir: str | os.PathLike) -> Found:
    """Every readable, successful fio result under results_dir, oldest first."""
    found = []
    base = Path(results_dir)
    if not base.is_dir():
        return []
    for path in base.glob("*/result.json"):
        if "-fio-" not in path.parent.name:
            continue  # ids carry their kind: skip loading large run results
        try:
            data = result.load(path)
        except AiioError:
            continue  # an unreadable result is no hero; it must not fail a run
        if data.kind == "fio" and data.status == "ok":
            found.append((path.parent, data))
    found.sort(key=lambda item: (item[1].get("saved_at", 0), item[1].get("id", "")))
    return found


def hero_for(target_path: str, phase: str, results_dir: str | os.PathLike,
             test: str | None = None, streams: int | None = None,
             ramp_ok: Callable[[float], bool] | None = None) -> dict | None:
    """The latest fio result in results_dir on this target holding `test` (by default the
    phase's first), at `streams` = fio jobs x iodepth when given, with a ramp ramp_ok
    accepts; None when there is none."""
    return latest_hero(fio_results(results_dir), target_path, phase, test, streams, ramp_ok)


def latest_hero(found: Found, target_path: str, phase: str, test: str | None = None,
                streams: int | None = None,
                ramp_ok: Callable[[float], bool] | None = None) -> dict | None:
    """hero_for among fio results read already; with ramp_ok, only a result whose ramp (the
    seconds fio left out at the start) it accepts."""
    test = test or hero_test(phase)
    if test is None:
        return None
    for folder, res in reversed(found):
        path = (res.get("target") or {}).get("path")
        entry = (res.get("tests") or {}).get(test) or {}
        fio = res.section(test)
        if not path or fio is None or fio.mib_s is None or not same_target(path, target_path):
            continue  # a result without the figure is passed over, never fails a run
        jobs, depth = len(entry.get("clients", [])), int(res.get("options", {}).get("iodepth", 1))
        if streams is not None and jobs * depth != streams:
            continue
        ramp = pairing.ramp_of(res)
        if ramp_ok is not None and not ramp_ok(ramp):
            continue
        spread = fio.per_client_mib_s
        return {"test": test, "description": entry.get("description", test),
                "fio_mib_s": fio.mib_s, "fio_iops": 0.0 if fio.iops is None else fio.iops,
                "fio_per_client_mib_s": spread.mean if spread else 0.0,
                "fio_clients": jobs, "fio_iodepth": depth, "ramp_s": ramp,
                "block_size": entry.get("block_size"),
                "fio_latency": dict(fio.main_latency) or None,
                "fio_result_id": res.get("id", folder.name), "fio_result": str(folder),
                "fio_version": res.get("fio_version"), "method": res.get("method"),
                "finished": res.get("finished")}
    return None


class Pairing:
    """The fio results in one folder a run is set against, read once, on first use."""

    def __init__(self, results_dir: str | os.PathLike) -> None:
        self.results_dir = results_dir

    @cached_property
    def found(self) -> Found:
        """The folder's successful fio results, read the first time they are asked for."""
        return fio_results(self.results_dir)

    def live(self, target_path: str, phase: str, w: Workload) -> dict[str, Any] | None:
        """The hero the live view shows: the one the finished run is paired with (its test,
        at its concurrency), when the live counter holds that test's bytes only."""
        return live_hero(self.found, target_path, {"phase": phase, "workload": w.to_dict()})

    def entry(self, res: dict[str, Any]) -> dict[str, Any]:
        """The finished result's `hero` field, paired with the results read at first use."""
        return pair_entry(res, self.found)


def live_hero(found: Found, target_path: str, run: Mapping[str, Any]) -> dict[str, Any] | None:
    """The live view's hero for a run about to start (its phase and workload): the latest fio
    result holding the run's live test at clients x streams per client; None when the run's
    live counter matches no fio test or no result is at that concurrency."""
    test = pairing.live_test(run)
    if test is None:
        return None
    streams = result.clients_requested(run) * pairing.streams_per_client(run)
    return latest_hero(found, target_path, run["phase"], test, streams)


def percent(value: float, hero: float) -> float | None:
    """value as a percentage of hero; None when there is no hero number to divide by."""
    return 100.0 * value / hero if hero > 0 else None


def hero_entry(res: dict[str, Any], results_dir: str | os.PathLike) -> dict[str, Any]:
    """The `hero` field of a run result: its last-done aggregate as % of the fio test of the
    same pattern at the same concurrency, stating what was paired with what."""
    return pair_entry(res, fio_results(results_dir))


NULL_TEXT = ("no fio hero comparison: the null method did no I/O, so its figures are aiio's "
             "own overhead, never storage speed")


def unpaired(run: Mapping[str, Any]) -> str:
    """Why a run no fio test pairs with (`run_hero_test` is None) has no fio side."""
    if run.get("method") == METHOD_NULL:
        return NULL_TEXT
    return f"no fio test pairs with phase {run.get('phase')!r}: its figures stand alone"


def pair_entry(res: dict[str, Any], found: Found) -> dict[str, Any]:
    """hero_entry against fio results read already."""
    target, phase = dig(res, "target", "path"), res.get("phase", "")
    if not isinstance(target, str):  # a damaged result: nothing says where it ran
        return {"text": "the result records no target path to find a fio result on"}
    if res.get("method") == METHOD_NULL:
        return {"text": NULL_TEXT}
    if layout_of(res).stages:  # the lifecycle: each stage against its own
        return _stages_entry(res, found)
    sides = pairing.sides(res)
    if not sides:
        return {"text": f"no fio hero number matches phase {phase!r}"}
    pairs = [_pair(res, side, target, found) for side in sides]
    missing = [p for p in pairs if p.get("fio_mib_s") is None]
    if missing:
        return {"test": "+".join(p["test"] for p in pairs),
                "text": _no_hero_text(res, target, missing, found)}
    if len(pairs) == 1:
        return pairs[0]
    low = min(pairs, key=lambda p: p["percent"] if p["percent"] is not None else float("inf"))
    text = "; ".join(f"{p['direction']}: {p['text']}" for p in pairs)
    return {**{k: low[k] for k in ("test", "window", "ramp_s", "fio_mib_s", "phase_mib_s",
                                   "percent", "fio_result_id", "fio_clients", "pairing")},
            "pairs": pairs, "text": f"{text}; the lower, {p_text(low['percent'])}, is the "
            "headline"}


def p_text(pct: float | None) -> str:
    return "n/a" if pct is None else f"{pct:.1f} %"


def window_name(ramp_s: float) -> str:
    """The window both sides of a pairing are measured over."""
    return pairing.WINDOW if ramp_s <= 0 else f"{pairing.WINDOW} after the first {ramp_s:g} s"


def _pair(res: dict[str, Any], side: pairing.Side, target: str,
          heroes: Found) -> dict[str, Any]:
    """One direction against its fio test at the run's concurrency, over fio's window: the
    latest such result whose ramp the run can leave out of its own first seconds too."""
    clients, streams = result.clients_requested(res), pairing.streams_per_client(res)
    phase = res.get("phase", "")
    found = latest_hero(heroes, target, phase, side.test, clients * streams, side.leaves_out)
    out: dict[str, Any] = {"direction": side.direction, "test": side.test, "window": pairing.WINDOW,
                           "phase_mib_s": side.phase_mib_s}
    if found is None:
        other = latest_hero(heroes, target, phase, side.test, clients * streams)
        if other is not None and side.phase_mib_s is not None:  # only its ramp is unlike
            out["ramp_s"] = other["ramp_s"]
            out["unlike"] = _unlike(side, other["fio_result_id"], other["ramp_s"])
        return out
    mine = side.after_ramp(found["ramp_s"])
    pct = percent(mine, found["fio_mib_s"]) if mine is not None else None
    out.update(window=window_name(found["ramp_s"]), ramp_s=found["ramp_s"], phase_mib_s=mine,
               fio_mib_s=found["fio_mib_s"], percent=pct, fio_result_id=found["fio_result_id"],
               fio_clients=found["fio_clients"],
               pairing={"clients": clients, "streams_per_client": streams,
                        "fio_jobs": found["fio_clients"], "fio_iodepth": found["fio_iodepth"],
                        "block_size": found["block_size"],
                        "pattern": pairing.PATTERN.get(side.test, side.test)})
    out["text"] = _hero_text(found, res.get("phase", ""), out, target)
    return out


def _unlike(side: pairing.Side, fio_id: str, ramp_s: float) -> str:
    """Why a fio result at the run's concurrency is not set against it: its ramp."""
    return (f"fio {side.test} in {fio_id} left out its first {ramp_s:g} s (a {ramp_s:g} s "
            f"ramp) and this run cannot leave out the same: {side.why_not(ramp_s)}")


def ramp_note(run: Mapping[str, Any], fio_res: Result) -> str | None:
    """For `aiio compare`: why the given fio result's aggregate stands beside none of the
    run's figures (its ramp, which the run cannot leave out), and the command that makes one
    it can; None when it does stand beside them."""
    sides = pairing.sides(run)
    ramp = pairing.ramp_of(fio_res)
    if not sides or sides[0].leaves_out(ramp):
        return None
    target = dig(run, "target", "path", default="TARGET")
    command = pairing.fio_command(str(target), dict(run), [sides[0].test], no_ramp=True)
    return f"{_unlike(sides[0], fio_res.id or 'the fio result', ramp)}; run: {command}"


def _stages_entry(res: dict[str, Any], found: Found) -> dict[str, Any]:
    """The lifecycle run: each stage against its own hero number."""
    run = res if isinstance(res, Result) else result.model(res)
    stages = {name: pair_entry(result.stage_doc(run, name), found)
              for name in run.stages if hero_test(name)}
    text = "; ".join(f"{name}: {entry['text']}" for name, entry in stages.items())
    return {"stages": stages, "text": text or "no stage of this run has a fio hero number"}


def _no_hero_text(res: dict[str, Any], target: str, missing: list[dict[str, Any]],
                  found: Found) -> str:
    """Why there is no % of hero, and the command that makes a matching one."""
    clients, streams = result.clients_requested(res), pairing.streams_per_client(res)
    unlike = [p["unlike"] for p in missing if "unlike" in p]
    tests = [p["test"] for p in missing]
    command = pairing.fio_command(target, res, tests, no_ramp=bool(unlike))
    if unlike:  # a result at this concurrency, whose ramp the run cannot leave out
        return f"{'; '.join(unlike)}; run: {command}"
    other = latest_hero(found, target, res.get("phase", ""), tests[0])
    if other is None:
        return f"no fio result for this target; run: {command}"
    return (f"no fio {'/'.join(tests)} at this run's concurrency ({_clients(clients)} x "
            f"{_streams(streams)} = {clients * streams}; the latest, {other['fio_result_id']}, "
            f"ran {other['fio_clients']} fio jobs x iodepth {other['fio_iodepth']}); "
            f"run: {command}")


def _clients(n: int) -> str:
    return f"{n} client" + ("" if n == 1 else "s")


def _streams(n: int) -> str:
    return f"{n} stream" + ("" if n == 1 else "s")


def _hero_text(found: dict[str, Any], phase: str, pair: dict[str, Any], target: str) -> str:
    test, fio_id, mine, pct = found["test"], found["fio_result_id"], pair["phase_mib_s"], \
        pair["percent"]
    if mine is None:
        return f"this {phase} result has no last-done MiB/s to set against fio {test}"
    if pct is None:
        return f"fio {test} in {fio_id} measured 0 MiB/s"
    p = pair["pairing"]
    text = (f"{pct:.1f} % of fio {test} ({format_rate(mine, unit=False)} of "
            f"{format_rate(found['fio_mib_s'])} delivered, "
            f"both {pair['window']}; {_clients(p['clients'])} x "
            f"{_streams(p['streams_per_client'])} "
            f"against {p['fio_jobs']} fio jobs x iodepth {p['fio_iodepth']}, "
            f"{p['pattern']}, {_block(p['block_size'])}; {fio_id})")
    if pct > ABOVE_HERO:
        # a phase cannot really beat fio at its own pattern: the hero is stale or was disturbed
        text += f"; above the hero number: re-run aiio fio --target {target} on a quiet system"
    return text


def _block(size: int | None) -> str:
    if not size:
        return "fio block size unknown"
    return f"{size // 1024} KiB blocks" if size < 2**20 else f"{size / 2**20:g} MiB blocks"


# --- aiio compare: the phase's figures next to the hero's ----------------------------------

TEST_OP = {"seq_read": "read", "seq_write": "write", "rand_mix": "read"}


def results_dir_of(run_folder: Path) -> Path:
    """The results folder a run was paired from: its parent, or for a sweep's point (in
    <sweep>/points/) the folder the sweep was saved in."""
    base = run_folder.parent
    if base.name == "points" and (base.parent / "result.json").is_file():
        return base.parent.parent
    return base


def fio_result_for(run: Mapping[str, Any], run_folder: Path) -> Result | None:
    """The fio result a run was compared with when it ran, else the latest on its target at
    the run's concurrency (fio jobs x iodepth = clients x streams per client) whose ramp the
    run can leave out of its own first seconds."""
    base = results_dir_of(run_folder)
    recorded = (run.get("hero") or {}).get("fio_result_id")
    if recorded:
        try:
            return result.load(base / recorded)
        except AiioError:
            pass  # moved or deleted since: fall back to the latest matching one
    streams = result.clients_requested(run) * pairing.streams_per_client(run)
    target, sides = dig(run, "target", "path"), pairing.sides(run)
    found = None if not isinstance(target, str) or not sides else hero_for(
        target, run.get("phase", ""), base, sides[0].test, streams, sides[0].leaves_out)
    if found is None:
        return None
    return result.load(found["fio_result"])


def run_hero_test(run: Mapping[str, Any]) -> str | None:
    """The fio test a result's figures are set against (prep in randrw mode: rand_mix; a
    lifecycle run: its headline stage's; a phase not known here: its main operation's)."""
    found = pairing.sides(run)
    return found[0].test if found else None


def compared_stage(run: Mapping[str, Any]) -> str | None:
    """The stage whose figures a run of stages is compared by (the lifecycle: train)."""
    return layout_of(run).headline_stage if run.get("phase") in REGISTRY else None


def compared(run: Mapping[str, Any], fio_res: Result | None) -> dict[str, Any]:
    """The fio side of `aiio compare` for one run: the fio test its phase pairs with
    (`fio_test`, None when none does), the fio result set against it with that result's
    headline per test (`fio_result`, `hero_suite`), and the rows. A run no fio test pairs
    with has no fio counterpart, whichever fio result was given or found."""
    test = run_hero_test(run)
    paired = fio_res if test is not None else None
    return {"fio_test": test, "fio_result": paired.id if paired else None,
            # the suite's headline per test, as it recorded them
            "hero_suite": dict(paired.summary.figures) if paired else {},
            "rows": compare_rows(run, paired)}


def _hero_figures(sides: list[pairing.Side], fio_res: Result | None,
                  fio: IoFigures | None) -> tuple[float | None, float | None]:
    """The % of hero row's two figures over fio's window: the run's with fio's ramp left out
    of its own first seconds; when the run cannot leave it out, its whole-run figure with no
    fio figure beside it."""
    if not sides:
        return None, fio and fio.mib_s
    ramp = pairing.ramp_of(fio_res) if fio_res is not None else 0.0
    mine = sides[0].after_ramp(ramp)
    if mine is None:
        return sides[0].phase_mib_s, None
    return mine, fio and fio.mib_s


def _compared_doc(run: Mapping[str, Any]) -> Result:
    """The run as the phase its figures are compared by: a lifecycle run's headline stage."""
    stage = compared_stage(run)
    return result.model(result.stage_doc(run, stage)) if stage else (
        run if isinstance(run, Result) else result.model(run))


def compare_rows(run: Mapping[str, Any], fio_res: Result | None) -> list[dict[str, Any]]:
    """(figure, phase value, fio value, % of fio) rows: aggregate, per client, latency. With
    no fio result, none holding the test, or no test paired, the fio side of every row is
    None."""
    sides = pairing.sides(run)
    test = run_hero_test(run)  # None: no fio test pairs with its phase
    fio = fio_res.section(test) if fio_res is not None and test else None
    head = headline(run)[0]  # where the phase keeps them (randrw: its mix), latency included
    # the bytes fio counts: training's loaders' side, not what its accelerators consumed
    mine = pairing.delivered_section(_compared_doc(run)) or head
    # with no fio test paired (a phase of stats, say) its own main operation's latency
    op = TEST_OP.get(test, "read") if sides else result.main_op(run)
    spread = mine and mine.per_client_mib_s
    # a client's MiB/s is over its whole run: beside fio's per-job figures only when fio left
    # out no first seconds either
    fspread = fio.per_client_mib_s if fio and pairing.ramp_of(fio_res) == 0 else None
    rows = [("clients / fio jobs", len(run.get("clients", [])),
             len(dig(fio_res, "tests", test, "clients", default=[])) if fio else None, None),
            ("aggregate MiB/s (the % of hero figure)", *_hero_figures(sides, fio_res, fio),
             "MiB/s"),
            # fio's aggregate is last done (its jobs' bytes over the slowest): no first done
            # of fio's to set beside the phase's
            ("aggregate MiB/s, first done", mine and mine.first_done and mine.first_done.mib_s,
             None, "MiB/s"),
            ("per client MiB/s, mean", spread and spread.mean, fspread and fspread.mean, "MiB/s"),
            ("per client MiB/s, min", spread and spread.min, fspread and fspread.min, "MiB/s"),
            (f"{op} latency p50", head and head.p(op, "p50"), fio and fio.main_p("p50"), "ns"),
            (f"{op} latency p99", head and head.p(op, "p99"), fio and fio.main_p("p99"), "ns")]
    out = []
    for name, mine, theirs, unit in rows:
        pct = percent(mine, theirs) if unit == "MiB/s" and mine is not None and theirs else None
        out.append({"figure": name, "phase": mine, "fio": theirs, "unit": unit,
                    "percent": pct, "test": test})
    return out
