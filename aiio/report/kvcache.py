"""The KV-cache section of a run's page: the steady/overloaded verdict with its evidence,
request latency and queue depth over the run (the slices the verdict was judged on), and the
request figures beside MLPerf's max of client P95s (docs/METHOD.md, "KV cache")."""

from __future__ import annotations

from aiio.report import html as h
from aiio.results import charts
from aiio.results.kvcache import KvFigures, Percentiles
from aiio.results.markup import Html
from aiio.results.result import Result


def kvcache_section(res: Result) -> Html:
    """Nothing for a run of another phase."""
    kv = res.kvcache
    if kv is None:
        return Html("")
    v = kv.verdict
    if v.overloaded:
        verdict = h.notice("fail", "Overloaded: the storage did not keep up with the requests",
                           list(v.evidence))
    elif v.judged:  # a result saved before a verdict could be not judged was judged
        verdict = h.notice("ok", "Steady: latency and queue stayed level through the run")
    else:
        verdict = h.notice("warn", "Not judged: too few requests to say steady or "
                           "overloaded", list(v.evidence))
    return h.section("KV cache", verdict, h.tag("p", v.rule, class_="note"),
                     h.figures(*_over_time(kv)), h.kv_table(_figures(kv)), anchor="kvcache")


def _over_time(kv: KvFigures) -> list[Html]:
    """Latency p50 and queue depth by tenth of the run (by the requests' arrival)."""
    v = kv.verdict
    step = v.slice_s
    xs = [(i + 0.5) * step for i in range(len(v.queue_depth))]
    xlabel = "arrival, time since the common start (s)"
    lat = [(x, y) for x, y in zip(xs, v.latency_p50_ms, strict=True) if y is not None]
    return [
        charts.time_lines([("p50", [x for x, _ in lat], [y for _, y in lat])],
                          title="request latency (queue + storage), by arrival",
                          ylabel="ms", xlabel=xlabel, caption="request latency p50 over the run"),
        charts.time_lines([("per client", xs, list(v.queue_depth))],
                          title="requests waiting in the queue", ylabel="requests",
                          xlabel=xlabel, caption="mean queue depth per client over the run"),
    ]


def _figures(kv: KvFigures) -> list[tuple[str, str]]:
    st = kv.storage_time
    rows = [*_rates(kv),
            ("read / written per request", f"{h.size(kv.read_bytes_per_request)} / "
                                           f"{h.size(kv.write_bytes_per_request)}"),
            ("hits GPU / host / storage", " / ".join(
                h.pct(kv.hit_rate[t]) for t in ("gpu", "host", "storage")))]
    for name, fig in (("request storage time", st), ("request latency", kv.latency),
                      ("block read", kv.block_read), ("block write", kv.block_write)):
        rows.append((f"{name} p50 / p95 / p99 / p99.9 (pooled)", _quantiles(fig.pooled)))
    rows.append(("max of client P95s (MLPerf's P95, no percentile of the requests)",
                 _ms(st.max_client_p95_ms)))
    rows += [(f"within {g.name} ({g.goal_ms:g} ms)",
              f"{h.pct(g.share_within)} of requests; pooled P95 "
              f"{'met' if g.met else 'missed'}") for g in kv.goals]
    return rows


def _rates(kv: KvFigures) -> list[tuple[str, str]]:
    """Requests served; the rates of those done within the duration, over it."""
    served, rate = h.number(kv.requests), h.number(kv.requests_per_s, 1)
    if kv.requests_in_duration is None:  # saved when the rates divided by the last window
        return [("requests", f"{served} ({rate}/s)"),
                ("tokens/s", h.number(kv.tokens_per_s))]
    within = f"done within the {h.seconds(kv.rate_window_s)} duration"
    return [("requests served", f"{served} ({kv.requests_in_duration:,} {within})"),
            (f"requests/s ({within})", rate),
            (f"tokens/s ({within})", h.number(kv.tokens_per_s))]


def _quantiles(p: Percentiles) -> str:
    return " / ".join(h.latency(p.ns(q)) for q in ("p50", "p95", "p99", "p999"))


def _ms(value: float | None) -> str:
    return h.latency(None if value is None else value * 1e6)
