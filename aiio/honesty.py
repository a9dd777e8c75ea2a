"""Warnings that say when a number cannot be the storage's (DESIGN: measuring rule 2)."""

from __future__ import annotations

from typing import Any

from aiio.cache_methods import METHOD_DIRECT, METHOD_FADVISE, METHOD_NONE, METHOD_NULL
from aiio.storage.target import TargetInfo
from aiio.units import format_rate, format_size

CPU_SATURATED = 90.0      # % of all the client machine's cores
CLIENT_PROC_BUSY = 0.9    # one client process's CPU seconds per wall second (the GIL caps at 1)
NIC_NEAR_LINK = 0.8       # share of a NIC's link speed
# The device must see at least this share of the bytes the clients moved. Measured on a
# throttled loop device (ext4, O_DIRECT and fadvise reads, checkpoint writes and restores,
# 3 runs each) the device saw 1.0000 to 1.0010 x the clients' bytes: never fewer, since its
# window holds the clients' and metadata only adds. 5 % of slack is 50 x that noise, and lets
# no more than 1 byte in 20 come from a cache unnoticed.
DEVICE_SHORTFALL = 0.95
DATA_VS_MEMORY = 5        # MLPerf Storage: the dataset is at least 5 x the client hosts' RAM
NO_IO = ("NO I/O: the null method made no read or write system call; every figure here is "
         "aiio's own overhead, not the storage's")
# What can be true of a run that did no I/O: its own null_io, and what is said about the client
# machine and the emulation. Everything else speaks of bytes the storage, a cache or a block
# device saw, and there were none.
TRUE_WITHOUT_IO = frozenset({"null_io", "client_cpu_saturated", "client_process_busy",
                             "compute_ran_long", "rank_cpu_bound"})


def _w(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}


