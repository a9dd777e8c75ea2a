"""Phases are written once: no switch on the kind of target ("s3:", is_s3, s3://, fstype "s3")
or on a phase's name in the code a run goes through, outside the s3 engine and target and the
one place the runner picks the engine (aiio.engines.choose). What remains is listed here, each
with why."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import aiio
from aiio.phases import PHASES

PACKAGE = Path(aiio.__file__).parent
# The code a run goes through: the phases, the engines, the runner and its processes, the
# measuring seam and the target. Readers of results (above) and aiio/s3 (the bucket's own
# target and I/O, and its phase subclasses until they go) are not in it.
RUN_PATH = ["phases", "engines", "run/runner.py", "run/hosts.py", "run/memcheck.py",
            "run/clients.py", "run/forked.py", "run/comm.py", "run/procsetup.py",
            "storage/target.py", "storage/dataset.py", "honesty.py"]
# The engine's own module, and the one place a target picks an engine.
ALLOWED = {"aiio/engines/s3.py", "aiio/engines/__init__.py"}
# Switches still there, per file: each goes with the subclass that needs it.
REMAINING = Counter({
    # the runner opens an s3:// target as the bucket's (the target, not the engine: its
    # checks and its description for the result)
    "aiio/run/runner.py": 1,
    # a worker host describes an s3:// target without asking the service
    "aiio/run/hosts.py": 1,
    # prep hands its randrw mode to the randrw phase (a workload mode, not a backend)
    "aiio/phases/prep.py": 2,
    "aiio/phases/lifecycle.py": 1,
    # no switch: the vector phase lists [s3] among the workload sections it reads (its index
    # is written in calls of s3.part_size on a mount too)
    "aiio/phases/vector.py": 1,
})


def switches(source: str) -> int:
    """How many places in `source` switch on the kind of target or on a phase's name."""
    found = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id in ("is_s3", "OBJECT_PREFIX"):
            found += isinstance(node.ctx, ast.Load)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += node.value in ("s3:", "s3") or node.value.startswith("s3://")
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            found += any(isinstance(s, ast.Constant) and s.value in PHASES for s in sides)
    return found


def run_path_switches() -> Counter:
    files = [p for part in RUN_PATH for p in sorted((PACKAGE / part).rglob("*.py"))
             if (PACKAGE / part).is_dir()] + [PACKAGE / f for f in RUN_PATH if f.endswith(".py")]
    out = Counter()
    for path in files:
        name = str(path.relative_to(PACKAGE.parent))
        if name not in ALLOWED and (n := switches(path.read_text())):
            out[name] = n
    return out


def test_no_new_switch_on_the_target_or_the_phase_in_the_run_path():
    # more than listed: a new switch (ask the engine's capabilities instead); fewer: one
    # went, so the list shrinks with it
    assert run_path_switches() == REMAINING


def test_the_guard_sees_each_kind_of_switch():
    assert switches("from aiio.s3.location import is_s3\nif is_s3(t): pass\n") == 1
    assert switches('name = OBJECT_PREFIX + "load"\n') == 1
    assert switches('if url.startswith("s3://"): pass\n') == 1
    assert switches('if info.fstype == "s3": pass\n') == 1
    assert switches('if phase.name == "checkpoint": pass\n') == 1
    assert switches('if eng.caps.partial_overwrite: pass\n') == 0
