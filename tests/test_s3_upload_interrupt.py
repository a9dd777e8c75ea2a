"""Ctrl-C or SIGTERM while `aiio datagen` uploads a dataset to a bucket ends the upload: the
uploads in flight finish, the rest are never sent, and the partial objects are removed. The upload
queued every file's PUT at once and, stopped, waited for all of them: a SIGTERM to an upload
of ten million small files was still uploading ten minutes later, 1.4 GiB of queued work in
its memory. A real SeaweedFS bucket and a real aiio process; nothing here is timed (the
guard only ends a test that would otherwise wait for ten million PUTs)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO
from tests.test_s3_target import keys

HANG_GUARD_S = 240  # a guard against a hang, not a timing
MANY = ("--set", "dataset.format=raw", "--set", "dataset.num_files=10000000", "--set",
        "dataset.sample_size=1KiB", "--set", "dataset.sample_size_stdev=0")


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 1)],
                         ids=["ctrl-c", "sigterm"])
def test_a_signal_ends_an_upload_of_ten_million_objects(s3_server, s3_bucket, tmp_path, sig,
                                                       code):
    log = tmp_path / "datagen.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "aiio", "datagen", "--target", f"s3://{s3_bucket}/up",
             *MANY], cwd=REPO, stdout=out, stderr=subprocess.STDOUT, text=True,
            start_new_session=True, env={**os.environ, **s3_server.env(), "COLUMNS": "160",
                 "PYTHONFAULTHANDLER": "1"})
    try:
        deadline = time.monotonic() + HANG_GUARD_S
        # at once, while the upload queues its files (it queued all ten million, seconds of
        # work, and a signal then left them all to upload before the command could end)
        while "uploading dataset" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.01)
        os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=HANG_GUARD_S)
        except subprocess.TimeoutExpired:  # where it hung: every thread's stack, in the log
            os.kill(proc.pid, signal.SIGABRT)
            proc.wait(timeout=30)
            pytest.fail(f"the upload went on after the signal:\n{log.read_text()[-30000:]}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    said = log.read_text()
    assert proc.returncode == code, said
    assert "Traceback" not in said, said
    assert not [k for k in keys(s3_server, s3_bucket) if k.startswith("up/aiio/datasets/")]
