"""The Phase contract: every registered phase declares what the runner, the CLI, fio and the
console need; a phase added with one registry line runs end to end; randrw is its own phase,
and prep in randrw mode is still the same run with the same figures."""

from __future__ import annotations

import ast
import dataclasses
import shutil
import sys
import types
from pathlib import Path

import pytest

from aiio.cli import _command
from aiio.cli.run import PHASE_OPTIONS, option_phases, phase_sets
from aiio.errors import ConfigError
from aiio.fio import emit, hero, pairing
from aiio.fio.suite import HERO_TESTS
from aiio.options import RunOptions
from aiio.phases import REGISTRY, get_phase, phase_of, result_layout
from aiio.phases.base import Phase
from aiio.results import charts, figures, result
from aiio.results.layout import index_of
from aiio.run import runner
from aiio.sweep import per_point
from aiio.term import console
from aiio.ui import QuietUI
from aiio.workload import Workload

from .conftest import tiny_workload

HOOKS = ("prepare", "client", "summarize")  # no default can do these for a phase


def _keeps_the_contract(phase: Phase) -> None:
    assert isinstance(phase, Phase), f"{phase!r} lacks part of the Phase contract"
    for hook in HOOKS:
        assert getattr(type(phase), hook) is not getattr(Phase, hook), (phase.name, hook)
    assert set(phase.cli_options) <= set(PHASE_OPTIONS), phase.cli_options
    assert phase.hero_test is None or phase.hero_test in HERO_TESTS
    assert phase.fio_job is None or callable(getattr(emit, phase.fio_job))
    assert callable(getattr(console, phase.console))
    for declared in (phase.duration_key, phase.streams_key):
        if declared is not None:
            section, key = declared
            assert key in {f.name for f in dataclasses.fields(getattr(Workload(), section))}
    assert callable(getattr(pairing, phase.hero_pairing))
    assert phase.judged_on in per_point.JUDGES and phase.judged_on in charts.JUDGED
    assert set(phase.stages) <= set(REGISTRY) and phase.headline_stage in (None, *phase.stages)


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_registered_phase_keeps_the_contract(name: str) -> None:
    phase = get_phase(name)
    assert phase.name == name
    _keeps_the_contract(phase)


def test_every_phase_is_the_same_on_a_bucket_but_for_its_memory() -> None:
    for name in REGISTRY:
        mount = get_phase(name)
        bucket = mount.on_objects()
        assert bucket.object_store and not mount.object_store
        assert type(bucket) is type(mount)  # the same code: no subclass of its own
        _keeps_the_contract(bucket)


def test_the_cli_names_every_phase_and_refuses_others(capsys) -> None:
    assert _command(["run", "--phase", "nope"], None) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert all(name in err for name in REGISTRY)


@pytest.mark.parametrize("command", ["run", "scale"])
def test_the_help_lists_every_registered_phase(command: str) -> None:
    from click.testing import CliRunner

    from aiio.cli import cli

    text = " ".join(CliRunner().invoke(cli, [command, "--help"]).output.split())
    assert all(f"{name}," in text or f"{name} " in text for name in REGISTRY), text


@pytest.mark.parametrize("option", PHASE_OPTIONS)
def test_a_phase_option_applies_exactly_where_phases_declare_it(option: str) -> None:
    assert option_phases(option), f"no phase takes {option}"
    value = "1" if option != "stagger" else "0.1s"
    for name in REGISTRY:
        if option in get_phase(name).cli_options:
            assert phase_sets(name, **{option: value})
        else:
            with pytest.raises(ConfigError, match="does not apply to the"):
                phase_sets(name, **{option: value})


