"""HTML building blocks for the report: tables, notices and the self-contained page (the
escaping rule, `Html`, `esc` and `tag`, is `aiio.results.markup`, which the charts share).

Everything a page needs is inline (styles, one small sorting script, SVG charts). A Content
Security Policy forbids fetching anything, so a report behaves the same offline, from a mail
attachment or on a web server, and a browser says so loudly if something tries.
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aiio.results.markup import Html, esc, join, tag
from aiio.units import format_duration, format_latency_ns, format_rate, format_size

# --- numbers with their units -------------------------------------------------------------

def finite(value: Any) -> float | None:
    """value as a float, or None when it is missing or not a finite number."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):  # JSON sets integers no bound
        return None
    return x if math.isfinite(x) else None


MISSING = "n/a"


def mib_s(value: Any) -> str:
    """'1,234.5 MiB/s'; small rates keep three significant digits ('0.0123 MiB/s')."""
    x = finite(value)
    if x is None:
        return MISSING
    return format_rate(x)


def pct(value: Any, digits: int = 1) -> str:
    """A fraction (0.9) as a percentage ('90.0 %')."""
    x = finite(value)
    return MISSING if x is None else f"{x * 100:.{digits}f} %"


def seconds(value: Any) -> str:
    x = finite(value)
    if x is None:
        return MISSING
    if x == 0:  # a measured zero (a CPU time under one clock tick), not an unset value
        return "0 s"
    if abs(x) < 0.001:  # "0.000 s" would read as nothing at all, or as unset
        return format_latency_ns(x * 1e9)
    if x < 10:
        return f"{x:.3f} s"
    return f"{x:,.1f} s" if x < 120 else f"{x:,.1f} s ({format_duration(x)})"


def latency(value: Any) -> str:
    x = finite(value)
    return MISSING if x is None else format_latency_ns(x)


def size(value: Any) -> str:
    x = finite(value)
    return MISSING if x is None else format_size(x)


def number(value: Any, digits: int = 0, unit: str = "") -> str:
    x = finite(value)
    if x is None:
        return MISSING
    text = f"{x:,.{digits}f}"
    return f"{text} {unit}" if unit else text


