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
from collections import deque
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


PEAK_WINDOW_S = 1.0  # NIC peak use: the busiest interval of at least this length


class PeakRate:
    """The highest rate of a growing byte counter over any interval of at least `window`
    seconds between two samples (a sliding window), so a burst is not averaged away by a
    quiet start-up, nor a single short tick inflated."""

    def __init__(self, t0: float, total0: int, window: float = PEAK_WINDOW_S) -> None:
        self.window = window
        self.first = (t0, total0)
        self.samples: deque[tuple[float, int]] = deque([self.first])
        self.peak_bytes_s = 0.0

    def add(self, t: float, total: int) -> None:
        self.samples.append((t, total))
        # keep, as the oldest sample, the latest one at least a window before t
        while len(self.samples) > 2 and t - self.samples[1][0] >= self.window:
            self.samples.popleft()
        t0, b0 = self.samples[0]
        if t - t0 >= self.window:
            self.peak_bytes_s = max(self.peak_bytes_s, (total - b0) / (t - t0))

    def finish(self, t: float, total: int) -> float:
        """The peak; a run shorter than the window gets its whole length's rate."""
        self.add(t, total)
        t0, b0 = self.first
        if t - t0 < self.window and t > t0:
            return (total - b0) / (t - t0)
        return self.peak_bytes_s


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
        self.nic_peaks = {n: (PeakRate(self.t0, self.net0[n].bytes_recv),
                              PeakRate(self.t0, self.net0[n].bytes_sent))
                          for n in self.nics if n in self.net0}
        psutil.cpu_percent(interval=None)

    def _disk(self):
        if not self.disk:
            return None
        return psutil.disk_io_counters(perdisk=True).get(self.disk)

    def sample(self) -> None:
        self.cpu_samples.append(psutil.cpu_percent(interval=None))
        self._sample_nics(time.monotonic(), psutil.net_io_counters(pernic=True))

    def _sample_nics(self, now: float, counters: dict) -> None:
        for name, (rx, tx) in self.nic_peaks.items():
            if name in counters:
                rx.add(now, counters[name].bytes_recv)
                tx.add(now, counters[name].bytes_sent)

    def finish(self) -> dict[str, Any]:
        """Totals over the monitored window."""
        now = time.monotonic()
        elapsed = now - self.t0
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
        for name, (rx_peak, tx_peak) in self.nic_peaks.items():
            if name in net1:
                rx = net1[name].bytes_recv - self.net0[name].bytes_recv
                tx = net1[name].bytes_sent - self.net0[name].bytes_sent
                link = self.nics[name].speed * 1e6 / 8  # Mbit/s -> bytes/s
                peak = max(rx_peak.finish(now, net1[name].bytes_recv),
                           tx_peak.finish(now, net1[name].bytes_sent))
                nics[name] = {"rx_bytes": rx, "tx_bytes": tx, "link_bytes_s": link,
                              "peak_window_s": PEAK_WINDOW_S, "peak_use": peak / link,
                              "mean_use": max(rx, tx) / elapsed / link if elapsed else 0.0}
        out["nics"] = nics
        return out


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
