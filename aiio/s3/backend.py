"""What the runner needs to run a phase against an s3:// target instead of a directory."""

from __future__ import annotations

import importlib
from typing import Any

from aiio.cache_methods import METHOD_S3
from aiio.comm import world
from aiio.errors import ConfigError
from aiio.options import RunOptions
from aiio.s3.connect import Access
from aiio.s3.target import S3Target
from aiio.target import TargetInfo

# The phases that run against a bucket; the others say so in one line.
PHASES = {"train": "aiio.s3.train", "checkpoint": "aiio.s3.checkpoint",
          "load": "aiio.s3.load", "prep": "aiio.s3.prep"}


def get_phase(name: str) -> Any:
    if name not in PHASES:
        raise ConfigError(f"the {name} phase does not run against s3:// targets yet; "
                          f"available: {', '.join(PHASES)}")
    return importlib.import_module(PHASES[name]).PHASE


def open_target(url: str, options: RunOptions) -> tuple[S3Target, TargetInfo, str]:
    """Check the bucket prefix (one line for each way it is wrong) before anything is
    written, and describe it for the result."""
    if world().size > 1:
        raise ConfigError("s3:// targets run on one host for now; start aiio without mpiexec")
    target = S3Target(url, options.s3 or Access())
    target.check_usable()
    info = TargetInfo(path=target.path, fstype="s3", mountpoint=target.client.meta.endpoint_url,
                      device="", memory_backed=False, network=True, o_direct=False,
                      direct_align=0, total_bytes=0, free_bytes=0)
    return target, info, METHOD_S3
