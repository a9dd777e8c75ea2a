"""The HTML report: written by every run, re-rendered by `aiio report`, readable when the result
is damaged, and loaded in a real headless Chromium without a single console message."""

from __future__ import annotations

import copy
import html
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from aiio import report, stats
from aiio.report import series as sr
from aiio.results import result
from aiio.units import format_rate

from .conftest import REPO, TINY_ARGS, TINY_DATA, call_cli, run_cli
from .devtools import Browser, find_chromium, png_size
from .mpi import mpi_run, needs_mpi

CHROMIUM = find_chromium()
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                                    "(.ci/run installs Debian's chromium package)")


# --- real runs, shared by the module -------------------------------------------------------

@pytest.fixture(scope="module")
def area(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("report")
    (base / "target").mkdir()
    return base


def _run(area: Path, *extra: str) -> Path:
    """One real tiny training run through the CLI; returns its result folder."""
    before = set((area / "reports").glob("*/"))
    out = run_cli("run", "--target", str(area / "target"), "--results", str(area / "reports"),
                  *TINY_ARGS, "-q", *extra)
    assert out.returncode == 0, out.stderr
    (folder,) = set((area / "reports").glob("*/")) - before  # folders: a history may be there
    return folder


@pytest.fixture(scope="module")
def run2(area: Path) -> Path:
    return _run(area)


@pytest.fixture(scope="module")
def run1(area: Path, run2: Path) -> Path:
    return _run(area, "--clients", "1")


@pytest.fixture(scope="module")
def interrupted(area: Path, run2: Path) -> Path:
    """A run stopped with Ctrl-C (SIGINT to its process group) while its clients read."""
    results = area / "interrupted"
    proc = subprocess.Popen([sys.executable, "-m", "aiio", "run", "--target",
                             str(area / "target"), "--results", str(results), *TINY_ARGS,
                             "--duration", "60s", "-q"], cwd=REPO, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    # The dataset exists already (run2), so child processes mean the clients are running.
    while len(psutil.Process(proc.pid).children()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.8)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    (folder,) = results.glob("*/")
    return folder


@pytest.fixture(scope="module")
def sweep(area: Path, run2: Path) -> Path:
    """A real sweep over 1 and 2 clients through `aiio scale`; returns its folder."""
    results = area / "sweeps"
    out = run_cli("scale", "--target", str(area / "target"), "--results", str(results),
                  *TINY_DATA, "--batch-size", "2", "--clients", "1,2", "--duration", "1s",
                  "--no-charts", "-q")
    assert out.returncode == 0, out.stderr
    (folder,) = results.glob("*/")
    assert f"report: {folder / 'report.html'}" in out.stdout
    return folder


def partial(sweep: dict) -> dict:
    """The sweep as it is saved before it is judged (cut short): no table, no verdict."""
    return dict(sweep, status="interrupted", error="at 2 clients: interrupted by the user",
                table=[], verdict={}, warnings=[])


@pytest.fixture(scope="module")
def acceptance(area: Path, run2: Path) -> Path:
    """A real `aiio accept` of a spec with one check that passes and one that cannot."""
    tiny = (REPO / "workloads" / "acceptance" / "tiny.toml").read_text()
    impossible = tiny[tiny.index("[[check]]"):].replace('name = "train-tiny"',
                                                         'name = "train-impossible"')
    impossible = impossible.replace("min_aggregate_mib_s = 0.01", "min_aggregate_mib_s = 1e9")
    spec = area / "spec.toml"
    spec.write_text(tiny + "\n" + impossible)
    results = area / "accept"
    out = run_cli("accept", str(spec), "--target", str(area / "target"), "--results",
                  str(results), "-q")
    assert out.returncode == 1, out.stderr  # one check fails
    (folder,) = [f for f in results.glob("*/") if "-accept-" in f.name]
    return folder


def accept_result(r2: dict) -> dict:
    """An acceptance run in the shape docs/RESULTS.md gives kind "accept", its figures taken
    from a real run."""
    agg = r2["aggregate"]
    measured = {"aggregate_mib_s": agg["first_done"]["mib_s"], "au_min": agg["au_min"],
                "p99_ms": agg["latency"]["read"]["p99_ns"] / 1e6}
    checks = []
    for name, threshold, figure, op, need in (
            ("train-2-au", "min_au", "au_min", ">=", 0.9),
            ("train-2-bandwidth", "min_aggregate_mib_s", "aggregate_mib_s", ">=", 0.5),
            ("train-2-p99", "max_p99_ms", "p99_ms", "<=", 5000.0)):
        got = measured[figure]
        ok = got >= need if op == ">=" else got <= need
        checks.append({
            "name": name, "description": f"{figure} {op} {need}", "phase": "train",
            "workload": "demo", "clients": 2, "status": "pass" if ok else "fail",
            "measured": measured, "required": {threshold: need},
            "verdicts": [{"threshold": threshold, "figure": figure, "op": op, "required": need,
                          "measured": got, "pass": ok}],
            "failures": [] if ok else [f"{figure} {got:.3g} {op} {need:g} failed"],
            "reason": "" if ok else "a threshold failed", "result_id": r2["id"],
            "warnings": r2["warnings"], "seconds": 1.5,
            "regressions": [{"figure": figure, "value": got, "baseline": got * 1.3,
                             "change": -0.23, "runs": 5,
                             "message": f"{figure} is 23 % below its baseline"}]
            if name == "train-2-bandwidth" else []})
    checks.append({"name": "crashed-check", "status": "error", "measured": {}, "required": {},
                   "verdicts": [], "failures": [], "result_id": None,
                   "reason": "target /nowhere does not exist"})
    return {"schema": result.SCHEMA, "kind": "accept", "id": "accept-example",
            "spec": "example", "spec_path": "workloads/acceptance/example.toml",
            "description": "the report test's spec", "target": r2["target"]["path"],
            "status": "fail", "error": None, "started": r2["started"],
            "finished": r2["finished"], "environment": r2["environment"],
            "passed": sum(c["status"] == "pass" for c in checks),
            "failed": sum(c["status"] == "fail" for c in checks), "errors": 1,
            "not_run": [], "history": None, "checks": checks}


HISTORY = [
    {"check": "train-2-au", "time": f"2026-11-{d:02d}T02:00:00", "figure": "au_min",
     "value": v, "passed": v >= 0.9, "regression": d == 7}
    for d, v in ((1, 0.97), (2, 0.96), (3, 0.97), (4, 0.95), (5, 0.96), (6, 0.97), (7, 0.91))
] + [
    {"check": "train-2-bandwidth", "time": 1796000000 + 86400 * i, "figure": "mib_s",
     "value": 100.0 + i, "passed": True, "regression": False} for i in range(5)
]


# --- every run writes a report -----------------------------------------------------------

def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_run_writes_report_beside_result(run2: Path) -> None:
    page = _text(run2 / "report.html")
    res = result.load(run2)
    assert page.startswith("<!DOCTYPE html>")
    assert res["id"] in page
    # The answer first: the verdict, the warnings and the headline figures, then the
    # configuration.
    assert page.index('id="verdict"') < page.index('id="warnings"') \
        < page.index("Headline figures") < page.index("What was measured")
    assert page.count("<svg") >= 6  # 2 bandwidth, 2 latency (read, open), AU, wait per step
    assert "could not be drawn" not in page
    for c in res["clients"]:
        assert f"{c['mib_s']:,.1f} MiB/s" in page
    assert "first done" in page and "Jain" in page and "AU verdict" in page


def test_run_verdict_states_the_goal_and_the_headline_figures(run2: Path) -> None:
    res = result.load(run2)
    page = _text(run2 / "report.html")
    verdict = page[page.index('id="verdict"'):page.index('id="warnings"')]
    agg = res["aggregate"]
    word = "PASS" if agg["au_pass"] else "FAIL"
    assert f"{word}:" in verdict and f"{agg['au_goal'] * 100:.0f} %" in verdict
    assert f"{agg['first_done']['mib_s']:,.1f} MiB/s" in verdict
    assert "aggregate MiB/s (first done)" in verdict and "AU of the least busy client" in verdict


def test_unset_values_read_not_set(run2: Path) -> None:
    """train.duration is unset (the run goes by epochs): it reads "not set", never "0.000 s",
    in the workload table and in the whole resolved workload."""
    res = result.load(run2)
    assert res["workload"]["train"]["duration"] == 0
    page = _text(run2 / "report.html")
    assert re.search(r">duration</td><td[^>]*>not set<", page)
    assert re.search(r"&#160;duration</td><td[^>]*>not set<", page)
    assert "0.000 s" not in page


def test_report_is_self_contained(run2: Path) -> None:
    page = _text(run2 / "report.html")
    assert not re.search(r"""(src|href)\s*=\s*["'](?!data:|#)""", page)
    assert "http://" not in page.replace("http://www.w3.org", "")
    assert "https://" not in page
    assert "default-src 'none'" in html.unescape(page)  # the browser refuses any fetch


def test_no_report_flag(area: Path, run2: Path) -> None:
    folder = _run(area, "--no-report")
    assert (folder / "result.json").exists()
    assert not (folder / "report.html").exists()


def test_report_failure_keeps_the_result(run2: Path, tmp_path: Path, capsys) -> None:
    from aiio.cli.run import write_report

    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "report.html").mkdir()  # the page cannot replace a directory
    assert write_report(result.load(run2), folder) == []
    err = capsys.readouterr().err
    assert "warning: report.html not written" in err and f"aiio report {folder}" in err


def test_report_command_rerenders(run2: Path, tmp_path: Path) -> None:
    (run2 / "report.html").unlink()
    # each render in a process of its own, as a user runs it: the charts' clip-path ids come
    # from a per-process counter, so two renders in one process differ byte for byte
    out = run_cli("report", str(run2))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"report: {run2 / 'report.html'}"
    assert (run2 / "report.html").exists()
    other = tmp_path / "elsewhere" / "page.html"
    out = run_cli("report", str(run2 / "result.json"), "-o", str(other))
    assert out.returncode == 0, out.stderr
    assert _text(other) == _text(run2 / "report.html")


def test_report_without_charts_keeps_every_table(run2: Path, tmp_path: Path) -> None:
    # --no-charts: the same page, each chart named where it would be, in a fraction of the time
    full, quick = tmp_path / "full.html", tmp_path / "quick.html"
    for page, extra in ((full, ()), (quick, ("--no-charts",))):
        out = call_cli("report", str(run2), "-o", str(page), *extra)
        assert out.returncode == 0, out.stderr
    full_text, quick_text = _text(full), _text(quick)
    assert "<svg" in full_text and "<svg" not in quick_text
    assert quick_text.count("chart not drawn (--no-charts)") == full_text.count("<svg")
    assert re.findall(r"<table.*?</table>", quick_text, re.S) == \
        re.findall(r"<table.*?</table>", full_text, re.S)


STORED_TRAIN = Path(__file__).parent / "data" / "results-v1" / "20261130-230529-train-demo-c2"


@pytest.mark.parametrize("args, message", [
    ((), "nothing to report"),
    (("/no/such/result",), "no result at /no/such/result"),
    (("reports/x", "--history"), "either a result folder or --history"),
])
def test_report_command_bad_input(args: tuple, message: str) -> None:
    out = call_cli("report", *args)
    assert out.returncode == 2
    assert message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_report_into_a_pipe_writes_into_it(tmp_path: Path) -> None:
    # `-o /dev/stdout` or a named pipe: the page was written beside it and renamed over it,
    # which replaced the pipe (as root, the device: /dev/null became a file) with the page
    import fcntl
    import stat

    pipe = tmp_path / "page.fifo"
    os.mkfifo(pipe)
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)  # the writer's open needs a reader
    try:
        fcntl.fcntl(reader, fcntl.F_SETPIPE_SZ, 1 << 20)  # room for the page: no reader thread
        out = call_cli("report", str(STORED_TRAIN), "-o", str(pipe), "--no-charts")
        got = b""
        while chunk := os.read(reader, 1 << 20):
            got += chunk
    finally:
        os.close(reader)
    assert out.returncode == 0, out.stderr
    assert stat.S_ISFIFO(pipe.stat().st_mode), "the pipe was replaced by a file"
    assert got.decode().rstrip().endswith("</html>")
    assert [p.name for p in tmp_path.iterdir()] == [pipe.name]