def plain(value: Any) -> str:
    """Any JSON value as short text: lists joined, floats rounded, None as n/a."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.4g}"
    if isinstance(value, list | tuple):
        return ", ".join(plain(v) for v in value) if value else "(none)"
    return str(value)


# Words that make a key a count of things, whatever else it names: au_clients_measured is how
# many clients measured AU (2), not an AU (200 %); au_dataset_samples_needed is samples.
COUNT_WORDS = {"clients", "samples", "steps", "files", "ranks", "replicas", "count", "measured",
               "needed"}


def is_count(key: str) -> bool:
    """A key naming a count of things, not bytes, time or a fraction (batch size: samples)."""
    k = str(key).lower()
    return k.endswith("batch_size") or bool(COUNT_WORDS & set(k.split("_")))


def by_name(key: str, value: Any) -> str:
    """A number with the unit its key names: mib_s, ops_s and _per_s (rates), _ns and _ms
    (latency), _s or a lone s (seconds), counts (is_count), bytes and size, percent, au and
    efficiency (fractions)."""
    x = finite(value)
    if x is None:
        return plain(value)
    k = str(key).lower()
    words = k.split("_")
    if "mib_s" in k:
        return mib_s(x)
    if k.endswith("_per_s"):
        return number(x, 1, f"{words[-3] if len(words) > 2 else 'units'}/s")
    if k.endswith("ops_s") or k == "iops" or k.endswith("_iops"):
        return number(x, 1, "ops/s")
    if k.endswith("_ns"):
        return latency(x)
    if k.endswith("_ms"):
        return latency(x * 1e6)
    if "_s_per_" in k:
        return f"{seconds(x)} per {words[-1]}"
    if "s" in words or k.endswith("seconds") or "time" in words or "duration" in words:
        return seconds(x)
    if is_count(k):
        return number(x) if x == int(x) else plain(value)
    if "bytes" in words or k.endswith(("size", "size_stdev")):
        return f"{size(x)} ({x:,.0f} B)"
    if "percent" in words or k.endswith("_pct"):
        return number(x, 1, "%")
    if {"au", "efficiency", "fraction"} & set(words):
        return pct(x)
    return plain(value)


def items(value: Any) -> list[Any]:
    """value when it is a list; anything else (missing, damaged) as no items."""
    return value if isinstance(value, list) else []


# --- tables -------------------------------------------------------------------------------

class Cell:
    """A table cell: its text, the value it sorts by, and a CSS class."""

    __slots__ = ("text", "key", "cls")

    def __init__(self, text: Any, key: Any = None, cls: str | None = None) -> None:
        self.text, self.key, self.cls = text, key, cls


def num(text: str, value: Any) -> Cell:
    """A right-aligned number cell sorting by its raw value."""
    x = finite(value)
    return Cell(text, x if x is not None else "", "n")


def _cell(c: Any) -> Html:
    if not isinstance(c, Cell):
        c = Cell(c)
    attrs: dict[str, Any] = {"class_": c.cls}
    if c.key is not None:
        attrs["data_v"] = c.key
    return tag("td", c.text, **attrs)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, sortable: bool = False,
          caption: str | None = None, cls: str | None = None) -> Html:
    """A table inside a horizontally scrollable box, so wide tables never widen the page."""
    head = tag("tr", join(tag("th", h, scope="col") for h in headers))
    body = join(tag("tr", join(_cell(c) for c in row)) for row in rows)
    classes = " ".join(x for x in (cls, "sortable" if sortable else None) if x)
    cap = tag("caption", caption) if caption else ""
    inner = tag("table", join([cap, tag("thead", head), tag("tbody", body)]),
                class_=classes or None)
    return tag("div", inner, class_="scroll")


def kv_table(pairs: Iterable[tuple[Any, Any]], caption: str | None = None) -> Html:
    """Two columns: what and its value (with its unit)."""
    rows = [(Cell(k, cls="k"), v if isinstance(v, Cell) else Cell(v, cls="v")) for k, v in pairs]
    return table(("figure", "value"), rows, caption=caption, cls="kv")


SPREAD = {"mean", "min", "max", "stdev", "cv", "n"}
MAX_RECORD_COLUMNS = 24


def nested_table(data: Mapping[str, Any]) -> Html:
    """Any JSON object as key/value rows, nested objects indented, lists of objects as tables
    of their own (for sections aiio has no chart for, so nothing in a result is hidden)."""
    tables: list[Html] = []
    rows = _flat(data, 0, (), tables)
    return join([kv_table(rows), *tables])


def _flat(data: Mapping[str, Any], depth: int, path: tuple[str, ...],
          tables: list[Html]) -> list[tuple[Any, Any]]:
    rows: list[tuple[Any, Any]] = []
    for key, value in data.items():
        label = Html("&#160;" * 4 * depth) + esc(key)
        if _is_spread(value):
            rows.append((label, spread_text(str(key), value)))
        elif _is_latency(value):
            rows.append((label, latency_text(value)))
        elif _like_records(value):
            name = " ".join((*path, str(key)))
            rows.append((label, f"{len(value)} entries, in the table “{name}” below"))
            tables.append(records_table(name, [{str(key): k, **v} for k, v in value.items()]))
        elif isinstance(value, Mapping) and depth < 4:
            rows.append((label, ""))
            rows.extend(_flat(value, depth + 1, (*path, str(key)), tables))
        elif _records(value):
            name = " ".join((*path, str(key)))
            rows.append((label, f"{len(value)} entries, in the table “{name}” below"))
            tables.append(records_table(name, value))
        else:
            rows.append((label, _short(key, value)))
    return rows


def _short(key: str, value: Any, limit: int = 300) -> str:
    """A value as text, long lists cut with a count of what was left out."""
    if isinstance(value, list) and len(value) > 12:
        shown = ", ".join(plain(v) if not isinstance(v, list | dict) else "…" for v in value[:12])
        return f"{shown} … ({len(value)} values)"
    text = str(value) if isinstance(value, dict) else by_name(key, value)
    return text if len(text) <= limit else text[:limit] + f" … ({len(text)} characters)"


def _is_spread(value: Any) -> bool:
    return isinstance(value, Mapping) and {"mean", "min", "max"} <= set(value) <= SPREAD


def spread_text(key: str, value: Mapping[str, Any]) -> str:
    """A spread (mean, min, max, cv, n) on one line, in the unit its key names."""
    text = ", ".join(f"{k} {by_name(key, value[k])}" for k in ("mean", "min", "max"))
    tail = [f"cv {number(value['cv'], 3)}" if "cv" in value else "",
            f"n {plain(value['n'])}" if "n" in value else ""]
    return text + (f" ({', '.join(t for t in tail if t)})" if any(tail) else "")


def _is_latency(value: Any) -> bool:
    return isinstance(value, Mapping) and {"p50_ns", "p99_ns", "max_ns"} <= set(value)


def latency_text(value: Mapping[str, Any]) -> str:
    """A latency summary on one line: p50, p99, max (and how many calls)."""
    text = ", ".join(f"{k[:-3]} {latency(value[k])}" for k in ("p50_ns", "p99_ns", "max_ns"))
    return text + (f" ({plain(value['count'])} calls)" if "count" in value else "")


def _like_records(value: Any) -> bool:
    """An object whose values are objects with the same keys (operation -> figures)."""
    if not isinstance(value, Mapping) or len(value) < 2:
        return False
    inner = list(value.values())
    return all(isinstance(v, Mapping) and v for v in inner) and \
        all(set(v) == set(inner[0]) for v in inner)


def _records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _leaves(item: Mapping[str, Any]) -> dict[str, Any]:
    """An object's scalars, and those one level down as 'sub key' (the columns of a row)."""
    out: dict[str, Any] = {}
    for key, value in item.items():
        if isinstance(value, Mapping):
            for k, v in value.items():
                if not isinstance(v, Mapping | list):
                    out[f"{key} {k}"] = v
        elif not isinstance(value, list):
            out[str(key)] = value
    return out


