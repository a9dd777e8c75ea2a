"""The answer a run report opens with: did the run finish, did it meet its goal, and the
headline figures as large numbers, before any configuration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiio.report import html as h
from aiio.report.common import status_notice
from aiio.results.figures import FIGURES, label, run_figures
from aiio.results.markup import Html
from aiio.results.result import Result, model

# The figures shown as cards, in this order, when the result has them.
CARDS = ("aggregate_mib_s", "client_mib_s_min", "au_min", "cv", "query_p99_ms", "p99_ms",
         "checkpoint_s", "restore_s", "load_s", "hero_fraction")
# A card left out when the first is shown: a vector search's latency is its queries'; a node
# read's p99 is no query's, and the headline figures show it as read latency.
INSTEAD = {"p99_ms": "query_p99_ms"}


def run_verdict(res: Mapping[str, Any]) -> Html:
    """One coloured line saying what the run answers, then its headline figures."""
    if res.get("status") != "ok":  # why it stopped is the answer
        notice = status_notice(res, "run")
    else:
        notice = h.notice(*_answer(res))
    return h.tag("section", h.join([notice, cards(res)]), id="verdict")


def _answer(res: Mapping[str, Any]) -> tuple[str, str]:
    """(notice kind, sentence) of a finished run: the phase's own goal if it has one."""
    au = (res if isinstance(res, Result) else model(res)).summary.au
    if au is not None and au.recorded_pass:
        goal, least = h.pct(au.goal, 0), h.pct(au.min)
        if au.passed is None:  # no verdict: not a failure of the storage
            return "warn", (f"AU could not be measured, so there is no verdict against the "
                            f"{goal} goal: {au.note or 'no step was measured'}.")
        if au.passed:
            return "ok", (f"PASS: the storage kept every accelerator at least {goal} busy "
                          f"(the least busy client: {least}).")
        below = list(au.below_goal)
        return "fail", (f"FAIL: {len(below)} of {len(h.items(res.get('clients')))} clients "
                        f"were below the {goal} accelerator-utilization goal (the least busy: "
                        f"{least}); the storage did not keep up.")
    return "info", (f"Finished: the {res.get('phase', '?')} phase has no pass/fail goal of its "
                    "own; its headline figures are below (aiio accept judges them against "
                    "thresholds).")


def cards(res: Mapping[str, Any]) -> Html:
    """The headline figures as large numbers with their labels and units."""
    try:
        figs = run_figures(dict(res))
    except (AttributeError, KeyError, TypeError, ValueError):  # a damaged result: no cards
        return Html("")
    shown = [(label(n, res if isinstance(res.get("phase"), str) else None),
              FIGURES[n].format(figs[n]))
             for n in CARDS if n in figs and INSTEAD.get(n) not in figs]
    if not shown:
        return Html("")
    return h.tag("div", h.join(h.tag("div", h.join([h.tag("b", value), h.tag("span", label)]),
                                      class_="card") for label, value in shown),
                 class_="cards")
