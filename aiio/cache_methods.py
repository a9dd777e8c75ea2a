"""How reads get past the client's page cache: the method names a result records, the
requests --cache and a spec's `cache` accept, and what each method means in a report."""

from __future__ import annotations

METHOD_DIRECT = "o_direct"
METHOD_FADVISE = "fadvise_dontneed"
METHOD_NONE = "none"
METHOD_NULL = "null"  # no read or write system call: measures aiio, never storage
METHOD_S3 = "s3"      # a bucket: no client page cache, every read is a request to the service
AUTO = "auto"         # a request, never recorded: O_DIRECT where the filesystem takes it

REQUESTS = (AUTO, METHOD_DIRECT, METHOD_FADVISE, METHOD_NONE)  # sweeps and acceptance specs
RUN_REQUESTS = (*REQUESTS, METHOD_NULL)  # `aiio run` also measures its own overhead

MEANING = {
    METHOD_DIRECT: "O_DIRECT: reads bypassed the page cache",
    METHOD_FADVISE: "cached pages dropped (posix_fadvise DONTNEED) before each file was read",
    METHOD_NONE: "NOT defeated: reads could be served from the page cache",
    METHOD_NULL: "NO I/O: every read and write system call left out, aiio's own overhead",
    METHOD_S3: "no client page cache: every read was a request to the object service",
}


def choose_method(o_direct_works: bool, requested: str = AUTO) -> str:
    """O_DIRECT where the filesystem accepts it, else drop cached pages before reading."""
    if requested != AUTO:
        return requested
    return METHOD_DIRECT if o_direct_works else METHOD_FADVISE