def test_report_through_a_symlink_writes_the_file_it_points_to(tmp_path: Path) -> None:
    # the page was renamed over the link: the link became a file and its target stayed old
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "latest.html").write_text("old")
    link = tmp_path / "latest.html"
    link.symlink_to(pages / "latest.html")
    out = call_cli("report", str(STORED_TRAIN), "-o", str(link), "--no-charts")
    assert out.returncode == 0, out.stderr
    assert link.is_symlink()
    assert (pages / "latest.html").read_text().rstrip().endswith("</html>")
    assert sorted(p.name for p in pages.iterdir()) == ["latest.html"]


@pytest.mark.parametrize(("links", "error"), [
    # a link to a place under a file: _check_place looked at the link's own folder, and
    # mkdir of the folder it points into said "File exists"
    ({"page.html": "afile/page.html"}, "Not a directory"),
    # a loop: the page was renamed over one of its links, the loop broken
    ({"page.html": "other.html", "other.html": "page.html"},
     "Too many levels of symbolic links"),
])
def test_report_through_a_link_that_leads_nowhere_writable_is_one_line_and_changes_nothing(
        tmp_path: Path, links: dict, error: str) -> None:
    (tmp_path / "afile").write_text("kept")
    for name, to in links.items():
        (tmp_path / name).symlink_to(to)
    page = tmp_path / "page.html"
    out = call_cli("report", str(STORED_TRAIN), "-o", str(page), "--no-charts")
    assert out.returncode == 2
    assert out.stderr.strip() == f"aiio: cannot write the report to {page}: {error}"
    assert all((tmp_path / n).is_symlink() for n in links)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["afile", *links])
    assert (tmp_path / "afile").read_text() == "kept"


