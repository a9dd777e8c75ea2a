"""TFRecord format, written and read without TensorFlow.

Each record is framed as TFRecord files are: uint64 LE payload length, uint32 masked CRC32C of
the length bytes, the payload, uint32 masked CRC32C of the payload. The payload is a serialized
``tf.train.Example`` with one feature, ``image_raw``, a ``bytes_list`` holding one random value,
so TensorFlow and other TFRecord readers can parse it.

A sample's range is its whole record frame (header, payload and trailing CRC). The frame is sized
to the requested sample size: exact, or 1 byte short where a protobuf length varint grows and the
exact size is unreachable (``MAX_SHORTFALL``), never longer, except that requests below
``MIN_RECORD`` (37) bytes get a record of ``MIN_RECORD`` bytes, the smallest this Example can be.
"""

from __future__ import annotations

import functools
import io
import os
import struct
from pathlib import Path

import crc32c
import numpy as np

from aiio.errors import RunFailed
from aiio.storage.formats.common import check_sizes, iter_random, new_rng

EXTENSION = ".tfrecord"
FEATURE = b"image_raw"

_HEADER = struct.Struct("<QI")  # payload length, masked CRC of the 8 length bytes
_CRC = struct.Struct("<I")
_FRAME = _HEADER.size + _CRC.size  # bytes each record adds around its payload
_MASK_DELTA = 0xA282EAD8
# The nested lengths differ by at least 2, so one data byte more grows at most one length varint:
# the record jumps by 2 bytes there and the size between is unreachable.
MAX_SHORTFALL = 1

# Protobuf tags: (field number << 3) | wire type 2 (length-delimited).
_TAG_1 = b"\x0a"
_TAG_2 = b"\x12"


def mask(crc: int) -> int:
    """TFRecord's CRC mask (stored CRCs are masked so data holding CRCs checks cleanly)."""
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def masked_crc(data: bytes | memoryview) -> int:
    """TFRecord's masked CRC32C of data."""
    return mask(crc32c.crc32c(data))


