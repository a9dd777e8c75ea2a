"""The KV-cache phase: its settings, its requests and tiers, and real runs on files (a bucket's
are in test_kvcache_s3.py, the throttled proofs in test_kvcache_known_speed.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from aiio.phases.kvcache_requests import Conversation, read_trace, trace_request
from aiio.phases.kvcache_tiers import GPU, HOST, STORAGE, BlockIndex, Tiers
from aiio.run import runner
from aiio.units import MiB
from aiio.workload import KvcacheSpec, load_workload

from .conftest import call_cli, tiny_workload
from .storage import small_tmpfs

DATA = Path(__file__).parent / "data"
# a model of the test's own: 2 x 2 x 64 x 2 x 2 = 1,024 B/token, 64 KiB blocks of 64 tokens
TINY = {"kvcache__model": "tiny", "kvcache__layers": 2, "kvcache__kv_heads": 2,
        "kvcache__head_dim": 64, "kvcache__block_tokens": 64, "kvcache__users": 3,
        "kvcache__context_tokens": 512, "kvcache__generation_tokens": 64,
        "kvcache__duration": "1s", "kvcache__transfer_size": "64KiB"}
BLOCK = 64 * 1024


def spec(**sets: Any) -> KvcacheSpec:
    return tiny_workload(**{**TINY, **{f"kvcache__{k}": v for k, v in sets.items()}}).kvcache


def run(target: Path, results: Path, engine: str | None = None, **sets: Any) -> dict:
    w = tiny_workload(**{**TINY, **{f"kvcache__{k}": v for k, v in sets.items()}})
    res, _ = runner.run(runner.RunRequest("kvcache", w, str(target), str(results),
                                          engine=engine))
    assert res["status"] == "ok", res.get("error")
    return res


# --- settings -------------------------------------------------------------------------------

def test_shipped_models_give_mlperfs_bytes_per_token() -> None:
    w = load_workload("demo")
    assert w.kvcache.model == "llama3.1-8b" and w.kvcache.bytes_per_token == 131_072
    assert w.kvcache.block_bytes == 32 * MiB  # 256 tokens
    big = load_workload("demo", [("kvcache", "model", "llama3.1-70b")])
    assert big.kvcache.bytes_per_token == 327_680


def test_a_workload_defines_its_own_model() -> None:
    k = spec()
    assert k.bytes_per_token == 2 * 2 * 64 * 2 * 2 and k.block_bytes == BLOCK


@pytest.mark.parametrize(("sets", "said"), [
    (["--set", "kvcache.model=gpt-9"], "is not shipped"),
    (["--set", "kvcache.layers=4"], "needs layers, kv_heads and head_dim"),
    (["--set", "kvcache.colour=red"], "unknown key 'colour'"),
    (["--set", "kvcache.load=trace"], "needs kvcache.trace"),
    (["--set", "kvcache.load=sideways"], "is not one of closed, open, trace"),
    (["--set", "kvcache.users=0"], "must be at least 1"),
    # each arrival's instant is kept until the run ends: a billion a second would not fit
    (["--set", "kvcache.load=open", "--set", "kvcache.request_rate=1e9"],
     "an open loop draws at most 1,000,000 requests a client"),
])
def test_bad_settings_are_refused_in_one_line(sets: list[str], said: str, target: Path,
                                              results: Path) -> None:
    got = call_cli("run", "-p", "kvcache", "-t", str(target), "--results", str(results), *sets)
    assert got.returncode == 2, got.stderr
    assert said in got.stderr and len(got.stderr.strip().splitlines()) == 1, got.stderr
    assert not (target / "aiio" / "kvcache").exists()


def test_a_trace_that_is_not_one_is_refused_in_one_line(tmp_path: Path, target: Path,
                                                       results: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("time,tokens\n1,2\n")
    got = call_cli("run", "-p", "kvcache", "-t", str(target), "--results", str(results),
                   "--set", "kvcache.load=trace", "--set", f"kvcache.trace={bad}")
    assert got.returncode == 2 and "not a BurstGPT CSV" in got.stderr, got.stderr



@pytest.mark.parametrize(("name", "text", "said"), [
    ("neg.csv", "Timestamp,Request tokens,Response tokens\n0,512,8\n1,-512,8\n",
     "neg.csv, line 3: token counts cannot be negative"),
    ("nan.csv", "Timestamp,Request tokens,Response tokens\nnan,512,8\n1,512,8\n",
     "nan.csv, line 2: the timestamp is not a finite number"),
    ("inf.jsonl", '{"timestamp": 0, "input_length": 512, "output_length": 1}\n'
     '{"timestamp": Infinity, "input_length": 512, "output_length": 1}\n',
     "inf.jsonl, line 2: the timestamp is not a finite number"),
    # Mooncake's hash ids are of 512-token blocks: 64-token blocks would keep 2 of 16
    ("moon.jsonl", '{"timestamp": 0, "input_length": 1024, "output_length": 1, '
     '"hash_ids": [1, 2]}\n', "moon.jsonl, line 1: 2 hash ids for 1024 tokens"),
])
def test_a_trace_with_values_no_request_has_is_refused_in_one_line(
        name: str, text: str, said: str, tmp_path: Path, target: Path, results: Path) -> None:
    bad = tmp_path / name
    bad.write_text(text)
    got = call_cli("run", "-p", "kvcache", "-t", str(target), "--results", str(results),
                   "--set", "kvcache.load=trace", "--set", f"kvcache.trace={bad}",
                   "--set", "kvcache.block_tokens=64", "--set", "kvcache.duration=1s")
    assert got.returncode == 2 and said in got.stderr, got.stderr
    assert len(got.stderr.strip().splitlines()) == 1, got.stderr
    assert not (target / "aiio" / "kvcache").exists() or not any(
        (target / "aiio" / "kvcache").iterdir())


# --- requests and tiers ---------------------------------------------------------------------

def test_later_turns_reuse_the_conversations_blocks_and_the_system_prompt_is_shared() -> None:
    k = spec(turns=3, followup_tokens=128, system_prompt_tokens=128, generation_tokens=64)
    a, b = Conversation(k, 0, 0, 1), Conversation(k, 0, 1, 1)
    first, second, third = a.next(), a.next(), a.next()
    assert first.blocks[:2] == ("sys/p0-b00000.kv", "sys/p0-b00001.kv")
    assert first.context == 128 + 512 and len(first.blocks) == 640 // 64
    # the second turn's context is the first's, its answer and 128 new tokens
    assert second.context == 640 + 64 + 128
    assert second.blocks[:len(first.blocks)] == first.blocks
    assert third.blocks[:len(second.blocks)] == second.blocks
    other = b.next()
    assert other.blocks[:2] == first.blocks[:2] and not set(other.blocks[2:]) & set(first.blocks)
    fourth = a.next()  # a new conversation: the last one's own blocks go
    assert set(fourth.drop) == set(third.blocks[2:])


def test_tiers_cascade_gpu_to_host_to_the_target() -> None:
    t = Tiers(gpu_blocks=2, host_blocks=1)
    for name in "abc":
        t.insert(name)
    assert (t.lookup("c"), t.lookup("b"), t.lookup("a")) == (GPU, GPU, HOST)
    # "a" came up from the host and pushed "c" down to it
    assert t.lookup("c") == HOST
    t.insert("d")
    t.insert("e")
    assert STORAGE in {t.lookup(n) for n in "abc"}
    none = Tiers(0, 0)
    none.insert("x")
    assert none.lookup("x") == STORAGE


def test_a_block_being_written_is_waited_for_not_written_twice() -> None:
    idx = BlockIndex(["sys"])
    assert idx.claim("sys") == (False, None)
    mine, _ = idx.claim("b")
    again, pending = idx.claim("b")
    assert mine and not again and pending is not None and not pending.is_set()
    idx.done("b")
    assert pending.is_set() and idx.claim("b") == (False, None)


def test_both_trace_formats_are_read() -> None:
    burst = read_trace(str(DATA / "burstgpt_sample.csv"), "burstgpt", 1.0, 1e9)
    assert [r.at_s for r in burst][:3] == [0, 40, 113]
    assert (burst[0].context, burst[0].generation) == (472, 18)
    moon = read_trace(str(DATA / "mooncake_sample.jsonl"), "mooncake", 2.0, 1.0)
    assert [r.at_s for r in moon] == [0, 0.18, 0.67]  # ms, replayed twice as fast, < 1 s
    a, b = (trace_request(r, i, 0, 512, ()) for i, r in enumerate(moon[:2]))
    assert len(a.blocks) == 6955 // 512 and a.blocks[:6] == b.blocks[:6]  # the shared prefix


# --- runs on files ----------------------------------------------------------------------------

def test_every_block_is_written_once_and_read_back_when_no_tier_holds_it(
        target: Path, results: Path) -> None:
    res = run(target, results, turns=2, followup_tokens=128)
    agg, kv = res["aggregate"], res["aggregate"]["kvcache"]
    assert kv["hits"]["gpu"] == kv["hits"]["host"] == 0 and kv["hit_rate"]["storage"] == 1
    logs = [c["kvcache"] for c in res["clients"]]
    blocks_read = sum(c["blocks_read"] for c in logs)
    assert agg["read"]["bytes"] == blocks_read * BLOCK == kv["hits"]["storage"] * BLOCK
    assert agg["write"]["bytes"] == sum(c["blocks_written"] for c in logs) * BLOCK
    # a later turn reads the earlier turn's blocks again but does not write them again
    assert blocks_read > sum(c["blocks_written"] for c in logs)
    assert kv["requests"] == sum(c["requests"] for c in logs) > 0
    assert kv["read_bytes_per_request"] == pytest.approx(agg["read"]["bytes"] / kv["requests"])
    assert agg["read"]["first_done"]["mib_s"] > 0 and agg["write"]["last_done"]["mib_s"] > 0
    # each block read and each durable write is timed, at the engine's calls and as a whole
    assert kv["block_read"]["pooled"]["count"] == blocks_read
    assert set(agg["write"]["latency"]) >= {"write", "fsync"}
    assert not (target / "aiio" / "kvcache").exists() or not any(
        (target / "aiio" / "kvcache").iterdir())


def test_mlperfs_p95_is_the_largest_client_p95_beside_the_pooled_one(
        target: Path, results: Path) -> None:
    kv = run(target, results)["aggregate"]["kvcache"]
    for name in ("storage_time", "latency", "block_read", "block_write"):
        fig = kv[name]
        assert fig["max_client_p95_ms"] == max(fig["per_client_p95_ms"])
        assert len(fig["per_client_p95_ms"]) == 2
        assert [p["p95_ms"] for p in fig["per_client"]] == fig["per_client_p95_ms"]
        assert sum(p["count"] for p in fig["per_client"]) == fig["pooled"]["count"]
        assert fig["pooled"]["p50_ms"] <= fig["pooled"]["p95_ms"] <= fig["pooled"]["p99_ms"]
    assert [g["name"] for g in kv["goals"]] == ["interactive", "responsive", "batch"]
    assert all(0 <= g["share_within"] <= 1 for g in kv["goals"])


@pytest.mark.parametrize("tier", ["gpu", "host"])
def test_a_memory_tier_serves_what_fits_and_saves_the_reads(tier: str, target: Path,
                                                           results: Path) -> None:
    """One user and one memory tier of 16 blocks, more than a conversation's 10: its own
    blocks, written into the tier (through a GPU tier of none to the host's), come back from
    it; the shared system prompt's 2, written before the run, are read from the target once
    per conversation at most."""
    sizes = {"gpu_cache": "1MiB"} if tier == "gpu" else {"host_cache": "1MiB"}
    res = run(target, results, users=1, system_prompt_tokens=128, **sizes)
    kv = res["aggregate"]["kvcache"]
    assert kv["hits"][tier] > 0 and kv["hits"]["storage"] > 0
    assert kv["hits"]["host" if tier == "gpu" else "gpu"] == 0
    assert kv["hits"]["storage"] < kv["hits"][tier] / 4
    assert res["aggregate"]["read"]["bytes"] == kv["hits"]["storage"] * BLOCK


# Timed by arrivals against a known service time: beside the whole suite's eight workers on
# two cores a request waited a second for a CPU, and a calm loop read as a rising one. With
# the known-speed tests, four at a time.
@pytest.mark.known_speed
def test_a_mooncake_trace_replays_its_arrivals_and_reuses_its_prefixes(
        target: Path, results: Path) -> None:
    res = run(target, results, load="trace", trace=str(DATA / "mooncake_sample.jsonl"),
              block_tokens=512, trace_speed=4, duration="2s", users=2)
    kv = res["aggregate"]["kvcache"]
    logs = [c["kvcache"] for c in res["clients"]]
    assert kv["requests"] == 6  # every record within 2 s at 4x, dealt over two clients
    written = sum(c["blocks_written"] for c in logs)
    used = sum(c["hits"]["storage"] for c in logs)
    assert 0 < written < used  # a prefix's blocks are written once and reused


def test_tiers_that_hold_every_block_say_so_rather_than_ask_for_a_longer_run(
        target: Path, results: Path) -> None:
    """A GPU tier of 64 MiB holds every 64 KiB block the users write: no decode reads the
    target, so the read headline is no figure of the storage; the run fails saying the tiers
    held everything, not that it needed more time or data."""
    w = tiny_workload(**{**TINY, "kvcache__gpu_cache": "64MiB", "kvcache__turns": 4,
                         "kvcache__followup_tokens": 64})
    with pytest.raises(Exception) as got:
        runner.run(runner.RunRequest("kvcache", w, str(target), str(results)))
    said = str(got.value)
    assert "memory tiers held every block" in said and "more time" not in said, said
    res = json.loads(next(results.glob("*-kvcache-*/result.json")).read_text())
    kv = res["aggregate"]["kvcache"]
    assert kv["hits"]["storage"] == 0 and kv["hits"]["gpu"] > 0
    assert res["aggregate"]["write"]["bytes"] > 0


# Timed by arrivals against a known service time: beside the whole suite's eight workers on
# two cores a request waited a second for a CPU, and a calm loop read as a rising one. With
# the known-speed tests, four at a time.
@pytest.mark.known_speed
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a tmpfs")
def test_an_open_loop_faster_than_its_storage_is_called_overloaded(
        tmp_path: Path, results: Path) -> None:
    """On the sleepy engine every read and write call takes 2 ms: a user serves a request of
    8 blocks read and written in 32 ms at best, so one user per client is held to about 30
    requests a second and 200 a second build a queue; 6 a second do not. The files live in
    RAM so that the sleeps are the storage's only service time: on the temp disk, beside
    the known-speed tests' throttled writes, a calm loop's p50 once rose from 44 to 165 ms."""
    slow = "external:tests.sleepy_engine"
    with small_tmpfs(tmp_path, 256) as target:
        over = run(target, results, slow, load="open", request_rate=200, users=1,
                   duration="2s")["aggregate"]["kvcache"]["verdict"]
        assert over["overloaded"] and over["waiting_at_end"] > 0, over
        calm = run(target, results, slow, load="open", request_rate=6, users=1,
                   duration="3s")
    steady = calm["aggregate"]["kvcache"]["verdict"]
    assert not steady["overloaded"], steady
    # no request arrives in its last moments, yet the run lasts its duration
    assert all(c["elapsed_s"] >= 3 for c in calm["clients"])


def test_an_open_loop_whose_queue_stayed_empty_is_steady_though_its_thirds_are_short() -> None:
    """Requests in every third, too few a third (2, 6, 3) to compare latencies, none waiting:
    a load with a queue (open, trace) was judged by it, steady; a closed loop's thirds alone
    judge nothing. (The known-speed calm run, thirds of 7, 4, 6, is this on a real disk; a
    run here could build a real queue on a disk shared with other tests.)"""
    from aiio.phases.steadiness import SLICES, verdict
    from aiio.stats import Histogram

    slices = [Histogram() for _ in range(SLICES)]
    for i, n in ((0, 1), (2, 2), (5, 6), (8, 3)):
        for _ in range(n):
            slices[i].record(5_000_000)
    args = (slices, [0.0] * SLICES, 0, 12, 2, 3.0)
    v = verdict(*args, queued=True)
    assert v.word == "steady" and v.judged and not v.evidence, v
    v = verdict(*args, queued=False)
    assert v.word == "not judged" and "2, 6, 3 arrived by third" in v.evidence[0], v


def test_a_queue_held_past_the_duration_is_no_deeper_than_the_requests_that_arrived(
        target: Path, results: Path) -> None:
    """On the sleepy engine a request of 16 blocks in 4 KiB calls takes about 0.5 s, longer
    than the 0.3 s run: the run ends when its in-flight requests do, long after the last
    arrival. The queue's mean depth in each tenth of the duration cannot exceed the requests
    that arrived (served or still waiting); waits past the duration are no tenth's."""
    res = run(target, results, "external:tests.sleepy_engine", load="open",
              request_rate=20, users=1, duration="0.3s", transfer_size="4KiB")
    kv = res["aggregate"]["kvcache"]
    v = kv["verdict"]
    arrived = (kv["requests"] + v["waiting_at_end"]) / len(res["clients"])
    # the run outlasted its duration: a request of 16 blocks of 16 calls is 0.512 s at least
    assert max(c["elapsed_s"] for c in res["clients"]) > 0.5
    assert max(v["queue_depth"]) <= arrived, v


def test_requests_never_served_are_counted_after_the_window_outside_the_clients_cpu(
        target: Path, results: Path) -> None:
    """An open loop offered 100,000 requests a second a client, far past the sleepy engine's
    30 or so: about 100,000 a client are still waiting at the end. Counting them is aiio's
    work after the window closed; a client's CPU is its window's (it was taken after that
    count, and read as a client busy with its own work)."""
    res = run(target, results, "external:tests.sleepy_engine", load="open",
              request_rate=1e5, users=1, duration="1s")
    v = res["aggregate"]["kvcache"]["verdict"]
    assert v["overloaded"] and v["waiting_at_end"] > 150_000, v["evidence"]
    # in its window a client's one user sleeps in the engine: well under half a core (0.07 s
    # of CPU in 1 s when written; counting the waiting requests after it took 0.8 s more)
    assert all(c["cpu_s"] < 0.5 * c["elapsed_s"] for c in res["clients"]), res["clients"]
    assert max(v["queue_depth"]) <= (v["waiting_at_end"] + res["aggregate"]["kvcache"][
        "requests"]) / len(res["clients"])


def test_a_run_of_too_few_requests_is_not_called_steady(target: Path, results: Path) -> None:
    """A closed loop whose first request (16 blocks in 4 KiB calls of 2 ms: about 0.5 s)
    outlasts the 0.2 s run serves one request a client: no trend can be judged from that and
    no queue builds in a closed loop, so the verdict says it was not judged, and why."""
    from aiio.term.console import kvcache_tables

    res = run(target, results, "external:tests.sleepy_engine", users=1, duration="0.2s",
              transfer_size="4KiB")
    v = res["aggregate"]["kvcache"]["verdict"]
    assert res["aggregate"]["kvcache"]["requests"] == 2
    assert not v["overloaded"] and not v["judged"] and v["word"] == "not judged", v
    assert "too few requests" in " ".join(v["evidence"]), v
    names, values = ([str(v) for v in col._cells] for col in kvcache_tables(res)[0].columns)
    shown = dict(zip(names, values, strict=True))["verdict"]
    assert "not judged" in shown and "steady" not in shown, shown


def test_the_rates_count_the_requests_done_within_the_duration_over_it(
        target: Path, results: Path) -> None:
    """A closed loop whose requests (32 blocks in 4 KiB calls of 2 ms: 1 s at least) all
    outlast its 0.5 s: each client's user serves one, done after the duration. The rates
    divided those by the last client's window (1 s and more: a drain in which no request
    was offered) and read requests a second (when written) of a run that served none within
    its duration; they count the requests done within it, over it: none. (At 0.2 s, a busy
    host could start a user's first request after the duration: a run that did nothing.)"""
    from aiio.term.console import kvcache_tables

    res = run(target, results, "external:tests.sleepy_engine", users=1, duration="0.5s",
              transfer_size="4KiB", context_tokens=1024)
    kv = res["aggregate"]["kvcache"]
    assert kv["requests_per_s"] == 0 and kv["tokens_per_s"] == 0, kv
    assert kv["requests"] == 2 and kv["requests_in_duration"] == 0  # served, after it
    assert kv["rate_window_s"] == 0.5 and kv["storage_time"]["pooled"]["count"] == 2
    assert all(c["elapsed_s"] > 0.9 for c in res["clients"])  # the windows ran on past it
    names, values = ([str(v) for v in col._cells] for col in kvcache_tables(res)[0].columns)
    shown = dict(zip(names, values, strict=True))
    assert shown["requests served (done in duration)"] == "2 (0)", shown
    assert shown["requests/s, tokens/s (in duration)"] == "0.0, 0", shown


def test_the_rates_are_the_requests_and_tokens_done_within_the_duration(
        target: Path, results: Path) -> None:
    """One set and one clock: the requests done by the end of the duration, and their
    context and generated tokens, over the duration."""
    res = run(target, results, duration="1s")
    kv = res["aggregate"]["kvcache"]
    done = kv["requests_in_duration"]
    assert 0 < done <= kv["requests"] and kv["rate_window_s"] == 1.0
    assert kv["requests_per_s"] == pytest.approx(done / 1.0)
    # each request of this workload: 512 context tokens and 64 generated, no spread
    assert kv["tokens_per_s"] == pytest.approx(done * (512 + 64) / 1.0)


def test_the_summary_fits_80_columns_and_names_the_verdict(target: Path,
                                                          results: Path) -> None:
    from .conftest import run_cli, widest
    toml = target.parent / "kv.toml"
    toml.write_text("[kvcache]\n" + "\n".join(
        f"{k.split('__')[1]} = {json.dumps(v)}" for k, v in TINY.items()) + "\n")
    got = run_cli("run", "-p", "kvcache", "-w", str(toml), "-t", str(target), "--results",
                  str(results), "--no-report", "--no-history", "--clients", "2",
                  env={"COLUMNS": "80"})
    assert got.returncode == 0, got.stderr
    text = got.stdout + got.stderr
    assert "verdict" in text and "max of client P95s" in text, text
    assert "storage p50 / p95" in text
    assert widest(text) <= 80


# Apart from the parallel pass: aiio's own CPU for ten times the users is under test, and
# beside eight workers on two cores the 500-user client's latency rose through its 4 s (CI:
# p50 6.8, 11.5, 16.9 ms by third), the machine's load, not aiio's.
@pytest.mark.long
@pytest.mark.serial
def test_a_thousand_users_leave_the_verdict_of_a_hundred(target: Path, results: Path) -> None:
    """The same offered load (40 requests a second over two clients) served by 100 users and
    by 1,000: aiio's own work for ten times the users (threads, their buffers and wake-ups)
    does not make the storage look overloaded."""
    small = {"head_dim": 32, "kv_heads": 1, "layers": 2, "block_tokens": 16,
             "transfer_size": "4KiB", "context_tokens": 128, "generation_tokens": 16,
             "max_context_tokens": 256, "load": "open", "request_rate": 20, "duration": "4s"}
    verdicts = {}
    for users in (50, 500):
        res = run(target, results, users=users, **small)
        kv = res["aggregate"]["kvcache"]
        assert kv["users_per_client"] == users and kv["requests"] > 100
        verdicts[users] = kv["verdict"]
    assert not verdicts[50]["overloaded"] and not verdicts[500]["overloaded"], verdicts


def test_the_page_shows_latency_over_the_run_with_the_verdict(target: Path,
                                                             results: Path) -> None:
    from aiio.report.html import page
    from aiio.report.run import render_body

    res = run(target, results, load="open", request_rate=40, duration="2s")
    text = page("kv", render_body(res))
    word = "Overloaded" if res["aggregate"]["kvcache"]["verdict"]["overloaded"] else "Steady"
    assert 'id="kvcache"' in text and word in text
    assert "request latency (queue + storage), by arrival" in text
    assert "requests waiting in the queue" in text and "max of client P95s" in text
    # the answer (steady, overloaded, not judged) before the streams' figures
    assert text.index('id="kvcache"') < text.index('id="headline"')


def test_space_for_every_users_longest_context_is_checked_before_a_block_is_written(
        target: Path, results: Path) -> None:
    # 64 users x 2 clients x 512 blocks of 32 MiB (llama3.1-8b, 131,072-token contexts)
    got = call_cli("run", "-p", "kvcache", "-t", str(target), "--results", str(results),
                   "--set", "kvcache.max_context_tokens=131072", "--set", "kvcache.users=64",
                   "--clients", "2")
    assert got.returncode == 2 and "KV blocks (2.00 TiB at most at once)" in got.stderr
    assert not (target / "aiio" / "kvcache").exists()


# Apart from the parallel pass: a count holds only if its 1-s run was not overloaded, and
# beside eight workers on two cores a closed loop's latency can rise through one second
# (CI: the 4-user probe failed so). The goal logic, not the machine, is under test here.
@pytest.mark.serial
def test_find_max_searches_users_per_client_within_a_goal(target: Path, results: Path) -> None:
    """Real runs at 1, 2 and 4 users per client: a goal of 100 s holds up to the bound, one
    of 1 us fails at once; each probe's run is saved as any run."""
    base = ("scale", "-p", "kvcache", "-t", str(target), "--results", str(results),
            "--find-max", "--max-users", "4", "--clients", "2", "--duration", "1s",
            "--json", "--set", "kvcache.goals.lenient=100", "--set", "kvcache.goals.never=1e-6",
            *(x for k, v in TINY.items() if k != "kvcache__duration"
              for x in ("--set", f"{k.replace('__', '.')}={v}")))
    got = call_cli(*base, "--goal", "lenient")
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert [p["users"] for p in out["probes"]] == [1, 2, 4], out["probes"]
    assert out["max_users_at_goal"] == 4 and out["first_not_held"] is None
    assert "holds up to 4 users per client at 2 client(s)" in out["statement"]
    got = call_cli(*base, "--goal", "never")
    out = json.loads(got.stdout)
    assert out["max_users_at_goal"] is None and out["first_not_held"] == 1
    assert "does not hold even with 1 user" in out["statement"]
    assert len(list(results.glob("*-kvcache-*/result.json"))) == 4


@pytest.mark.parametrize(("args", "said"), [
    (("-p", "train", "--find-max", "--max-users", "4"), "not to --phase train"),
    (("-p", "kvcache", "--find-max", "--max-users", "4", "--goal", "fast"),
     "--goal fast: not one of the workload's goals"),
    (("-p", "kvcache", "--max-users", "4"), "go with --find-max"),
    (("-p", "kvcache", "--find-max", "--max-users", "4", "--clients", "1,2"),
     "searches users at one client count"),
    # the table over users (tests/test_kvcache_users.py)
    (("-p", "train", "--users", "1,2"), "--users applies to a phase whose clients serve"),
    (("-p", "kvcache", "--users", "2,1"), "--users 2,1: counts must increase"),
    (("-p", "kvcache", "--users", "4"), "--users 4: a sweep needs at least two user counts"),
    (("-p", "kvcache", "--users", "0,2"), "--users 0,2: user counts must be at least 1"),
    (("-p", "kvcache", "--users", "1,x"), "--users '1,x': every entry must be a whole"),
    (("-p", "kvcache", "--users", "1,2", "--find-max"), "--users is a table"),
    (("-p", "kvcache", "--users", "1,2", "--max-clients", "4"), "leave out --find-max"),
    (("-p", "kvcache", "--users", "1,2", "--clients", "1,2"),
     "sweeps users at one client count"),
    (("-p", "kvcache", "--users", "1,2", "--goal", "fast"),
     "--goal fast: not one of the workload's goals"),
])
def test_a_users_search_refuses_what_it_cannot_do_in_one_line(args: tuple, said: str,
                                                              target: Path,
                                                              results: Path) -> None:
    got = call_cli("scale", "-t", str(target), "--results", str(results), *args)
    assert got.returncode == 2 and said in got.stderr, got.stderr
    assert len(got.stderr.strip().splitlines()) == 1
    assert not list(results.glob("*/result.json"))
