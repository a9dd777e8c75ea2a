"""The environment a result was measured in, and resource monitoring during a run (psutil).

Metadata comes from small `collect_*` functions; the monitor samples host CPU, the target's
block device and the network interfaces so the result can say when the numbers could not be
the storage's.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
import time
from typing import Any

import psutil

from aiio import __version__


def collect_host() -> dict[str, Any]:
    vm = psutil.virtual_memory()
    return {"host": socket.gethostname(), "cpus": psutil.cpu_count(logical=True),
            "cpus_physical": psutil.cpu_count(logical=False), "ram_bytes": vm.total,
            "kernel": platform.release(), "os": platform.platform(),
            "machine": platform.machine()}


def collect_software() -> dict[str, Any]:
    import numpy
    return {"aiio": __version__, "python": sys.version.split()[0], "numpy": numpy.__version__,
            "psutil": psutil.__version__}


def collect_environment() -> dict[str, Any]:
    env = collect_host()
    env.update(collect_software())
    env["argv"] = sys.argv
    return env


def disk_name(device: str) -> str | None:
    """'/dev/vda' -> 'vda', '/dev/mapper/vg-x' -> 'dm-0'; None when not a local block device."""
    if not device.startswith("/dev/"):
        return None
    name = os.path.basename(os.path.realpath(device))
    return name if name in psutil.disk_io_counters(perdisk=True) else None


def _net_nics() -> dict[str, Any]:
    stats = psutil.net_if_stats()
    return {n: s for n, s in stats.items() if s.isup and n != "lo" and s.speed > 0}


class Monitor:
    """Samples host CPU, the target device and the NICs; call `sample()` every tick."""

    def __init__(self, device: str) -> None:
        self.disk = disk_name(device)
        self.nics = _net_nics()
        self.cpu_samples: list[float] = []
        self.t0 = time.monotonic()
        self.disk0 = self._disk()
        self.net0 = psutil.net_io_counters(pernic=True)
        psutil.cpu_percent(interval=None)

    def _disk(self):
        if not self.disk:
            return None
        return psutil.disk_io_counters(perdisk=True).get(self.disk)

    def sample(self) -> None:
        self.cpu_samples.append(psutil.cpu_percent(interval=None))

    def finish(self) -> dict[str, Any]:
        """Totals over the monitored window."""
        elapsed = time.monotonic() - self.t0
        out: dict[str, Any] = {"seconds": elapsed,
                               "cpu_percent_mean": _mean(self.cpu_samples),
                               "cpu_percent_max": max(self.cpu_samples, default=0.0)}
        d1 = self._disk()
        if self.disk0 and d1:
            out["device"] = {"name": self.disk,
                             "read_bytes": d1.read_bytes - self.disk0.read_bytes,
                             "write_bytes": d1.write_bytes - self.disk0.write_bytes}
        net1 = psutil.net_io_counters(pernic=True)
        nics = {}
        for name, st in self.nics.items():
            if name in net1 and name in self.net0:
                rx = net1[name].bytes_recv - self.net0[name].bytes_recv
                tx = net1[name].bytes_sent - self.net0[name].bytes_sent
                link = st.speed * 1e6 / 8  # Mbit/s -> bytes/s
                nics[name] = {"rx_bytes": rx, "tx_bytes": tx, "link_bytes_s": link,
                              "peak_use": max(rx, tx) / elapsed / link if elapsed else 0.0}
        out["nics"] = nics
        return out


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
