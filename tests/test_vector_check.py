"""tools/vector_check reads a real DiskANN search's reads out of strace's log: only those after
the search began, every iocb of an io_submit and every pread64."""

from __future__ import annotations

from tools.vector_check import MARK, search_reads


def iocb(nbytes: int, offset: int) -> str:
    return (f"{{aio_data=0, aio_lio_opcode=IOCB_CMD_PREAD, aio_fildes=3, aio_buf=0x1, "
            f"aio_nbytes={nbytes}, aio_offset={offset}}}")


LOG = "\n".join([
    '101 pread64(3, "\\1\\0"..., 4096, 0) = 4096',  # loading the index: not the search's
    f"101 io_submit(0x7f, 1, [{iocb(8192, 0)}]) = 1",
    f'101 write(2, "{MARK}\\n", 28) = 28',
    f"101 io_submit(0x7f, 2, [{iocb(4096, 40960)}, {iocb(4096, 8192)}]) = 2",
    '102 pread64(3, "\\0"..., 4096, 12288) = 4096',
])


def test_only_the_search_reads_count_each_iocb_and_pread() -> None:
    got = search_reads(LOG, queries=1)
    assert got["reads_per_query"] == 3 and got["bytes_per_query"] == 3 * 4096
    assert got["read_sizes"] == [4096] and got["submits_per_query"] == 1
