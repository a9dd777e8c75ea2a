"""The vector phase's disk index, laid out as DiskANN lays out its disk index: a header sector,
then node records packed into sectors. A record is the node's full-precision vector, its
degree (uint32) and its neighbour ids (uint32 each), padded to `node_len`; a sector holds
`sector_size // node_len` records, or a record spans whole sectors when it is larger. The
header sector holds DiskANN's metadata as a bin file's (int32 rows, int32 cols, then uint64
values). The search's distances use compressed vectors kept in memory (DiskANN's PQ codes:
no I/O), made here from the seed as a client makes them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

CODE_DIMS = 8  # float32s per compressed vector: 32 bytes a node, as a 32-byte PQ code
HEADER_FIELDS = 9  # npts, ndims, medoid, node_len, nodes_per_sector, 3 unused, file size
CLUSTERED_SHARE = 7 / 8  # share of a clustered node's neighbours inside its own cluster
CLUSTER_NOISE = 0.25  # spread of a cluster's codes around its centre
# Share of a nearest-graph node's R ids that are its nearest codes in its cluster; the rest are
# long links anywhere. A quarter of 64 reads within 3 % of diskannpy's Vamana graph at L 50, 100
# and 200 (docs/PERFORMANCE.md); a half or more, fewer long links, reads 5 to 8 % more
NEAR_SHARE = 1 / 4
INDEX_NAME = "disk.index"
BLOCK = 1024  # nodes whose ids and vectors are drawn together


@dataclass(frozen=True)
class IndexShape:
    """Where every node's record sits in the index file."""

    vectors: int
    dimensions: int
    element_size: int
    max_degree: int
    sector_size: int
    graph: str
    seed: int

    @property
    def node_len(self) -> int:
        """A record's bytes: the vector, the degree and R neighbour ids."""
        return self.dimensions * self.element_size + 4 * (1 + self.max_degree)

    @property
    def nodes_per_sector(self) -> int:
        """Records a sector holds (0: a record spans sectors of its own)."""
        return self.sector_size // self.node_len

    @property
    def sectors_per_node(self) -> int:
        return 1 if self.nodes_per_sector else -(-self.node_len // self.sector_size)

    @property
    def node_sectors(self) -> int:
        """Sectors after the header that hold records."""
        if self.nodes_per_sector:
            return -(-self.vectors // self.nodes_per_sector)
        return self.vectors * self.sectors_per_node

    @property
    def file_size(self) -> int:
        return (1 + self.node_sectors) * self.sector_size

    @property
    def read_size(self) -> int:
        """Bytes one node's read asks for: its sector(s)."""
        return self.sectors_per_node * self.sector_size

    @property
    def cluster_size(self) -> int:
        """Ids in one cluster of a clustered or nearest graph."""
        return min(self.vectors, max(16 * self.max_degree, 1024))

    @property
    def near_degree(self) -> int:
        """A nearest-graph node's ids that are its nearest in its cluster (at most; under R
        of 3, none: a graph of near ids only would never leave the entry's cluster)."""
        return round(self.max_degree * NEAR_SHARE)

    def sector_of(self, node: int) -> int:
        """The first sector of a node's record (sector 0 is the header)."""
        if self.nodes_per_sector:
            return 1 + node // self.nodes_per_sector
        return 1 + node * self.sectors_per_node

    def offset_of(self, node: int) -> int:
        """The file offset of the read that fetches the node: its first sector's."""
        return self.sector_of(node) * self.sector_size

    def within(self, node: int) -> int:
        """The record's offset inside the bytes its read returns."""
        return (node % self.nodes_per_sector) * self.node_len if self.nodes_per_sector else 0


def neighbours(shape: IndexShape, first: int, count: int) -> np.ndarray:
    """The neighbour ids of nodes first..first+count-1 (count x R, uint32): a fixed out-degree,
    no node its own neighbour. Drawn per block of BLOCK nodes from the seed and the block, so
    a node's ids are the same whichever range of nodes asks for them."""
    lo = first // BLOCK * BLOCK
    hi = min(-(-(first + count) // BLOCK) * BLOCK, shape.vectors)
    blocks = [_block_neighbours(shape, b, min(BLOCK, hi - b)) for b in range(lo, hi, BLOCK)]
    return np.concatenate(blocks)[first - lo:first - lo + count] if blocks else \
        np.zeros((0, shape.max_degree), np.uint32)


def _block_neighbours(shape: IndexShape, first: int, count: int) -> np.ndarray:
    rng = np.random.Generator(np.random.PCG64([shape.seed, 7, first]))
    n, r = shape.vectors, shape.max_degree
    ids = np.arange(first, first + count, dtype=np.int64)[:, None]
    anywhere = (ids + 1 + rng.integers(0, n - 1, (count, r))) % n
    if shape.graph == "random":
        return anywhere.astype(np.uint32)
    if shape.graph == "nearest":
        return _nearest_first(shape, first, anywhere).astype(np.uint32)
    size = shape.cluster_size
    start = ids // size * size
    span = np.minimum(start + size, n) - start
    # another id of the node's own cluster (clusters of one member are only the last's)
    near = start + (ids - start + 1 + rng.integers(0, np.maximum(span - 1, 1), (count, r))) % span
    pick = rng.random((count, r)) < CLUSTERED_SHARE
    return np.where(pick, near, anywhere).astype(np.uint32)


def _nearest_first(shape: IndexShape, first: int, ids: np.ndarray) -> np.ndarray:
    """`ids` (rows for nodes first.., long links) with each row's first ids replaced by the
    node's nearest codes in its cluster, nearest first: as Vamana keeps near neighbours, found
    within a cluster so that a block needs only its clusters' codes, not all N."""
    size, out = shape.cluster_size, ids.copy()
    last = first + len(ids)
    for c in range(first // size, -(-last // size)):
        lo, hi = c * size, min((c + 1) * size, shape.vectors)
        members = cluster_codes(shape, c)
        rows = slice(max(lo, first), min(hi, last))
        own = members[rows.start - lo:rows.stop - lo]
        d = (own * own).sum(1)[:, None] - 2 * own @ members.T + (members * members).sum(1)
        d[np.arange(len(own)), np.arange(rows.start - lo, rows.stop - lo)] = np.inf  # not itself
        k = min(shape.near_degree, hi - lo - 1)
        if k < 1:
            continue
        part = np.argpartition(d, k - 1, axis=1)[:, :k]
        part = np.take_along_axis(part, np.argsort(np.take_along_axis(d, part, 1), 1), 1)
        out[rows.start - first:rows.stop - first, :k] = lo + part
    return out


def cluster_codes(shape: IndexShape, cluster: int) -> np.ndarray:
    """A nearest graph's cluster: its members' codes around the cluster's centre."""
    size = shape.cluster_size
    count = min(size, shape.vectors - cluster * size)
    rng = np.random.Generator(np.random.PCG64([shape.seed, 17, cluster]))
    spread = rng.standard_normal((count, CODE_DIMS), dtype=np.float32) * CLUSTER_NOISE
    return spread + _centre(shape, cluster)


def _centre(shape: IndexShape, cluster: int) -> np.ndarray:
    rng = np.random.Generator(np.random.PCG64([shape.seed, 19, cluster]))
    return rng.standard_normal(CODE_DIMS, dtype=np.float32)


def codes(shape: IndexShape) -> np.ndarray:
    """Every node's compressed vector (N x CODE_DIMS float32), kept in memory."""
    if shape.graph == "nearest":
        out = np.empty((shape.vectors, CODE_DIMS), np.float32)  # filled in place: N x 32 B once
        for lo in range(0, shape.vectors, shape.cluster_size):
            out[lo:lo + shape.cluster_size] = cluster_codes(shape, lo // shape.cluster_size)
        return out
    rng = np.random.Generator(np.random.PCG64([shape.seed, 11]))
    out = rng.standard_normal((shape.vectors, CODE_DIMS), dtype=np.float32)
    if shape.graph == "clustered":
        out *= CLUSTER_NOISE
        out += centres(shape)[np.arange(shape.vectors) // shape.cluster_size]
    return out


def centres(shape: IndexShape) -> np.ndarray:
    """The centre of each cluster's codes (clustered graphs)."""
    count = -(-shape.vectors // shape.cluster_size)
    rng = np.random.Generator(np.random.PCG64([shape.seed, 13]))
    return rng.standard_normal((count, CODE_DIMS), dtype=np.float32)


def query_codes(shape: IndexShape, node_codes: np.ndarray, count: int,
                seed: int) -> np.ndarray:
    """Queries drawn as the nodes are: a nearest graph's around a random cluster's centre with
    its members' spread; the other graphs' near a node's code (the data has no such law)."""
    rng = np.random.Generator(np.random.PCG64([seed, 23]))
    if shape.graph == "nearest":
        clusters = rng.integers(0, -(-shape.vectors // shape.cluster_size), count)
        centres = np.stack([_centre(shape, int(c)) for c in clusters])
        return centres + rng.standard_normal((count, CODE_DIMS), np.float32) * CLUSTER_NOISE
    picks = rng.integers(0, len(node_codes), count)
    return node_codes[picks] + rng.standard_normal((count, CODE_DIMS), np.float32) * 0.5


def medoid(node_codes: np.ndarray) -> int:
    """The entry point: the node closest to the codes' mean, as DiskANN's medoid."""
    d = ((node_codes - node_codes.mean(axis=0)) ** 2).sum(axis=1)
    return int(np.argmin(d))


def header(shape: IndexShape, entry: int) -> bytes:
    """Sector 0: DiskANN's metadata as a bin file of uint64s, zero-padded."""
    values = [shape.vectors, shape.dimensions, entry, shape.node_len, shape.nodes_per_sector,
              0, 0, 0, shape.file_size]
    head = struct.pack(f"<ii{HEADER_FIELDS}Q", HEADER_FIELDS, 1, *values)
    return head.ljust(shape.sector_size, b"\0")


def read_header(data: bytes | memoryview) -> dict[str, int]:
    """The metadata of an index's sector 0."""
    rows, cols = struct.unpack_from("<ii", data)
    if rows != HEADER_FIELDS or cols != 1:
        raise ValueError(f"not a disk index header ({rows} x {cols} metadata)")
    vals = struct.unpack_from(f"<{HEADER_FIELDS}Q", data, 8)
    return {"vectors": vals[0], "dimensions": vals[1], "medoid": vals[2], "node_len": vals[3],
            "nodes_per_sector": vals[4], "file_size": vals[8]}


def sectors(shape: IndexShape, first: int, count: int) -> bytes:
    """Node sectors first..first+count-1 (1 is the first after the header), as written."""
    nps = shape.nodes_per_sector
    if nps:
        lo, hi = (first - 1) * nps, min((first - 1 + count) * nps, shape.vectors)
        recs = _records(shape, lo, max(hi - lo, 0))
        packed = np.zeros((count, nps * shape.node_len), np.uint8)
        packed.reshape(-1)[:recs.size] = recs.reshape(-1)  # contiguous: a view, not a copy
        out = np.zeros((count, shape.sector_size), np.uint8)
        out[:, :packed.shape[1]] = packed
        return out.tobytes()
    per = shape.sectors_per_node
    lo = (first - 1) // per
    hi = min(-(-(first - 1 + count) // per), shape.vectors)
    out = np.zeros((hi - lo, per * shape.sector_size), np.uint8)
    out[:, :shape.node_len] = _records(shape, lo, hi - lo)
    skip = (first - 1 - lo * per) * shape.sector_size
    return out.tobytes()[skip:skip + count * shape.sector_size]


def _records(shape: IndexShape, first: int, count: int) -> np.ndarray:
    """Records of nodes first..first+count-1 (count x node_len bytes)."""
    vec = shape.dimensions * shape.element_size
    out = np.empty((count, shape.node_len), np.uint8)
    for b in range(first // BLOCK * BLOCK, first + count, BLOCK):  # per block, as the ids
        rng = np.random.Generator(np.random.PCG64([shape.seed, 5, b]))
        part = rng.integers(0, 256, (min(BLOCK, shape.vectors - b), vec), dtype=np.uint8)
        lo, hi = max(b, first), min(b + BLOCK, first + count)
        out[lo - first:hi - first, :vec] = part[lo - b:hi - b]
    out[:, vec:vec + 4] = np.frombuffer(struct.pack("<I", shape.max_degree), np.uint8)
    out[:, vec + 4:] = neighbours(shape, first, count).view(np.uint8)
    return out


def chunks(shape: IndexShape, entry: int, chunk: int) -> Iterator[bytes]:
    """The whole index file in pieces of about `chunk` bytes (whole sectors each)."""
    per = max(1, chunk // shape.sector_size)
    yield header(shape, entry) + sectors(shape, 1, min(per - 1, shape.node_sectors))
    for s in range(per, shape.node_sectors + 1, per):
        yield sectors(shape, s, min(per, shape.node_sectors + 1 - s))


def parse_node(shape: IndexShape, data: memoryview | bytes, node: int) -> np.ndarray:
    """The neighbour ids in a node's record, from the bytes its read returned."""
    at = shape.within(node) + shape.dimensions * shape.element_size
    (degree,) = struct.unpack_from("<I", data, at)
    if degree > shape.max_degree:
        raise ValueError(f"node {node}: degree {degree} above R = {shape.max_degree}: "
                         "not this index's record")
    return np.frombuffer(data, np.uint32, degree, at + 4)