def test_report_to_stdout_is_the_page_alone() -> None:
    # -o /dev/stdout: the page, then "report: /dev/stdout" after its </html> in the same stream
    out = run_cli("report", str(STORED_TRAIN), "-o", "/dev/stdout", "--no-charts")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("<!DOCTYPE html>") and out.stdout.rstrip().endswith("</html>")
    assert out.stderr.strip() == "report: /dev/stdout"


def test_report_onto_a_folder_is_one_line_naming_it(tmp_path: Path) -> None:
    # the error named a temporary file the user never typed (".pages.tmp"), left behind
    folder = tmp_path / "pages"
    folder.mkdir()
    out = call_cli("report", str(STORED_TRAIN), "-o", str(folder), "--no-charts")
    assert out.returncode == 2
    assert out.stderr.strip() == f"aiio: cannot write the report to {folder}: Is a directory"
    assert [p.name for p in tmp_path.iterdir()] == ["pages"] and not any(folder.iterdir())


@pytest.mark.parametrize("under", ["notes", "notes/sub"])
def test_report_under_a_file_says_it_is_not_a_folder(tmp_path: Path, under: str) -> None:
    # the folder to write in was a file: the error said "File exists", as if -o itself did
    (tmp_path / "notes").write_text("x")
    given = tmp_path / under / "page.html"
    out = call_cli("report", str(STORED_TRAIN), "-o", str(given), "--no-charts")
    assert out.returncode == 2
    assert out.stderr.strip() == f"aiio: cannot write the report to {given}: Not a directory"


def test_an_empty_output_is_one_line(tmp_path: Path) -> None:
    # an empty -o (an unset variable: -o "$PAGE") replaced the page beside the result
    import shutil

    folder = tmp_path / "run"
    shutil.copytree(STORED_TRAIN, folder)
    for args in ((str(folder),), ("--history-db", str(folder.parent / "none.sqlite"))):
        out = call_cli("report", *args, "-o", "", "--no-charts")
        assert out.returncode == 2
        assert out.stderr.strip() == "aiio: -o needs a file name (it was empty)", out.stderr
    assert not (folder / "report.html").exists()


@pytest.mark.parametrize("source", ["result", "history"])
def test_report_never_writes_over_what_it_reads(tmp_path: Path, source: str) -> None:
    # -o naming the result (or the history database) replaced the measurement with its page
    import shutil

    folder = tmp_path / "run"
    shutil.copytree(STORED_TRAIN, folder)
    read = folder / "result.json"
    args = (str(folder),)
    if source == "history":
        read = tmp_path / "history.sqlite"
        shutil.copy(STORED_TRAIN.parent / "history.sqlite", read)
        args = ("--history-db", str(read))
    before = read.read_bytes()
    for given in (read, tmp_path / "." / read.relative_to(tmp_path)):
        out = call_cli("report", *args, "-o", str(given), "--no-charts")
        assert out.returncode == 2, out.stdout
        assert out.stderr.strip() == f"aiio: -o {given} is the {source} this page is read " \
            "from: give another file", out.stderr
        assert read.read_bytes() == before


def test_report_command_history_without_database(tmp_path: Path) -> None:
    out = call_cli("report", "--history-db", str(tmp_path / "none.sqlite"))
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1
    assert "history" in out.stderr


# --- partial and damaged results ----------------------------------------------------------

def test_interrupted_run_leaves_a_report(interrupted: Path) -> None:
    res = result.load(interrupted)
    assert res["status"] == "interrupted" and not res["aggregate"]
    page = _text(interrupted / "report.html")
    assert "did not finish: it was interrupted" in page
    assert "stopped before its figures were checked for honesty" in page
    assert "Missing from this result" in page and "aggregate figures" in page
    assert "could not be drawn" not in page
    # The clients' partial figures are still shown and drawn.
    assert page.count("<svg") >= 4
    for c in res["clients"]:
        assert f"{c['mib_s']:,.1f} MiB/s" in page


