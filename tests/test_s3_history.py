"""A bucket run's history record names the bucket target as typed (s3://...), not a local
path made of it, so `aiio history --target s3://...` finds it beside acceptance records."""

from __future__ import annotations

import json

from aiio.results.history import History
from aiio.units import MiB
from tests.conftest import REPO, call_cli, run_cli

TINY = REPO / "workloads" / "acceptance" / "tiny.toml"


def test_history_keeps_the_s3_target(s3_bucket, results, tmp_path):
    target = f"s3://{s3_bucket}/hi"
    proc = run_cli("run", "--phase", "checkpoint", "--clients", "1", "--no-report", "-q",
                   "--set", f"checkpoint.size={4 * MiB}", "--target", target,
                   "--results", str(results), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for typed in (target, target + "/"):  # the result names it without the slash
        shown = call_cli("history", "--results", str(results), "--json", "--target", typed,
                        cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        records = json.loads(shown.stdout)
        assert [r["target"] for r in records] == [target]


def test_acceptance_records_share_the_run_records_key(s3_bucket, results, tmp_path):
    # typed with a trailing slash, the checks and the spec's own record must key the bucket
    # target as its runs do, so `aiio history --target` finds one series
    target = f"s3://{s3_bucket}/acc"
    proc = run_cli("accept", str(TINY), "--target", target + "/", "--results", str(results),
                   "-q", "--no-report", "--prometheus", str(tmp_path / "aiio.prom"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with History(results / "history.sqlite") as h:
        records = h.records()
    assert [r.kind for r in records] == ["run", "check"]
    assert {r.target for r in records} == {target}
    exported = (tmp_path / "aiio.prom").read_text()
    assert f'target="{target}"' in exported and f'target="{target}/"' not in exported
