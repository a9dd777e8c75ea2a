"""Markup that is already safe, and the escaping of everything else: the one rule the HTML
report and its charts both build with (a leaf, so charts need nothing of report/)."""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any


class Html(str):
    """Markup that is already safe; every other string is escaped when placed in a page."""

    __slots__ = ()

    def __add__(self, other: object) -> Html:
        return Html(str.__add__(self, esc(other)))


def esc(value: Any) -> Html:
    """Escape any value for HTML text or attributes; Html passes through."""
    if isinstance(value, Html):
        return value
    return Html(html.escape(str(value), quote=True))


def join(parts: Iterable[Any]) -> Html:
    """The parts side by side, each escaped unless it is Html."""
    return Html("".join(esc(p) for p in parts))


def tag(name: str, body: Any = "", **attrs: Any) -> Html:
    """<name attrs>body</name>; attribute names use _ for - and a trailing _ for keywords."""
    text = "".join(f' {k.rstrip("_").replace("_", "-")}="{esc(v)}"'
                   for k, v in attrs.items() if v is not None)
    return Html(f"<{name}{text}>{esc(body)}</{name}>")
