"""`make bench-vector`: the vector phase's reads against a real DiskANN disk index.

Builds (or reuses) a diskannpy disk index of N random float32 vectors of D dimensions with
out-degree R, runs its disk search over Q queries with beam width W and search list L (each
of several: a table each) under strace, and counts the reads it submitted after the index was
loaded (io_submit's iocbs, or pread64 calls): reads per query, read sizes, bytes per query.
Then runs `aiio run --phase vector` at the same N, D, R, W and L on a folder of the same
filesystem and sets its figures beside them, and aiio's beam search over the real index's own
bytes beside both (the search alone, on DiskANN's graph). diskannpy (about 90 MB with its own
numpy) lives in its own interpreter: `--python` names one that imports it.

Run: `python -m tools.vector_check --python /path/to/venv/bin/python [--folder DIR]
[-L 50 100 200] [--graph nearest]`.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from aiio.phases import vector_index as vi

MARK = "aiio-vector-check-searching"
# Run inside the diskannpy interpreter: build when asked, then search, writing MARK first so
# the loading reads (header, PQ tables, medoids) are told from the search's.
SCRIPT = r"""
import os, sys, numpy as np, diskannpy
folder, n, d, r, w, l, q, build = sys.argv[1], *map(int, sys.argv[2:8]), sys.argv[8] == "1"
if build:
    data = np.random.default_rng(1).standard_normal((n, d), dtype=np.float32)
    diskannpy.build_disk_index(data, "l2", folder, complexity=100, graph_degree=r,
                               search_memory_maximum=0.05,
                               build_memory_maximum=2.0, num_threads=2,
                               vector_dtype=np.float32)
    sys.exit(0)
# two threads: with one, diskannpy 0.7.0 waits forever for a search context while it loads
# the medoid's data (its one context is held by the loader); the searches below run one at a
# time whatever the count
index = diskannpy.StaticDiskIndex(folder, num_threads=2, num_nodes_to_cache=0,
                                  distance_metric="l2", vector_dtype=np.float32, dimensions=d)
queries = np.random.default_rng(2).standard_normal((q, d), dtype=np.float32)
os.write(2, b"%s\n" % sys.argv[9].encode())
for x in queries:
    index.search(x, 10, l, w)
"""
NBYTES = re.compile(r"aio_nbytes=(\d+)")
PREAD = re.compile(r"pread64\(\d+, .*?, (\d+), \d+\) = (\d+)")


def diskann_reads(python: str, folder: Path, n: int, d: int, r: int, w: int, l_: int,
                  q: int) -> dict[str, float]:
    """diskannpy's search under strace: reads per query and bytes per query."""
    args = [str(folder), str(n), str(d), str(r), str(w), str(l_), str(q)]
    if not (folder / "ann_disk.index").exists():
        subprocess.run([python, "-c", SCRIPT, *args, "1", MARK], check=True)
    trace = folder / "strace.txt"
    subprocess.run(["strace", "-f", "-qq", "-s", "64", "-o", str(trace), "-e",
                    "trace=io_submit,pread64,write", python, "-c", SCRIPT, *args, "0", MARK],
                   check=True)
    return search_reads(trace.read_text(), q)


def search_reads(text: str, queries: int) -> dict[str, Any]:
    """From an strace log: the reads after MARK (each io_submit iocb's length, each pread64's
    bytes returned), per query."""
    searching = text[text.index(MARK):]
    sizes = [int(x) for x in NBYTES.findall(searching)]
    sizes += [int(got) for _, got in PREAD.findall(searching)]
    return {"queries": queries, "reads_per_query": len(sizes) / queries,
            "bytes_per_query": sum(sizes) / queries,
            "read_sizes": sorted(set(sizes)),
            "submits_per_query": searching.count("io_submit(") / queries}


def real_header(folder: Path) -> dict[str, int]:
    """The metadata of the real index's first sector, read by aiio's header reader."""
    with open(folder / "ann_disk.index", "rb") as fh:
        return vi.read_header(fh.read(4096))