def _varint(n: int) -> bytes:
    """Protobuf base-128 varint."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _len_field(tag: bytes, body_len: int) -> bytes:
    """Tag and length of a length-delimited field whose body is body_len bytes."""
    return tag + _varint(body_len)


# Cached: a file's samples mostly share a size, and the search below tries several lengths.
@functools.lru_cache(maxsize=1024)
def example_prefix(data_len: int) -> bytes:
    """Serialized Example bytes that come before data_len bytes of image_raw data."""
    # Built inside out, because each message's length prefix covers everything within it.
    bytes_list = _len_field(_TAG_1, data_len)                          # BytesList.value
    feature = _len_field(_TAG_1, len(bytes_list) + data_len)           # Feature.bytes_list
    value_len = len(feature) + len(bytes_list) + data_len
    entry = (_len_field(_TAG_1, len(FEATURE)) + FEATURE               # map entry key
             + _len_field(_TAG_2, value_len))                          # map entry value
    entry_len = len(entry) + value_len
    features = _len_field(_TAG_1, entry_len)                           # Features.feature
    example = _len_field(_TAG_1, len(features) + entry_len)            # Example.features
    return example + features + entry + feature + bytes_list


def _record_len(data_len: int) -> int:
    """Bytes on disk of one record holding data_len bytes of image data."""
    return _FRAME + len(example_prefix(data_len)) + data_len


MIN_RECORD = _record_len(0)


@functools.lru_cache(maxsize=1024)
def data_len_for(record_size: int) -> int:
    """The most image bytes whose record fits in record_size (0 when nothing fits)."""
    data = max(0, record_size - _record_len(record_size) + record_size)
    while data > 0 and _record_len(data) > record_size:
        data -= 1
    while _record_len(data + 1) <= record_size:
        data += 1
    return data


def write(path: Path, sample_sizes: list[int], seed: int) -> list[tuple[int, int]]:
    """Write one Example record per sample; each range is (record offset, record length)."""
    check_sizes(sample_sizes)
    rng = new_rng(seed)
    ranges = []
    offset = 0
    with open(path, "wb") as f:
        for size in sample_sizes:
            length = _write_record(f, rng, data_len_for(size))
            ranges.append((offset, length))
            offset += length
    return ranges


def _write_record(f: io.BufferedWriter, rng: np.random.Generator, data_len: int) -> int:
    """Write one framed record, streaming its data; return its length on disk."""
    prefix = example_prefix(data_len)
    length_bytes = struct.pack("<Q", len(prefix) + data_len)
    f.write(length_bytes)
    f.write(_CRC.pack(masked_crc(length_bytes)))
    f.write(prefix)
    crc = crc32c.crc32c(prefix)
    for chunk in iter_random(rng, data_len):
        crc = crc32c.crc32c(chunk, crc)
        f.write(chunk)
    f.write(_CRC.pack(mask(crc)))
    return _FRAME + len(prefix) + data_len


# --- reading ------------------------------------------------------------------------------

def read_native(path: Path, index: int | None = None, *,
                span: tuple[int, int] | None = None) -> int:
    """Parse every record, record index, or the records filling span, checking both CRCs;
    returns the image bytes decoded."""
    if index is None and span is None:
        return _read_stream(path)
    # Unbuffered: finding one record must not drag in read-ahead a loader would not do.
    with open(path, "rb", buffering=0) as f:
        end = os.fstat(f.fileno()).st_size
        if span is None:
            start = _skip_to(f, path, index, end)
            span = (start, _FRAME + _read_header(f, path, start, end))
        # One read for the whole span, as a reader with a TFRecord index file does.
        data = _read_exact(f, span[1], path, span[0], "span")
    return _parse_span(memoryview(data), span[0], path)


def _read_stream(path: Path) -> int:
    """Parse the whole file front to back, as TFRecordDataset does."""
    total = 0
    offset = 0
    # TensorFlow's record reader reads through a 256 KiB buffer by default.
    with open(path, "rb", buffering=256 * 1024) as f:
        end = os.fstat(f.fileno()).st_size
        while offset < end:
            length = _check_header(_read_exact(f, _HEADER.size, path, offset, "record header"),
                                   path, offset, end - offset)
            body = _read_exact(f, length + _CRC.size, path, offset + _HEADER.size,
                               "record payload")
            total += example_bytes(_check_body(memoryview(body), path, offset), path, offset)
            offset += _FRAME + length
    return total


def _parse_span(data: memoryview, start: int, path: Path) -> int:
    """Parse the records that exactly fill data, read from offset start."""
    total = 0
    pos = 0
    while pos < len(data):
        offset = start + pos
        if len(data) - pos < _FRAME:
            raise RunFailed(f"{path}: span at offset {start} does not match the file: it ends "
                            f"inside the record at offset {offset}")
        length = _check_header(data[pos:pos + _HEADER.size], path, offset, len(data) - pos)
        body = data[pos + _HEADER.size:pos + _FRAME + length]
        total += example_bytes(_check_body(body, path, offset), path, offset)
        pos += _FRAME + length
    return total


def _read_exact(f: io.RawIOBase | io.BufferedReader, n: int, path: Path, offset: int,
                what: str) -> bytes:
    """n bytes from offset, or RunFailed for a truncated file."""
    f.seek(offset)
    data = f.read(n) if n else b""
    if len(data) != n:
        raise RunFailed(f"{path}: truncated TFRecord {what} at offset {offset}: "
                        f"needed {n} bytes, got {len(data)}")
    return data


def _check_header(header: bytes | memoryview, path: Path, offset: int, room: int) -> int:
    """The payload length in a record header, its CRC checked and the record fitting in room."""
    length, crc = _HEADER.unpack(header)
    if masked_crc(header[:8]) != crc:
        raise RunFailed(f"{path}: bad TFRecord length CRC at offset {offset}")
    if _FRAME + length > room:
        raise RunFailed(f"{path}: TFRecord at offset {offset} is cut short: record of "
                        f"{_FRAME + length} bytes, only {room} left in the file or span")
    return length


def _check_body(body: memoryview, path: Path, offset: int) -> memoryview:
    """The payload of a record body (payload and CRC), its CRC checked."""
    payload = body[:-_CRC.size]
    (crc,) = _CRC.unpack_from(body, len(payload))
    if masked_crc(payload) != crc:
        raise RunFailed(f"{path}: bad TFRecord payload CRC in record at offset {offset}")
    return payload


def _read_header(f: io.RawIOBase, path: Path, offset: int, end: int) -> int:
    """The payload length of the record at offset in the file, its CRC checked."""
    header = _read_exact(f, _HEADER.size, path, offset, "record header")
    return _check_header(header, path, offset, end - offset)


def _skip_to(f: io.RawIOBase, path: Path, index: int, end: int) -> int:
    """Offset of record index, found by walking the length headers from the start."""
    if index < 0:
        raise IndexError(f"{path}: no record {index}")
    offset = 0
    for seen in range(index):
        if offset >= end:
            raise IndexError(f"{path}: no record {index} (the file holds {seen})")
        offset += _FRAME + _read_header(f, path, offset, end)
    if offset >= end:
        raise IndexError(f"{path}: no record {index} (the file holds {index})")
    return offset


# --- the Example protobuf -------------------------------------------------------------------

def _read_varint(buf: memoryview, pos: int, limit: int) -> tuple[int, int]:
    """Decode a varint at pos; return (value, position after it)."""
    value = shift = 0
    while pos < limit and shift < 64:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    raise ValueError("bad varint")


def _fields(buf: memoryview, start: int, limit: int):
    """Yield (field number, body start, body end) for each length-delimited field; skip others."""
    pos = start
    while pos < limit:
        key, pos = _read_varint(buf, pos, limit)
        wire = key & 7
        if wire == 2:
            length, pos = _read_varint(buf, pos, limit)
            if pos + length > limit:
                raise ValueError("field runs past its message")
            yield key >> 3, pos, pos + length
            pos += length
        elif wire == 0:
            _, pos = _read_varint(buf, pos, limit)
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
    if pos != limit:
        raise ValueError("field runs past its message")


def example_features(payload: bytes | memoryview) -> dict[bytes, list[memoryview]]:
    """Feature name -> bytes_list values of a serialized tf.train.Example (other lists skipped)."""
    buf = memoryview(payload)
    out: dict[bytes, list[memoryview]] = {}
    for num, s, e in _fields(buf, 0, len(buf)):
        if num != 1:                                   # Example.features
            continue
        for num2, s2, e2 in _fields(buf, s, e):
            if num2 != 1:                              # Features.feature (map entry)
                continue
            name, values = b"", []
            for num3, s3, e3 in _fields(buf, s2, e2):
                if num3 == 1:                          # entry key
                    name = bytes(buf[s3:e3])
                elif num3 == 2:                        # entry value: Feature
                    values = _bytes_list(buf, s3, e3)
            out[name] = values
    return out


def _bytes_list(buf: memoryview, start: int, end: int) -> list[memoryview]:
    """The values of a Feature's bytes_list (empty for float and int64 lists)."""
    values = []
    for num, s, e in _fields(buf, start, end):
        if num == 1:                                   # Feature.bytes_list
            values.extend(buf[s2:e2] for num2, s2, e2 in _fields(buf, s, e) if num2 == 1)
    return values


def example_bytes(payload: bytes | memoryview, path: Path, offset: int) -> int:
    """Bytes in the Example's bytes_list values, or RunFailed when it does not parse."""
    try:
        features = example_features(payload)
    except (ValueError, IndexError) as exc:
        raise RunFailed(f"{path}: record at offset {offset} is not a tf.train.Example: "
                        f"{exc}") from exc
    return sum(len(v) for values in features.values() for v in values)
