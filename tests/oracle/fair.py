"""The fair-share workload on the per-stream oracle: every client reads its own files one after
another, one stream at a time, and computes nothing, so each should get the stream rate."""

from __future__ import annotations

STREAM = 64 * 1024  # bytes/s per open file on the oracle; no global cap
FILE = 256 * 1024   # bytes per file: 4 s at the stream rate
FILES = 2           # per client, and per fio job (nrfiles, read one after another)


def workload(clients: int) -> str:
    """The workload TOML for `clients` clients: raw files of one sample, batch 1, one loader
    thread, one epoch, no compute."""
    return f"""[workload]
name = "oracle-fair"
[dataset]
format = "raw"
num_files = {clients * FILES}
sample_size = "{FILE // 1024}KiB"
sample_size_stdev = "0"
files_per_dir = 256
[train]
accelerator = "h100"
batch_size = 1
read_threads = 1
transfer_size = "{FILE // 1024}KiB"
epochs = 1
[train.compute_time]
h100 = 0
"""
