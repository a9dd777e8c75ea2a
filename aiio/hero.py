"""The "% of hero" figure: a phase's aggregate next to the matching fio number, same target.

Reads results only, never measures. The hero for a phase is the latest successful fio result on
the same target that holds the matching test: sequential read for train and load, sequential
write for checkpoint, the random mix for prep.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

ABOVE_HERO = 105.0  # % beyond which the hero number, not the phase, is suspect
HERO_TEST = {"train": "seq_read", "load": "seq_read", "checkpoint": "seq_write",
             "prep": "rand_mix"}


def same_target(a: str, b: str) -> bool:
    """Two target paths name the same directory (symlinks and relative paths resolved)."""
    return os.path.realpath(a) == os.path.realpath(b)


def fio_results(results_dir: str | os.PathLike) -> list[tuple[Path, dict[str, Any]]]:
    """Every readable, successful fio result under results_dir, oldest first."""
    found = []
    base = Path(results_dir)
    if not base.is_dir():
        return []
    for path in base.glob("*/result.json"):
        if "-fio-" not in path.parent.name:
            continue  # ids carry their kind: skip loading large run results
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # an unreadable result is no hero; it must not fail a run
        if isinstance(data, dict) and data.get("kind") == "fio" and data.get("status") == "ok":
            found.append((path.parent, data))
    found.sort(key=lambda item: (item[1].get("saved_at", 0), item[1].get("id", "")))
    return found


def hero_for(target_path: str, phase: str, results_dir: str | os.PathLike) -> dict | None:
    """The matching hero aggregate from the latest fio result on this target, or None."""
    test = HERO_TEST.get(phase)
    if test is None:
        return None
    for folder, res in reversed(fio_results(results_dir)):
        path = (res.get("target") or {}).get("path")
        entry = (res.get("tests") or {}).get(test) or {}
        agg = entry.get("aggregate") or {}
        if not path or "mib_s" not in agg or not same_target(path, target_path):
            continue  # a result without the figure is passed over, never fails a run
        return {"test": test, "description": entry.get("description", test),
                "fio_mib_s": agg["mib_s"], "fio_iops": agg.get("iops", 0.0),
                "fio_per_client_mib_s": agg.get("per_client_mib_s", {}).get("mean", 0.0),
                "fio_clients": len(entry.get("clients", [])), "fio_latency": agg.get("latency"),
                "fio_result_id": res.get("id", folder.name), "fio_result": str(folder),
                "fio_version": res.get("fio_version"), "method": res.get("method"),
                "finished": res.get("finished")}
    return None


def phase_mib_s(res: dict[str, Any]) -> float | None:
    """A run's headline aggregate MiB/s, the figure set against the hero number: first done
    (the fair number) for streaming phases, the write rate for checkpoints, reads plus writes
    for data preparation."""
    agg = res.get("aggregate") or {}
    phase = res.get("phase")
    if phase == "checkpoint":
        return _number(agg.get("write_mib_s"))
    if phase == "prep":
        parts = [p for p in (_number(agg.get(k)) for k in ("read_mib_s", "write_mib_s"))
                 if p is not None]
        return sum(parts) if parts else None
    first = agg.get("first_done")
    return float(first["mib_s"]) if isinstance(first, dict) else None


def _number(value: Any) -> float | None:
    """A figure or the mean of a spread of figures (one per checkpoint)."""
    if isinstance(value, dict):
        value = value.get("mean")
    return float(value) if isinstance(value, (int, float)) else None


def percent(value: float, hero: float) -> float | None:
    """value as a percentage of hero; None when there is no hero number to divide by."""
    return 100.0 * value / hero if hero > 0 else None


def hero_entry(res: dict[str, Any], results_dir: str | os.PathLike) -> dict[str, Any]:
    """The `hero` field of a run result: its aggregate as % of the matching fio number."""
    target, phase = res["target"]["path"], res.get("phase", "")
    if phase == "all":
        return _stages_entry(res, results_dir)
    if phase not in HERO_TEST:
        return {"text": f"no fio hero number matches phase {phase!r}"}
    found = hero_for(target, phase, results_dir)
    if found is None:
        return {"text": f"no fio result for this target; run: aiio fio --target {target}",
                "test": HERO_TEST[phase]}
    mine = phase_mib_s(res)
    pct = percent(mine, found["fio_mib_s"]) if mine is not None else None
    return {"test": found["test"], "fio_mib_s": found["fio_mib_s"], "phase_mib_s": mine,
            "percent": pct, "fio_result_id": found["fio_result_id"],
            "fio_clients": found["fio_clients"],
            "text": _hero_text(found, phase, mine, pct, target)}


def _stages_entry(res: dict[str, Any], results_dir: str | os.PathLike) -> dict[str, Any]:
    """The lifecycle run: each stage against its own hero number."""
    stages = {name: hero_entry({"phase": name, "target": res["target"], "aggregate": agg},
                               results_dir)
              for name, agg in (res.get("aggregate") or {}).items()
              if name in HERO_TEST and isinstance(agg, dict)}
    text = "; ".join(f"{name}: {entry['text']}" for name, entry in stages.items())
    return {"stages": stages, "text": text or "no stage of this run has a fio hero number"}


def _hero_text(found: dict[str, Any], phase: str, mine: float | None, pct: float | None,
               target: str) -> str:
    test, fio_id = found["test"], found["fio_result_id"]
    if mine is None:
        return f"this {phase} result has no aggregate MiB/s to set against fio {test}"
    if pct is None:
        return f"fio {test} in {fio_id} measured 0 MiB/s"
    text = (f"{pct:.1f} % of fio {test} ({mine:,.1f} of {found['fio_mib_s']:,.1f} MiB/s, "
            f"{found['fio_clients']} fio jobs, {fio_id})")
    if pct > ABOVE_HERO:
        # a phase cannot really beat fio at its own pattern: the hero is stale or was disturbed
        text += f"; above the hero number: re-run aiio fio --target {target} on a quiet system"
    return text


# --- aiio compare: the phase's figures next to the hero's ----------------------------------

TEST_OP = {"seq_read": "read", "seq_write": "write", "rand_mix": "read"}


def fio_result_for(run: dict[str, Any], run_folder: Path) -> dict[str, Any] | None:
    """The fio result a run was compared with when it ran, else the latest on its target."""
    base = run_folder.parent
    recorded = (run.get("hero") or {}).get("fio_result_id")
    if recorded:
        path = base / recorded / "result.json"
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            pass  # moved or deleted since: fall back to the latest one
    found = hero_for(run["target"]["path"], run.get("phase", ""), base)
    if found is None:
        return None
    return json.loads((Path(found["fio_result"]) / "result.json").read_text())


def compare_rows(run: dict[str, Any], fio_res: dict[str, Any]) -> list[dict[str, Any]]:
    """(figure, phase value, fio value, % of fio) rows: aggregate, per client, latency."""
    test = HERO_TEST.get(run.get("phase", ""), "seq_read")
    entry = fio_res["tests"].get(test)
    if entry is None:
        return []
    agg, fagg = run.get("aggregate") or {}, entry["aggregate"]
    op = TEST_OP.get(test, "read")
    spread, fspread = agg.get("per_client_mib_s") or {}, fagg.get("per_client_mib_s") or {}
    lat, flat = (agg.get("latency") or {}).get(op) or {}, fagg.get("latency") or {}
    rows = [("clients / fio jobs", len(run.get("clients", [])), len(entry["clients"]), None),
            ("aggregate MiB/s (the % of hero figure)", phase_mib_s(run), fagg["mib_s"],
             "MiB/s"),
            ("aggregate MiB/s, last done", (agg.get("last_done") or {}).get("mib_s"),
             fagg["mib_s"], "MiB/s"),
            ("per client MiB/s, mean", spread.get("mean"), fspread.get("mean"), "MiB/s"),
            ("per client MiB/s, min", spread.get("min"), fspread.get("min"), "MiB/s"),
            (f"{op} latency p50", lat.get("p50_ns"), flat.get("p50_ns"), "ns"),
            (f"{op} latency p99", lat.get("p99_ns"), flat.get("p99_ns"), "ns")]
    out = []
    for name, mine, theirs, unit in rows:
        pct = percent(mine, theirs) if unit == "MiB/s" and mine is not None and theirs else None
        out.append({"figure": name, "phase": mine, "fio": theirs, "unit": unit,
                    "percent": pct, "test": test})
    return out
