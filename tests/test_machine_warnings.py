"""Ranks that share a machine share its CPUs, NICs, block device and RAM. Each rank monitors
the whole machine, so with two ranks on one host the machine-wide warnings came once per rank
("client_cpu_saturated" twice), the device check set one rank's reads against the machine's
device reads, and the data-against-RAM check counted that machine's RAM once per rank: with
two ranks, a dataset that fits the client's page cache twice over passed as too big for it."""

from __future__ import annotations

from aiio.run.runner import client_ram_bytes, machines


def _host(rank: int, host: str, ram: int = 16 << 30) -> dict:
    return {"rank": rank, "host": host, "environment": {"ram_bytes": ram}}


def test_ranks_on_one_host_are_one_machine_with_every_rank_s_clients():
    hosts = [_host(0, "a"), _host(1, "a"), _host(2, "b")]
    clients = [{"client": n, "rank": r} for n, r in enumerate([0, 0, 1, 1, 2, 2])]
    got = [([h["rank"] for h in group], [c["client"] for c in mine])
           for group, mine in machines(hosts, clients)]
    assert got == [([0, 1], [0, 1, 2, 3]), ([2], [4, 5])]


def test_a_machine_s_ram_counts_once_whatever_its_ranks():
    hosts = [_host(0, "a"), _host(1, "a"), _host(2, "b", 8 << 30)]
    assert client_ram_bytes(hosts, 1) == (16 << 30) + (8 << 30)
    assert client_ram_bytes([], 123) == 123  # no host entry: this process's machine
