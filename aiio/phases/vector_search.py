"""Beam search over the disk index, as DiskANN's `cached_beam_search`: a candidate list of the
L closest nodes seen, ordered by their compressed distance to the query (in memory); each hop
takes the W closest candidates not yet expanded, reads their records (W reads in flight) and
adds the neighbour ids those bytes hold; the search stops when every candidate in the list
has been expanded. Each hop's reads are the ids the previous hop's reads returned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from aiio.phases.vector_index import IndexShape, parse_node

# Reads the records of a hop's nodes; the bytes of each, in order
Fetch = Callable[[list[int]], list[memoryview | bytes]]


@dataclass(frozen=True)
class QueryTrace:
    """What one query did: hops, node reads, and the top-k ids it returned."""

    hops: int
    reads: int
    result: tuple[int, ...]


def search(shape: IndexShape, node_codes: np.ndarray, query: np.ndarray, entry: int,
           width: int, list_size: int, top_k: int, fetch: Fetch) -> QueryTrace:
    """One query's beam search from `entry`, reading through `fetch`."""
    ids = np.array([entry], np.int64)
    dist = _distances(node_codes, query, ids)
    expanded = np.zeros(1, bool)
    seen = {entry}
    hops = reads = 0
    while True:
        frontier = np.flatnonzero(~expanded)[:width]  # the list is kept in distance order
        if not len(frontier):
            break
        expanded[frontier] = True
        nodes = ids[frontier].tolist()
        records = fetch(nodes)
        hops, reads = hops + 1, reads + len(nodes)
        found = [parse_node(shape, rec, node) for node, rec in zip(nodes, records, strict=True)]
        new = [i for i in dict.fromkeys(np.concatenate(found).tolist()) if i not in seen]
        if not new:
            continue
        seen.update(new)
        cand = np.array(new, np.int64)
        ids, dist, expanded = _merge(ids, dist, expanded, cand,
                                     _distances(node_codes, query, cand), list_size)
    return QueryTrace(hops, reads, tuple(ids[:top_k].tolist()))


def _distances(node_codes: np.ndarray, query: np.ndarray, ids: np.ndarray) -> np.ndarray:
    diff = node_codes[ids] - query
    return np.einsum("ij,ij->i", diff, diff)


def _merge(ids: np.ndarray, dist: np.ndarray, expanded: np.ndarray, cand: np.ndarray,
           cand_dist: np.ndarray, list_size: int) -> tuple[np.ndarray, ...]:
    """The list with the candidates added, in distance order, cut to `list_size`."""
    all_ids = np.concatenate([ids, cand])
    all_dist = np.concatenate([dist, cand_dist])
    all_exp = np.concatenate([expanded, np.zeros(len(cand), bool)])
    order = np.argsort(all_dist, kind="stable")[:list_size]
    return all_ids[order], all_dist[order], all_exp[order]
