"""A sweep and an acceptance run against a real SeaweedFS bucket."""

from __future__ import annotations

from tests.conftest import run_cli, saved_result

TINY_SWEEP = ("--set", "dataset.num_files=24", "--set", "dataset.sample_size=64KiB",
              "--set", "dataset.files_per_dir=10", "--set", "train.epochs=2",
              "--set", "train.batch_size=2")


def test_sweep_against_a_bucket(s3_bucket, results):
    proc = run_cli("scale", "--phase", "train", "--clients", "1,2", "--target",
                   f"s3://{s3_bucket}/sw", "--results", str(results), "--no-history",
                   "--no-report", "--no-charts", "-q", *TINY_SWEEP, "--set",
                   "dataset.format=raw")
    assert proc.returncode == 0, proc.stderr
    sweep = saved_result(results, "scale")
    assert sweep["target"]["fstype"] == "s3" and sweep["status"] == "ok"
    points = sweep["points"]
    assert [p["clients"] for p in points] == [1, 2]
    for p in points:
        agg = p["result"]["aggregate"]
        # points run for the sweep's duration: every request is counted and timed
        assert agg["requests"] == agg["latency"]["ttfb"]["count"] > 0
        assert agg["s3"]["calls"] == agg["requests"] and agg["s3"]["retries"] == 0
    assert sweep["verdict"]


def test_acceptance_run_against_a_bucket(s3_bucket, results, tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text('[spec]\nname = "bucket"\n'
                    '[[check]]\nname = "train"\nphase = "train"\nworkload = "demo"\n'
                    'clients = 2\nepochs = 1\nset.dataset.num_files = 12\n'
                    'set.dataset.sample_size = "64KiB"\nset.train.batch_size = 2\n'
                    '[check.require]\nmin_au = 0.01\n'
                    '[[check]]\nname = "ckpt"\nphase = "checkpoint"\nclients = 2\n'
                    'set.checkpoint.size = "8MiB"\n[check.require]\nmax_checkpoint_s = 600\n')
    proc = run_cli("accept", str(spec), "--target", f"s3://{s3_bucket}/acc", "--results",
                   str(results), "--quiet", "--no-history", "--no-report")
    assert proc.returncode == 0, proc.stderr
    out = saved_result(results, "accept")
    assert [c["status"] for c in out["checks"]] == ["pass", "pass"]