def _damaged(res: result.Result) -> list[tuple[str, dict, list[str]]]:
    """(name, damaged copy of the saved document, phrases the page must contain)."""
    cases = []
    r = copy.deepcopy(dict(res.doc))
    r.update(status="failed", error="client 1 died (exit code -9)", clients=[], aggregate={})
    del r["monitor"]
    cases.append(("failed, no clients", r, ["it was failed", "client 1 died",
                                            "no client reported", "No client reported"]))
    r = {k: v for k, v in res.items() if k in ("schema", "kind", "id", "status")}
    cases.append(("only the identity", r, ["the target and its filesystem",
                                           "how the page cache was defeated"]))
    r = copy.deepcopy(dict(res.doc))
    r["aggregate"] = {"first_done": "garbage", "latency": 7}
    r["clients"][0]["series"] = {"bucket_s": 0.1, "bytes": "not a list"}
    r["clients"][1] = {"client": 1}
    cases.append(("wrong types", r, ["could not be drawn"]))
    return cases


def test_damaged_results_still_render(run2: Path) -> None:
    res = result.load(run2)
    for name, damaged, phrases in _damaged(res):
        page = report.render(damaged)
        assert page.rstrip().endswith("</html>"), name
        for phrase in phrases:
            assert phrase in page, (name, phrase)


def test_junk_in_place_of_lists_counts_as_missing(run2: Path, sweep: Path) -> None:
    r2, sw = result.load(run2), result.load(sweep)
    for doc, key, junk in ((r2, "clients", "x"), (r2, "warnings", 7), (sw, "points", True),
                           (sw, "table", {"a": 1}),
                           (accept_result(r2), "checks", 7)):
        page = report.render(dict(doc, **{key: junk}))
        assert "too damaged" not in page and "could not be drawn" not in page, key
        assert "Missing from this result" in page or key == "warnings", key


def test_a_view_that_breaks_still_gives_a_page(run2: Path, monkeypatch) -> None:
    from aiio.report import run as run_view

    def broken(res):
        raise KeyError("aggregate")

    monkeypatch.setattr(run_view, "render_body", broken)
    page = report.render(result.load(run2))
    assert "too damaged to draw (KeyError" in page and "Other recorded figures" in page


def test_unknown_kind_lists_what_was_recorded() -> None:
    page = report.render({"schema": result.SCHEMA, "kind": ["odd"], "id": "x",
                          "jobs": [{"name": "seqread", "mib_s": 1234.5}]})
    assert "no view for results of kind" in page and "seqread" in page


# --- sweep, acceptance, history ----------------------------------------------------------

def test_sweep_report(sweep: Path) -> None:
    res = result.load(sweep)
    page = _text(sweep / "report.html")
    assert "scaling sweep" in page and "clients 1, 2" in page
    for chart in ("aggregate bandwidth against clients", "per-client bandwidth against clients",
                  "accelerator utilization against clients"):
        assert chart in page
    assert html.escape(res["verdict"]["statements"][0]) in page
    assert "scales linearly up to" in page
    assert "could not be drawn" not in page and "Missing from this result" not in page
    for row in res["table"]:
        assert f"{row['aggregate_mib_s']:,.1f} MiB/s" in page
    assert page.index(">1 clients, repeat 1") < page.index(">2 clients, repeat 1")
    # the answer first: the verdict, the warnings, the scaling; the configuration after
    assert page.index('id="verdict"') < page.index('id="warnings"') \
        < page.index('id="scaling"') < page.index('id="measured"')
    assert "scaling efficiency E(N) against the threshold" in page


def _linear_rows(eff_at_16: float = 1.0) -> list[dict]:
    """Table rows of a sweep whose aggregate grows exactly in proportion to the clients (the
    last count optionally short of it), to check how the charts draw them."""
    rows = []
    for n in (1, 2, 4, 8, 16):
        agg = 100.0 * n * (eff_at_16 if n == 16 else 1.0)
        rows.append({"clients": n, "aggregate_mib_s": agg, "last_done_mib_s": agg,
                     "efficiency": agg / (100.0 * n),
                     "per_client_mib_s": {"mean": agg / n, "min": agg / n, "max": agg / n}})
    return rows


def _polylines(svg: str) -> list[list[tuple[float, float]]]:
    """The drawn lines of a matplotlib SVG with three points or more (grid lines have two)."""
    out = []
    for d in re.findall(r'<g id="line2d_\d+">\s*<path d="([^"]+)"', svg):
        pts = [tuple(map(float, xy)) for xy in re.findall(r"([-\d.]+) ([-\d.]+)", d)]
        if len(pts) >= 3:
            out.append(pts)
    return out


def _straight(pts: list[tuple[float, float]]) -> bool:
    (x0, y0), (x1, y1) = pts[0], pts[-1]
    length = math.hypot(x1 - x0, y1 - y0)
    return all(abs((x1 - x0) * (y - y0) - (y1 - y0) * (x - x0)) / length < 0.5
               for x, y in pts)  # within half a pixel of the chord


def test_linear_scaling_draws_as_a_straight_line() -> None:
    """Perfectly linear scaling and the ideal line are straight on the aggregate chart, and
    the ideal has slope 1 in the chart's own axes (log-log)."""
    from aiio.report import sweep as sweep_view

    aggregate = sweep_view.scaling_charts(_linear_rows(), 0.9)[0]
    lines = _polylines(aggregate)
    assert len(lines) >= 2  # measured first done, last done, the ideal
    assert all(_straight(line) for line in lines), lines
    # both axes logarithmic: the ideal N/N0 x aggregate(N0) has slope 1 in them
    assert "log scale, both axes" in aggregate


def test_sweep_chart_files_draw_linear_scaling_straight() -> None:
    """The aggregate chart written beside a sweep: log-log, measured and ideal lines straight
    on screen, and E(N) in its own panel against the threshold."""
    from aiio.results import charts
    from aiio.results.result import SweepRow

    rows = _linear_rows(eff_at_16=0.8)
    for r in rows:
        r["aggregate_spread"] = {"mean": r["aggregate_mib_s"], "min": r["aggregate_mib_s"],
                                 "max": r["aggregate_mib_s"]}
    fig = charts.aggregate_figure([SweepRow.of(r) for r in rows], 0.9, "t")
    ax, eff = fig.axes
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    ideal = [100.0 * r["clients"] for r in rows]
    on_screen = ax.transData.transform(list(zip([r["clients"] for r in rows], ideal,
                                                strict=True)))
    assert _straight([tuple(p) for p in on_screen])
    assert [round(b.get_height()) for b in eff.patches] == [100, 100, 100, 100, 80]
    assert any("threshold 90%" in t.get_text() for t in eff.get_legend().get_texts())


