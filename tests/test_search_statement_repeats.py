"""The statement of a search with --repeat quotes only the first repeat of a probe: a count
that straddles (one repeat held, one did not) is said not to hold with the P95 of the repeat
that held, a figure within the goal."""

from __future__ import annotations

from types import SimpleNamespace

from aiio.sweep import find_users as fu

REQ = SimpleNamespace(goal="lenient", workload=SimpleNamespace(run=SimpleNamespace(clients=2)),
                      upper=8)


def _probe(users: int, decision: str, *p95s_held: tuple[float, bool]) -> dict:
    return {"users": users, "decision": decision,
            "runs": [{"p95_ms": p95, "verdict": "steady", "held": held, "goal_ms": 100.0}
                     for p95, held in p95s_held]}


def test_a_straddling_count_is_not_said_to_fail_with_the_figure_that_held() -> None:
    probes = [_probe(1, "holds", (5.0, True), (6.0, True)),
              _probe(2, "holds", (7.0, True), (8.0, True)),
              _probe(4, "straddles", (9.0, True), (120.0, False))]
    for done in (True, False):
        said = fu.statement(REQ, probes, 2, 4, done=done)
        assert "P95 9.0 ms" not in said, said  # the repeat that held is not why 4 did not


def test_one_user_that_straddles_is_not_said_to_fail_at_a_p95_within_the_goal() -> None:
    probes = [_probe(1, "straddles", (5.0, True), (120.0, False))]
    said = fu.statement(REQ, probes, *fu.so_far(probes))
    assert "P95 5.0 ms" not in said, said