def records_table(name: str, items: list[Mapping[str, Any]]) -> Html:
    """A list of objects (checkpoint bursts, ...) as one row each, units from the key names."""
    flat = [_leaves(i) for i in items]
    cols = list(dict.fromkeys(k for f in flat for k in f))[:MAX_RECORD_COLUMNS]
    rows = [[num(by_name(k.split()[-1], f.get(k)), f.get(k)) if finite(f.get(k)) is not None
             else Cell(plain(f.get(k))) for k in cols] for f in flat]
    return table(cols, rows, sortable=True, caption=name)


# --- notices and sections -----------------------------------------------------------------

def notice(kind: str, title: str, items: Iterable[Any] = (), anchor: str | None = None) -> Html:
    """A coloured box: kind is warn, fail, ok or info."""
    items = list(items)
    body = tag("strong", title)
    if items:
        body = join([body, tag("ul", join(tag("li", i) for i in items))])
    return tag("div", body, class_=f"notice {kind}", role="note", id=anchor)


def badge(status: Any) -> Html:
    """PASS/FAIL/ok/... as a coloured label that still reads right without colour."""
    text = str(status).upper() if status is not None else "UNKNOWN"
    good = text in ("OK", "PASS", "PASSED", "TRUE", "YES")
    bad = text in ("FAIL", "FAILED", "ERROR", "INTERRUPTED", "REGRESSION", "FALSE", "NO")
    cls = "good" if good else "bad" if bad else "other"
    return tag("span", text, class_=f"badge {cls}")


def section(title: str, *parts: Any, anchor: str | None = None, note: str | None = None) -> Html:
    intro = tag("p", note, class_="note") if note else ""
    return tag("section", join([tag("h2", title), intro, *parts]), id=anchor)


def details(summary: str, *parts: Any) -> Html:
    return tag("details", join([tag("summary", summary), *parts]))


# --- the page -----------------------------------------------------------------------------

