"""A sweep and an acceptance run against a real SeaweedFS bucket."""

from __future__ import annotations

import json

from tests.conftest import call_cli, run_cli, saved_result

TINY_SWEEP = ("--set", "dataset.num_files=24", "--set", "dataset.sample_size=64KiB",
              "--set", "dataset.files_per_dir=10", "--set", "train.epochs=2",
              "--set", "train.batch_size=2")


def test_sweep_against_a_bucket(s3_bucket, results):
    # 3 s points: at 1 s a client stalled beside the parallel pass's other workers left 6 % of
    # what the bucket fed in batches still being read, and the point rightly said it could not
    # be measured within 5 % (it named 2 s)
    proc = run_cli("scale", "--phase", "train", "--clients", "1,2", "--target",
                   f"s3://{s3_bucket}/sw", "--results", str(results), "--no-history",
                   "--no-report", "--no-charts", "-q", "--duration", "3s", *TINY_SWEEP, "--set",
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


def test_acceptance_takes_endpoint_and_profile(s3_server, s3_bucket, results, tmp_path):
    """--endpoint reaches the service without AWS_ENDPOINT_URL, as for run and scale;
    --profile names a profile of the AWS config files."""
    spec = tmp_path / "spec.toml"
    spec.write_text('[spec]\nname = "ep"\n[[check]]\nname = "ckpt"\nphase = "checkpoint"\n'
                    'clients = 1\nset.checkpoint.size = "1MiB"\n'
                    '[check.require]\nmax_checkpoint_s = 600\n')
    from aiio.s3.localserver import ACCESS_KEY, SECRET_KEY

    config, creds = tmp_path / "aws-config", tmp_path / "aws-credentials"
    config.write_text("[profile bench]\nregion = us-east-1\n")
    # a named profile takes its keys from the files, not the environment
    creds.write_text(f"[bench]\naws_access_key_id = {ACCESS_KEY}\n"
                     f"aws_secret_access_key = {SECRET_KEY}\n")
    env = {"AWS_ENDPOINT_URL": "", "AWS_CONFIG_FILE": str(config),
           "AWS_SHARED_CREDENTIALS_FILE": str(creds), "AWS_ACCESS_KEY_ID": "",
           "AWS_SECRET_ACCESS_KEY": ""}
    args = ("accept", str(spec), "--target", f"s3://{s3_bucket}/ep", "--results", str(results),
            "--quiet", "--no-history", "--no-report")
    proc = run_cli(*args, "--endpoint", s3_server.endpoint, "--profile", "bench", env=env)
    out = json.loads(next(results.glob("*-accept-*/result.json")).read_text())
    assert [c["status"] for c in out["checks"]] == ["pass"], out["checks"][0]["reason"]
    assert proc.returncode == 0, proc.stderr
    run = json.loads(next(results.glob("*checkpoint*/result.json")).read_text())
    assert run["options"]["s3"] == {"endpoint": s3_server.endpoint, "profile": "bench"}
    missing = call_cli(*args, "--endpoint", s3_server.endpoint, "--profile", "nobody", env=env)
    assert missing.returncode == 2 and "profile" in missing.stderr, missing.stderr


def test_acceptance_refuses_endpoint_for_a_directory(tmp_path, target):
    spec = tmp_path / "spec.toml"
    spec.write_text('[spec]\nname = "d"\n[[check]]\nname = "t"\nphase = "train"\n'
                    '[check.require]\nmin_au = 0.1\n')
    proc = call_cli("accept", str(spec), "--target", str(target), "--endpoint", "http://x:1")
    assert proc.returncode == 2 and "--endpoint is for s3:// targets" in proc.stderr
