"""On-disk formats: real libraries read what we write, ranges point at the right bytes, data is
incompressible and unique, corruption is caught."""

from __future__ import annotations

import tracemalloc
import zlib
from pathlib import Path

import h5py
import numpy as np
import pytest

from aiio import workload
from aiio.errors import ConfigError, RunFailed
from aiio.storage.formats import FORMATS, common, fill_random, get_format, new_rng
from aiio.storage.formats import hdf5 as fmt_hdf5
from aiio.storage.formats import npz as fmt_npz
from aiio.storage.formats import tfrecord as fmt_tfrecord

# Uneven sizes, one above 1 MiB so every file has a 1 MiB slice to compress, one not a multiple
# of 8 (the generator draws 8 bytes at a time), one tiny.
SIZES = [1_200_003, 114_660, 4_096, 50]
NPY_HEADER = 128  # what numpy writes for a 1-D uint8 array


def write(tmp_path: Path, name: str, sizes: list[int] = SIZES, seed: int = 1,
          stem: str = "f") -> tuple[Path, list[tuple[int, int]]]:
    """Write one file of format name and return its path and ranges."""
    fmt = get_format(name)
    path = tmp_path / f"{stem}{fmt.EXTENSION}"
    return path, fmt.write(path, sizes, seed)


def at(path: Path, span: tuple[int, int]) -> bytes:
    """The bytes of the file at span."""
    with open(path, "rb") as f:
        f.seek(span[0])
        return f.read(span[1])


def payloads(path: Path, name: str) -> list[bytes]:
    """Each sample's data as the format's own library (or an independent reader) returns it."""
    if name == "npz":
        with np.load(path) as npz:
            return [npz[f"x{i}"].tobytes() for i in range(len(npz.files))]
    if name == "hdf5":
        with h5py.File(path, "r") as f:
            return [row.tobytes() for row in f["samples"][:]]
    data = path.read_bytes()
    if name == "raw":
        return [data]
    return [bytes(fmt_tfrecord.example_features(data[off + 12:off + length - 4])[b"image_raw"][0])
            for off, length in _walk_tfrecord(data)]


def _walk_tfrecord(data: bytes) -> list[tuple[int, int]]:
    """Record frames found by following the length fields alone."""
    frames, off = [], 0
    while off < len(data):
        length = 16 + int.from_bytes(data[off:off + 8], "little")
        frames.append((off, length))
        off += length
    return frames


# --- the package interface -------------------------------------------------------------------

def test_get_format_knows_every_format_and_its_extension():
    extensions = {name: get_format(name).EXTENSION for name in FORMATS}
    assert extensions == {"npz": ".npz", "hdf5": ".h5", "tfrecord": ".tfrecord", "raw": ".bin"}
    assert FORMATS == workload.FORMATS


def test_unknown_format_is_a_one_line_config_error():
    with pytest.raises(ConfigError, match="unknown dataset format 'parquet'") as err:
        get_format("parquet")
    assert "\n" not in str(err.value)


def test_fill_random_is_seeded_and_sized():
    assert fill_random(new_rng(3), 1001) == fill_random(new_rng(3), 1001)
    assert len(fill_random(new_rng(3), 1001)) == 1001
    assert fill_random(new_rng(3), 64) != fill_random(new_rng(4), 64)


def test_chunk_size_does_not_change_the_bytes():
    whole = b"".join(common.iter_random(new_rng(5), 100_003, chunk=1 << 20))
    pieces = b"".join(common.iter_random(new_rng(5), 100_003, chunk=4_099))
    assert whole == pieces and len(whole) == 100_003


@pytest.mark.parametrize("name", FORMATS)
def test_empty_or_zero_sized_samples_are_refused(tmp_path, name):
    with pytest.raises(ValueError):
        write(tmp_path, name, sizes=[])
    with pytest.raises(ValueError):
        write(tmp_path, name, sizes=[10, 0])