def true_of(method: str, found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The warnings that are true of a run with this cache method: under the null method no
    byte reached the storage, so none came from a cache or went past the block device."""
    if method != METHOD_NULL:
        return found
    return [w for w in found if w.get("code") in TRUE_WITHOUT_IO]


def target_warnings(info: TargetInfo, method: str, dataset_bytes: int,
                    ram_bytes: int) -> list[dict[str, str]]:
    """What the target and the cache-defeat method alone tell us, before any I/O.

    `ram_bytes` is the memory of every client host together (under MPI, the sum over hosts).
    """
    if method == METHOD_NULL:  # nothing was read: no other reason to doubt the storage applies
        return [_w("null_io", NO_IO)]
    out = []
    if info.memory_backed:
        out.append(_w("memory_backed", f"target is on {info.fstype}, which lives in RAM: "
                      "these numbers measure memory, not storage"))
    if method == METHOD_NONE:
        out.append(_w("cache_not_defeated", "reads went through the page cache without "
                      "dropping it: repeated reads may be served from RAM"))
    elif method == METHOD_FADVISE:
        out.append(_w("no_o_direct", f"{info.fstype} refused O_DIRECT; cached pages were "
                      "dropped (posix_fadvise DONTNEED) before each file was read instead"))
    if method != METHOD_DIRECT and 0 < dataset_bytes < ram_bytes:
        out.append(_w("dataset_fits_in_ram", "the data read, each byte once "
                      f"({format_size(dataset_bytes)}), is smaller than this machine's RAM "
                      f"({format_size(ram_bytes)}) and "
                      "O_DIRECT was not used: the page cache can serve it"))
    if unconfirmed := _unconfirmed(info, dataset_bytes, ram_bytes):
        out.append(unconfirmed)
    return out


def _unconfirmed(info: TargetInfo, dataset_bytes: int, ram_bytes: int) -> dict[str, str] | None:
    """O_DIRECT is no proof: without a block device to confirm the bytes, only a dataset too
    large for any cache on the clients does (MLPerf's data-vs-memory rule)."""
    if info.memory_backed or info.confirm_device or dataset_bytes <= 0:
        return None
    need = DATA_VS_MEMORY * ram_bytes
    if dataset_bytes >= need:
        return None
    return _w("unconfirmed_bytes", f"no block device under this {info.fstype} target can "
              f"confirm the bytes came from storage, and the data read, each byte once "
              f"({format_size(dataset_bytes)}), "
              f"is under {DATA_VS_MEMORY} x the client RAM ({format_size(need)}): FUSE, ZFS "
              "and network clients may answer from a cache even with O_DIRECT, so these may be "
              "memory speeds")


def format_seconds(s: float) -> str:
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.1f} s"


def run_warnings(info: TargetInfo, monitor: dict[str, Any], clients: list[dict],
                 read_bytes: int) -> list[dict[str, str]]:
    """What the run's own resource use says about its numbers."""
    out = []
    if monitor.get("cpu_percent_mean", 0) >= CPU_SATURATED:
        out.append(_w("client_cpu_saturated", f"the client machine's CPUs were "
                      f"{monitor['cpu_percent_mean']:.0f} % busy on average: the client, not "
                      "the storage, may be the bottleneck"))
    busy = [c["client"] for c in clients
            if c.get("elapsed_s") and c.get("cpu_s", 0) / c["elapsed_s"] >= CLIENT_PROC_BUSY]
    if busy:
        out.append(_w("client_process_busy", f"client(s) {_list(busy)} used at least "
                      f"{CLIENT_PROC_BUSY:.0%} of a core: their own CPU, not the storage, "
                      "may limit them"))
    shared = [c["client"] for c in clients if c["client"] not in busy and c.get("elapsed_s")
              and (c.get("process_cpu_s") or 0) / c["elapsed_s"] >= CLIENT_PROC_BUSY]
    if shared:  # threads of one process run its one interpreter a core at a time
        out.append(_w("client_process_busy", f"client(s) {_list(shared)} shared a process "
                      f"that used at least {CLIENT_PROC_BUSY:.0%} of a core: the process's "
                      "CPU, not the storage, may limit them (run.client_processes)"))
    for name, nic in monitor.get("nics", {}).items():
        if info.network and nic["peak_use"] >= NIC_NEAR_LINK:
            cap = nic["link_bytes_s"] / 2**20
            out.append(_w("nic_near_link", f"network interface {name} ran at "
                          f"{nic['peak_use']:.0%} of its link speed (at most {format_rate(cap)}) "
                          f"over its busiest {nic.get('peak_window_s', 1):g} s: "
                          "the client's network may be the limit"))
    dev = monitor.get("device")
    if dev and read_bytes > 0 and not info.memory_backed:
        if dev["read_bytes"] < DEVICE_SHORTFALL * read_bytes:
            out.append(_w("device_saw_fewer_bytes", f"block device {dev['name']} read "
                          f"{format_size(dev['read_bytes'])} while the clients read "
                          f"{format_size(read_bytes)} ({dev['read_bytes'] / read_bytes:.0%}): "
                          "the rest came from a cache"))
    return out


def _list(items: list[int]) -> str:
    text = ", ".join(str(i) for i in items[:10])
    return text + (f" and {len(items) - 10} more" if len(items) > 10 else "")


def write_warnings(info: TargetInfo, monitor: dict[str, Any],
                   write_bytes: int) -> list[dict[str, str]]:
    """Written and fsynced bytes the target's block device never saw."""
    dev = monitor.get("device")
    if not dev or write_bytes <= 0 or info.memory_backed:
        return []
    if dev["write_bytes"] < DEVICE_SHORTFALL * write_bytes:
        return [_w("device_saw_fewer_writes", f"block device {dev['name']} wrote "
                   f"{format_size(dev['write_bytes'])} while the clients wrote and fsynced "
                   f"{format_size(write_bytes)}: compression, deduplication or a write cache "
                   "absorbed part of it")]
    return []


def restore_warnings(gap_s: float, within_s: float) -> list[dict[str, str]]:
    """MLPerf Storage reads a checkpoint back within 30 s of writing it."""
    if gap_s > within_s:
        return [_w("restore_late", f"the restore started {gap_s:.1f} s after the checkpoint "
                   f"was durable, later than the {within_s:.0f} s asked for")]
    return []
