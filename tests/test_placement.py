"""Where a file lives, on a filesystem that does not say (a plain local folder); the
GlusterFS side is proven on a real volume (tests/test_gluster_lab.py)."""

from __future__ import annotations

import html
import io
import re

import pytest
from rich.console import Console

from aiio.report.placement import run_section
from aiio.results.beside import Placement
from aiio.results.result import model
from aiio.storage.placement import (
    Located,
    Placed,
    placement,
    server_index,
    servers_in,
    servers_of,
    table,
)
from aiio.storage.server_time import GAP_S, MAX_SPANS, ServerTally, server_times
from aiio.sweep import placement_note
from aiio.term import console

from .conftest import run_cli


def test_a_local_folder_says_nothing_of_placement_and_the_result_says_so(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x")
    assert servers_of(str(path)) is None
    placed = placement(str(tmp_path), [Placed(0, str(path), 1, 0.1)], "a file")
    assert placed["source"] is None
    assert "does not say where a file lives" in placed["reason"]


def test_a_pathinfo_names_each_brick_with_its_host():
    # as a GlusterFS 10.3 client answered for a folder of a two-brick volume
    info = ("(<DISTRIBUTE:lab-dht> <POSIX(/b/0/brick):vm:/b/0/brick/d> "
            "<POSIX(/b/1/brick):vm:/b/1/brick/d>)")
    assert servers_in(info) == ["vm:/b/0/brick", "vm:/b/1/brick"]


def test_a_replica_set_is_one_server_its_bricks_holding_the_same_files():
    # AFR's answer nests each replica set's bricks under "(<REPLICATE:name> ...)": a file is
    # on every brick of its set, so a set's second brick is not an idle server beside the first
    folder = ("(<DISTRIBUTE:v-dht> (<REPLICATE:v-replicate-0> <POSIX(/b0):h1:/b0/d> "
              "<POSIX(/b1):h2:/b1/d>) (<REPLICATE:v-replicate-1> <POSIX(/b2):h1:/b2/d> "
              "<POSIX(/b3):h2:/b3/d>))")
    assert servers_in(folder) == ["h1:/b0+h2:/b1", "h1:/b2+h2:/b3"]
    # a file's answer names its set; a ')' in the file's name does not end the set
    file = "(<REPLICATE:v-replicate-1> <POSIX(/b2):h1:/b2/d/a)b> <POSIX(/b3):h2:/b3/d/a)b>)"
    assert servers_in(file) == ["h1:/b2+h2:/b3"]


def test_a_file_whose_set_has_a_brick_down_is_on_its_set_not_a_server_of_its_own():
    # a replica down answers nothing: the file's pathinfo names the bricks that are up
    servers = ["h1:/b0+h2:/b1", "h1:/b2+h2:/b3"]
    assert server_index(["h2:/b3"], servers) == 1
    assert server_index(["h1:/b0+h2:/b1"], servers) == 0
    assert servers == ["h1:/b0+h2:/b1", "h1:/b2+h2:/b3"]
    # a server the folder did not name (a brick added since) is one more
    assert server_index(["h3:/b4"], servers) == 2 and servers[-1] == "h3:/b4"


def test_a_folder_gone_before_it_is_asked_about_leaves_the_placement_unknown(tmp_path):
    # the probe describes a run: a failure to ask is recorded, never raised into the run
    gone = tmp_path / "gone"
    placed = placement(str(gone), [Placed(0, str(gone / "f"), 1, 0.1)], "a file")
    assert placed["source"] is None and "failed" in placed["reason"]


# --- time busy and time collided, from the clients' spans -----------------------------------

def _load(client: int, spans: list[list[list[float]]], nbytes: int = 1) -> dict:
    return {"client": client, "bytes": [nbytes] * len(spans), "spans": spans}


def test_a_server_is_busy_while_any_client_has_io_on_it():
    # server 0: client 0 from 0 to 2, client 1 from 1 to 3 (overlapping: 3 s, not 4)
    times = server_times([_load(0, [[[0, 2]], []]), _load(1, [[[1, 3]], [[3, 4]]])], 2)
    assert times.busy_s == pytest.approx((3.0, 1.0))
    assert times.window_s == 4.0
    # two clients on server 0 while server 1 had none: from 1 to 2
    assert times.collided_s == pytest.approx(1.0)


def test_clients_two_to_a_server_on_every_server_did_not_collide():
    # four clients, two on each of two servers the whole time: every server busy
    loads = [_load(c, [[[0, 5]], []] if c < 2 else [[], [[0, 5]]]) for c in range(4)]
    times = server_times(loads, 2)
    assert times.collided_s == 0.0 and times.busy_s == (5.0, 5.0)


def test_a_client_keeps_its_reads_on_a_server_as_few_spans():
    tally = ServerTally(0, [0, 1, 0], 2)
    tally.start_ns = 10**9
    # file 0 then file 2 (both on server 0) back to back, then file 1 on server 1
    tally.add(0, 100, 10**9, 2 * 10**9)
    tally.add(2, 50, 2 * 10**9 + 10**5, 3 * 10**9)  # 0.1 ms later: one span
    tally.add(1, 7, 3 * 10**9, 4 * 10**9)
    # a read that began before the last one on its server ended (another loader thread)
    tally.add(0, 1, int(2.5 * 10**9), int(2.9 * 10**9))
    out = tally.to_dict()
    assert out["bytes"] == [151, 7]
    assert out["spans"] == [[[0.0, 2.0]], [[2.0, 3.0]]]


def test_a_long_run_keeps_its_spans_within_bounds_and_says_how_coarse():
    tally = ServerTally(3, [0, 1], 2)
    for k in range(3 * MAX_SPANS):  # alternating servers: every read its own span
        tally.add(k % 2, 1, k * 10**7, k * 10**7 + 5 * 10**6)
    out = tally.to_dict()
    assert sum(len(s) for s in out["spans"]) <= MAX_SPANS
    assert out["gap_s"] > GAP_S and out["bytes"] == [3 * MAX_SPANS // 2] * 2
    times = server_times([out], 2)
    # coarser, never shorter than the reads themselves
    assert times.busy_s[0] >= 3 * MAX_SPANS // 2 * 0.005


def _hopping_together(reads: int) -> list[dict]:
    """Two clients reading one server at once, 1 ms a read, hopping together to the other
    server every 10 reads: the other server idles the whole time."""
    outs = []
    for c in range(2):
        tally = ServerTally(c, [0, 1], 2)
        for k in range(reads):
            tally.add((k // 10) % 2, 1, k * 10**6, k * 10**6 + 9 * 10**5)
        outs.append(tally.to_dict())
    return outs


def test_clients_that_collide_all_along_are_never_said_to_collide_for_none_of_it():
    # a short run keeps every span: collided the whole window
    times = server_times(_hopping_together(4_000), 2)
    assert times.collided_s == pytest.approx(times.window_s, rel=0.02)
    # a long one merges each client's spans over a gap wider than its stays on a server:
    # each seems busy on both at once, which would read as 0 s collided; it is not known
    long = _hopping_together(30_000)
    assert all(load["gap_s"] > 0.01 for load in long)
    times = server_times(long, 2)
    assert times.collided_s is None and times.blurred_s > 0.05 * times.window_s
    # one client alone never collides, however blurred its spans
    assert server_times(long[:1], 2).collided_s == 0.0


def test_a_sweep_whose_collided_time_is_not_known_does_not_rule_placement_out():
    located = Located(("h:/b0", "h:/b1"), (0, 1))
    points = [{"clients": n, "result": {"aggregate": {"placement": table(
        located, _hopping_together(reads)[:n], "the dataset's files")}}}
        for n, reads in ((1, 4_000), (2, 30_000))]
    verdict = placement_note.summary(points)
    assert verdict["collided_at"] == []
    assert "at no count did clients share" not in verdict["statement"]
    assert "not known at 2 client(s)" in verdict["statement"]
    assert "not ruled out" in verdict["statement"]


def test_a_run_whose_collided_time_is_not_known_says_so_on_screen_and_page():
    located = Located(("h:/b0", "h:/b1"), (0, 1))
    res = {"aggregate": {"placement": table(located, _hopping_together(30_000),
                                            "the dataset's files")}}
    placed = Placement.of(model(res))
    title = console.placement_table(placed).title
    page = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", str(run_section(res)))).split())
    for text in (title, page):
        assert "how long clients shared a server while another idled is not known" in text
        assert "16 ms" in text


def test_an_80_column_console_tells_the_servers_apart(monkeypatch):
    # long brick folders that differ only near their end: cut at the right, all four rows
    # read the same
    brick = "node1.example:/srv/gluster/export/volume-cb7dff07/brick{}/brick"
    located = Located(tuple(brick.format(i) for i in range(4)), (0, 1, 2, 3))
    tally = ServerTally(0, located.of_file, 4)
    for f in range(4):
        tally.add(f, 1, f * 10**8, f * 10**8 + 9 * 10**7)
    res = {"aggregate": {"placement": table(located, [tally.to_dict()], "the files")}}
    monkeypatch.setenv("COLUMNS", "80")
    out = Console(width=80, record=True, file=io.StringIO())
    out.print(console.placement_table(Placement.of(model(res))))
    rows = [line for line in out.export_text().splitlines() if "1.00 B" in line or " 1 B" in line]
    assert len(rows) == 4
    for i, row in enumerate(rows):
        assert f"brick{i}/brick" in row, row
    # a console wide enough shows them whole
    monkeypatch.setenv("COLUMNS", "220")
    wide = console.placement_table(Placement.of(model(res)))
    assert [str(c) for c in wide.columns[0].cells] == list(located.servers)


@pytest.mark.parametrize("phase", ["train", "load"])
def test_a_run_on_a_local_folder_says_on_screen_and_page_that_placement_is_not_known(
        tmp_path, phase):
    target, results = tmp_path / "t", tmp_path / "r"
    target.mkdir()
    proc = run_cli("run", "--phase", phase, "--clients", "2", "--target", str(target),
                   "--results", str(results), "--no-history",
                   "--set", "dataset.num_files=8", "--set", "dataset.sample_size=64KiB",
                   "--set", "load.size=4MiB")
    assert proc.returncode == 0, proc.stderr
    printed = " ".join(proc.stdout.split())
    assert "not known: the filesystem does not say" in printed
    (page,) = results.glob("*/report.html")
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page.read_text())).split())
    assert "Where the bytes went placement not known: the filesystem does not say" in text