def test_the_main_operation_and_hero_test_come_from_the_phase() -> None:
    """What figures.MAIN_OP and hero.HERO_TEST held, each phase now declares."""
    assert {n: get_phase(n).main_op for n in REGISTRY} == {
        "train": "read", "prep": "read", "randrw": "read", "checkpoint": "write",
        "load": "read", "kvcache": "read", "vector": "read", "all": "read"}
    assert {n: hero.hero_test(n) for n in REGISTRY} == {
        "train": "seq_read", "prep": "seq_read", "randrw": "rand_mix",
        "checkpoint": "seq_write", "load": "seq_read", "kvcache": None, "vector": "rand_read",
        "all": None}


def test_prep_in_randrw_mode_runs_the_randrw_phase() -> None:
    shards, mix = tiny_workload(), tiny_workload(prep__mode="randrw")
    prep, randrw = get_phase("prep"), get_phase("randrw")
    assert prep.variant(shards) is prep and prep.variant(mix) is randrw
    assert randrw.variant(shards) is randrw  # --phase randrw needs no mode
    assert emit.emitter_for("prep", mix) is emit.emitter_for("randrw", shards)
    assert emit.emitter_for("prep", shards) is emit.prep_job


# --- end to end ---------------------------------------------------------------------------

def _run(phase: str, w: Workload, target: Path, results: Path) -> dict:
    res, folder = runner.run(runner.RunRequest(phase, w, str(target), str(results),
                                               hero=hero.Pairing(results)))
    assert res["status"] == "ok"
    return result.load(folder)


def test_randrw_is_the_same_run_under_either_name(target: Path, results: Path) -> None:
    """`--phase randrw` and `--phase prep` with prep.mode = randrw: the same figures, read the
    same way by every reader; only the phase name they were asked by differs."""
    w = tiny_workload(prep__mode="randrw", prep__file_size="2MiB", prep__duration="300ms",
                      prep__threads=2)
    by_prep, by_name = _run("prep", w, target, results), _run("randrw", w, target, results)
    assert (by_prep["phase"], by_name["phase"]) == ("prep", "randrw")
    for res in (by_prep, by_name):
        agg = res["aggregate"]
        assert phase_of(res) is get_phase("randrw") and agg["mode"] == "randrw"
        reads = agg["read"]["latency"]["read"]["count"]
        assert reads > 0 and agg["read_bytes"] == 4096 * reads
        assert [s.test for s in pairing.sides(res)] == ["rand_mix"]
        assert pairing.streams_per_client(res) == 2
        assert per_point.point_figures(res["phase"], agg).headline_mib_s == \
            pytest.approx(agg["read"]["first_done"]["mib_s"] + agg["write"]["first_done"]["mib_s"])
        assert [t.title.split(":")[0] for t in console.phase_tables(res)] == \
            [("prep randrw" if res["phase"] == "prep" else "randrw"), "per client"]
    assert by_prep["aggregate"].keys() == by_name["aggregate"].keys()
    assert by_prep["clients"][0].keys() == by_name["clients"][0].keys()
    assert figures.run_figures(by_prep).keys() == figures.run_figures(by_name).keys()
    assert not (target / "aiio" / "prep").exists()


def test_a_phase_registered_with_one_line_runs_end_to_end(target: Path, results: Path,
                                                          monkeypatch) -> None:
    from . import readback_phase

    monkeypatch.setitem(REGISTRY, "readback", "tests.readback_phase")
    _keeps_the_contract(get_phase("readback"))
    w = tiny_workload()
    res = _run("readback", w, target, results)
    agg = res["aggregate"]
    assert agg["bytes"] == w.run.clients * readback_phase.FILE_SIZE
    assert [c["bytes"] for c in res["clients"]] == [readback_phase.FILE_SIZE] * w.run.clients
    assert figures.run_figures(res)["aggregate_mib_s"] > 0
    assert console.phase_tables(res)[0].title.startswith("readback:")
    assert res["hero"]["text"] == "no fio hero number matches phase 'readback'"
    with pytest.raises(ConfigError, match="no fio job for phase 'readback'"):
        emit.emitter_for("readback", w)
    assert not (target / "aiio" / "readback").exists()


