"""Which queries met a merge: any client's on the host, not only their own. Clients share
one storage, so a query of client 0 that ran while client 1 rewrote its index ran beside
that merge's reads and writes; it counted as calm, and the calm p99 held merge traffic."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from aiio.phases.vector_board import MergeBoard, met_a_merge

from .mpi import mpi_run, needs_mpi

MS = 1_000_000


def _queries(*spans: tuple[int, int]) -> np.ndarray:
    """Rows of (arrival, begun, done) ns, begun at arrival."""
    return np.array([(a * MS, a * MS, d * MS) for a, d in spans], np.int64).reshape(-1, 3)


def test_a_query_that_met_another_clients_merge_met_a_merge() -> None:
    board = MergeBoard(clients=2)
    board.begin(1, 100 * MS)
    board.end(1, 200 * MS)
    q = _queries((10, 50), (150, 160), (190, 250), (210, 300))
    assert met_a_merge(q, board.windows()).tolist() == [False, True, True, False]


def test_a_merge_still_running_covers_every_query_after_its_start() -> None:
    board = MergeBoard(clients=3)
    board.begin(2, 100 * MS)  # another client's merge, not ended when this client counts
    q = _queries((10, 50), (90, 110), (500, 600))
    assert met_a_merge(q, board.windows()).tolist() == [False, True, True]


def test_windows_written_by_another_process_are_read() -> None:
    """The board is shared memory made before the clients fork: a merge a child records is
    seen by every other process of the host."""
    board = MergeBoard(clients=2)
    pid = os.fork()
    if pid == 0:
        try:
            board.begin(0, 5 * MS)
            board.end(0, 7 * MS)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert board.windows().tolist() == [[5 * MS, 7 * MS]]


def test_merges_past_the_slots_widen_the_last_window_never_drop_one() -> None:
    """A client with more merges than its slots: the last slot spans from its first merge to
    the newest's end, so a query in a gap between them counts as merging (never the other
    way: a query that met a merge is never called calm)."""
    board = MergeBoard(clients=1, slots=2)
    for start in (10, 30, 50, 70):
        board.begin(0, start * MS)
        board.end(0, (start + 5) * MS)
    assert board.windows().tolist() == [[10 * MS, 15 * MS], [30 * MS, 75 * MS]]
    q = _queries((20, 25), (40, 45), (72, 73), (80, 90))
    assert met_a_merge(q, board.windows()).tolist() == [False, True, True, False]


def test_no_merge_leaves_every_query_calm() -> None:
    assert not met_a_merge(_queries((1, 2), (3, 4)), MergeBoard(clients=4).windows()).any()


def test_overlapping_windows_of_several_clients_are_one_span() -> None:
    board = MergeBoard(clients=3)
    for client, (a, b) in enumerate([(100, 300), (200, 250), (280, 400)]):
        board.begin(client, a * MS)
        board.end(client, b * MS)
    q = _queries((50, 99), (350, 360), (401, 500), (399, 401))
    assert met_a_merge(q, board.windows()).tolist() == [False, True, False, True]


def test_the_split_counts_a_query_beside_another_clients_merge_as_merging() -> None:
    """The client's own split: it looked at its own merges alone, and called the second
    query, which ran through client 1's merge, calm."""
    from types import SimpleNamespace

    from aiio.phases.vector_insert_figures import HISTOGRAMS, _split_queries
    from aiio.phases.vector_inserts import InsertArgs
    from aiio.stats import Histogram

    board = MergeBoard(clients=2)
    board.begin(1, 100 * MS)
    board.end(1, 200 * MS)
    own = SimpleNamespace(records=[], ia=InsertArgs("f", 1.0, 1, 1, board))  # client 0's
    hist = {name: Histogram() for name in HISTOGRAMS}
    _split_queries(_queries((10, 50), (150, 160), (300, 310)), own, hist)
    assert (hist["query_merging"].count, hist["query_calm"].count) == (1, 2)


def test_insert_args_with_a_board_cross_to_another_rank_with_a_board_of_their_own() -> None:
    """Rank 0 pickles each rank's arguments to send them (mpi4py): shared memory cannot be
    pickled, and every MPI run with inserts ended in a traceback. A rank gets an empty board
    of the same shape, made where it arrives, before that rank forks its clients."""
    import pickle

    from aiio.phases.vector_inserts import InsertArgs

    board = MergeBoard(clients=4, slots=8)
    board.begin(0, 5 * MS)
    back = pickle.loads(pickle.dumps(InsertArgs("f", 200.0, 8, 200, board)))
    assert (back.folder, back.rate, back.merge_every) == ("f", 200.0, 200)
    assert (back.board.clients, back.board.slots) == (4, 8) and not len(back.board.windows())


def test_the_board_holds_every_merge_a_client_can_make_in_the_run() -> None:
    """256 windows a client: a client merging every second overflowed in four minutes, and
    every later query on the host read as merging. A merge takes merge_every new inserts,
    so a client makes at most its arrivals (Poisson: a tenth and 100 more) over that."""
    from aiio.phases.vector_board import board_for

    from .conftest import tiny_workload

    w = tiny_workload(vector__insert_rate=1000, vector__merge_every=1000,
                      vector__duration="10min", run__clients=4)
    board = board_for(w.vector, clients=4)
    assert board.slots >= int(1000 * 600 * 1.1 + 100) // 1000 + 1
    assert board.clients == 4


def test_a_slot_whose_start_is_not_yet_seen_is_no_window() -> None:
    """Without a barrier another core may see a raised count before the start it publishes:
    that slot read as a window from 0 to never, every query merging."""
    board = MergeBoard(clients=1)
    board._count[0] = 1  # as a reader on a weakly ordered core may see a begin half done
    assert not len(board.windows())


@needs_mpi
def test_two_ranks_run_an_insert_stream(target: Path, results: Path) -> None:
    done = mpi_run(2, "run", "--phase", "vector", "--target", str(target), "--results",
                   str(results), "--clients", "4", "--no-history", "--no-report", "--json",
                   "--set", "vector.vectors=5000", "--set", "vector.max_degree=16",
                   "--set", "vector.search_list=24", "--set", "vector.beam_width=4",
                   "--set", "vector.duration=2s", "--set", "vector.insert_rate=200",
                   "--set", "vector.merge_every=100", "--set", "vector.insert_sync=8")
    assert done.returncode == 0, done.stderr[-2000:]
    res = json.loads(done.stdout)
    ins = res["aggregate"]["inserts"]
    assert res["status"] == "ok" and ins["merges"] > 0
    assert ins["queries_merging"] + ins["queries_calm"] == res["aggregate"]["vector"]["queries"]
    assert not list(target.glob("aiio/vector/*"))  # the run's own folder is gone
