"""The page of an `aiio mlperf` summary: MLPerf Storage v3.0's published columns first, then
every run the rules made with aiio's measured figures beside (what MLPerf does not publish),
the rule checks and what marked the result (docs/METHOD.md, "MLPerf Storage v3.0")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aiio.report import html as h
from aiio.report.common import guarded
from aiio.results.markup import Html
from aiio.sweep.mlperf_rules import au_verdict, confirmed

EDITION = "MLPerf Storage v3.0"


def title(s: Mapping[str, Any]) -> str:
    what = "checkpointing" if s.get("phase") == "checkpoint" else "training"
    return f"{EDITION}, {what}: {s.get('workload', '?')}"


def render_body(s: Mapping[str, Any]) -> list[Html]:
    checkpoint = s.get("phase") == "checkpoint"
    parts = [h.tag("h1", title(s)), _verdict(s),
             guarded("published", _checkpoint_row if checkpoint else _training_row, s)]
    if checkpoint:
        parts.append(guarded("rates", _rates, s))
    else:
        parts += [guarded("runs", _runs, s), guarded("dataset rule", _dataset_rule, s),
                  guarded("search", _search, s)]
    return [*parts, guarded("checks", _checks, s)]


def _verdict(s: Mapping[str, Any]) -> Html:
    """Valid, or NOT A VALID RESULT with every mark: what MLPerf would refuse, and why."""
    marks = [str(m) for m in h.items(s.get("marks"))]
    if s.get("valid") and not marks:
        return h.notice("ok", "Valid by MLPerf Storage v3.0's rules, as far as one host "
                        "can say")
    return h.notice("fail", "NOT A VALID RESULT: MLPerf's rules or its validator would "
                    "refuse it", marks or ["the summary records no reason"])


def _training_row(s: Mapping[str, Any]) -> Html:
    p, a = s["published"], s.get("aiio") or {}
    row = [p["accelerator_type"], h.num(str(p["client_nodes"]), p["client_nodes"]),
           h.num(str(p["simulated_accelerators"]), p["simulated_accelerators"]),
           h.num(_f(p["read_gib_s"]), p["read_gib_s"]),
           h.num(h.number(p.get("samples_per_s"), 1), p.get("samples_per_s")),
           h.num(h.mib_s(a.get("read_mib_s_measured")), a.get("read_mib_s_measured")),
           h.num(h.mib_s(a.get("read_mib_s_per_client")), a.get("read_mib_s_per_client"))]
    table = h.table(("accelerator type", "client nodes", "simulated accelerators",
                     "read B/W (GiB/s)", "samples/s", "aiio: read, measured",
                     "aiio: per accelerator"), [row])
    return h.section("As MLPerf publishes it", table, anchor="published", note=(
        "The first four columns are MLPerf's, means over the scored runs. Its read B/W is "
        "samples/s x the nominal record size, not bytes measured; aiio's columns are the "
        "bytes the clients read over the run (MiB = 2^20 B)."))


def _checkpoint_row(s: Mapping[str, Any]) -> Html:
    p = s["published"]
    row = [p["model"], h.num(str(p["client_nodes"]), p["client_nodes"]),
           h.num(str(p["processes"]), p["processes"]),
           h.num(_f(p["checkpoint_size_gib"]), p["checkpoint_size_gib"]),
           h.num(_f(p["save_gib_s"]), p["save_gib_s"]),
           h.num(h.seconds(p["save_duration_s"]), p["save_duration_s"]),
           h.num(_f(p["load_gib_s"]), p["load_gib_s"]),
           h.num(h.seconds(p["load_duration_s"]), p["load_duration_s"])]
    table = h.table(("model", "client nodes", "processes", "checkpoint size (GiB)",
                     "save (GiB/s)", "save duration", "load (GiB/s)", "load duration"), [row])
    return h.section("As MLPerf publishes it", table, anchor="published", note=(
        "Save and load: MLPerf's mean of the per-checkpoint rates; a checkpoint's duration is "
        "the slowest process's (the maximum over ranks), its mean over the checkpoints."))


def _rates(s: Mapping[str, Any]) -> Html:
    """Both rate definitions, their difference, and each checkpoint's rate."""
    rows = []
    for op, name in (("write", "save"), ("read", "load")):
        r = s.get(op)
        if not isinstance(r, Mapping):
            rows.append([name, h.MISSING, h.MISSING, h.MISSING, h.MISSING, h.MISSING])
            continue
        rows.append([name, h.num(str(r["checkpoints"]), r["checkpoints"]),
                     h.num(_f(r["mlperf_gib_s"]), r["mlperf_gib_s"]),
                     h.num(_f(r["aiio_gib_s"]), r["aiio_gib_s"]),
                     h.num(f"{r['difference_pct']:+.1f} %", r["difference_pct"]),
                     h.num(h.seconds(r["mean_duration_s"]), r["mean_duration_s"])])
    both = h.table(("", "checkpoints", "MLPerf: mean of rates (GiB/s)",
                    "aiio: bytes over time (GiB/s)", "difference", "mean duration"), rows)
    run = h.tag("p", h.join(["Every checkpoint was written and read in one aiio run, ",
                             h.tag("code", s.get("run_id", h.MISSING)), " in runs/ (aiio "
                             "report on its folder draws each process's figures)."]))
    return h.section("Two rate definitions", both, _per_checkpoint(s), run, anchor="rates",
                     note=(
        "MLPerf's figure is the mean of the 10 per-checkpoint rates (size / duration, the "
        "duration the slowest process's); aiio's is every byte over the summed durations. "
        "A slow checkpoint weighs less in a mean of rates, so MLPerf's figure reads higher "
        "whenever the checkpoints' durations differ; the difference is MLPerf's over aiio's."))


