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
from aiio.report import accept, html, run, sweep, trend
from aiio.report.common import header, missing_notice, other_section, status_notice

REPORT_NAME = "report.html"
KINDS = {"run": run, "sweep": sweep, "accept": accept}


def render(result: Mapping[str, Any]) -> str:
    """The HTML page for a result of any kind; damage in the result is shown, not raised."""
    if not isinstance(result, Mapping):
        raise TypeError(f"a result is a JSON object, not {type(result).__name__}")
    kind = result.get("kind", "run")
    module = KINDS.get(kind)
    if module is None:
        body = _unknown_kind(result, kind)
        title = f"aiio result ({kind})"
    else:
        body = module.render_body(result)
        title = module.title(result)
    return html.page(title, body, footer=_footer(result.get("id")))


def _unknown_kind(result: Mapping[str, Any], kind: Any) -> list[html.Html]:
    return [header(result, f"aiio result of kind {kind!r}"), status_notice(result, "result"),
            html.notice("warn", f"This version of the report has no view for results of kind "
                        f"{kind!r}; everything recorded is listed below."),
            missing_notice(result, {}), other_section(result, {"schema", "kind", "id"})]


def _footer(result_id: Any) -> str:
    return (f"Written by aiio {__version__} from result {result_id or '(no id)'}. Bandwidth in "
            "MiB/s (2^20 bytes per second) of bytes actually moved, over monotonic time.")


def write(result: Mapping[str, Any], folder: str | os.PathLike,
          name: str = REPORT_NAME) -> Path:
    """Render and write folder/report.html atomically; returns its path."""
    return _write_atomic(Path(folder) / name, render(result))


def render_history(records: Sequence[Mapping[str, Any]], source: str = "the history") -> str:
    """The history page from records {check, time, figure, value, passed, regression}."""
    return html.page("aiio history", trend.render_body(records, source),
                     footer=f"Written by aiio {__version__} from {source}.")


def write_history(records: Sequence[Mapping[str, Any]], path: str | os.PathLike,
                  source: str = "the history") -> Path:
    return _write_atomic(Path(path), render_history(records, source))


def _write_atomic(path: Path, text: str) -> Path:
    """Never leave half a page behind: write beside it, then rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path
