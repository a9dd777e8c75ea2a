"""Monitoring export: the node_exporter textfile that `aiio accept --prometheus` and `aiio
history --prometheus` write, read back with prometheus_client's own parser."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from aiio.results.history import History, Record

from .conftest import call_cli, run_cli, saved_result
from .test_accept import _check, _spec

LABELS = ("check", "kind", "target", "phase", "workload", "clients", "spec", "settings")
# figure -> (metric name in base units, factor from the history's value)
BASE = {"aggregate_mib_s": ("aiio_aggregate_bytes_per_second", 2**20),
        "last_done_mib_s": ("aiio_last_done_bytes_per_second", 2**20),
        "client_mib_s_min": ("aiio_client_min_bytes_per_second", 2**20),
        "client_mib_s_mean": ("aiio_client_mean_bytes_per_second", 2**20),
        "au_min": ("aiio_au_min_ratio", 1.0), "au_mean": ("aiio_au_mean_ratio", 1.0),
        "p99_ms": ("aiio_p99_latency_seconds", 1e-3), "cv": ("aiio_cv", 1.0),
        "jain": ("aiio_jain", 1.0), "samples_per_s": ("aiio_samples_per_second", 1.0)}
REQUIRED = {"good": ("au_min", 0.05), "bad": ("aggregate_mib_s", 1e9)}


def _samples(path: Path) -> dict[str, list]:
    """Every sample of the file by metric name; the parser refuses a malformed file."""
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(path.read_text()):
        assert family.type == "gauge", family.name
        for sample in family.samples:
            out.setdefault(sample.name, []).append(sample)
    return out


def _one(samples: dict[str, list], name: str, **labels: str):
    found = [s for s in samples.get(name, [])
             if all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(found) == 1, (name, labels, samples.get(name))
    return found[0]


def test_accept_writes_every_check_figure_and_its_verdict(target, results, tmp_path):
    spec = _spec(tmp_path, _check("good", "min_au = 0.05"),
                 _check("bad", "min_aggregate_mib_s = 1e9"))
    prom = tmp_path / "textfile" / "aiio.prom"
    prom.parent.mkdir()
    proc = run_cli("accept", "--no-report",
                   str(spec), "--target", str(target), "--results", str(results),
                   "--quiet", "--prometheus", str(prom))
    assert proc.returncode == 1, proc.stderr
    out = saved_result(results, "accept")
    samples = _samples(prom)
    assert [p.name for p in prom.parent.iterdir()] == ["aiio.prom"]  # no temporary left
    for check in out["checks"]:
        labels = {"check": check["name"], "kind": "check", "target": str(target),
                  "phase": "train", "workload": "demo", "clients": "2"}
        assert check["measured"], check
        for figure, value in check["measured"].items():
            name, factor = BASE[figure]
            sample = _one(samples, name, **labels)
            assert set(sample.labels) == set(LABELS) and sample.labels["spec"] == "t"
            assert sample.value == pytest.approx(value * factor, rel=1e-12)
        assert _one(samples, "aiio_passed", **labels).value == (check["status"] == "pass")
        assert _one(samples, "aiio_status", status=check["status"], **labels).value == 1
        assert _one(samples, "aiio_regression", **labels).value == 0
        figure, required = REQUIRED[check["name"]]
        factor = BASE[figure][1]
        assert _one(samples, "aiio_required", figure=figure,
                    **labels).value == pytest.approx(required * factor)
    assert {c["status"] for c in out["checks"]} == {"pass", "fail"}
    whole = _one(samples, "aiio_passed", kind="accept", check="t")
    assert whole.value == 0


def test_bad_export_path_is_refused_before_anything_runs(target, results, tmp_path):
    spec = _spec(tmp_path, _check("good", "min_au = 0.05"))
    for path, words in ((tmp_path / "aiio.txt", "only *.prom files"),
                        (tmp_path / "nowhere" / "aiio.prom", "does not exist")):
        proc = call_cli("accept", str(spec), "--target", str(target), "--results",
                        str(results), "--quiet", "--prometheus", str(path))
        assert proc.returncode == 2 and words in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not results.exists()


def _rec(name: str, value: float, ts: float, status: str = "pass") -> Record:
    return Record(kind="check", name=name, target="/mnt/a", status=status,
                  passed=status == "pass", figures={"aggregate_mib_s": value, "au_min": 0.9},
                  required={"aggregate_mib_s": 50.0}, phase="train", workload="demo",
                  clients="8", ts=ts)


def test_history_exports_the_latest_of_every_series(tmp_path):
    db = tmp_path / "h.sqlite"
    with History(db) as h:
        for i, value in enumerate((100, 101, 99, 100, 70)):   # the last one regressed
            h.add(_rec("nightly", value, 1000.0 + i))
        h.add(_rec("weekly", 40, 900.0, status="fail"))
        h.add(Record(kind="run", name="run train demo c2", target="/mnt/a", status="failed",
                     passed=False, phase="train", workload="demo", clients="2", ts=1100.0))
    prom = tmp_path / "aiio.prom"
    proc = call_cli("history", "--history", str(db), "--prometheus", str(prom))
    assert proc.returncode == 0, proc.stderr
    samples = _samples(prom)
    assert [s.value for s in samples["aiio_aggregate_bytes_per_second"]
            if s.labels["check"] == "nightly"] == [70 * 2**20]
    assert _one(samples, "aiio_regression", check="nightly").value == 1
    assert _one(samples, "aiio_timestamp_seconds", check="nightly").value == 1004.0
    assert _one(samples, "aiio_passed", check="weekly").value == 0
    assert _one(samples, "aiio_regression", check="weekly").value == 0
    failed = _one(samples, "aiio_status", check="run train demo c2", kind="run")
    assert failed.labels["status"] == "failed" and failed.value == 1
    assert _one(samples, "aiio_passed", check="run train demo c2").value == 0


NODE_EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _scrape(port: int, proc: subprocess.Popen) -> str:
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                return r.read().decode()
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.mark.skipif(NODE_EXPORTER is None, reason="node_exporter is not installed "
                    "(Debian: prometheus-node-exporter)")
def test_node_exporter_serves_the_history_export(tmp_path):
    """The real consumer: node_exporter's textfile collector reads the file without error."""
    db = tmp_path / "h.sqlite"
    with History(db) as h:
        for i, value in enumerate((100, 101, 99)):
            h.add(_rec("nightly", value, 1000.0 + i))
    folder = tmp_path / "textfile"
    folder.mkdir()
    assert call_cli("history", "--history", str(db), "--prometheus",
                   str(folder / "aiio.prom")).returncode == 0
    port = _free_port()
    proc = subprocess.Popen([NODE_EXPORTER, "--collector.disable-defaults",
                             "--collector.textfile",
                             f"--collector.textfile.directory={folder}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        text = _scrape(port, proc)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "node_textfile_scrape_error 0" in text and "level=error" not in err
    assert 'aiio_aggregate_bytes_per_second{check="nightly"' in text


def test_a_folder_named_like_the_export_is_refused_before_anything_runs(target, results,
                                                                      tmp_path):
    """Otherwise every check runs first and the verdict is lost to a write error at the end."""
    spec = _spec(tmp_path, _check("good", "min_au = 0.05"))
    (tmp_path / "aiio.prom").mkdir()
    proc = call_cli("accept", str(spec), "--target", str(target), "--results", str(results),
                    "--quiet", "--prometheus", str(tmp_path / "aiio.prom"))
    assert proc.returncode == 2 and "is a folder" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not results.exists()


def test_an_export_through_a_symlink_updates_the_file_it_points_to(tmp_path):
    """The rename that makes the write atomic must not replace the link by a file of its own."""
    db = tmp_path / "h.sqlite"
    with History(db) as h:
        h.add(_rec("nightly", 100, 1000.0))
    real = tmp_path / "textfile" / "aiio.prom"
    real.parent.mkdir()
    real.write_text("")
    link = tmp_path / "aiio.prom"
    link.symlink_to(real)
    proc = call_cli("history", "--history", str(db), "--prometheus", str(link))
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and link.resolve() == real
    assert _one(_samples(real), "aiio_aggregate_bytes_per_second",
                check="nightly").value == 100 * 2**20
    assert sorted(p.name for p in real.parent.iterdir()) == ["aiio.prom"]


def test_metric_names_and_values_are_in_base_units(tmp_path):
    """Prometheus names carry base units (seconds, bytes, ratios), never display units: a
    p99 of 2.5 ms is aiio_p99_latency_seconds 0.0025, 100 MiB/s is 104857600 bytes/s."""
    from aiio.results import monitoring
    from aiio.results.figures import FIGURES

    assert set(monitoring.METRICS) == set(FIGURES)  # a new figure needs a metric name
    rec = Record(kind="check", name="n", target="/mnt/a", status="pass", passed=True,
                 figures={"aggregate_mib_s": 100.0, "p99_ms": 2.5, "au_min": 0.9,
                          "checkpoint_s": 3.0, "jain": 0.99},
                 required={"p99_ms": 5.0}, spec="nightly", ts=1.0)
    prom = monitoring.write(tmp_path / "aiio.prom", [(rec, [])])
    samples = _samples(prom)
    assert _one(samples, "aiio_aggregate_bytes_per_second").value == 100 * 2**20
    assert _one(samples, "aiio_p99_latency_seconds").value == pytest.approx(0.0025)
    assert _one(samples, "aiio_au_min_ratio").value == 0.9
    assert _one(samples, "aiio_checkpoint_seconds").value == 3.0
    assert _one(samples, "aiio_jain").value == 0.99
    assert _one(samples, "aiio_required", figure="p99_ms").value == pytest.approx(0.005)
    assert _one(samples, "aiio_passed").labels["spec"] == "nightly"
    for name in samples:
        assert not name.endswith(("_mib_s", "_ms", "_s")), name


def test_accept_of_one_check_keeps_the_other_checks_series(target, results, tmp_path):
    """`accept --check good --prometheus` after a full run: node_exporter must still serve the
    other check's last figures, from the history, not lose them because one check ran."""
    spec = _spec(tmp_path, _check("good", "min_au = 0.05"),
                 _check("other", "min_au = 0.05"))
    prom = tmp_path / "aiio.prom"
    for only in ((), ("--check", "good")):
        proc = run_cli("accept", "--no-report", str(spec), "--target", str(target), "--results",
                       str(results), "--quiet", "--prometheus", str(prom), *only)
        assert proc.returncode == 0, proc.stderr
    samples = _samples(prom)
    stamps = {s.labels["check"]: s.value for s in samples["aiio_timestamp_seconds"]
              if s.labels["kind"] == "check"}
    assert set(stamps) == {"good", "other"}
    assert stamps["good"] > stamps["other"]  # good ran again; other is its last record


def test_a_check_run_now_drops_its_old_series_of_another_read_loop_from_the_export(tmp_path):
    """Last week `good` failed read by the Python loop (numba broken), today it passed with
    the compiled loop: the accept export must not keep last week's failure as one more check
    of the spec (an alert on aiio_passed would fire for good). `other` did not run: its last
    record is kept, whichever loop read it."""
    from aiio.results.monitoring import other_checks

    def rec(name: str, passed: bool, ts: float) -> Record:
        r = Record(kind="check", name=name, target="/mnt/a", status="pass" if passed else "fail",
                   passed=passed, figures={"aggregate_mib_s": 1.0}, spec="nightly")
        r.ts = ts
        return r

    with History(tmp_path / "h.sqlite") as h:
        for r in (rec("good [python loop]", False, 1.0), rec("other", False, 2.0),
                  rec("other [python loop]", True, 3.0)):
            h.add(r)
        kept = other_checks(h, "nightly", "/mnt/a", [(rec("good", True, 4.0), [])])
    assert [r.name for r, _ in kept] == ["other [python loop]"]


def test_each_figures_help_names_its_unit(tmp_path):
    # the rates' help read "samples/s, no unit": a rate's unit is per second (its name's
    # suffix, as Prometheus names units); a ratio such as CV has none
    from aiio.results.figures import FIGURES
    from aiio.results.monitoring import METRICS
    db = tmp_path / "h.sqlite"
    with History(db) as h:
        h.add(Record(kind="run", name="n", target="/mnt/a", status="ok", passed=True,
                     figures=dict.fromkeys(FIGURES, 2.0), phase="train", workload="demo",
                     clients="2", spec="s", ts=1000.0))
    prom = tmp_path / "aiio.prom"
    assert call_cli("history", "--history", str(db), "--prometheus", str(prom)).returncode == 0
    helps = {f.name: f.documentation for f in text_string_to_metric_families(prom.read_text())}
    for figure, metric in METRICS.items():
        unit = helps["aiio_" + metric].rsplit(", ", 1)[1]
        if metric.endswith("_per_second") and not metric.endswith("bytes_per_second"):
            assert unit == "per second", (metric, helps["aiio_" + metric])
        elif FIGURES[figure].unit == "":
            assert unit == "no unit", (metric, helps["aiio_" + metric])
