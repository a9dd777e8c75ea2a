"""boto3 clients for a target: the AWS credential chain, a pool sized to the streams, and
every retry and throttling answer counted instead of silently absorbed."""

from __future__ import annotations

import threading
from typing import Any

from aiio.errors import TargetError, Terminated
from aiio.options import Access

# Checks before a run fail fast: a wrong endpoint must not hang for minutes of retries.
CHECK_TIMEOUT_S = 5.0
THROTTLE_CODES = {"SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded",
                  "TooManyRequests", "ServiceUnavailable"}

# botocore (1.36 on) checksums every PUT, UploadPart and GET body by default (CRC32, in a
# header or an aws-chunked trailer, and validated on GETs), and hashes the payload (SHA-256)
# for the signature over http, and over https too once no checksum header is sent. Each runs
# on the client's CPU inside the timed request: an 8 MiB GET took 16.7-17.5 ms with them and
# 11.2 ms without. Off, so a request's time is the service's: checksums only where S3
# requires one (DeleteObjects, never timed), and the payload sent as UNSIGNED-PAYLOAD.
# --verify checks every byte aiio reads back, with its own crc32c, timed apart.
NO_SDK_CHECKSUMS: dict[str, Any] = {"request_checksum_calculation": "when_required",
                                    "response_checksum_validation": "when_required",
                                    "s3": {"payload_signing_enabled": False}}


class RequestCounts:
    """Per client: API calls, HTTP attempts, retries (attempts beyond the first of a call)
    and throttling answers (HTTP 503 / 429 or a SlowDown-type error code)."""

    def __init__(self) -> None:
        self.calls = 0
        self.attempts = 0
        self.throttled = 0
        self._lock = threading.Lock()

    def attach(self, client: Any) -> None:
        events = client.meta.events
        events.register("before-call.s3", self._on_call)
        # needs-retry fires once per HTTP attempt, before botocore decides to retry; a handler
        # that returns None leaves that decision alone.
        events.register("needs-retry.s3", self._on_attempt)

    def _on_call(self, **kwargs: Any) -> None:
        with self._lock:
            self.calls += 1

    def _on_attempt(self, response: Any = None, caught_exception: Any = None,
                    **kwargs: Any) -> None:
        throttled = False
        if response is not None:
            http, parsed = response
            code = (parsed or {}).get("Error", {}).get("Code", "")
            throttled = http.status_code in (429, 503) or code in THROTTLE_CODES
        with self._lock:
            self.attempts += 1
            self.throttled += throttled

    @property
    def retries(self) -> int:
        return max(0, self.attempts - self.calls)

    def to_dict(self) -> dict[str, int]:
        return {"calls": self.calls, "attempts": self.attempts, "retries": self.retries,
                "throttled": self.throttled}


def session(access: Access) -> Any:
    import boto3
    import botocore.exceptions as bx
    try:
        return boto3.session.Session(profile_name=access.profile)
    except bx.ProfileNotFound:
        raise TargetError(f"--profile {access.profile}: no such profile in the AWS config "
                          "files; name one that exists") from None


def make_client(access: Access, streams: int = 10, *, checking: bool = False,
                counts: RequestCounts | None = None) -> Any:
    """An S3 client whose connection pool holds `streams` connections (one per concurrent
    request); `checking`: short timeouts and no retries, for the checks before a run."""
    from botocore.config import Config
    cfg = Config(max_pool_connections=max(1, streams),
                 retries={"mode": "standard", "max_attempts": 1 if checking else 3},
                 connect_timeout=CHECK_TIMEOUT_S if checking else 60,
                 read_timeout=CHECK_TIMEOUT_S if checking else 60, **NO_SDK_CHECKSUMS)
    try:
        client = session(access).client("s3", endpoint_url=access.endpoint or None, config=cfg)
    except ValueError as exc:
        # botocore's "Invalid endpoint: URL": one from AWS_ENDPOINT_URL or the AWS config,
        # which Access did not see
        raise TargetError(f"{exc}: write the S3 endpoint (AWS_ENDPOINT_URL, endpoint_url in "
                          "the AWS config, or --endpoint) as http://HOST:PORT or "
                          "https://HOST:PORT") from None
    if counts is not None:
        counts.attach(client)
    client.meta.events.register("needs-retry", stop_unwinds)
    return client


def stop_unwinds(caught_exception: BaseException | None = None, **_: Any) -> None:
    """Raise again a SIGTERM's stop that botocore caught. The SIGTERM handler raises it in
    the main thread wherever that thread is, and botocore wraps any exception raised while it
    sends a request (HTTPClientError) and retries the request: the stop was retried away
    and a dataset upload went on uploading. (Ctrl-C's KeyboardInterrupt is no Exception, so
    botocore lets it through.)"""
    cause = getattr(caught_exception, "kwargs", {}).get("error")
    if isinstance(cause, Terminated):
        raise cause
