"""The readers that show a run's figures read them through the typed result model
(aiio.results.result, aiio.results.beside), never by their keys: no string subscript
(`agg["first_done"]`), `.get("mib_s")`, `dig(res, "aggregate", ...)` or `"latency" in d` of a
figure key in the modules listed in COVERED.

A figure key is a key the figure parts of a stored run result hold (its aggregate, clients,
hosts, fio pairing and monitor, at any depth), or the name of such a part, unless the settings
of a run (workload, target, environment, options, timing) or the document's own top level
use the same word: those name settings, which the readers may read by name. The stored results
of every schema (tests/data/results-*) are where the keys are learnt, so a figure a phase adds
is guarded once a stored result of it is checked in.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
DATA = Path(__file__).parent / "data"
COVERED = ("aiio/term/console.py", "aiio/report/run.py", "aiio/report/common.py",
           "aiio/report/kvcache.py", "aiio/report/bandwidth.py", "aiio/report/hosts.py",
           "aiio/report/verdict.py", "aiio/sweep/find_users.py", "aiio/sweep/find_latency.py")
FIGURE_PARTS = ("aggregate", "clients", "hosts", "hero", "monitor")
SETTINGS_PARTS = ("workload", "target", "environment", "options", "timing")
# a client's sections, by name, in the typed model (`ClientFigures.io`, `.totals`)
TYPED_LOOKUPS = {"io", "totals"}
# (module, key): why that read is no figure's
SEARCH_USERS = "the users search's own probe record (each run read through KvFigures)"
SEARCH_LATENCY = "the latency search's own record (each run read through VectorFigures)"
NOT_FIGURES = {
    ("aiio/report/common.py", "min"): "a workload key's declared minimum (field metadata)",
    ("aiio/sweep/find_users.py", "p95"): "the typed KvRun's pooled latency by quantile",
    **{("aiio/sweep/find_users.py", k): SEARCH_USERS for k in ("p95_ms", "verdict")},
    ("aiio/sweep/find_users.py", "folder"): "where the probe's run is saved, which runs_of "
    "adds beside its result (a sweep's points name theirs by the same key)",
    ("aiio/sweep/find_latency.py", "overloaded"): "a word of the verdict said, not a key",
    **{("aiio/sweep/find_latency.py", k): SEARCH_LATENCY for k in (
        "p99_ms", "queries_per_s", "verdict", "goal_ms", "min", "max", "mean")},
}


def _keys(value: object, into: set[str]) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            if key.isidentifier():  # not a histogram's bucket numbers
                into.add(key)
            _keys(inner, into)
    elif isinstance(value, list):
        for inner in value:
            _keys(inner, into)


@cache
def figure_keys() -> frozenset[str]:
    figures, settings = {p for p in FIGURE_PARTS if p != "clients"}, set()
    for path in DATA.glob("results-*/**/result.json"):
        doc = json.loads(path.read_text())
        if doc.get("kind", "run") != "run":
            continue
        for part, value in doc.items():
            _keys(value, figures if part in FIGURE_PARTS else
                  settings if part in SETTINGS_PARTS else set())
            if part not in FIGURE_PARTS:
                settings.add(part)
    return frozenset(figures - settings)


def _read_keys(node: ast.AST) -> list[str]:
    """The constant keys one node reads by name: d["k"], d.get("k"), dig(d, "k", ...),
    "k" in d."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        typed = isinstance(node.value, ast.Attribute) and node.value.attr in TYPED_LOOKUPS
        return [] if typed else [node.slice.value]
    if isinstance(node, ast.Call):
        name = getattr(node.func, "attr", getattr(node.func, "id", ""))
        args = node.args if name == "dig" else node.args[:1] if name == "get" else []
        return [a.value for a in args if isinstance(a, ast.Constant)]
    if isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and \
            any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
        return [node.left.value]
    return []


def figure_reads(module: str, source: str) -> Iterator[str]:
    """'line: key' of each figure key the module's source reads by name."""
    for node in ast.walk(ast.parse(source)):
        for key in _read_keys(node):
            if isinstance(key, str) and key in figure_keys() and \
                    (module, key) not in NOT_FIGURES:
                yield f"{node.lineno}: {key}"


def test_the_keys_learnt_are_figures_not_settings() -> None:
    keys = figure_keys()
    assert {"first_done", "mib_s", "latency", "p99_ns", "aggregate", "storage_time",
            "queries_per_s", "cpu_percent_mean", "fio_mib_s"} <= keys
    assert not {"path", "fstype", "name", "method", "status", "workload"} & keys


def test_a_figure_read_by_its_key_is_found() -> None:
    source = ('def f(agg, v, res):\n    a = agg["first_done"]["mib_s"]\n'
              '    b = v.get("latency")\n    c = dig(res, "aggregate", "jain")\n'
              '    d = "p99_ns" in v\n    return c.io["read"], res["target"]["path"]\n')
    assert sorted(figure_reads("m.py", source)) == sorted([
        "2: first_done", "2: mib_s", "3: latency", "4: aggregate", "4: jain", "5: p99_ns"])


@pytest.mark.parametrize("module", COVERED)
def test_a_reader_reads_no_figure_by_its_key(module: str) -> None:
    found = list(figure_reads(module, (ROOT / module).read_text()))
    assert not found, f"{module} reads figures by their keys: {found}"


@pytest.mark.parametrize(("key", "junk"), [("first_done", 7), ("latency", 3),
                                           ("per_client_mib_s", [1, 2])])
def test_a_damaged_headline_section_says_so_rather_than_show_dashes(key: str, junk: object) -> None:
    from aiio import report
    from aiio.results import result

    doc = json.loads((DATA / "results-v3" / "20261203-062406-train-demo-c2" /
                      "result.json").read_text())
    doc["aggregate"][key] = junk
    page = report.render(result.model(doc))
    assert "The headline section could not be drawn" in page
    assert key in page.split("The headline section could not be drawn")[1].split("</")[0]
