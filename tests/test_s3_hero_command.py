"""The `aiio fio` command a bucket run suggests for its missing hero number runs as given, and
the fio result it makes is the one the run is then set against."""

from __future__ import annotations

import json
import shlex

from tests.conftest import run_cli
from tests.test_s3_fio import fio_http  # noqa: F401 - the fixture

TRAIN = ("--phase", "train", "--no-history", "--no-report", "-q", "--clients", "1",
         "--set", "train.read_threads=2", "--set", "dataset.num_files=8",
         "--set", "dataset.sample_size=1MiB", "--set", "dataset.format=raw",
         "--epochs", "1", "--batch-size", "2")


def _train_hero(target: str, results) -> dict:
    proc = run_cli("run", "--target", target, "--results", str(results), *TRAIN)
    assert proc.returncode == 0, proc.stderr
    newest = sorted(results.glob("*-train-*/result.json"))[-1]
    return json.loads(newest.read_text())["hero"]


def test_the_suggested_fio_command_runs_and_pairs(fio_http, s3_bucket, results):  # noqa: F811
    target = f"s3://{s3_bucket}/hc"
    hero = _train_hero(target, results)
    assert "percent" not in hero and "run: aiio fio" in hero["text"], hero
    words = shlex.split(hero["text"].split("run: aiio ", 1)[1])
    proc = run_cli(*words, "--fio", fio_http, "--size", "8MiB", "--object-size", "4MiB",
                   "--results", str(results), "-q")
    assert proc.returncode == 0, proc.stderr  # the suggestion is a command aiio accepts
    again = _train_hero(target, results)
    assert again.get("percent") is not None, again  # and it makes the hero the run pairs with
    assert again["pairing"]["clients"] * again["pairing"]["streams_per_client"] == \
        again["pairing"]["fio_jobs"] * again["pairing"]["fio_iodepth"] == 2
