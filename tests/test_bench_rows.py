"""Rows of the bench (tools/bench.py) that must not be met by construction: a figure that
was not measured, or a judged figure on the wrong side, reads as not met. No speed is
measured here."""

from __future__ import annotations

import random
import shutil

from tools import bench

ASKED = 0.010  # the demo workload's compute time per batch on its h100


def _result(per_step: list[float], warned: bool = False) -> dict:
    """A density run's result as the bench reads it: every client's step log (compute
    seconds in the fifth place) and the run's warnings."""
    steps = [[i, 0.0, 0.0, 0.0, s] for i, s in enumerate(per_step)]
    warnings = [{"code": "compute_ran_long", "message": "..."}] if warned else []
    return {"workload": {"train": {"accelerator": "h100", "compute_time": {"h100": ASKED}}},
            "clients": [{"client": 0, "step_log": steps}], "warnings": warnings}


def test_a_run_without_a_recorded_step_does_not_meet_the_compute_row():
    # no step: the figure read 0.0, and 0.0 <= 1.02 met the target
    row = bench.fidelity_row(64, _result([]), "")
    assert not row.met


def test_compute_that_ran_short_does_not_meet_the_compute_row():
    # "within 2 % of the asked time" holds on both sides; nothing warns of short compute
    assert not bench.fidelity_row(64, _result([0.5 * ASKED] * 10), "").met
    assert bench.fidelity_row(64, _result([1.01 * ASKED] * 10), "").met
    assert not bench.fidelity_row(64, _result([1.18 * ASKED] * 10), "").met
    assert bench.fidelity_row(64, _result([1.18 * ASKED] * 10, warned=True), "").met


def test_memory_that_could_not_be_read_does_not_meet_the_memory_row():
    # psutil refusing every process (another user's, a hardened /proc) summed to 0 bytes
    assert not bench.memory_row(64, 0).met
    assert bench.memory_row(64, 300 * 2**20).met
    assert not bench.memory_row(64, 600 * 2**20).met


def test_the_engine_cross_check_row_is_judged_by_its_rounds_not_by_each_side_s_best():
    # Dec 1 21:21: best of each 1,209 against 1,198 MiB/s (1.010, "within 5 %") while the
    # three rounds' own ratios were 1.122, 0.929 and 1.164 (median 1.122)
    aiio, fio = [1178.0, 1113.0, 1209.0], [1050.0, 1198.0, 1039.0]
    out = {"aiio_mib_s": max(aiio), "fio_mib_s": max(fio), "ratio": max(aiio) / max(fio),
           "agree": True, "rounds": 3, "aiio_runs_mib_s": aiio, "fio_runs_mib_s": fio,
           "median_round_ratio": 1178.0 / 1050.0}
    row = bench.crosscheck_row(out)
    assert not row.met and round(row.ratio, 3) == 1.122
    assert row.ratio_min is not None and round(row.ratio_min, 3) == 0.929
    out["aiio_runs_mib_s"] = [1050.0, 1150.0, 1060.0]
    assert bench.crosscheck_row(out).met


def test_a_run_that_starved_a_client_fails_the_no_starving_row():
    # three pairs on the oracle; in the second aiio left one client at 0.3 of its share
    # while fio's slowest had 0.8: the median of the three pairs met the row
    fio = [0.8] + [0.95] * 1023
    fine = [0.9] + [0.95] * 1023
    starved = [0.3] + [0.95] * 1023
    rows = bench._fair_rows(1024, [(fine, fio), (starved, fio), (fine, fio)])
    slowest = next(r for r in rows if "no starving" in r.name)
    assert not slowest.met and slowest.ratio_min is not None and slowest.ratio_min < 0.4
    assert "every run" in slowest.target
    rows = bench._fair_rows(1024, [(fine, fio)] * 3)
    assert next(r for r in rows if "no starving" in r.name).met


def _slowest(rows: list) -> object:
    return next(r for r in rows if "no starving" in r.name)


def _shares(slowest: float, clients: int = 1024) -> list[float]:
    return [slowest] + [0.95] * (clients - 1)


def test_no_starving_holds_each_run_of_aiio_to_fios_slowest_in_any_run():
    # the full bench of Dec 2 02:31: aiio's slowest client 0.806, 0.788, 0.786 of the stream
    # rate, fio's 0.806, 0.783, 0.859. The third pair read 0.915 and the row was not met,
    # though aiio's slowest never fell below fio's own slowest of another run: fio's slowest
    # moves by 10 % between its runs, and pair by pair that spread judged aiio
    aiio, fio = (0.806, 0.788, 0.786), (0.806, 0.783, 0.859)
    row = _slowest(bench._fair_rows(1024, [(_shares(a), _shares(f))
                                           for a, f in zip(aiio, fio, strict=True)]))
    assert row.met, row.note
    assert "fio's slowest in any run" in row.target