def test_efficiency_has_its_own_chart_against_the_threshold() -> None:
    from aiio.report import sweep as sweep_view

    charts = sweep_view.scaling_charts(_linear_rows(eff_at_16=0.8), 0.9)
    (eff,) = [c for c in charts if "scaling efficiency E(N) against the threshold" in c]
    assert "threshold 90%" in eff
    assert eff.count("#cf222e") >= 1  # the count at 80 % is below the threshold: red


def test_partial_sweep_reads_its_points(sweep: Path) -> None:
    """A sweep stopped before it was judged: rows and charts come from the points' results."""
    res = partial(result.load(sweep))
    page = report.render(res)
    assert "did not finish: it was interrupted" in page
    assert "the per-count table (read from the points instead)" in page
    assert page.count("<svg") >= 3 and "could not be drawn" not in page
    for p in res["points"]:
        agg = p["result"]["aggregate"]["first_done"]["mib_s"]
        assert f"{agg:,.1f} MiB/s" in page


STORED_SWEEP = Path(__file__).parent / "data" / "results-v1" / \
    "20261130-230558-scale-train-demo-c1_2"


def test_a_partial_sweep_whose_baseline_moved_nothing_has_no_efficiency() -> None:
    # read from its points, E(N) took the first count that moved bytes as its baseline: E(1)
    # 0 % and E(2) 100 %, where a judged sweep (and METHOD.md) has them undefined
    from aiio.report import sweep as sweep_view

    res = partial(json.loads((STORED_SWEEP / "result.json").read_text()))
    for p in res["points"]:
        if p["clients"] == 1:
            p["result"]["aggregate"]["first_done"]["mib_s"] = 0.0
    rows = sweep_view.rows(res)
    assert [r["clients"] for r in rows] == [1, 2] and rows[1]["aggregate_mib_s"] > 0
    assert [r.get("efficiency") for r in rows] == [None, None]
    # and a baseline that did move keeps its E(N)
    res = partial(json.loads((STORED_SWEEP / "result.json").read_text()))
    assert [r.get("efficiency") for r in sweep_view.rows(res)][0] == pytest.approx(1.0)


def test_acceptance_run_report(acceptance: Path) -> None:
    res = result.load(acceptance)
    page = _text(acceptance / "report.html")
    assert "1 of 2 checks passed" in page and "train-impossible" in page
    failed = next(c for c in res["checks"] if c["status"] == "fail")
    assert html.escape(failed["failures"][0]) in page
    assert "headroom against each threshold" in page and "could not be drawn" not in page
    for check in res["checks"]:  # every check links to its run's page, and the page is there
        assert f'href="../{check["result_folder"]}/report.html"' in page
        assert (acceptance.parent / check["result_folder"] / "report.html").exists()


def test_accept_links_follow_suffixed_folders(area: Path, tmp_path: Path) -> None:
    """Runs that start in a second whose folder is taken get a -2 suffix; the acceptance
    page's links (and the run pages it writes) must follow the folder, not the id."""
    results = tmp_path / "reports"
    now = time.time()
    for t in range(-1, 240):  # take every folder name the check's run could be given
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now + t))
        (results / f"{stamp}-train-demo-c2").mkdir(parents=True)
    spec = REPO / "workloads" / "acceptance" / "tiny.toml"
    out = run_cli("accept", str(spec), "--target", str(area / "target"), "--results",
                  str(results), "-q", "--no-history")
    assert out.returncode == 0, out.stderr
    (folder,) = [f for f in results.glob("*/") if "-accept-" in f.name]
    (check,) = result.load(folder)["checks"]
    run_folder = results / check["result_folder"]
    assert run_folder.name == f"{check['result_id']}-2"
    assert (run_folder / "report.html").exists()
    assert f'href="../{run_folder.name}/report.html"' in _text(folder / "report.html")


def test_accept_report_errors_and_regressions(run2: Path, tmp_path: Path) -> None:
    """An acceptance result with an errored check and a regression (the shape
    docs/RESULTS.md gives), its figures taken from a real run."""
    acc = accept_result(result.load(run2))
    page = _text(report.write(acc, tmp_path))
    bad = [c["name"] for c in acc["checks"] if c["status"] != "pass"]
    assert f"{4 - len(bad)} of 4 checks passed" in page
    assert "target /nowhere does not exist" in page
    assert "23 % below its baseline" in page and 'id="regressions"' in page
    assert f'href="../{acc["checks"][0]["result_id"]}/report.html"' in page
    body = page[page.index('id="checks"'):]  # failed and errored checks first
    first_pass = min(body.index(c["name"]) for c in acc["checks"] if c["status"] == "pass")
    assert all(body.index(n) < first_pass for n in bad)
    assert "headroom against each threshold" in page
    assert "could not be drawn" not in page and "did not finish" not in page


def test_hero_in_run_report(run2: Path) -> None:
    """"% of hero" in the shape docs/RESULTS.md gives the hero field."""
    res = dict(result.load(run2).doc)
    mib = res["aggregate"]["last_done"]["mib_s"]
    res["hero"] = {"test": "seq_read", "window": "last done", "phase_mib_s": mib,
                   "fio_mib_s": mib * 4, "percent": 25.0, "fio_result_id": "x-fio-2",
                   "fio_clients": 2, "text": "25.0 % of fio seq_read"}
    page = report.render(res)
    assert "25.0 % of fio seq_read" in page and "this run against the fio hero number" in page
    # the row names the window the pairing compared (both sides last done), not another one
    assert "run (aggregate, last done)" in page and "run (aggregate, first done)" not in page
    res["hero"] = {"test": "seq_read", "text": "no fio result for this target; run: aiio fio"}
    assert "no fio result for this target" in report.render(res)


def test_history_report(tmp_path: Path) -> None:
    page = _text(report.write_history(HISTORY, tmp_path / "history.html", source="test"))
    assert "Latest run regressed" in page and "train-2-au / au_min" in page
    assert page.count("<svg") == 2
    assert page.index("train-2-au") < page.index("train-2-bandwidth")  # regressions first


