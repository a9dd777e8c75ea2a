"""A bucket prefix as the target: checks before anything is written, aiio's marker object,
and cleanup of exactly `<prefix>/aiio/`. Buckets are never created or deleted."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from aiio import __version__
from aiio.errors import CleanFailed, TargetError
from aiio.options import Access
from aiio.run.wallclock import now_iso
from aiio.s3 import location
from aiio.s3.connect import make_client

DELETE_BATCH = 1000  # the most keys one DeleteObjects request may carry


class S3Target:
    """`s3://bucket/prefix`; aiio's own objects live below `<prefix>/aiio/`."""

    def __init__(self, url: str, access: Access = Access()) -> None:
        self.loc = location.parse(url)
        self.access = access
        self.path = self.loc.url  # what results and messages show as the target
        # aiio's own key prefix as a path, so plans that join names below it make keys.
        self.root = PurePosixPath(self.loc.own_key())
        self._client: Any = None
        # Whether this run has written below the prefix (claimed it: every write of a run's
        # comes after `claim`): a refusal before then leaves no result (runner._refusal)
        self.written = False

    def url(self, key: str) -> str:
        """An object key of this bucket as the URL a message names it by."""
        return location.Location(self.loc.bucket, key).url

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = make_client(self.access, checking=True)
        return self._client

    # --- checks ------------------------------------------------------------------------
    def check_usable(self) -> None:
        """Endpoint reachable, credentials accepted, bucket present, aiio's prefix not
        someone else's: each failure is one TargetError, raised before any write."""
        keys = self._list(self.loc.own, limit=2)
        if keys and self.loc.marker not in keys and not self._exists(self.loc.marker):
            raise TargetError(f"{self.loc.url}/{location.OWN_DIR}/ holds objects but no "
                              f"{location.MARKER} marker, so aiio did not create it; choose "
                              "another prefix")

    def _list(self, prefix: str, limit: int) -> list[str]:
        got = self._call("list", self.client.list_objects_v2, Bucket=self.loc.bucket,
                         Prefix=prefix, MaxKeys=limit)
        return [o["Key"] for o in got.get("Contents", [])]

    def _exists(self, key: str) -> bool:
        import botocore.exceptions as bx
        try:
            self.client.head_object(Bucket=self.loc.bucket, Key=key)
            return True
        except bx.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise TargetError(self._explain(exc)) from None

    def _call(self, what: str, fn: Any, **kwargs: Any) -> Any:
        """Call fn; turn the ways a target can be wrong into one line each."""
        import botocore.exceptions as bx
        try:
            return fn(**kwargs)
        except (bx.EndpointConnectionError, bx.ConnectTimeoutError, bx.ReadTimeoutError) as exc:
            raise TargetError(f"cannot reach the S3 endpoint "
                              f"{getattr(exc, 'kwargs', {}).get('endpoint_url', '')}: "
                              "check --endpoint (or AWS_ENDPOINT_URL) and the network"
                              ) from None
        except bx.SSLError as exc:
            raise TargetError(f"TLS with the S3 endpoint {self.client.meta.endpoint_url} "
                              f"failed ({_ssl_reason(exc)}): if the service speaks plain "
                              "HTTP, write http://; if it uses its own certificate authority, "
                              "set AWS_CA_BUNDLE") from None
        except bx.NoCredentialsError:
            raise TargetError("no AWS credentials found: set AWS_ACCESS_KEY_ID and "
                              "AWS_SECRET_ACCESS_KEY, or pass --profile NAME") from None
        except bx.ClientError as exc:
            raise TargetError(self._explain(exc)) from None
        except bx.BotoCoreError as exc:
            raise TargetError(f"S3 {what} on {self.loc.url} failed: {exc}") from None

    def _explain(self, exc: Any) -> str:
        err = exc.response.get("Error", {})
        code = err.get("Code", "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in ("NoSuchBucket",) or (status == 404 and code in ("404", "NotFound")):
            return (f"bucket {self.loc.bucket!r} does not exist{self._endpoint_path()}; aiio "
                    "never creates buckets")
        if code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken",
                    "ExpiredToken", "InvalidClientTokenId"):
            return (f"the S3 service rejected the credentials ({code}); check the AWS "
                    "environment variables or --profile")
        if code in ("AccessDenied", "403") or status == 403:
            return (f"access denied to s3://{self.loc.bucket} with these credentials; grant "
                    "list, get, put and delete on the prefix or use other credentials")
        return f"S3 error on {self.loc.url}: {code or status} {err.get('Message', '')}".strip()

    def _endpoint_path(self) -> str:
        """A path in the endpoint comes before the bucket in every request: name it."""
        path = urlsplit(self.client.meta.endpoint_url).path.rstrip("/")
        return f" at {path}/ of the endpoint (requests go to {path}/{self.loc.bucket})" \
            if path else ""

    # --- ownership ---------------------------------------------------------------------
    def is_owned(self) -> bool:
        return self._exists(self.loc.marker)

    def claim(self) -> str:
        """Write the marker object (after the checks), or confirm it is there; the run
        writes from here (`written`)."""
        self.check_usable()
        self.written = True
        if not self.is_owned():
            marker = {"tool": "aiio", "version": __version__, "host": socket.gethostname(),
                      "created": now_iso()}
            self._call("put", self.client.put_object, Bucket=self.loc.bucket,
                       Key=self.loc.marker, Body=(json.dumps(marker) + "\n").encode())
        return self.loc.own

    def release(self) -> None:
        """Nothing to let go of: a bucket prefix is held by no lock or descriptor."""

    def unclaim(self) -> None:
        """Nothing to take back: the marker is written at the run's first write (`claim`),
        after every refusal."""

    # --- what a phase asks of any target -----------------------------------------------
    def require_space(self, needed: int, what: str) -> None:
        """Nothing to check: a bucket reports no free space; the service refuses a PUT it
        cannot keep, and that fails the run in one line."""

    def make_run_folder(self, path: PurePosixPath) -> None:
        """A run's keys need no folder; its first write claims the prefix (the marker)."""
        self.claim()

    def remove(self, path: PurePosixPath) -> None:
        """Delete every object of a run's below `path` (a key prefix), as a mount's run
        folder is removed; nothing else is touched."""
        prefix = str(path).rstrip("/") + "/"
        self.delete([o["Key"] for o in self.objects() if o["Key"].startswith(prefix)])

    def remove_if_empty(self, path: PurePosixPath) -> None:
        """Nothing to do: a key prefix with no object below it does not exist."""

    # --- what the phases keep on it ---------------------------------------------------
    def ensure_weights(self, rc: Any, total: int) -> tuple[str, bool]:
        """The load phase's model weights as objects (aiio.s3.weights): (key prefix,
        reused)."""
        from aiio.s3.weights import ensure_weights
        return ensure_weights(rc, total)

    def ensure_dataset(self, rc: Any) -> Any:
        """The training dataset as objects (aiio.s3.dataset), reused or uploaded."""
        from aiio.s3.dataset import ensure_for_run
        return ensure_for_run(rc)

    # --- cleanup -----------------------------------------------------------------------
    def objects(self) -> Iterator[dict]:
        """Every object below aiio's own prefix (Key, Size)."""
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.loc.bucket, Prefix=self.loc.own)
        for page in pages:
            yield from page.get("Contents", [])

    def clean(self) -> tuple[int, int, int]:
        """Delete every object below `<prefix>/aiio/` and abort its unfinished multipart
        uploads, the marker last; returns (objects, bytes, uploads). Refuses a prefix without
        the marker; never touches the bucket itself."""
        self.check_usable()
        if not self._list(self.loc.own, limit=1):
            return 0, 0, 0
        if not self.is_owned():
            raise TargetError(f"refusing to delete {self.loc.url}/{location.OWN_DIR}/: it has "
                              f"no {location.MARKER} marker, so aiio did not create it")
        keys, nbytes = [], 0
        for obj in self.objects():
            if obj["Key"] != self.loc.marker and obj["Key"].startswith(self.loc.own):
                keys.append(obj["Key"])
                nbytes += obj.get("Size", 0)
        try:
            self.delete(keys)
            uploads = self.abort_uploads()
            self.delete([self.loc.marker])
        except TargetError as exc:
            raise self._clean_failed(exc) from None
        return len(keys) + 1, nbytes, uploads

    def _clean_failed(self, exc: TargetError) -> CleanFailed:
        """The service refused (or failed) a delete: a failure of the storage, as a mount's
        clean that could not remove a file, in one line naming what remains."""
        try:
            left = f"{sum(1 for _ in self.objects()):,} objects remain"
        except Exception:  # noqa: BLE001 - the service that failed the delete may fail this
            left = "objects remain"
        return CleanFailed(f"{str(exc).rstrip('.')}; {left} below {self.loc.url}/"
                           f"{location.OWN_DIR}/, the marker with them, so `aiio clean` can "
                           "finish once that is fixed")

    def abort_uploads(self) -> int:
        """Abort the multipart uploads a killed run left below aiio's prefix (their parts
        take space but list as no object); returns how many."""
        pages = self.client.get_paginator("list_multipart_uploads").paginate(
            Bucket=self.loc.bucket, Prefix=self.loc.own)
        ended = 0
        for page in pages:
            for up in page.get("Uploads", []):
                if up["Key"].startswith(self.loc.own):  # the same guard as every delete
                    self._call("abort", self.client.abort_multipart_upload,
                               Bucket=self.loc.bucket, Key=up["Key"], UploadId=up["UploadId"])
                    ended += 1
        return ended

    def delete(self, keys: list[str]) -> None:
        """Delete these keys (each must lie below aiio's own prefix)."""
        for key in keys:
            if not key.startswith(self.loc.own):
                raise TargetError(f"refusing to delete s3://{self.loc.bucket}/{key}: outside "
                                  f"aiio's prefix {self.loc.own}")
        for i in range(0, len(keys), DELETE_BATCH):
            batch = [{"Key": k} for k in keys[i:i + DELETE_BATCH]]
            got = self._call("delete", self.client.delete_objects, Bucket=self.loc.bucket,
                             Delete={"Objects": batch, "Quiet": True})
            if got.get("Errors"):
                first = got["Errors"][0]
                raise TargetError(f"could not delete s3://{self.loc.bucket}/{first['Key']}: "
                                  f"{first.get('Code')} {first.get('Message', '')}")


def _ssl_reason(exc: Exception) -> str:
    """The SSL library's reason, without the request URL botocore puts before it."""
    text = str(getattr(exc, "kwargs", {}).get("error", "")) or str(exc)
    return text.split("] ", 1)[-1].split(" (_ssl", 1)[0] if "]" in text else text
