"""fio's own S3 client: its http engine (`ioengine=http`, `http_mode=s3`), present only in fio
builds linked with libcurl and OpenSSL (Debian's fio package is built without it)."""

from __future__ import annotations

import shutil
import subprocess

from aiio.errors import ToolMissing

BUILD_HINT = ("a fio built with its http engine: configure fio with the libcurl and OpenSSL "
              "development files installed (libcurl4-openssl-dev, libssl-dev), e.g. from "
              "`apt-get source fio`, check that `fio --enghelp` lists http, and pass it with "
              "--fio PATH")


def engines(fio: str = "fio") -> list[str]:
    """The ioengines this fio was built with, from `fio --enghelp`."""
    if shutil.which(fio) is None:
        raise ToolMissing(f"fio is not installed ({fio} not found); the S3 hero numbers need "
                          f"{BUILD_HINT}")
    got = subprocess.run([fio, "--enghelp"], capture_output=True, text=True, timeout=30)
    lines = got.stdout.splitlines()[1:]  # the first line is "Available IO engines:"
    return [line.strip() for line in lines if line.strip()]


def require_http_engine(fio: str = "fio") -> str:
    """The path of this fio when it can speak S3; else refuse, naming the build needed."""
    if "http" not in engines(fio):
        version = subprocess.run([fio, "--version"], capture_output=True, text=True,
                                 timeout=30).stdout.strip()
        raise ToolMissing(f"the fio at {shutil.which(fio)} ({version}) has no http engine, so "
                          f"it cannot run against s3:// targets; the S3 hero numbers need "
                          f"{BUILD_HINT}")
    return str(shutil.which(fio))