# --- every format ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", FORMATS)
def test_ranges_are_in_order_inside_the_file_and_disjoint(tmp_path, name):
    path, ranges = write(tmp_path, name)
    assert len(ranges) == len(SIZES)
    ends = [0] + [off + length for off, length in ranges]
    assert all(off >= end for (off, _), end in zip(ranges, ends, strict=False))
    assert ends[-1] <= path.stat().st_size


@pytest.mark.parametrize("name", FORMATS)
def test_ranges_hold_the_samples_the_library_reads(tmp_path, name):
    path, ranges = write(tmp_path, name)
    got = payloads(path, name)
    stored = [at(path, span) for span in ranges]
    if name == "raw":
        assert b"".join(stored) == got[0] == path.read_bytes()
    elif name == "npz":
        assert [s[NPY_HEADER:] for s in stored] == got
        assert all(s.startswith(b"\x93NUMPY") for s in stored)
    elif name == "hdf5":
        assert stored == got
    else:  # a tfrecord range is the whole frame and the image bytes sit at its end
        assert all(s.endswith(g, 0, len(s) - 4) for s, g in zip(stored, got, strict=True))


@pytest.mark.parametrize("name", FORMATS)
def test_different_seeds_give_different_files_and_equal_seeds_equal_ones(tmp_path, name):
    a, _ = write(tmp_path, name, seed=1, stem="a")
    b, _ = write(tmp_path, name, seed=2, stem="b")
    c, _ = write(tmp_path, name, seed=1, stem="c")
    assert payloads(a, name) != payloads(b, name)
    assert a.read_bytes() == c.read_bytes()


