"""fio's own S3 client: its http engine (`ioengine=http`, `http_mode=s3`), present only in fio
builds linked with libcurl and OpenSSL (Debian's fio package is built without it)."""

from __future__ import annotations

import shutil
import subprocess

from aiio.errors import ToolMissing

BUILD_HINT = ("a fio built with its http engine (configure with libcurl and OpenSSL "
              "development files installed, e.g. libcurl4-openssl-dev and libssl-dev, and "
              "check that `fio --enghelp` lists http)")


def engines(fio: str = "fio") -> list[str]:
    """The ioengines this fio was built with, from `fio --enghelp`."""
    if shutil.which(fio) is None:
        raise ToolMissing(f"fio is not installed; the S3 hero numbers need {BUILD_HINT}")
    got = subprocess.run([fio, "--enghelp"], capture_output=True, text=True, timeout=30)
    lines = got.stdout.splitlines()[1:]  # the first line is "Available IO engines:"
    return [line.strip() for line in lines if line.strip()]


def require_http_engine(fio: str = "fio") -> None:
    """Refuse, naming the build needed, when this fio cannot speak S3."""
    if "http" not in engines(fio):
        version = subprocess.run([fio, "--version"], capture_output=True, text=True,
                                 timeout=30).stdout.strip()
        raise ToolMissing(f"the installed fio ({version}) has no http engine, so it cannot "
                          f"run against s3:// targets; the S3 hero numbers need {BUILD_HINT}")
    raise ToolMissing("this fio has the http engine, but aiio does not yet drive it against "
                      "s3:// targets; run fio with ioengine=http and http_mode=s3 by hand")
