"""`aiio fio` against a real SeaweedFS bucket with fio's http engine (`http_mode=s3`): the
bytes fio reports are the bytes the bucket holds, and a train run on the same bucket is set
beside fio's GET figure. Needs a fio built with the http engine (`.ci/fio-http` builds one)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from aiio.errors import RunFailed
from aiio.fio import job
from aiio.fio.bucket import (
    S3_TESTS,
    S3SuiteRequest,
    check_bytes,
    credentials,
    endpoint_options,
    job_text,
    skeleton,
)
from aiio.fio.http_engine import engines
from aiio.options import Access
from aiio.report import render
from aiio.results import result
from aiio.units import MiB
from tests.conftest import call_cli, run_cli
from tests.test_s3_target import keys, one_line_exit_2

# Where .ci/fio-http installs its build (AIIO_FIO_HTTP names another).
CI_BUILD = "/var/cache/aiio/fio-http/fio"


def http_fio() -> str | None:
    """A fio with the http engine: $AIIO_FIO_HTTP, the CI build, or fio on PATH."""
    for candidate in (os.environ.get("AIIO_FIO_HTTP"), CI_BUILD, "fio"):
        if candidate and shutil.which(candidate) and "http" in engines(candidate):
            return shutil.which(candidate)
    return None


@pytest.fixture(scope="module")
def fio_http() -> str:
    path = http_fio()
    if path is None:
        pytest.skip("no fio with the http engine: `bash .ci/fio-http` builds one (as root), "
                    "or set AIIO_FIO_HTTP")
    return path


def _results(results, kind: str) -> dict:
    return json.loads(next(results.glob(f"*-{kind}*/result.json")).read_text())


def test_fio_puts_and_gets_the_bucket_and_train_is_set_beside_it(fio_http, s3_server,
                                                                  s3_bucket, results):
    target = f"s3://{s3_bucket}/hf"
    proc = run_cli("fio", "--target", target, "--fio", fio_http, "--clients", "2", "--size",
                   "24MiB", "--object-size", "4MiB", "--results", str(results), "-q")
    assert proc.returncode == 0, proc.stderr
    res = _results(results, "fio")
    assert res["status"] == "ok" and res["target"]["fstype"] == "s3"
    assert res["options"]["ioengine"] == "http" and res["fio_version"]
    write, read = res["tests"]["seq_write"], res["tests"]["seq_read"]
    # fio's bytes are the objects' bytes: 2 jobs x 24 MiB in 4 MiB objects
    assert write["objects"] == {"count": 12, "bytes": 2 * 24 * MiB}
    assert write["aggregate"]["bytes"] == read["aggregate"]["bytes"] == 2 * 24 * MiB
    assert [c["bytes"] for c in read["clients"]] == [24 * MiB, 24 * MiB]
    assert read["aggregate"]["ios"] == 12 and read["aggregate"]["mib_s"] > 0
    assert "aiiotestsecret" not in write["jobfile"]  # credentials reach fio by environment
    assert keys(s3_server, s3_bucket) == {"hf/aiio/.aiio-owned"}  # the objects are gone
    page = render(res)  # the fio view, with what the bucket held beside fio's figures
    assert "objects listed in the bucket" in page and "ioengine=http" in page
    assert "no view for results of kind" not in page
    assert res["target"]["mountpoint"] in page and "0 B / 0 B" not in page  # a bucket, not a disk

    # aiio's GETs of the same bucket, at the same concurrency, beside fio's
    train = run_cli("run", "--phase", "train", "--target", target, "--results", str(results),
                    "--no-history", "--no-report", "-q", "--clients", "1", "--set",
                    "train.read_threads=2", "--set", "dataset.num_files=8", "--set",
                    "dataset.sample_size=1MiB", "--set", "dataset.format=raw", "--epochs", "1",
                    "--batch-size", "2")
    assert train.returncode == 0, train.stderr
    hero = _results(results, "train")["hero"]
    assert hero["test"] == "seq_read" and hero["fio_clients"] == 2
    assert hero["fio_mib_s"] == read["aggregate"]["mib_s"]
    assert hero["percent"] == pytest.approx(100 * hero["phase_mib_s"] / hero["fio_mib_s"])


def test_fio_counts_a_get_of_a_missing_object_as_bytes(fio_http, s3_server, s3_bucket):
    """Why aiio always PUTs first and checks the bucket: fio's http engine reads zeros, and
    reports the bytes, where there is no object."""
    req = S3SuiteRequest(f"s3://{s3_bucket}/none", Access(), clients=1, size=4 * MiB,
                         object_size=4 * MiB)
    env = credentials(req.access)
    region = env.pop("region")
    text = job_text(req, S3_TESTS["seq_read"], endpoint_options(s3_server.endpoint), region,
                    f"/{s3_bucket}/none/aiio/fio/hero/hero.$jobnum")
    report = job.run_text(text, program=fio_http, env=env)
    reported = job.aggregate(job.clients_of(report))["bytes"]
    assert reported == 4 * MiB and keys(s3_server, s3_bucket) == set()
    with pytest.raises(RunFailed, match="not the service's"):
        check_bytes("seq_read", reported, {"count": 0, "bytes": 0}, 1)


@pytest.mark.parametrize("args,flag", [(("--runtime", "5s"), "--runtime"),
                                       (("--iodepth", "4"), "--iodepth"),
                                       (("--emit",), "--emit")])
def test_mount_only_options_are_refused_for_a_bucket(args, flag):
    one_line_exit_2(call_cli("fio", "--target", "s3://somebucket/x", *args),
                    f"{flag} is for directories")


def test_object_size_is_refused_for_a_directory(target):
    one_line_exit_2(call_cli("fio", "--target", str(target), "--object-size", "1MiB"),
                    "--object-size is for s3:// targets")


def test_a_fio_without_the_http_engine_names_the_build(s3_bucket):
    plain = shutil.which("fio")
    if plain is None or "http" in engines(plain):
        pytest.skip("needs a fio without the http engine (Debian's package)")
    one_line_exit_2(call_cli("fio", "--target", f"s3://{s3_bucket}/x", "--fio", plain),
                    "no http engine", "libcurl", "--fio")


def test_the_bucket_suite_result_starts_as_every_result_does():
    """One constructor: the bucket suite's result has every field a result starts with,
    its writer included (a reader tells a suite that died from one still running)."""
    req = S3SuiteRequest("s3://bucket/p", Access(), clients=1, size=4 * MiB, object_size=MiB)
    doc = skeleton(req, {"path": "s3://bucket/p"}, "s3", "fio-3.38")
    assert set(result.new("fio", "id", "started", phase=None)) <= set(doc)
    assert doc["writer"]["pid"] == os.getpid()


@pytest.mark.parametrize("args,count", [(("--object-size", "1"), "2,147,483,648"),
                                        (("--size", "1TiB", "--object-size", "4KiB"),
                                         "536,870,912")])
def test_an_enormous_number_of_objects_is_refused_before_any_request(fio_http, s3_server,
                                                                     s3_bucket, args, count):
    """fio's http engine makes one object per I/O unit: 1 B objects of the default 1 GiB per
    client planned two billion PUTs, laid out one by one for days; refused in one line naming
    the count and the fix, and nothing reached the bucket."""
    one_line_exit_2(call_cli("fio", "--target", f"s3://{s3_bucket}/x", "--fio", fio_http,
                             *args), f"{count} objects", "--object-size", "--size")
    assert keys(s3_server, s3_bucket) == set()


def test_more_jobs_than_fio_runs_are_refused_before_any_request(fio_http, s3_server, s3_bucket,
                                                                tmp_path):
    """A million clients of one 5 GiB object each is within the objects' bound, but fio runs
    at most 4,088 jobs: it refused them once started, exit 1 and a result saved "failed"."""
    proc = call_cli("fio", "--target", f"s3://{s3_bucket}/x", "--fio", fio_http, "--clients",
                    "1000000", "--size", "5GiB", "--object-size", "5GiB", "--results",
                    str(tmp_path / "r"))
    one_line_exit_2(proc, "--clients 1,000,000", "at most 4,088")
    assert keys(s3_server, s3_bucket) == set() and not (tmp_path / "r").exists()
