"""fio's own S3 numbers against the bucket: its http engine (`ioengine=http`, `http_mode=s3`)
PUTs objects below `<prefix>/aiio/fio/hero/`, then GETs them back, one fio job per client.

fio's http engine stores every I/O unit as its own object, `<file>_<offset>_<length>`, one
request per object, and counts the I/O's nominal length as its bytes; a GET that finds no
object (404) is counted as a read of zeros. So aiio always PUTs first, lists what the bucket
then holds, and accepts fio's figures only when its bytes are the objects' bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from aiio.errors import AiioError, ConfigError, RunFailed, RunInterrupted
from aiio.fio import job
from aiio.fio.http_engine import require_http_engine
from aiio.fio.suite import HeroTest
from aiio.options import Access, RunOptions
from aiio.results import result
from aiio.run.sysinfo import collect_environment
from aiio.run.wallclock import now_iso, now_unix
from aiio.s3 import backend
from aiio.s3.connect import session
from aiio.ui import UI, QuietUI
from aiio.units import GiB, MiB, format_size

FOLDER = ("fio", "hero")
MAX_PUT = 5 * GiB  # the largest object one PUT may carry
# The most objects a suite lays out. fio PUTs them one request at a time, then aiio lists and
# deletes them: a million is minutes on a service of a few thousand PUTs/s (64 clients of
# 100 GiB in the default 8 MiB objects are 819,200); --object-size 1 of the default 1 GiB
# per client planned two billion, days of PUTs before the first figure.
MAX_OBJECTS = 1_000_000
S3_TESTS = {t.name: t for t in (
    HeroTest("seq_write", "write", 0, "PUT of whole objects, each once"),
    HeroTest("seq_read", "read", 0, "GET of the objects seq_write made, each once"),
)}
# fio builds each request's URL from the key unencoded: keys must need no escaping.
PLAIN_KEY = re.compile(r"[A-Za-z0-9._/-]+")
ENV_KEYID, ENV_KEY = "AIIO_FIO_S3_KEYID", "AIIO_FIO_S3_KEY"


@dataclass
class S3SuiteRequest:
    target: str
    access: Access
    clients: int = 2
    size: int = 1 * GiB             # bytes per client
    object_size: int = 8 * MiB      # bytes per object (fio's bs: one request each)
    tests: tuple[str, ...] = tuple(S3_TESTS)
    keep: bool = False
    results_dir: str = "reports"
    program: str = "fio"

    def check(self) -> None:
        unknown = [t for t in self.tests if t not in S3_TESTS]
        if unknown or not self.tests:
            raise ConfigError(f"unknown fio test(s) for s3:// targets "
                              f"{', '.join(unknown) or '(none)'}; choose from: "
                              f"{', '.join(S3_TESTS)}")
        job.check_jobs(self.clients)
        if not 0 < self.object_size <= MAX_PUT:
            raise ConfigError(f"--object-size {self.object_size} B: one PUT carries 1 B to "
                              "5 GiB")
        if self.size < self.object_size or self.size % self.object_size:
            raise ConfigError(f"--size {format_size(self.size)} must be a whole number of "
                              f"--object-size {format_size(self.object_size)} objects")
        if self.objects > MAX_OBJECTS:
            raise ConfigError(
                f"--size {format_size(self.size)} in --object-size "
                f"{format_size(self.object_size)} objects for {self.clients} client(s) plans "
                f"{self.objects:,} objects, one PUT each; aiio lays out at most "
                f"{MAX_OBJECTS:,}: raise --object-size or lower --size or --clients")

    @property
    def objects(self) -> int:
        return self.clients * (self.size // self.object_size)


def credentials(access: Access) -> dict[str, str]:
    """The AWS chain's keys and region for fio, which signs its own requests."""
    sess = session(access)
    creds = sess.get_credentials()
    if creds is None:
        raise ConfigError("no AWS credentials found: set AWS_ACCESS_KEY_ID and "
                          "AWS_SECRET_ACCESS_KEY, or pass --profile NAME")
    frozen = creds.get_frozen_credentials()
    if frozen.token:
        raise ConfigError("these AWS credentials are temporary (they carry a security "
                          "token), which fio's http engine cannot send; use long-term access "
                          "keys for `aiio fio`")
    return {ENV_KEYID: frozen.access_key, ENV_KEY: frozen.secret_key,
            "region": sess.region_name or "us-east-1"}


def endpoint_options(url: str) -> dict[str, str]:
    """http_host and https from the endpoint URL botocore resolved."""
    parts = urlparse(url)
    if parts.path not in ("", "/") or not parts.netloc:
        raise ConfigError(f"endpoint {url}: fio's http engine needs a plain http(s)://host:port "
                          "endpoint without a path")
    return {"http_host": parts.netloc, "https": "on" if parts.scheme == "https" else "off"}


def job_text(req: S3SuiteRequest, test: HeroTest, host: dict[str, str], region: str,
             files: str) -> str:
    """One fio job per client, each on its own object names; no secret in the text."""
    glob = {"ioengine": "http", "http_mode": "s3", **host,
            "http_s3_keyid": f"${{{ENV_KEYID}}}", "http_s3_key": f"${{{ENV_KEY}}}",
            "http_s3_region": region, "filename_format": job.escape(files),
            "size": job.size_opt(req.size), "bs": job.size_opt(req.object_size)}
    return job.render(glob, [(test.name, {"rw": test.rw, "numjobs": req.clients})],
                      [f"aiio s3 hero test {test.name}: {test.description}, "
                       f"{req.clients} jobs"])


