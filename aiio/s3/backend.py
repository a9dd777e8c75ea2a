"""What the runner needs to run a phase against an s3:// target instead of a directory."""

from __future__ import annotations

import importlib
from typing import Any

from aiio.cache_methods import METHOD_S3
from aiio.errors import ConfigError
from aiio.options import Access, RunOptions
from aiio.s3.target import S3Target
from aiio.target import TargetInfo

# The phases that run against a bucket; the others say so in one line.
PHASES = {"train": "aiio.s3.train", "checkpoint": "aiio.s3.checkpoint",
          "load": "aiio.s3.load", "prep": "aiio.s3.prep", "all": "aiio.s3.lifecycle"}


# Why randrw stays refused: docs/OBJECT.md, "What a bucket does not run".
RANDRW_REFUSED = ("randrw rewrites 4 KiB blocks of its files in place, and an S3 object cannot "
                  "be rewritten in place (each block written would be a PUT of the whole "
                  "object); on a bucket prep runs in shards mode, and `aiio fio --target "
                  "s3://...` measures whole-object PUTs and GETs")


def get_phase(name: str) -> Any:
    if name == "randrw":
        raise ConfigError(RANDRW_REFUSED)
    if name not in PHASES:
        raise ConfigError(f"the {name} phase does not run against s3:// targets yet; "
                          f"available: {', '.join(PHASES)}")
    return importlib.import_module(PHASES[name]).PHASE


def open_target(url: str, options: RunOptions) -> tuple[S3Target, TargetInfo, str]:
    """Check the bucket prefix (one line for each way it is wrong) before anything is
    written, and describe it for the result."""
    target = S3Target(url, options.s3 or Access())
    target.check_usable()
    return target, describe(target.path, target.client.meta.endpoint_url), METHOD_S3


def describe(url: str, endpoint: str = "") -> TargetInfo:
    """The bucket prefix as the result shows a target. Under MPI each rank describes it so
    without asking the service: its clients reach the endpoint rank 0 checked."""
    return TargetInfo(path=url, fstype="s3", mountpoint=endpoint, device="",
                      memory_backed=False, network=True, o_direct=False, direct_align=0,
                      total_bytes=0, free_bytes=0)
