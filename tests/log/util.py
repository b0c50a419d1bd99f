"""Helpers shared by the log tests: building batches, appending to segments, reading a log back."""

import os
import struct

from broker.records import batch, record_set
from broker.records.batch import Record
from broker.records.compression import Codec

BASE_TIME = 1_700_000_000_000


def make_records(count: int, start: int = 0, timestamp: int = BASE_TIME, value_size: int = 10) -> list:
    return [
        Record(
            start + i,
            timestamp + i,
            f"key-{start + i}".encode(),
            (f"value-{start + i}-".encode() * value_size)[: max(value_size, 1)],
        )
        for i in range(count)
    ]


def make_batch(
    count: int = 3,
    start: int = 0,
    timestamp: int = BASE_TIME,
    codec: Codec = Codec.NONE,
    value_size: int = 10,
    **kwargs,
) -> bytes:
    """A v2 batch with ``count`` records whose offsets start at ``start`` (also the base offset)."""
    return batch.build(
        make_records(count, start, timestamp, value_size), base_offset=start, compression=codec, **kwargs
    )


def append_to_segment(segment, start: int, count: int = 3, timestamp: int = BASE_TIME) -> bytes:
    data = make_batch(count, start, timestamp)
    segment.append([(batch.parse_header(data), [data])])
    return data


def read_all(log, start: int | None = None) -> list:
    """Every record from ``start`` (default: the log start) to the end, through ``log.read``."""
    offset = log.log_start_offset if start is None else start
    out = []
    while offset < log.log_end_offset:
        found = log.read(offset, 64 * 1024)
        if found is None:
            break
        for decoded in record_set.iter_batches(found.read()):
            out.extend(r for r in decoded.records if r.offset >= offset)
        offset = out[-1].offset + 1 if out else offset + 1
    return out


def strip_offsets(records: list) -> list:
    return [(r.key, r.value, r.timestamp, r.headers) for r in records]


def files_in(directory: str, suffix: str = "") -> list:
    return sorted(n for n in os.listdir(directory) if n.endswith(suffix))


def flip_byte(path: str, position: int) -> None:
    """Invert one byte of a file in place (inside a batch's records, it breaks only the CRC)."""
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)
        f.seek(position)
        f.write(bytes([byte[0] ^ 0xFF]))


def garble_first_record(log_dir, topic: str, partition: int = 0) -> None:
    """Make the first stored batch of ``topic-partition`` undecodable behind a valid CRC, in place
    (its first record then claims more bytes than the batch holds). The broker checks records on
    produce, so only damage on disk, or a log written by a broker that did not, holds such a batch."""
    path = os.path.join(log_dir, f"{topic}-{partition}", f"{0:020d}.log")
    with open(path, "r+b") as f:
        header = batch.parse_header(f.read(batch.HEADER_SIZE))
        f.seek(0)
        stored = bytearray(f.read(header.size))
        stored[batch.HEADER_SIZE] = 0x7F
        struct.pack_into(">I", stored, batch.MAGIC_OFFSET + 1, batch.compute_crc(stored))
        f.seek(0)
        f.write(stored)