STYLE = """
:root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--bg:#fff;--alt:#f6f8fa;
--warn:#fff8c5;--warnl:#d4a72c;--fail:#ffebe9;--faill:#cf222e;--ok:#dafbe1;--okl:#1a7f37;
--info:#ddf4ff;--infol:#0969da}
*{box-sizing:border-box}
body{margin:0;color:var(--fg);background:var(--bg);font:15px/1.45 system-ui,-apple-system,
"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1180px;margin:0 auto;padding:16px 20px 40px}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin:1.6em 0 .5em;
border-bottom:1px solid var(--line);padding-bottom:.2em}h3{font-size:1.05em;margin:1.2em 0 .4em}
p.note,.meta{color:var(--muted)}
.scroll{overflow-x:auto;max-width:100%;margin:.4em 0 1em}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--alt)}tbody tr:nth-child(even){background:#fbfcfd}
td.n{text-align:right;white-space:nowrap}table.kv td.k{font-weight:500}
td.v{overflow-wrap:anywhere}.grid{display:grid;gap:0 18px;
grid-template-columns:repeat(auto-fit,minmax(340px,1fr))}.grid .scroll{margin:.2em 0}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(165px,1fr));gap:8px;
margin:.6em 0}.card{border:1px solid var(--line);border-radius:4px;padding:6px 10px}
.card b{display:block;font-size:1.4em;font-variant-numeric:tabular-nums}
.card span{color:var(--muted);font-size:.85em}
caption{text-align:left;color:var(--muted);padding:2px 0}
table.sortable th{cursor:pointer}table.sortable th[aria-sort=ascending]::after{content:" \\25B2"}
table.sortable th[aria-sort=descending]::after{content:" \\25BC"}
.notice{border-left:5px solid;padding:8px 12px;margin:.6em 0;border-radius:3px}
.notice ul{margin:.3em 0 0;padding-left:1.3em}
.warn{background:var(--warn);border-color:var(--warnl)}.fail{background:var(--fail);
border-color:var(--faill)}.ok{background:var(--ok);border-color:var(--okl)}
.info{background:var(--info);border-color:var(--infol)}
.badge{display:inline-block;padding:0 .5em;border-radius:3px;font-weight:600;font-size:.9em}
.badge.good{background:var(--ok);color:var(--okl)}.badge.bad{background:var(--fail);
color:var(--faill)}.badge.other{background:var(--alt);color:var(--muted)}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:12px}
figure{margin:0;border:1px solid var(--line);border-radius:4px;padding:6px;min-width:0}
figure svg{display:block;width:100%;height:auto}
figcaption{color:var(--muted);font-size:.9em;padding:2px 4px}
details{margin:.5em 0}summary{cursor:pointer;color:var(--infol)}
nav a{margin-right:1em}code{background:var(--alt);padding:0 .25em;border-radius:3px}
@media (max-width:720px){main{padding:10px}.charts{grid-template-columns:1fr}}
@media print{.scroll{overflow:visible}details{display:block}}
"""

# Sorting is a convenience: every table is already in a sensible order without it.
SORT_SCRIPT = """
document.querySelectorAll("table.sortable").forEach(function(t){
 t.querySelectorAll("thead th").forEach(function(th,i){
  th.addEventListener("click",function(){
   var up=th.getAttribute("aria-sort")!=="ascending",b=t.tBodies[0];
   t.querySelectorAll("thead th").forEach(function(h){h.removeAttribute("aria-sort")});
   th.setAttribute("aria-sort",up?"ascending":"descending");
   var key=function(r){var c=r.cells[i],v=c.getAttribute("data-v");
    v=v===null?c.textContent.trim():v;var x=parseFloat(v);return isNaN(x)||v===""?v:x};
   Array.prototype.slice.call(b.rows).sort(function(p,q){var a=key(p),z=key(q);
    var r=(typeof a===typeof z)?(a<z?-1:a>z?1:0):(typeof a==="number"?-1:1);
    return up?r:-r}).forEach(function(r){b.appendChild(r)});
  });
 });
});
"""


def _script_hash(script: str) -> str:
    digest = hashlib.sha256(script.encode()).digest()
    return "sha256-" + base64.b64encode(digest).decode()


CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
       f"script-src '{_script_hash(SORT_SCRIPT)}'; base-uri 'none'; form-action 'none'")


def page(title: str, body: Iterable[Any], footer: str = "") -> str:
    """A complete, self-contained HTML document."""
    head = join([
        Html('<meta charset="utf-8">'),
        Html('<meta name="viewport" content="width=device-width, initial-scale=1">'),
        Html(f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">'),
        Html('<link rel="icon" href="data:,">'),
        tag("title", title),
        Html(f"<style>{STYLE}</style>"),
    ])
    main = tag("main", join([*body, tag("footer", footer, class_="meta")]))
    return ("<!DOCTYPE html>\n" + tag("html", join([tag("head", head), tag("body", join([
        main, Html(f"<script>{SORT_SCRIPT}</script>")]))]), lang="en") + "\n")


def grid(*parts: Any) -> Html:
    """Small tables side by side where the page is wide enough."""
    return tag("div", join(p for p in parts if p), class_="grid")


def figures(*charts: Html | None) -> Html:
    """Charts side by side where the page is wide enough, stacked where it is not."""
    shown = [c for c in charts if c]
    return tag("div", join(shown), class_="charts") if shown else Html("")