def test_a_tool_that_is_fio_rarely_misses_no_starving():
    # slowest shares drawn alike for both tools, 3.5 % apart run to run as on Dec 2: pair by
    # pair a tool equal to fio missed in about 38 % of rows
    rng = random.Random(5)
    misses = 0
    for _ in range(200):
        draws = [(_shares(rng.gauss(0.81, 0.028), 8), _shares(rng.gauss(0.81, 0.028), 8))
                 for _ in range(3)]
        misses += not _slowest(bench._fair_rows(8, draws)).met
    assert misses / 200 <= 0.15


def test_shares_that_could_not_be_measured_do_not_let_the_bench_pass(monkeypatch):
    # where the oracle cannot be mounted the figure printed its reason to stderr and gave no
    # row, so `make bench` exited 0 with issue 14's shares never measured
    from tests.oracle import mount

    monkeypatch.setattr(mount, "can_mount_fuse", lambda: "no /dev/fuse on this machine")
    rows = bench.fairness_rows(1024)
    assert rows and not any(r.met for r in rows)
    assert "no /dev/fuse" in rows[0].note and "not measured" in rows[0].target


def test_a_row_without_a_figure_prints_as_json_any_reader_takes():
    # a run that read NaN (or a row of no ratio) printed the bare NaN token, which JSON does
    # not have: jq and the browsers' parsers refuse the whole output
    import json

    def refuse(token: str) -> None:
        raise ValueError(token)

    row = bench.paired_row("x", [1.0] * 12, [float("nan")] + [1.0] * 11, "MiB/s", 0.95,
                           again=[1.0] * 12)
    (got,) = json.loads(bench.rows_json([row]), parse_constant=refuse)
    assert got["ratio"] is None and got["runs"]["fio"][0] is None and not got["met"]


def test_a_shares_row_without_a_ratio_says_why():
    # fio's slowest client at 0: the pairing said "no ratio to judge", and the shares rows
    # replaced that note with their own, leaving a row not met without its reason
    rows = bench._fair_rows(8, [(_shares(0.8, 8), _shares(0.0, 8))] * 3)
    slowest = _slowest(rows)
    assert not slowest.met and "no ratio to judge" in slowest.note


def test_a_crosscheck_row_without_a_ratio_says_why():
    out = {"aiio_mib_s": 1000.0, "fio_mib_s": 0.0, "ratio": float("inf"), "agree": False,
           "rounds": 3, "aiio_runs_mib_s": [1000.0] * 3, "fio_runs_mib_s": [1000.0, 0.0, 990.0]}
    row = bench.crosscheck_row(out)
    assert not row.met and "no ratio to judge" in row.note and "3 rounds" in row.note


def _noisy_disk_rows() -> list:
    """Two rows: one met, one on storage whose A/A control moved far more than its margin."""
    fio = [1000.0] * 12
    again = [x * 1000 for x in (0.72, 0.8, 0.86, 0.9, 0.95, 1.0, 1.02, 1.05, 1.08, 1.1, 1.13,
                                1.17)]
    met = bench.paired_row("steady row", [1000.0] * 12, fio, "MiB/s", 0.95, again=fio)
    noisy = bench.paired_row("noisy row", [780.0] * 12, fio, "MiB/s", 0.95, again=again,
                             unknown_speed=True)
    return [met, noisy]


def test_a_row_not_judged_does_not_fail_the_bench_and_the_summary_names_it(capsys):
    # Dec 2 03:56: the local-disk stream row read 0.779 where fio against itself spread
    # 0.719..1.166, and `make bench` exited 1 on the disk's noise
    rows = _noisy_disk_rows()
    assert bench.exit_code(rows) == 0
    bench.print_rows(rows)
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("noisy row")]
    assert line.endswith("not judged"), line
    assert "1 row not judged: noisy row" in out and "storage noise" in out
    rows.append(bench.paired_row("slow row", [500.0] * 12, [1000.0] * 12, "MiB/s", 0.95))
    assert bench.exit_code(rows) == 1