class S3Suite:
    """One run of the S3 hero tests: the target, fio's access to it, and the result."""

    def __init__(self, req: S3SuiteRequest, ui: UI) -> None:
        req.check()
        self.req, self.ui = req, ui
        self.program = require_http_engine(req.program)
        reach = RunOptions(s3=req.access)
        self.target, info, self.method = backend.open_target(req.target, reach)
        self.prefix = self.target.loc.own_key(*FOLDER) + "/"
        if not PLAIN_KEY.fullmatch(self.target.loc.bucket + "/" + self.prefix):
            raise ConfigError(f"--target {req.target}: fio's http engine puts keys into URLs "
                              "unescaped; use a prefix of letters, digits and . _ / -")
        creds = credentials(req.access)
        self.region = creds.pop("region")
        self.env = creds
        self.host = endpoint_options(self.target.client.meta.endpoint_url)
        self.files = f"/{self.target.loc.bucket}/{self.prefix}hero.$jobnum"
        self.out = skeleton(req, info.to_dict(), self.method, job.fio_version(self.program))
        self.folder = result.unique_folder(Path(req.results_dir), self.out["id"])

    def run(self) -> tuple[dict[str, Any], Path]:
        """PUT (always: the GETs need the objects), then GET; save the result."""
        try:
            self.target.claim()
            self._remove()
            write = self._test("seq_write")
            held = self._held()
            check_bytes("seq_write", result.fio_figures("seq_write", write).bytes, held,
                        self.req.objects)
            if "seq_write" in self.req.tests:
                self._store("seq_write", write, held)
            if "seq_read" in self.req.tests:
                read = self._test("seq_read")
                check_bytes("seq_read", result.fio_figures("seq_read", read).bytes, held,
                            self.req.objects)
                self._store("seq_read", read, held)
            self.out["status"] = "ok"
        except KeyboardInterrupt:
            self._finish("interrupted", "interrupted by the user")
            raise RunInterrupted(f"interrupted; partial result saved in {self.folder}") from None
        except AiioError as exc:
            self._finish("failed", str(exc))
            raise type(exc)(f"{exc}; partial result saved in {self.folder}") from None
        self._finish("ok", None)
        return self.out, self.folder

    def _test(self, name: str) -> dict[str, Any]:
        test = S3_TESTS[name]
        text = job_text(self.req, test, self.host, self.region, self.files)
        self.ui.note(f"fio {name}: {test.description}, {self.req.clients} jobs, "
                     f"{format_size(self.req.object_size)} objects")
        report = job.run_text(text, program=self.program, env=self.env)
        clients = job.clients_of(report)
        if len(clients) != self.req.clients:
            raise RunFailed(f"fio reported {len(clients)} jobs for {name}, expected "
                            f"{self.req.clients}")
        return result.fio_test(test.description, test.rw, self.req.object_size, text, clients,
                               job.aggregate(clients), [])

    def _held(self) -> dict[str, int]:
        """What the bucket holds below the hero prefix: objects and their bytes."""
        sizes = [o.get("Size", 0) for o in self.target.objects()
                 if o["Key"].startswith(self.prefix)]
        return {"count": len(sizes), "bytes": sum(sizes)}

    def _store(self, name: str, entry: dict[str, Any], held: dict[str, int]) -> None:
        result.add_fio_test(self.out, name, {**entry, "objects": held})

    def _remove(self) -> None:
        self.target.delete([o["Key"] for o in self.target.objects()
                            if o["Key"].startswith(self.prefix)])

    def _finish(self, status: str, error: str | None) -> None:
        """Remove the objects (unless --keep after success) and save the result."""
        self.out["status"], self.out["error"] = status, error
        try:
            if not (self.req.keep and status == "ok"):
                self._remove()
        finally:
            self.out["finished"] = now_iso()
            self.out["saved_at"] = now_unix()
            result.save(self.out, self.folder)


def check_bytes(test: str, reported: int, held: dict[str, int], expected: int) -> None:
    """fio's bytes must be the bytes the bucket holds, in the objects planned."""
    if held["count"] != expected or reported != held["bytes"]:
        raise RunFailed(f"fio {test} reported {reported:,} B, but the bucket holds "
                        f"{held['bytes']:,} B in {held['count']:,} of the {expected:,} objects "
                        "planned; its figures are not the service's")


def skeleton(req: S3SuiteRequest, target: dict[str, Any], method: str,
             version: str) -> dict[str, Any]:
    """The suite's result as it starts: the one result skeleton with the bucket's options."""
    return result.new(
        "fio", result.new_id("fio", f"c{req.clients}"), now_iso(), phase=None,
        environment=collect_environment(), target=target, method=method, fio_version=version,
        options={"clients": req.clients, "size": req.size, "object_size": req.object_size,
                 "objects": req.objects, "iodepth": 1, "ioengine": "http",
                 "http_mode": "s3", "direct": False, "tests": list(req.tests),
                 "keep": req.keep, "runtime_s": None, "ramp_s": 0.0,
                 "endpoint": req.access.endpoint, "profile": req.access.profile},
        clients_requested=req.clients, tests={}, aggregate={}, warnings=[])


def run_s3_suite(req: S3SuiteRequest, ui: UI | None = None) -> tuple[dict[str, Any], Path]:
    """Run the S3 hero tests and save the result; returns (result, folder)."""
    return S3Suite(req, ui or QuietUI()).run()
