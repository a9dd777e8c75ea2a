"""What the history key, a sweep's key and the report page make of a run whose clients shared
processes (`run.client_processes`): the key holds the most clients a process held, not the
cap as typed, and the page says the clients shared processes."""

from __future__ import annotations

import copy
import itertools
import json
import re
from pathlib import Path

from aiio import report
from aiio.results import charts, result
from aiio.results.history import key_of, sweep_record
from aiio.run.clients import spread

DATA = Path(__file__).parent / "data"
RUN = DATA / "results-v3" / "20261203-062406-train-demo-c2"
SWEEP = DATA / "sweeps-v3" / "20261203-083256-scale-train-demo-c1_2"


def _shared(doc: dict, n: int, processes: int, cap: int | None = None) -> dict:
    """A stored training run as if its n clients had run in `processes` processes (as
    run_clients spreads them, each shared one's clients recording process_clients)."""
    doc = copy.deepcopy(doc)
    base, clients = doc["clients"][0], []
    for p, (a, b) in enumerate(spread(n, processes)):
        for i in range(a, b):
            c = copy.deepcopy(base)
            c.update(client=i, pid=40000 + p)
            if b - a > 1:
                c.update(process_clients=b - a, process_cpu_s=c.get("cpu_s", 0.0))
            clients.append(c)
    doc["clients"] = clients
    doc["workload"]["run"]["clients"] = n
    if cap is not None:
        doc["workload"]["run"]["client_processes"] = cap
    return doc


def test_a_sweep_whose_points_shared_processes_is_a_series_of_its_own() -> None:
    # A run that shared processes starts its own series; a sweep (and an accept check that
    # measured one, accept.run.check_settings) whose points did keeps the old one, so a
    # sweep to 1,024 clients now (threads past 256) is judged against one of 1,024 processes.
    sweep = json.loads((SWEEP / "result.json").read_text())
    shared = copy.deepcopy(sweep)
    last = shared["points"][-1]["result"]
    shared["points"][-1]["result"] = _shared(last, len(last["clients"]), 1)
    assert key_of(shared["points"][-1]["result"]) != key_of(last)  # the point's run: own key
    assert sweep_record(shared).key != sweep_record(sweep).key


def test_a_cap_that_changes_nothing_keeps_the_series() -> None:
    # run.client_processes is kept verbatim in [run], which every phase's key holds: set to
    # what it already was, or above the clients, it splits the series of identical runs.
    doc = json.loads((RUN / "result.json").read_text())
    assert key_of(_shared(doc, 8, 8, 64)) == key_of(_shared(doc, 8, 8, 0))
    assert key_of(_shared(doc, 1024, 256, 256)) == key_of(_shared(doc, 1024, 256, 0))
    # the way back to a process a client does not continue the runs made that way before
    before = _shared(doc, 1024, 1024)
    assert key_of(_shared(doc, 1024, 1024, 1024)) == key_of(before)


def test_the_report_page_says_the_clients_shared_processes(tmp_path: Path) -> None:
    # The console says "4 in 2 processes, 2 at most"; the page says nothing of it (only the
    # raw process_clients column and run.client_processes 0 in the workload dump).
    folder = tmp_path / RUN.name
    folder.mkdir()
    doc = json.loads((RUN / "result.json").read_text())
    (folder / "result.json").write_text(json.dumps(_shared(doc, 4, 2)))
    charts._ids = itertools.count(1)
    page = report.render(result.load(folder))
    text = " ".join(re.sub(r"<[^>]+>", " ", page).split())
    assert re.search(r"in 2 processes|shared? (a |their |2 )?process", text), \
        "the report page does not say the clients shared processes"