def test_a_row_not_judged_says_so_in_json():
    # stdout holds the JSON alone; the summary line goes to stderr, as in the table
    import json

    got = json.loads(bench.rows_json(_noisy_disk_rows()))
    assert [r["judged"] for r in got] == [True, False]
    assert bench.unjudged_line(_noisy_disk_rows()) == "1 row not judged: noisy row"
    assert bench.unjudged_line(_noisy_disk_rows()[:1]) == ""


def test_throttled_rows_that_cannot_be_built_say_why_and_are_not_judged(monkeypatch):
    # without root or blkio the rows must not pass silently: each is printed, not judged,
    # with its reason, and named in the summary
    monkeypatch.setattr(bench, "can_build_storage", lambda: "needs root for loop devices")
    rows = bench.throttled_stream_rows(400 * 2**20, 2**20)
    assert len(rows) == 2 and not any(r.judged or r.met for r in rows)
    assert all("needs root for loop devices" in r.note for r in rows)
    assert all("throttled to 400 MiB/s" in r.name for r in rows)


def test_the_cross_check_row_on_noisy_storage_is_not_judged():
    out = {"aiio_mib_s": 1000.0, "fio_mib_s": 1200.0, "ratio": 1000 / 1200, "agree": False,
           "rounds": 5, "aiio_runs_mib_s": [780.0] * 5, "fio_runs_mib_s": [1000.0] * 5,
           "fio_again_runs_mib_s": [720.0, 900.0, 1000.0, 1100.0, 1170.0]}
    row = bench.crosscheck_row(out)
    assert not row.judged and not row.met and "storage noise" in row.note
    assert "fio again 720, 900, 1,000, 1,100, 1,170" in row.note, row.note
    out["fio_again_runs_mib_s"] = [1000.0, 1010.0, 990.0, 1000.0, 1005.0]
    row = bench.crosscheck_row(out)
    assert row.judged and not row.met


def test_the_cross_check_row_on_noisy_storage_fails_an_engine_far_faster_than_fio():
    # an engine whose reads come from memory reads several times fio: on noisy storage the
    # row was not judged, and the bench exited 0
    again = [720.0, 900.0, 1000.0, 1100.0, 1170.0, 800.0, 950.0, 1050.0, 1130.0, 760.0,
             990.0, 1010.0]
    out = {"aiio_mib_s": 5000.0, "fio_mib_s": 1000.0, "ratio": 5.0, "agree": False,
           "rounds": 12, "aiio_runs_mib_s": [5000.0] * 12, "fio_runs_mib_s": [1000.0] * 12,
           "fio_again_runs_mib_s": again}
    row = bench.crosscheck_row(out)
    assert row.judged and not row.met, row
    assert "beyond the storage's noise" in row.note, row.note


def test_the_compute_row_weighs_every_step_not_every_kept_record():
    # a long client's log thins to one step in k (StepTotals): the mean over the kept records
    # gave its steps 1/k the weight of a short client's, and the row read 1.125 where the
    # run's steps computed 1.05 times the asked time on average, the figure aiio's own
    # compute_ran_long warning reads
    from aiio.phases.train_steps import StepTotals

    clients = []
    for index, (steps, per_step) in enumerate(((4000, ASKED), (999, 1.25 * ASKED))):
        totals = StepTotals(0.1, 1000, 4)
        t = 0.0
        for step in range(steps):
            totals.record(0, step, t, t, t + per_step, 1, 1)
            t += per_step
        clients.append({"client": index, **totals.figures(ASKED, 1)})
    assert clients[0]["step_log_stride"] == 4 and clients[1]["step_log_stride"] == 1
    res = {"workload": {"train": {"accelerator": "h100", "compute_time": {"h100": ASKED}}},
           "clients": clients, "warnings": []}
    every_step = (4000 * 1.0 + 999 * 1.25) / 4999
    assert abs(bench._compute_fidelity(res) - every_step) < 1e-9, bench._compute_fidelity(res)


def test_the_throttled_device_names_every_program_it_needs(tmp_path, monkeypatch):
    # the device's numbers come from lsblk: without it the bench built the device and then
    # ended in a traceback instead of a row saying why it was not judged
    import os

    from tools.storage import can_build_storage

    if os.geteuid() != 0:
        return  # the reason is root, checked first
    for tool in ("losetup", "mkfs.ext4", "mount", "which", "sh"):
        found = shutil.which(tool)
        if found:
            (tmp_path / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(tmp_path))
    why = can_build_storage()
    assert why is not None and "lsblk" in why, why