class _HeroUI(QuietUI):
    """Keeps the fio figure the live view was given to hold the run against."""

    hero: dict | None = None

    def start(self, label: str, total: int | None, clients: int, *,
              compute_s: float | None = None, hero: dict | None = None) -> None:
        self.hero = hero


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_a_randrw_run_is_held_against_the_random_mix_only(target: Path, results: Path,
                                                          capsys) -> None:
    """With a real fio result holding seq_read but no rand_mix, a randrw run has no hero
    number: not live (it was shown against seq_read), and `aiio compare` names the missing
    rand_mix (it named seq_read, which the result has)."""
    assert _command(["fio", "--target", str(target), "--results", str(results), "--clients",
                     "2", "--runtime", "300ms", "--ramp-time", "0", "--size", "4MiB",
                     "--tests", "seq_read", "--quiet"], None) == 0
    [fio_folder] = [p for p in results.iterdir() if "-fio-" in p.name]
    w = tiny_workload(prep__mode="randrw", prep__file_size="2MiB", prep__duration="200ms")
    ui = _HeroUI()
    res, folder = runner.run(runner.RunRequest("prep", w, str(target), str(results),
                                               hero=hero.Pairing(results)), ui)
    assert ui.hero is None
    assert res["hero"]["test"] == "rand_mix" and "percent" not in res["hero"]
    capsys.readouterr()
    assert _command(["compare", str(folder), "--fio", str(fio_folder)], None) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "has no rand_mix test" in out and "seq_read" not in out


def test_the_lifecycle_runs_prep_in_randrw_mode_as_the_randrw_phase(target: Path,
                                                                    results: Path) -> None:
    w = tiny_workload(prep__mode="randrw", prep__file_size="2MiB", prep__duration="200ms",
                      checkpoint__size="4MiB", load__size="2MiB")
    res, folder = runner.run(runner.RunRequest("all", w, str(target), str(results),
                                               options=RunOptions(verify=True)))
    assert res["status"] == "ok"
    prep = res["aggregate"]["prep"]
    assert prep["mode"] == "randrw" and prep["verify"]["mismatches"] == 0
    assert prep["verify"]["blocks_checked"] == prep["read"]["latency"]["read"]["count"] > 0
    assert all(c["prep"]["fsync_s"] >= 0 for c in res["clients"])  # randrw's own figure
    titles = [t.title.split(":")[0] for t in console.phase_tables(result.load(folder))]
    assert titles[0] == "prep randrw" and "train" in titles and "load" in titles
    assert not (target / "aiio" / "prep").exists()


class _ScanPhase(Phase):
    """A phase whose one I/O stream sits under its own key, not where train keeps its reads."""

    name = "scan"

    def io_sections(self, part, client):
        return {"scan": ("scan",)}


def _as_saved(doc: dict) -> dict:
    """The document with the layout its phase declares recorded, as the runner saves it."""
    return {**doc, "schema": result.SCHEMA, "io": index_of(result_layout(doc), doc)}


def test_the_result_model_reads_io_sections_where_the_phase_declares_them(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "scan_phase", types.SimpleNamespace(PHASE=_ScanPhase()))
    monkeypatch.setitem(REGISTRY, "scan", "scan_phase")
    window = {"seconds": 2.0, "bytes": 4 * 2**20, "mib_s": 2.0}
    doc = {"kind": "run", "phase": "scan",
           "aggregate": {"scan": {"first_done": window, "last_done": window, "bytes": 4 * 2**20}},
           "clients": [{"client": 0, "scan": {"bytes": 4 * 2**20, "elapsed_s": 2.0, "mib_s": 2.0}}]}
    saved = _as_saved(doc)
    monkeypatch.delitem(REGISTRY, "scan")  # read back, the result needs no phase: its own index
    run = result.model(saved)
    assert list(run.io) == ["scan"] and run.section("scan").last_done.mib_s == 2.0
    assert list(run.clients[0].io) == ["scan"] and run.clients[0].io["scan"].bytes == 4 * 2**20


