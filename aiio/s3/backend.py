"""What the runner needs to open an s3:// target instead of a directory; the phases are the
same on every engine."""

from __future__ import annotations

from aiio.cache_methods import METHOD_S3
from aiio.options import Access, RunOptions
from aiio.s3.target import S3Target
from aiio.storage.target import TargetInfo


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
