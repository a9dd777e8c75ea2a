"""The HTML report a person reads: one self-contained page per run, sweep, acceptance run and
history. It reads results and never measures; charts are inline SVG (matplotlib, imported only
when a chart is drawn), nothing is fetched from the network.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aiio import __version__
from aiio.report import accept, fio, html, mlperf, run, search, sweep, table, trend
from aiio.report.common import other_section
from aiio.results.files import write_atomic
from aiio.results.result import kind_of

REPORT_NAME = "report.html"
KINDS = {"run": run, "sweep": sweep, "accept": accept, "fio": fio, "mlperf": mlperf,
         "users_table": table, "rates_table": table, "find_max_users": search}


def render(result: Mapping[str, Any]) -> str:
    """The HTML page for a result of any kind; damage in the result is shown, not raised."""
    if not isinstance(result, Mapping):
        raise TypeError(f"a result is a JSON object, not {type(result).__name__}")
    kind = str(kind_of(result))
    module = KINDS.get(kind)
    if module is None:
        return _plain_page(result, f"This version of the report has no view for results of "
                           f"kind {kind!r}; everything recorded is listed below.")
    try:
        return html.page(module.title(result), module.render_body(result),
                         footer=_footer(result.get("id")))
    except Exception as exc:  # noqa: BLE001 - a result too damaged for its view still shows
        return _plain_page(result, f"This {kind} result is too damaged to draw "
                           f"({type(exc).__name__}: {exc}); everything recorded is listed below.")


def _plain_page(result: Mapping[str, Any], why: str) -> str:
    """Every key of the result as tables, under a notice saying why there is nothing more."""
    body = [html.tag("h1", f"aiio result {result.get('id', '(no id)')}"),
            html.notice("warn", why), other_section(result, {"schema", "io"})]
    return html.page(f"aiio result {result.get('id', '')}", body,
                     footer=_footer(result.get("id")))


def _footer(result_id: Any) -> str:
    return (f"Written by aiio {__version__} from result {result_id or '(no id)'}. Bandwidth in "
            "MiB/s (2^20 bytes per second) of bytes actually moved, over monotonic time.")


def write(result: Mapping[str, Any], folder: str | os.PathLike,
          name: str = REPORT_NAME) -> Path:
    """Render and write folder/report.html atomically; returns its path."""
    return write_atomic(Path(folder) / name, render(result))


def render_history(records: Sequence[Mapping[str, Any]], source: str = "the history") -> str:
    """The history page from records {check, time, figure, value, passed, regression}."""
    return html.page("aiio history", trend.render_body(records, source),
                     footer=f"Written by aiio {__version__} from {source}.")


def write_history(records: Sequence[Mapping[str, Any]], path: str | os.PathLike,
                  source: str = "the history") -> Path:
    return write_atomic(Path(path), render_history(records, source))