def _scan_result() -> dict:
    """A run of the scan phase with two clients, its figures where the phase declares them."""
    window = {"seconds": 2.0, "bytes": 8 * 2**20, "mib_s": 4.0}
    lat = {"p50_ns": 1000, "p99_ns": 5000, "max_ns": 9000}
    clients = [{"client": k, "host": "h", "pid": 1, "cpu_s": 0.1, "elapsed_s": 2.0,
                "bytes": 4 * 2**20, "scan": {"bytes": 4 * 2**20, "ops": 4, "elapsed_s": 2.0,
                                              "mib_s": 2.0, "latency": lat}} for k in (0, 1)]
    spread = {"mean": 2.0, "min": 2.0, "max": 2.0, "stdev": 0.0, "cv": 0.0, "n": 2}
    return {"kind": "run", "phase": "scan", "method": "o_direct",
            "workload": {"workload": {"name": "demo"}}, "target": {"path": "/t", "fstype": "x"},
            "aggregate": {"scan": {"first_done": window, "last_done": window, "jain": 1.0,
                                   "per_client_mib_s": spread, "latency": {"read": lat},
                                   "bytes": 8 * 2**20, "ops": 8}, "bytes": 8 * 2**20},
            "clients": clients}


def test_the_console_draws_a_phase_from_the_sections_it_declares(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "scan_phase", types.SimpleNamespace(PHASE=_ScanPhase()))
    monkeypatch.setitem(REGISTRY, "scan", "scan_phase")
    head, per_client = console.phase_tables(_as_saved(_scan_result()))
    rows = dict(zip(head.columns[0].cells, head.columns[1].cells, strict=True))
    assert rows["bytes"] == "8.00 MiB" and rows["aggregate, first / last done"] == \
        "4.0 / 4.0 MiB/s"
    assert list(per_client.columns[1].cells) == ["2.0", "2.0"]  # each client's MiB/s
    assert list(per_client.columns[6].cells) == ["5.0 us", "5.0 us"]  # and its p99


# Phase names as string literals compared with a phase, or as the keys of a table, outside the
# phases: each is a switch that adding a phase would have to find and edit.
PHASE_NAMES = set(REGISTRY)
PACKAGE = Path(result.__file__).parent
# Sizing reads exactly the train and checkpoint results its model takes; no other phase can
# stand in for them, so naming them there is the contract of `aiio size --from`.
# The layouts of /1 and /2 results are a frozen table by phase name: a phase added later
# writes /3 results, which record their own layout. So are the workload sections of history
# records that did not say which their phase read: records written since say.
SWITCHES_ALLOWED = {"sizing/basis.py", "layout.py"}  # paths below aiio/results


def _names_in(node: ast.AST) -> set[str]:
    values = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return {v.value for v in values if isinstance(v, ast.Constant) and v.value in PHASE_NAMES}


def _phase_switches(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            named = [s for s in sides if _names_in(s)]
            asked = [s for s in sides if not _names_in(s) and "phase" in ast.unparse(s)]
            if named and asked:
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Dict):
            keys = [k for k in node.keys if k is not None and _names_in(k)]
            if len(keys) >= 2:
                found.append(f"line {node.lineno}: a table keyed by phase names")
    return found


def test_no_layer_outside_the_phases_switches_on_a_phase_name() -> None:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(("phases/", "s3/")) or rel in SWITCHES_ALLOWED:
            continue
        switches = _phase_switches(ast.parse(path.read_text()))
        if switches:
            found[rel] = switches
    assert not found, "ask the phase (aiio/phases/base.py) instead:\n" + "\n".join(
        f"{rel}: {s}" for rel, lines in found.items() for s in lines)


def test_the_phase_switch_finder_finds_a_switch() -> None:
    assert _phase_switches(ast.parse('if res.get("phase") in ("prep", "randrw"): pass'))
    assert _phase_switches(ast.parse('T = {"train": 1, "load": 2}'))
    assert not _phase_switches(ast.parse('if mode == "train": pass'))
