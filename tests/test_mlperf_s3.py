"""`aiio mlperf` against a bucket (a real SeaweedFS S3 service): objects come from the
server on every GET, so no client page cache can answer; the checks that guard against one
(O_DIRECT in effect, the restore not from cache) hold, where they marked every bucket's result
invalid for not using O_DIRECT."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import run_cli


def test_a_bucket_needs_no_o_direct_and_its_reads_are_not_from_a_cache(s3_bucket: str,
                                                                       results: Path) -> None:
    proc = run_cli("mlperf", "-w", "llama3-8b", "--scale", "1e-5", "--clients", "2",
                   "-t", f"s3://{s3_bucket}", "--results", str(results), "--json", "-q")
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    found = {c["check"]: c for c in s["checks"]}
    for name in ("o_direct", "restore_not_from_cache", "results_apart_from_data"):
        assert found[name]["ok"] is True, found[name]
    assert "bucket" in found["o_direct"]["value"]
    assert not [m for m in s["marks"] if "o_direct" in m or "from_cache" in m]
    assert s["write"]["checkpoints"] == s["read"]["checkpoints"] == 10
