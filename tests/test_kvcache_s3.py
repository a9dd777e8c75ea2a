"""The KV-cache phase on a real SeaweedFS bucket, with no switch of its own: each block an
object PUT (durable when the request returns) and read back by a GET; a conversation's blocks
deleted when it ends, and the run's prefix emptied afterwards."""

from __future__ import annotations

import json

from tests.conftest import run_cli, saved_result

BLOCK = 64 * 1024
TINY = ("--set", "kvcache.model=tiny", "--set", "kvcache.layers=2", "--set",
        "kvcache.kv_heads=2", "--set", "kvcache.head_dim=64", "--set",
        "kvcache.block_tokens=64", "--set", "kvcache.users=2", "--set",
        "kvcache.context_tokens=256", "--set", "kvcache.duration=1s", "--set",
        "kvcache.turns=2", "--set", "kvcache.system_prompt_tokens=64")


def test_kv_blocks_are_objects_put_and_read_back(s3_server, s3_bucket, results):
    proc = run_cli("run", "--phase", "kvcache", "--target", f"s3://{s3_bucket}/kv",
                   "--results", str(results), "--no-history", "--no-report", "-q",
                   "--clients", "2", *TINY)
    assert proc.returncode == 0, proc.stderr
    res = saved_result(results)
    assert res["engine"] == "s3"
    agg, kv = res["aggregate"], res["aggregate"]["kvcache"]
    logs = [c["kvcache"] for c in res["clients"]]
    written = sum(c["blocks_written"] for c in logs)
    assert agg["write"]["latency"]["put"]["count"] == written > 0
    assert agg["read"]["bytes"] == kv["hits"]["storage"] * BLOCK > 0
    assert agg["read"]["latency"]["get"]["count"] == sum(c["blocks_read"] for c in logs)
    assert agg["s3"]["retries"] == 0
    codes = [w["code"] for w in res["warnings"]]
    assert "object_read_after_write" in codes and "object_reread" not in codes, codes
    left = s3_server.client().list_objects_v2(Bucket=s3_bucket, Prefix="kv/aiio/kvcache/")
    assert left.get("KeyCount", 0) == 0


def test_a_table_over_users_runs_on_a_bucket(s3_server, s3_bucket, results):
    proc = run_cli("scale", "--phase", "kvcache", "--target", f"s3://{s3_bucket}/kv",
                   "--results", str(results), "--no-history", "--json", "--users", "1,2",
                   "--clients", "1", *TINY)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [r["users"] for r in out["rows"]] == [1, 2]
    assert all(r["status"] == "ok" and r["read_mib_s"] > 0 for r in out["rows"])
    left = s3_server.client().list_objects_v2(Bucket=s3_bucket, Prefix="kv/aiio/kvcache/")
    assert left.get("KeyCount", 0) == 0


def test_a_table_over_rates_runs_on_a_bucket_and_leaves_no_object(s3_server, s3_bucket,
                                                                  results):
    proc = run_cli("scale", "--phase", "kvcache", "--target", f"s3://{s3_bucket}/kv",
                   "--results", str(results), "--no-history", "--json", "--rates", "4,8",
                   "--clients", "1", "--duration", "1s", "--set", "kvcache.load=open", *TINY)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [r["rate"] for r in out["rows"]] == [4.0, 8.0]
    assert all(r["status"] == "ok" and r["served_per_s"] <= r["arrived_per_s"]
               for r in out["rows"])
    left = s3_server.client().list_objects_v2(Bucket=s3_bucket, Prefix="kv/aiio/kvcache/")
    assert left.get("KeyCount", 0) == 0