def test_history_page_marks_failures_without_a_value(tmp_path: Path) -> None:
    """A run that failed with no figure is counted and drawn (a red x on the time axis), and
    when it is the latest, it is the check's latest verdict."""
    failed = {"check": "train-2-au", "time": "2026-11-08T02:00:00", "figure": None,
              "value": None, "passed": False, "regression": False, "status": "error"}
    page = _text(report.write_history([*HISTORY, failed], tmp_path / "h.html"))
    summary = page[page.index('id="summary"'):page.index('id="trends"')]
    row = summary[summary.index("train-2-au"):summary.index("</tr>", summary.index("train-2-au"))]
    assert ">ERROR<" in row and "none: it failed" in row
    assert "failed, no value" in page and "1 run(s) that failed with no value" in page
    assert "had no usable time or value" not in page


def test_history_command(area: Path, run1: Path, run2: Path) -> None:
    """`aiio report --history` on the database the runs above recorded themselves in."""
    db = area / "reports" / "history.sqlite"
    out = call_cli("report", "--history-db", str(db))
    assert out.returncode == 0, out.stderr
    page = _text(area / "reports" / "history.html")
    assert "run train demo c2" in page and "run train demo c1" in page
    assert page.count("<svg") >= 2 and "aggregate_mib_s" in page


def test_empty_history() -> None:
    page = report.render_history([], "an empty database")
    assert "holds no records yet" in page


@pytest.mark.parametrize("key, value, shown", [
    ("mib_s", 12.25, "12.2 MiB/s"), ("write_mib_s", 0.0123, "0.0123 MiB/s"),
    ("ops_s", 280.8, "280.8 ops/s"), ("samples_per_s", 3, "3.0 samples/s"),
    ("p99_ns", 2_500_000, "2.50 ms"), ("p99_ms", 2.5, "2.50 ms"),
    ("elapsed_s", 1.5, "1.500 s"), ("stall_s_total", 0.14, "0.140 s"),
    ("compute_s_per_batch", 0.01, "0.010 s per batch"),
    ("transfer_size", 1048576, "1.00 MiB (1,048,576 B)"), ("batch_size", 7, "7"),
    ("shard_bytes_per_client", 3 * 2**20, "3.00 MiB (3,145,728 B)"),
    ("au_min", 0.904, "90.4 %"), ("cpu_percent_mean", 41.0, "41.0 %"), ("epochs", 2, "2"),
])
def test_numbers_carry_the_unit_their_name_says(key: str, value: float, shown: str) -> None:
    from aiio.report.html import by_name

    assert by_name(key, value) == shown


# --- the numbers behind the charts -------------------------------------------------------

def test_chart_rates_keep_every_byte(run2: Path) -> None:
    """The per-interval rates drawn add back up to the bytes the series holds."""
    for c in result.load(run2)["clients"]:
        s = stats.ByteSeries.from_dict(c["series"])
        for step in (s.bucket_s, 1.0):
            edges, rates = sr.rates(s, s.end_s, step)
            moved = sum(r * (b - a) for r, a, b in zip(rates, edges, edges[1:], strict=False))
            assert moved * 2**20 == pytest.approx(s.total, rel=1e-9)


def test_octave_bins_keep_every_count(run2: Path) -> None:
    h = stats.Histogram.from_dict(result.load(run2)["aggregate"]["histograms"]["read"])
    bins = sr.octave_bins(h.nonzero())
    assert sum(n for _, _, n in bins) == h.count
    assert all(a < b for a, b, _ in bins)


# --- the other phases, drawn from their shapes ------------------------------------------

PHASE_RUNS = {
    # phase: (extra CLI arguments, what its page must show)
    "checkpoint": (("--scale", "0.05"), ["checkpoint timeline per client",
                                         "checkpoints write: create latency"]),
    "load": (("--scale", "0.05", "--stagger", "0.05s"), ["load timeline per client",
                                                         "aggregate load bandwidth"]),
    # The lifecycle run holds prep (read and write sections), train and load as stages.
    "all": (("--scale", "0.05", "--set", "prep.shard_size=256KiB"),
            ["prep read aggregate, first done", "aggregate prep read bandwidth",
             "aggregate prep write bandwidth", "prep write: fsync latency", "train AU verdict",
             "aggregate load bandwidth", "prep metadata ops"]),
}


def _phase_run(area: Path, phase: str, *extra: str, needs: str | None = None) -> Path:
    from aiio.phases import PHASES

    assert (needs or phase) in PHASES
    results = area / f"phase-{phase}"
    if results.exists():  # the same run serves the content and the browser tests
        (folder,) = results.glob("*/")
        return folder
    # The tiny dataset for every phase: prep reads it, the others leave it alone.
    args = TINY_ARGS if phase == "train" else (*TINY_DATA, "--clients", "2")
    out = run_cli("run", "--phase", phase, "--target", str(area / "target"), "--results",
                  str(results), *args, "-q", *extra)
    assert out.returncode == 0, out.stderr
    (folder,) = results.glob("*/")
    return folder


@pytest.mark.parametrize("phase", sorted(PHASE_RUNS))
def test_other_phase_reports(area: Path, phase: str) -> None:
    extra, phrases = PHASE_RUNS[phase]
    page = _text(_phase_run(area, phase, *extra) / "report.html")
    assert "could not be drawn" not in page
    for phrase in phrases:
        assert phrase in page, phrase


def test_checkpoints_during_training(area: Path) -> None:
    folder = _phase_run(area, "train", "--checkpoint-every", "1", "--scale", "0.05",
                        needs="checkpoint")
    page = _text(folder / "report.html")
    assert "train timeline per client" in page and "checkpoints write" in page
    assert "accelerator utilization per client" in page and "could not be drawn" not in page


@needs_mpi
def test_multi_host_report(area: Path, run2: Path) -> None:
    """A run over two MPI ranks: one row and one bar per host, every client in the table."""
    results = area / "mpi"
    out = mpi_run(2, "run", "--target", str(area / "target"), "--results", str(results),
                  *TINY_ARGS[:-2], "--clients", "3", "-q")
    assert out.returncode == 0, out.stderr
    (folder,) = results.glob("*/")
    page = _text(folder / "report.html")
    assert 'id="hosts"' in page and "aggregate bandwidth per host" in page
    assert "clients per host: 2, 1" in page and "could not be drawn" not in page
    for c in result.load(folder)["clients"]:
        # as the page writes rates: a client under 1 MiB/s (a machine loaded by other work)
        # keeps three significant digits, which one decimal did not match
        assert format_rate(c["mib_s"]) in page


