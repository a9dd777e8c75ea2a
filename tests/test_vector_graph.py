"""The vector phase's `nearest` graph: each node's first ids are its nearest in the compressed
space, the rest long links anywhere, so that a beam search over it reads what DiskANN's search
over a Vamana graph reads."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aiio.phases import vector_index as vi
from aiio.phases.vector_search import search

from .test_vector_phase import write_index


def shape(**kw: Any) -> vi.IndexShape:
    base = {"vectors": 5000, "dimensions": 128, "element_size": 4, "max_degree": 16,
            "sector_size": 4096, "graph": "nearest", "seed": 1}
    return vi.IndexShape(**{**base, **kw})


def test_a_nodes_first_ids_are_its_nearest_codes_in_its_cluster() -> None:
    sh = shape()
    node_codes = vi.codes(sh)
    k = sh.near_degree
    size = sh.cluster_size
    for node in (0, 700, 1100, 4999):
        ids = vi.neighbours(sh, node, 1)[0].astype(np.int64)
        lo = node // size * size
        members = np.arange(lo, min(lo + size, sh.vectors))
        d = ((node_codes[members] - node_codes[node]) ** 2).sum(axis=1)
        d[members == node] = np.inf
        assert ids[:k].tolist() == members[np.argsort(d)[:k]].tolist()
    far = vi.neighbours(sh, 0, sh.vectors)[:, k:].astype(np.int64)
    own = far // size == np.arange(sh.vectors)[:, None] // size
    assert own.mean() < 0.5  # long links: most land in another cluster


def test_a_nodes_ids_are_the_same_whichever_range_asks() -> None:
    sh = shape()
    whole = vi.neighbours(sh, 0, sh.vectors)
    assert (vi.neighbours(sh, 1000, 50) == whole[1000:1050]).all()
    assert (vi.neighbours(sh, 4990, 10) == whole[4990:]).all()


def test_queries_are_drawn_as_the_nodes_are() -> None:
    sh = shape(vectors=20_000)
    node_codes = vi.codes(sh)
    q = vi.query_codes(sh, node_codes, 4096, 3)
    assert q.shape == (4096, vi.CODE_DIMS)
    # the same spread as the nodes' codes, not the nodes' codes plus noise
    assert q.std() == pytest.approx(node_codes.std(), rel=0.05)


# diskannpy 0.7.0 under tools/vector_check at N=10,000 D=128 R=64 W=4, 200 random queries
# (Gaussian vectors; the index built with complexity 100, 2 threads): reads and hops (io_submit
# calls) a query, by L
DISKANN_10K = {50: (53.2, 14.9), 100: (101.8, 26.8)}


def reads_per_query(tmp_path: Path, graph: str, list_size: int) -> tuple[float, float]:
    """aiio's beam search over its own index file of 10,000 nodes, read with pread."""
    sh = shape(vectors=10_000, max_degree=64, graph=graph)
    path = tmp_path / f"{graph}.index"
    entry = write_index(path, sh)
    node_codes = vi.codes(sh)
    fd = os.open(path, os.O_RDONLY)
    try:
        def fetch(nodes: list[int]) -> list[bytes]:
            return [os.pread(fd, sh.read_size, sh.offset_of(n)) for n in nodes]

        traces = [search(sh, node_codes, q, entry, 4, list_size, 10, fetch)
                  for q in vi.query_codes(sh, node_codes, 200, 2)]
    finally:
        os.close(fd)
    return (sum(t.reads for t in traces) / len(traces), sum(t.hops for t in traces) / len(traces))


@pytest.mark.parametrize("list_size", sorted(DISKANN_10K))
def test_the_nearest_graph_reads_what_diskann_reads(tmp_path: Path, list_size: int) -> None:
    real, real_hops = DISKANN_10K[list_size]
    reads, hops = reads_per_query(tmp_path, "nearest", list_size)
    assert reads == pytest.approx(real, rel=0.10) and hops == pytest.approx(real_hops, rel=0.10)
    if list_size == 100:  # the random graph is further off: the check tells graphs apart
        random, _ = reads_per_query(tmp_path, "random", list_size)
        assert random / real - 1 > abs(reads / real - 1)


@pytest.mark.parametrize("degree", [1, 2])
def test_a_tiny_degree_keeps_links_out_of_the_cluster(degree: int) -> None:
    sh = shape(max_degree=degree)
    ids = vi.neighbours(sh, 0, sh.vectors).astype(np.int64)
    own = ids // sh.cluster_size == np.arange(sh.vectors)[:, None] // sh.cluster_size
    assert own.mean() < 0.5  # else a search would never leave the entry's cluster
