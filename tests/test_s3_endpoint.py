"""An --endpoint (or AWS_ENDPOINT_URL) that is not a service URL gets one line and exit code 2,
before anything is written; a path in the endpoint is named when the bucket is not found."""

from __future__ import annotations

import os

import pytest

from tests.conftest import call_cli
from tests.test_s3_target import keys, one_line_exit_2

CHECKPOINT = ("run", "--phase", "checkpoint", "--clients", "1", "--no-history", "--no-report",
              "-q")


def _hostport(server) -> str:
    return server.endpoint.split("://", 1)[1]


@pytest.mark.parametrize("make", [
    lambda hp: hp,                       # no scheme: the most common slip
    lambda hp: "http://",                # no host
    lambda hp: f"ftp://{hp}",            # not HTTP
    lambda hp: "http://127.0.0.1:99999",  # no such port number
], ids=["no-scheme", "no-host", "ftp", "port-out-of-range"])
def test_an_endpoint_that_is_not_a_service_url_is_one_line(make, s3_server, s3_bucket,
                                                           results):
    endpoint = make(_hostport(s3_server))
    proc = call_cli(*CHECKPOINT, "--target", f"s3://{s3_bucket}/e", "--endpoint", endpoint,
                   "--results", str(results))
    one_line_exit_2(proc, "endpoint", "http://HOST:PORT")
    assert keys(s3_server, s3_bucket) == set()


def test_a_bad_aws_endpoint_url_is_one_line(s3_server, s3_bucket, results, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", _hostport(s3_server))
    assert os.environ["AWS_ENDPOINT_URL"] == _hostport(s3_server)
    proc = call_cli(*CHECKPOINT, "--target", f"s3://{s3_bucket}/e", "--results", str(results))
    one_line_exit_2(proc, "endpoint", "http://HOST:PORT")
    assert keys(s3_server, s3_bucket) == set()


def test_a_path_in_the_endpoint_is_named_when_the_bucket_is_not_found(s3_server, s3_bucket,
                                                                      results):
    proc = call_cli(*CHECKPOINT, "--target", f"s3://{s3_bucket}/e", "--endpoint",
                   f"{s3_server.endpoint}/some/path", "--results", str(results))
    one_line_exit_2(proc, s3_bucket, "/some/path")
    assert keys(s3_server, s3_bucket) == set()


def test_https_to_an_http_service_says_so(s3_server, s3_bucket, results):
    proc = call_cli(*CHECKPOINT, "--target", f"s3://{s3_bucket}/e", "--endpoint",
                   f"https://{_hostport(s3_server)}", "--results", str(results))
    one_line_exit_2(proc, "TLS", "http://")
    assert "list-type" not in proc.stderr  # the request's query string is noise here
    assert keys(s3_server, s3_bucket) == set()