def aiio_on_real_graph(folder: Path, d: int, w: int, l_: int, q: int) -> dict[str, Any]:
    """aiio's beam search over the real index's own records (the file's bytes, parsed by
    aiio), its distances the full vectors the index was built from: the search alone, set
    against DiskANN's on the same graph."""
    import numpy as np

    from aiio.phases.vector_search import search
    raw = memoryview((folder / "ann_disk.index").read_bytes())
    head = vi.read_header(raw[:4096])
    r = (head["node_len"] - 4 * d) // 4 - 1
    sh = vi.IndexShape(head["vectors"], d, 4, r, 4096, "random", 1)
    data = np.random.default_rng(1).standard_normal((head["vectors"], d), dtype=np.float32)
    queries = np.random.default_rng(2).standard_normal((q, d), dtype=np.float32)

    def fetch(nodes: list[int]) -> list[memoryview]:
        return [raw[sh.offset_of(n):sh.offset_of(n) + sh.read_size] for n in nodes]

    traces = [search(sh, data, x, head["medoid"], w, l_, 10, fetch) for x in queries]
    reads = sum(t.reads for t in traces) / q
    return {"reads_per_query": reads, "bytes_per_query": reads * sh.read_size,
            "hops_per_query": sum(t.hops for t in traces) / q}


def aiio_reads(folder: Path, n: int, d: int, r: int, w: int, l_: int, q: int,
               graph: str) -> dict[str, Any]:
    """`aiio run --phase vector` at the same shape: its figures from the result."""
    results = folder / "results"
    (folder / "target").mkdir()
    sets = {"vectors": n, "dimensions": d, "max_degree": r, "beam_width": w,
            "search_list": l_, "queries": q, "graph": graph}
    cmd = [sys.executable, "-m", "aiio", "run", "--phase", "vector", "-n", "1", "--target",
           str(folder / "target"), "--results", str(results), "--no-history"]
    for key, value in sets.items():
        cmd += ["--set", f"vector.{key}={value}"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    res = json.loads(next(results.glob("*/result.json")).read_text())
    v = res["aggregate"]["vector"]
    return {"queries": v["queries"], "reads_per_query": v["reads_per_query"],
            "bytes_per_query": v["bytes_per_query"],
            "read_sizes": [res["aggregate"]["index"]["read_size"]],
            "hops_per_query": v["hops_per_query"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--python", required=True, help="an interpreter that imports diskannpy")
    p.add_argument("--folder", help="where the real index is built and kept (default: a "
                   "temporary folder)")
    p.add_argument("-N", type=int, default=100_000)
    p.add_argument("-D", type=int, default=128)
    p.add_argument("-R", type=int, default=64)
    p.add_argument("-W", type=int, default=4)
    p.add_argument("-L", type=int, nargs="+", default=[50, 100, 200],
                   help="search lists, a comparison each")
    p.add_argument("-Q", type=int, default=200, help="queries")
    p.add_argument("--graph", default="nearest", help="aiio's graph (vector.graph)")
    a = p.parse_args(argv)
    folder = Path(a.folder or tempfile.mkdtemp(prefix="aiio-vector-check-"))
    folder.mkdir(parents=True, exist_ok=True)
    for l_ in a.L:
        compare(a, folder, l_)
    return 0


def compare(a: argparse.Namespace, folder: Path, l_: int) -> None:
    """One search list's table: diskannpy, aiio on its own graph, aiio on DiskANN's graph."""
    real = diskann_reads(a.python, folder, a.N, a.D, a.R, a.W, l_, a.Q)
    head = real_header(folder)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        emu = aiio_reads(Path(tmp), a.N, a.D, a.R, a.W, l_, a.Q, a.graph)
    same = aiio_on_real_graph(folder, a.D, a.W, l_, a.Q)
    real["hops_per_query"] = real["submits_per_query"]
    print(f"\nN={a.N} D={a.D} R={a.R} W={a.W} L={l_}, {a.Q} queries; real index: "
          f"{head['node_len']}-byte records, {head['nodes_per_sector']} a sector")
    print(f"{'figure':<18}{'diskannpy':>11}{f'aiio, {a.graph}':>17}{'ratio':>7}"
          f"{'aiio, real graph':>18}{'ratio':>7}")
    for key in ("reads_per_query", "bytes_per_query", "hops_per_query"):
        print(f"{key:<18}{real[key]:>11.1f}{emu[key]:>17.1f}{emu[key] / real[key]:>7.3f}"
              f"{same[key]:>18.1f}{same[key] / real[key]:>7.3f}")
    print(f"{'read sizes':<18}{str(real['read_sizes']):>11}{str(emu['read_sizes']):>17}",
          flush=True)


if __name__ == "__main__":
    sys.exit(main())