# --- in a real browser --------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's chromium package)")
    b = Browser(CHROMIUM)
    yield b
    b.close()


@pytest.fixture(scope="module")
def pages(area: Path, run2: Path, interrupted: Path, sweep: Path,
          acceptance: Path) -> dict[str, tuple[Path, int]]:
    """name -> (page, the least number of charts it must show)."""
    out = area / "pages"
    r2 = result.load(run2)
    damaged = _damaged(r2)[2][1]
    return {
        "run": (run2 / "report.html", 6),
        "interrupted": (interrupted / "report.html", 4),
        "sweep": (sweep / "report.html", 3),
        "partial-sweep": (report.write(partial(result.load(sweep)), out / "partial"), 3),
        "accept": (acceptance / "report.html", 1),
        "accept-errors": (report.write(accept_result(r2), out / "accept"), 1),
        "history": (report.write_history(HISTORY, out / "history.html"), 2),
        "damaged": (report.write(damaged, out / "damaged"), 0),
        "history-db": (_history_page(area), 2),
    }


def _history_page(area: Path) -> Path:
    """`aiio report --history` over the history the real runs above recorded."""
    page = area / "pages" / "history-db.html"
    out = call_cli("report", "--history-db", str(area / "reports" / "history.sqlite"), "-o",
                  str(page))
    assert out.returncode == 0, out.stderr
    return page


@needs_chromium
@pytest.mark.parametrize("name", ["run", "interrupted", "sweep", "partial-sweep", "accept",
                                  "accept-errors", "history", "history-db", "damaged"])
def test_report_in_chromium(name: str, pages: dict, browser: Browser, tmp_path: Path) -> None:
    page, min_charts = pages[name]
    problems = browser.load(page.as_uri(), width=1280, height=800)
    assert problems == [], problems
    charts = browser.eval("document.querySelectorAll('figure svg').length")
    assert charts >= min_charts
    drawn = browser.eval("Array.from(document.querySelectorAll('figure svg'))"
                         ".filter(s => s.getBoundingClientRect().width > 250 && "
                         "s.getBoundingClientRect().height > 120).length")
    assert drawn == charts  # every chart has a real size on screen
    # Readable at laptop width: the page itself never scrolls sideways (wide tables do).
    assert browser.eval("document.documentElement.scrollWidth <= window.innerWidth")
    shot = browser.screenshot(Path(os.environ.get("AIIO_SCREENSHOTS", tmp_path)) /
                              f"report-{name}.png")
    width, height = png_size(shot)
    assert width == 1280 and height >= 800


@needs_chromium
@pytest.mark.parametrize("phase", [*sorted(PHASE_RUNS), "train"])
def test_phase_report_in_chromium(phase: str, area: Path, browser: Browser,
                                  tmp_path: Path) -> None:
    if phase == "train":
        folder = _phase_run(area, "train", "--checkpoint-every", "1", "--scale", "0.05",
                            needs="checkpoint")
    else:
        folder = _phase_run(area, phase, *PHASE_RUNS[phase][0])
    assert browser.load((folder / "report.html").as_uri()) == []
    assert browser.eval("document.querySelectorAll('figure svg').length") >= 3
    assert browser.eval("document.documentElement.scrollWidth <= window.innerWidth")
    browser.screenshot(Path(os.environ.get("AIIO_SCREENSHOTS", tmp_path)) /
                       f"report-phase-{phase}.png")


FIRST_SCREEN = """(function(sel){var e=document.querySelector(sel);
 if(!e) return null; var r=e.getBoundingClientRect();
 return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight;})"""


@needs_chromium
@pytest.mark.parametrize("name, shown", [
    ("run", ["#verdict .notice", "#verdict .cards"]),
    ("sweep", ["#verdict .notice", "#verdict table"])])
def test_first_screen_shows_verdict_and_headline(name: str, shown: list, pages: dict,
                                                 browser: Browser, tmp_path: Path) -> None:
    """At 1280x800 the page opens on its answer: the verdict and the headline figures."""
    assert browser.load(pages[name][0].as_uri(), width=1280, height=800) == []
    for sel in shown:
        assert browser.eval(f"{FIRST_SCREEN}({json.dumps(sel)})"), sel
    browser.screenshot(Path(os.environ.get("AIIO_SCREENSHOTS", tmp_path)) /
                       f"first-screen-{name}.png")


@needs_chromium
def test_wide_tables_scroll_inside_their_box(pages: dict, browser: Browser) -> None:
    """On a narrow window the per-client table scrolls in its own box; the page does not."""
    assert browser.load(pages["run"][0].as_uri(), width=560, height=800) == []
    assert browser.eval("document.documentElement.scrollWidth <= window.innerWidth")
    box = "document.querySelector('#clients .scroll')"
    assert browser.eval(f"{box}.scrollWidth > {box}.clientWidth")
    assert browser.eval(f"getComputedStyle({box}).overflowX") == "auto"


@needs_chromium
def test_tables_sort_and_read_without_script(pages: dict, browser: Browser) -> None:
    page = pages["run"][0].as_uri()
    first_col = ("Array.from(document.querySelectorAll('#clients tbody tr'))"
                 ".map(r => r.cells[0].textContent)")
    assert browser.load(page) == []
    unsorted = browser.eval(first_col)
    browser.eval("document.querySelector('#clients th').click()")
    up = browser.eval(first_col)
    browser.eval("document.querySelector('#clients th').click()")
    down = browser.eval(first_col)
    assert up == sorted(unsorted, key=int) and down == up[::-1]
    # Without scripts (a mail client's viewer) the same rows and charts are there.
    assert browser.load(page, scripts=False) == []
    assert browser.eval(first_col) == unsorted
    assert browser.eval("document.querySelectorAll('figure svg').length") >= 6


