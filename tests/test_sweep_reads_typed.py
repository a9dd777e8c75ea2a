"""A sweep reads each point's run through the typed result (aiio.results.result: `Result`, its
sections and figures), never by the keys the run's figures are recorded under; the figures a
phase adds to the table are the ones it declares (`Phase.sweep_extras`), read off the typed
result, with no switch on a phase's or a section's name. What still reads a recorded key is
listed here, each with why."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import aiio
from aiio.phases import PHASES, get_phase
from aiio.results import parts

from .test_engine_switches import switches

PACKAGE = Path(aiio.__file__).parent
# Keys a run's figures are recorded under (its aggregate, its I/O sections, its checkpoints,
# a vector or KV-cache run's figures, a client's entry, the run's monitor and warnings). The
# sweep's own table, verdict and search keep keys of their own; those are not here.
RUN_FIGURE_KEYS = frozenset({
    "aggregate", "first_done", "last_done", "mib_s", "per_client_mib_s", "jain", "histograms",
    "series_mib_s", "read", "write", "delivered", "read_bytes", "write_bytes", "vector",
    "kvcache", "pooled", "goals", "checkpoint", "checkpoints", "first_done_s", "last_done_s",
    "last_ready_s", "metadata", "ops_s", "step_log", "step_log_stride", "monitor",
    "cpu_percent_mean", "cpu_percent_max", "warnings", "hosts", "environment", "ram_bytes"})
# Reads of such a key still there, per file: each is of the sweep's own figures, not a run's.
REMAINING = Counter({
    # the verdict's plateau and peak (its own output) hold their aggregate as mib_s
    "aiio/sweep/verdict.py": 3,
    # the MLPerf summary's own count of checkpoints timed (marks() reads the summary it made)
    "aiio/sweep/mlperf_rules.py": 1,
})


def key_reads(source: str) -> list[str]:
    """Where `source` reads a run's figure by its key: x["key"], x.get("key"), "key" in x."""
    found = []
    for node in ast.walk(ast.parse(source)):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            key = node.slice
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("get", "setdefault", "pop") and node.args:
            key = node.args[0]
        elif isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn)
                                                   for op in node.ops):
            key = node.left
        if isinstance(key, ast.Constant) and key.value in RUN_FIGURE_KEYS:
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


# Switches on a phase's name (test_engine_switches.switches) still in aiio/sweep, per file.
PHASE_SWITCHES = Counter({
    # MLPerf Storage has two benchmarks: `aiio mlperf` runs training or checkpointing by the
    # workload it is given, and names the phase it runs
    "aiio/sweep/mlperf.py": 2,
    # marks() reads the MLPerf summary it made, whose rules differ for its two benchmarks
    "aiio/sweep/mlperf_rules.py": 1,
    # the settings a CLOSED submission fixes differ for training and checkpointing
    "aiio/sweep/mlperf_checks.py": 1,
})


def sweep_key_reads() -> Counter:
    out = Counter()
    for path in sorted((PACKAGE / "sweep").rglob("*.py")):
        if reads := key_reads(path.read_text()):
            out[str(path.relative_to(PACKAGE.parent))] = len(reads)
    return out


def test_the_sweep_reads_no_run_figure_by_its_key():
    # more than listed: read it off the typed result instead (add a typed figure to the model
    # if it has none); fewer: one went, so the list shrinks with it
    assert sweep_key_reads() == REMAINING, {
        str(p.relative_to(PACKAGE.parent)): key_reads(p.read_text())
        for p in sorted((PACKAGE / "sweep").rglob("*.py")) if key_reads(p.read_text())}


def test_the_guard_sees_each_kind_of_read():
    assert len(key_reads('x = view["first_done"]["mib_s"]\n')) == 2
    assert key_reads('if "vector" in agg: pass\n')
    assert key_reads('h = view.get("histograms", {})\n')
    assert not key_reads('agg["first_done"] = 1\n')  # writing the sweep's own document
    assert not key_reads('n = point["clients"]\nrow = run.section("read")\n')


def test_every_figure_a_phase_names_for_its_sweep_is_one_the_model_has():
    named = [key for name in PHASES for key, _, _ in get_phase(name).sweep_extras]
    assert named and all(key in parts.NAMED for key in named)


def test_the_sweep_switches_on_no_phase_name():
    # how a phase is judged and what it adds to the table are its declarations
    # (Phase.judged_on, Phase.sweep_extras)
    found = Counter({str(p.relative_to(PACKAGE.parent)): n
                     for p in sorted((PACKAGE / "sweep").rglob("*.py"))
                     if (n := switches(p.read_text()))})
    assert found == PHASE_SWITCHES
