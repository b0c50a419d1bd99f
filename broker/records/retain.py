"""Keeping some records of a v2 batch and dropping the rest, for log compaction (sans-I/O).

``keys`` lists what compaction decides on (offset, key, tombstone or not, timestamp) per record;
``retain`` rebuilds the batch with only the records a predicate keeps. Each kept record's bytes
are copied as they are, so its offset delta, timestamp delta, key, value and headers do not
change; the header keeps the base offset, ``lastOffsetDelta`` (the batch still ends where it
ended, with gaps inside), base timestamp, attributes (codec, timestamp type, transactional
bit), producer id, epoch and base sequence, as Kafka's ``MemoryRecords.filterTo`` does. The
records count, batch length, ``maxTimestamp`` (CreateTime: the largest kept) and CRC are new.

The records are walked by the C extension ``_recordwalk.spans`` when it was built, otherwise in
Python (the tests compare the two).
"""

import struct
from typing import NamedTuple

from . import batch
from .compression import DEFAULT_MAX_DECOMPRESSED, Codec, compress, decompress
from .errors import CorruptRecordError
from .varint import decode_varint

try:
    from ._recordwalk import spans as _native_spans
except ImportError:  # the optional extension did not compile
    _native_spans = None


class RecordKey(NamedTuple):
    """What compaction looks at in one record."""

    offset: int
    key: bytes | None
    is_tombstone: bool  # a null value
    timestamp: int


class _Span(NamedTuple):
    start: int
    end: int
    record: RecordKey


def keys(entry, header: batch.BatchHeader, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> list:
    """The ``RecordKey`` of every record of one v2 batch (``header`` parsed from ``entry``)."""
    return [span.record for span in _spans(_records_section(entry, header, max_decompressed), header)]


def keyed_offsets(entry, header: batch.BatchHeader, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> list:
    """``(key, offset)`` of every record of one v2 batch that has a key (the cleaner's key map)."""
    section = _records_section(entry, header, max_decompressed)
    if _native_spans is None or header.timestamp_type == batch.TimestampType.LOG_APPEND_TIME:
        return [(span.record.key, span.record.offset) for span in _spans(section, header)
                if span.record.key is not None]
    base_offset = header.base_offset
    return [(key, base_offset + offset_delta) for _, _, offset_delta, _, key, _ in _native_walk(section, header)
            if key is not None]


def retain(entry, header: batch.BatchHeader, keep, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED):
    """``entry`` with only the records for which ``keep(RecordKey)`` is true: the same bytes when it
    keeps all of them, None when it keeps none, otherwise a rebuilt batch (see the module doc)."""
    section = _records_section(entry, header, max_decompressed)
    spans = _spans(section, header)
    kept = [span for span in spans if keep(span.record)]
    if len(kept) == len(spans):
        return bytes(entry)
    if not kept:
        return None
    body = b"".join(section[span.start:span.end] for span in kept)
    if header.compression != Codec.NONE:
        body = compress(header.compression, body)
    max_timestamp = header.max_timestamp
    if header.timestamp_type == batch.TimestampType.CREATE_TIME:
        max_timestamp = max(span.record.timestamp for span in kept)
    rebuilt = bytearray(batch.HEADER.pack(*header._replace(
        batch_length=batch.HEADER_SIZE - batch.LOG_OVERHEAD + len(body), crc=0, max_timestamp=max_timestamp,
        records_count=len(kept))))
    rebuilt += body
    struct.pack_into(">I", rebuilt, batch.MAGIC_OFFSET + 1, batch.compute_crc(rebuilt))
    return bytes(rebuilt)


def _records_section(entry, header: batch.BatchHeader, max_decompressed: int) -> bytes:
    section = memoryview(entry)[batch.HEADER_SIZE:header.size]
    if header.compression != Codec.NONE:
        section = decompress(header.compression, section, max_decompressed)
    return bytes(section)


def _spans(section: bytes, header: batch.BatchHeader) -> list:
    """Each record's byte range in the records section and its ``RecordKey``."""
    if _native_spans is None:
        return _python_spans(section, header)
    found = _native_walk(section, header)
    base_offset, base_timestamp = header.base_offset, header.base_timestamp
    if header.timestamp_type == batch.TimestampType.LOG_APPEND_TIME:
        return [_Span(start, end, RecordKey(base_offset + offset_delta, key, tombstone, header.max_timestamp))
                for start, end, offset_delta, _, key, tombstone in found]
    return [_Span(start, end, RecordKey(base_offset + offset_delta, key, tombstone, base_timestamp + timestamp_delta))
            for start, end, offset_delta, timestamp_delta, key, tombstone in found]


def _native_walk(section: bytes, header: batch.BatchHeader) -> list:
    """``_recordwalk.spans`` of the section, or CorruptRecordError naming the bad record."""
    found = _native_spans(section, header.records_count)
    if isinstance(found, tuple):
        index, reason = found
        where = f"record {index}" if index >= 0 else "the batch"
        raise CorruptRecordError(f"batch at offset {header.base_offset}: {where} is invalid: {reason}")
    return found


def _python_spans(section: bytes, header: batch.BatchHeader) -> list:
    """``_spans`` in Python."""
    spans = []
    pos = 0
    end = len(section)
    log_append_time = header.timestamp_type == batch.TimestampType.LOG_APPEND_TIME
    for _ in range(header.records_count):
        start = pos
        length, pos = _varint(section, pos)
        record_end = pos + length
        if length < 0 or record_end > end:
            raise CorruptRecordError(f"batch at offset {header.base_offset}: a record of {length} bytes overruns it")
        pos += 1  # attributes
        timestamp_delta, pos = _varint(section, pos)
        offset_delta, pos = _varint(section, pos)
        key_length, pos = _varint(section, pos)
        key = section[pos:pos + key_length] if key_length >= 0 else None
        pos += max(key_length, 0)
        value_length, _ = _varint(section, pos)
        if pos > record_end:
            raise CorruptRecordError(f"batch at offset {header.base_offset}: a key overruns its record")
        timestamp = header.max_timestamp if log_append_time else header.base_timestamp + timestamp_delta
        spans.append(_Span(start, record_end, RecordKey(header.base_offset + offset_delta, key, value_length < 0,
                                                        timestamp)))
        pos = record_end
    if pos != end:
        raise CorruptRecordError(f"batch at offset {header.base_offset}: {end - pos} bytes after its last record")
    return spans


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """``decode_varint`` with the one-byte case (most lengths and deltas) done inline."""
    byte = buf[pos] if pos < len(buf) else 0x80
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), pos + 1
    return decode_varint(buf, pos)