@needs_chromium
def test_browser_check_catches_a_broken_page(browser: Browser, tmp_path: Path) -> None:
    """The no-console-errors check above can fail: it sees errors and blocked fetches."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" '
                   "content=\"default-src 'none'; script-src 'unsafe-inline'\"></head><body>"
                   '<img src="https://example.com/x.png"><script>console.error("boom");'
                   "undefined_function();</script></body></html>")
    problems = browser.load(bad.as_uri())
    assert any("console.error: boom" in p for p in problems)
    assert any("undefined_function" in p for p in problems)
    assert any("Content Security Policy" in p for p in problems)


def test_results_json_is_untouched_by_rendering(run2: Path) -> None:
    before = (run2 / "result.json").read_bytes()
    report.render(json.loads(before))
    assert (run2 / "result.json").read_bytes() == before


def test_a_measured_zero_time_never_reads_like_an_unset_one() -> None:
    """A client's CPU time can be exactly 0 (under one clock tick in a tiny run): it reads
    "0 s", and sub-millisecond times keep their digits; "0.000 s" never appears."""
    from aiio.report import html as page

    assert page.seconds(0) == "0 s" and page.seconds(0.0) == "0 s"
    assert page.seconds(0.0004) != "0.000 s" and page.seconds(0.0004).endswith("us")
    assert page.seconds(1.5) == "1.500 s"


def test_a_run_whose_au_could_not_be_measured_is_no_fail() -> None:
    """1,024 clients on 2,048 samples: every step was warm-up, so AU had no verdict (the page's
    own AU row said N/A), and the verdict above it said "FAIL: 0 of 1024 clients were below
    the 90 % accelerator-utilization goal (the least busy: n/a); the storage did not keep up"."""
    from aiio.report.verdict import run_verdict

    stored = Path(__file__).parent / "data" / "results-v1" / "20261130-230529-train-demo-c2"
    doc = json.loads((stored / "result.json").read_text())
    note = "not measurable: every step was the first of its epoch (warm-up, excluded)"
    doc["aggregate"].update(au_pass=None, au_mean=None, au_min=None, au_note=note,
                            clients_below_goal=[])
    verdict = str(run_verdict(result.model(doc)))
    assert "FAIL" not in verdict and "PASS" not in verdict, verdict
    assert "could not be measured" in verdict and "warm-up" in verdict, verdict


def test_the_run_table_names_engine_ranks_and_start_up(run2: Path) -> None:
    """Which engine did the I/O, how many processes, how long before the first I/O: facts of
    the run, shown with it; never as "Other recorded figures" beside the writer's pid."""
    res = result.load(run2)
    page = _text(run2 / "report.html")
    measured = page[page.index('id="measured"'):]
    assert re.search(rf">engine</td><td[^>]*>{res['engine']}<", measured)
    assert re.search(rf">processes \(ranks\)</td><td[^>]*>{res['ranks']}<", measured)
    assert re.search(r">command to first I/O</td><td[^>]*>\d+\.\d+ s<", measured)
    assert 'id="other"' not in page and "boot_id" not in page


def test_no_report_shows_the_writer_provenance(sweep: Path) -> None:
    """Every result records who wrote it (pid, host, boot) to tell a live run from a dead one;
    no report lists that as a figure."""
    for page in (sweep / "report.html", *sweep.glob("points/*/report.html")):
        assert "boot_id" not in _text(page), page


def test_a_checkpoint_page_leads_with_the_figures_the_console_shows(area: Path) -> None:
    """A checkpoint run's headline is its rate to every shard durable and its restore, per
    checkpoint and per client, named as on the console: not a dump of the aggregate's keys."""
    folder = _phase_run(area, "checkpoint", *PHASE_RUNS["checkpoint"][0])
    res = result.load(folder)
    page = _text(folder / "report.html")
    head = page[page.index('id="headline"'):page.index('id="measured"')]
    ck = res["aggregate"]
    assert re.search(r">write \(every shard durable\)</td><td[^>]*>"
                     rf"{ck['write_mib_s']:,.1f} MiB/s<", head), head[:3000]
    assert ">restore</td>" in head and ">per checkpoint<" in head
    assert head.index(">write (every shard durable)<") < head.index("<details")


def test_compute_paced_counts_are_no_green_efficiency_bars() -> None:
    """A count whose clients met their AU goal measured their compute, not the storage: its
    E(N) bar is drawn grey and named so, on the page and in the chart file, never green as
    if the storage had scaled (the verdict already keeps such points out of linear)."""
    from aiio.report import sweep as sweep_view
    from aiio.results import charts
    from aiio.results.result import SweepRow

    rows = _linear_rows()
    for r in rows[:3]:  # paced by compute up to 4 clients; storage-bound beyond
        r.update(au_mean=0.99, au_min=0.98, au_goal=0.9, au_pass=True, au_rule="mean")
    for r in rows[3:]:
        r.update(au_mean=0.5, au_min=0.4, au_goal=0.9, au_pass=False, au_rule="mean")
    for r in rows:
        r["aggregate_spread"] = {k: r["aggregate_mib_s"] for k in ("mean", "min", "max")}
    (eff,) = [c for c in sweep_view.scaling_charts(rows, 0.9)
              if "scaling efficiency E(N) against the threshold" in c]
    assert "paced by compute" in eff
    fig = charts.aggregate_figure([SweepRow.of(r) for r in rows], 0.9, "t")
    colours = [b.get_facecolor() for b in fig.axes[1].patches]
    assert len(set(colours[:3])) == 1 and len(set(colours[3:])) == 1  # 1, 2, 4 | 8, 16
    assert colours[0] != colours[3]
    assert any("paced by compute" in t.get_text() for t in fig.axes[1].get_legend().get_texts())


def test_a_sweep_paced_by_compute_says_why_linear_was_not_judged() -> None:
    from aiio.report.sweep import verdict_pairs

    pairs = dict(verdict_pairs({"shape": "demand_bound", "threshold": 0.9,
                                "baseline_clients": 1, "baseline_mib_s": 94.2,
                                "linear_up_to": None, "knee": None,
                                "demand_bound_up_to": 4}))
    assert pairs["scales linearly up to"] == "not judged: paced by compute up to 4 clients"
    assert "clients" not in dict(verdict_pairs({"shape": "insufficient", "threshold": 0.9,
                                                "linear_up_to": None}))["scales linearly up to"]