@pytest.mark.parametrize("name", FORMATS)
def test_contents_are_incompressible(tmp_path, name):
    path, _ = write(tmp_path, name)
    data = path.read_bytes()
    piece = data[len(data) // 2 - (1 << 19):len(data) // 2 + (1 << 19)]
    assert len(piece) == 1 << 20
    assert len(zlib.compress(piece, 6)) > 0.99 * len(piece)


@pytest.mark.parametrize("name", FORMATS)
def test_samples_within_a_file_differ(tmp_path, name):
    path, ranges = write(tmp_path, name, sizes=[4096] * 4)
    samples = [at(path, span)[-4000:] for span in ranges]  # past any per-sample header
    assert len(set(samples)) == 4


@pytest.mark.parametrize("name", FORMATS)
def test_read_native_reads_the_whole_file_or_one_sample(tmp_path, name):
    path, ranges = write(tmp_path, name)
    fmt = get_format(name)
    per_sample = [len(p) for p in payloads(path, name)] if name != "raw" else SIZES
    assert fmt.read_native(path) == sum(per_sample)
    for i, span in enumerate(ranges):
        assert fmt.read_native(path, i, span=span) == per_sample[i]
        if name != "raw":
            assert fmt.read_native(path, i) == per_sample[i]


@pytest.mark.parametrize("name", ["npz", "hdf5", "tfrecord"])
def test_read_native_refuses_a_sample_the_file_lacks(tmp_path, name):
    path, _ = write(tmp_path, name, sizes=[100, 100])
    with pytest.raises(IndexError):
        get_format(name).read_native(path, 2)


@pytest.mark.parametrize("name", FORMATS)
def test_writing_streams_instead_of_holding_a_sample(tmp_path, monkeypatch, name):
    """With 64 KiB chunks an 8 MiB sample must never be in memory whole."""
    monkeypatch.setattr(common, "CHUNK", 64 << 10)
    monkeypatch.setattr(fmt_hdf5, "CHUNK", 64 << 10)
    write(tmp_path, name, sizes=[10], stem="warm")  # first-use imports are not the point
    tracemalloc.start()
    try:
        path, ranges = write(tmp_path, name, sizes=[8 << 20, 3 << 20])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    assert get_format(name).read_native(path, 1, span=ranges[1]) >= (3 << 20) - 64


# --- sizes per format -----------------------------------------------------------------------

def test_npz_is_what_numpy_savez_writes(tmp_path):
    path, ranges = write(tmp_path, "npz")
    with np.load(path) as npz:
        assert npz.files == ["x0", "x1", "x2", "x3"]
        assert [npz[k].dtype for k in npz.files] == [np.uint8] * 4
        assert [npz[k].shape for k in npz.files] == [(s,) for s in SIZES]
    assert [length for _, length in ranges] == [NPY_HEADER + s for s in SIZES]
    assert fmt_npz.member_ranges(path) == ranges


def test_hdf5_rows_share_the_mean_size(tmp_path):
    path, ranges = write(tmp_path, "hdf5")
    mean = round(sum(SIZES) / len(SIZES))
    with h5py.File(path, "r") as f:
        dset = f["samples"]
        assert dset.shape == (len(SIZES), mean) and dset.dtype == np.uint8
        assert dset.chunks is None and dset.compression is None  # contiguous, stored as is
    assert ranges == [(ranges[0][0] + i * mean, mean) for i in range(len(SIZES))]


def test_hdf5_rows_bigger_than_a_chunk_are_written_in_pieces(tmp_path, monkeypatch):
    monkeypatch.setattr(fmt_hdf5, "CHUNK", 1000)
    path, ranges = write(tmp_path, "hdf5", sizes=[2500, 2500])
    with h5py.File(path, "r") as f:
        rows = f["samples"][:]
    assert [at(path, span) for span in ranges] == [r.tobytes() for r in rows]
    assert len(set(rows[0].tobytes()[i:i + 1000] for i in (0, 1000, 2000))) == 3


def test_tfrecord_records_match_the_requested_size(tmp_path):
    _, ranges = write(tmp_path, "tfrecord")
    for size, (_, length) in zip(SIZES, ranges, strict=True):
        assert size - fmt_tfrecord.MAX_SHORTFALL <= length <= size


@pytest.mark.parametrize("boundary", [2**7, 2**14, 2**21, 2**28])
def test_tfrecord_sizes_are_exact_or_one_short_near_varint_boundaries(boundary):
    for size in range(max(fmt_tfrecord.MIN_RECORD, boundary - 64), boundary + 64):
        data = fmt_tfrecord.data_len_for(size)
        record = len(fmt_tfrecord.example_prefix(data)) + data + 16
        assert size - fmt_tfrecord.MAX_SHORTFALL <= record <= size


def test_tfrecord_tiny_requests_get_the_smallest_record(tmp_path):
    _, ranges = write(tmp_path, "tfrecord", sizes=[1, fmt_tfrecord.MIN_RECORD])
    assert [length for _, length in ranges] == [fmt_tfrecord.MIN_RECORD] * 2


# --- tfrecord compatibility -----------------------------------------------------------------

def test_tfrecord_framing_and_example_match_an_independent_implementation(tmp_path):
    """The tfrecord package (PyPI) reads our files and computes the same masked CRCs."""
    reader = pytest.importorskip("tfrecord.reader")
    writer = pytest.importorskip("tfrecord.writer")
    example_pb2 = pytest.importorskip("tfrecord.example_pb2")
    path, ranges = write(tmp_path, "tfrecord")
    theirs = [rec["image_raw"] for rec in
              reader.tfrecord_loader(str(path), None, {"image_raw": "byte"})]
    assert [bytes(t) for t in theirs] == payloads(path, "tfrecord")
    for span in ranges:
        frame = at(path, span)
        payload = frame[12:-4]
        assert frame[8:12] == writer.TFRecordWriter.masked_crc(frame[:8])
        assert frame[-4:] == writer.TFRecordWriter.masked_crc(payload)
        example = example_pb2.Example.FromString(payload)
        assert list(example.features.feature) == ["image_raw"]
        assert example.SerializeToString() == payload  # canonical encoding, nothing extra


def test_tfrecord_span_may_cover_several_records(tmp_path):
    path, ranges = write(tmp_path, "tfrecord")
    run = (ranges[1][0], ranges[1][1] + ranges[2][1])
    want = sum(len(p) for p in payloads(path, "tfrecord")[1:3])
    assert fmt_tfrecord.read_native(path, 1, span=run) == want
    with pytest.raises(RunFailed, match="does not match the file"):
        fmt_tfrecord.read_native(path, 1, span=(ranges[1][0], ranges[1][1] + 1))
    with pytest.raises(RunFailed, match="cut short"):
        fmt_tfrecord.read_native(path, 1, span=(ranges[1][0], ranges[1][1] - 1))
    with pytest.raises(RunFailed, match=f"length CRC at offset {ranges[1][0] + 1}"):
        fmt_tfrecord.read_native(path, 1, span=(ranges[1][0] + 1, ranges[1][1]))


# --- corruption -----------------------------------------------------------------------------

def flip(path: Path, offset: int) -> None:
    """Invert one byte of the file in place."""
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))