def _per_checkpoint(s: Mapping[str, Any]) -> Html:
    write = h.items((s.get("write") or {}).get("per_checkpoint_gib_s"))
    read = h.items((s.get("read") or {}).get("per_checkpoint_gib_s"))
    rows = [[h.num(str(i + 1), i + 1), *(h.num(_f(col[i]), col[i]) if i < len(col)
                                         else h.MISSING for col in (write, read))]
            for i in range(max(len(write), len(read)))]
    return h.table(("checkpoint", "save (GiB/s)", "load (GiB/s)"), rows, sortable=True,
                   caption="each checkpoint's rate, as MLPerf averages them")


def _runs(s: Mapping[str, Any]) -> Html:
    """The warm-up (shown, not scored) and the scored runs, MLPerf's AU and aiio's."""
    clients = (s.get("published") or {}).get("simulated_accelerators") or 0
    rows = [_run_row("warm-up (not scored)", s["warmup"], clients)]
    rows += [_run_row(f"scored run {i}", r, clients) for i, r in enumerate(s["runs"], 1)]
    floor = s.get("au_floor")
    met = au_verdict(s)
    return h.section("Runs", h.table(
        ("run", "result", "AU (MLPerf)", "AU per epoch", "samples/s", "read B/W (GiB/s)",
         "aiio: read, measured", "aiio: per accelerator"), rows),
        h.tag("p", f"AU floor {h.pct(floor, 0)}: {met}."), anchor="runs", note=(
            "AU as MLPerf computes it: the compute time of every step but each epoch's first "
            "over the epoch's wall time less that first step, per accelerator and epoch, then "
            "the mean. Each run is an ordinary "
            "aiio result in runs/ beside this summary: aiio report on its folder draws its "
            "page, every client's figures on it."))


def _run_row(name: str, r: Mapping[str, Any], clients: int) -> list[Any]:
    epochs = ", ".join(h.pct(a) for a in h.items(r.get("au_per_epoch"))) \
        or r.get("au_note") or h.MISSING
    measured = r.get("read_mib_s_measured")
    per = measured / clients if measured is not None and clients else None
    return [name, h.tag("code", r["id"]), h.num(h.pct(r.get("au")), r.get("au")), epochs,
            h.num(h.number(r.get("samples_per_s"), 1), r.get("samples_per_s")),
            h.num(_f(r.get("read_gib_s_nominal")), r.get("read_gib_s_nominal")),
            h.num(h.mib_s(measured), measured), h.num(h.mib_s(per), per)]


def _dataset_rule(s: Mapping[str, Any]) -> Html:
    r = s["dataset_rule"]
    pairs = [("samples in the dataset", f"{r['samples']:,}"),
             ("500 x batch x accelerators", f"{r['by_steps']:,}"),
             ("5 x client memory / record size", f"{r['by_memory']:,}"),
             ("needed (the larger)", f"{r['needed']:,}"),
             ("met", h.badge("yes" if r["met"] else "no"))]
    return h.section("Dataset size rule", h.kv_table(pairs), anchor="dataset")


def _search(s: Mapping[str, Any]) -> Html:
    """The find-max probes: aiio's scaling figures, which MLPerf does not publish."""
    f = s.get("search")
    if not isinstance(f, Mapping):
        return Html("")
    rows = [[h.num(str(p["accelerators"]), p["accelerators"]),
             h.num(h.pct(p["au"]), p["au"]), h.badge("yes" if p["holds"] else "no"),
             h.tag("code", p["id"])] for p in h.items(f.get("probes"))]
    return h.section("Accelerators supported", h.table(
        ("accelerators", "AU (MLPerf)", "at the floor", "result"), rows, sortable=True),
        anchor="search", note=(
            f"Found by search (doubling, then bisecting, up to {f.get('upper')}): "
            f"{f.get('supported')} accelerators hold the AU floor"
            + (f", {f['first_failing']} do not" if f.get("first_failing") else "")
            + f"; the runs above are at that count and {confirmed(s)}."))


def _checks(s: Mapping[str, Any]) -> Html:
    rows = [[c["check"], h.badge("ok" if c["ok"] else "fail"), c["value"]]
            for c in h.items(s.get("checks"))]
    keys = s.get("settings") or {}
    pairs = [("MLPerf key (the workload-defining settings)", h.tag("code", keys.get(
              "mlperf_key", h.MISSING))),
             ("aiio settings key (history)", h.tag("code", keys.get("aiio_key") or h.MISSING))]
    pairs += [(name, _value(value)) for name, value in _defining(keys)]
    return h.section("Rule checks", h.table(("check", "result", "what was found"), rows),
                     h.kv_table(pairs, caption="the settings runs are compared by"),
                     anchor="checks", note=(
                         "What MLPerf's validator would say at submission, said on the host "
                         "that ran it. Runs with the same MLPerf key may be compared: only "
                         "what its CLOSED division lets a submitter change differs between "
                         "them."))


def _defining(keys: Mapping[str, Any]) -> Sequence[tuple[str, Any]]:
    found = keys.get("defining")
    return sorted(found.items()) if isinstance(found, Mapping) else []


def _value(value: Any) -> str:
    """A setting as written: a whole number in full (8,030,261,248, not 8.03e+09)."""
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1e4:
        return f"{int(value):,}"
    return h.plain(value)


def _f(value: Any) -> str:
    """GiB/s and GiB as MLPerf prints them: three decimals."""
    return h.number(value, 3)