def truncate(path: Path, size: int) -> None:
    with open(path, "r+b") as f:
        f.truncate(size)


def test_tfrecord_flipped_payload_byte_is_caught_with_file_and_offset(tmp_path):
    path, ranges = write(tmp_path, "tfrecord")
    off, length = ranges[2]
    flip(path, off + length // 2)
    with pytest.raises(RunFailed, match=rf"{path.name}: bad TFRecord payload CRC .* offset {off}"):
        fmt_tfrecord.read_native(path)
    with pytest.raises(RunFailed, match=f"offset {off}"):
        fmt_tfrecord.read_native(path, 2)
    assert fmt_tfrecord.read_native(path, 1) > 0  # the other records still read


def test_tfrecord_flipped_length_byte_is_caught(tmp_path):
    path, ranges = write(tmp_path, "tfrecord")
    flip(path, ranges[1][0] + 2)
    with pytest.raises(RunFailed, match=f"bad TFRecord length CRC at offset {ranges[1][0]}"):
        fmt_tfrecord.read_native(path, 3)


def test_tfrecord_truncation_is_caught(tmp_path):
    path, ranges = write(tmp_path, "tfrecord")
    truncate(path, ranges[3][0] + 20)
    with pytest.raises(RunFailed, match=f"at offset {ranges[3][0]} is cut short"):
        fmt_tfrecord.read_native(path)
    truncate(path, ranges[3][0] + 5)
    with pytest.raises(RunFailed, match="truncated TFRecord record header"):
        fmt_tfrecord.read_native(path)


def test_tfrecord_payload_that_is_no_example_is_caught(tmp_path):
    path = tmp_path / "bad.tfrecord"
    payload = b"\x0a\x05abc"  # a field claiming 5 bytes with 3 left
    length = len(payload).to_bytes(8, "little")
    frame = (length + fmt_tfrecord.masked_crc(length).to_bytes(4, "little") + payload
             + fmt_tfrecord.masked_crc(payload).to_bytes(4, "little"))
    path.write_bytes(frame)
    with pytest.raises(RunFailed, match="offset 0 is not a tf.train.Example"):
        fmt_tfrecord.read_native(path)


def test_npz_flipped_byte_fails_its_zip_crc(tmp_path):
    path, ranges = write(tmp_path, "npz")
    flip(path, ranges[1][0] + 1000)
    message = rf"{path.name}: cannot read npz member x1 at offset \d+: Bad CRC"
    with pytest.raises(RunFailed, match=message):
        fmt_npz.read_native(path, 1)


def test_npz_and_hdf5_truncation_is_caught(tmp_path):
    for name in ("npz", "hdf5"):
        path, ranges = write(tmp_path, name)
        truncate(path, ranges[1][0])
        with pytest.raises(RunFailed, match=path.name):
            get_format(name).read_native(path)


def test_raw_needs_a_span_for_one_sample_and_catches_truncation(tmp_path):
    path, ranges = write(tmp_path, "raw")
    with pytest.raises(ValueError, match="span"):
        get_format("raw").read_native(path, 1)
    truncate(path, ranges[3][0] + 10)
    with pytest.raises(RunFailed, match=f"truncated at offset {ranges[3][0] + 10}"):
        get_format("raw").read_native(path, 3, span=ranges[3])
