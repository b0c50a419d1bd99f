"""Keeping some records of a v2 batch and dropping the rest, for log compaction (sans-I/O).

``keys`` lists what compaction decides on (offset, key, tombstone or not, timestamp) per record;
``retain`` rebuilds the batch with only the records a predicate keeps. Each kept record's bytes
are copied as they are, so its offset delta, timestamp delta, key, value and headers do not
change; the header keeps the base offset, ``lastOffsetDelta`` (the batch still ends where it
ended, with gaps inside), base timestamp, attributes (codec, timestamp type, transactional
bit), producer id, epoch and base sequence, as Kafka's ``MemoryRecords.filterTo`` does. The
records count, batch length, ``maxTimestamp`` (CreateTime: the largest kept) and CRC are new.

The records are walked by the C extension ``_recordwalk.spans`` when it was built, otherwise by
its twin ``record_walk`` (the tests compare the two).
"""

import struct
from collections.abc import Callable
from typing import NamedTuple

from . import batch, record_walk
from .buffers import Bytes
from .compression import DEFAULT_MAX_DECOMPRESSED, Codec, compress, decompress
from .errors import CorruptRecordError

# per record: start, end, offset delta, timestamp delta, key, value is null
_NativeSpan = tuple[int, int, int, int, bytes | None, bool]
_native_spans: Callable[[Bytes, int], list[_NativeSpan] | tuple[int, str]] | None
try:
    from ._recordwalk import spans as _native_spans
except ImportError:  # the optional extension did not compile
    _native_spans = None


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_INT32_MAX = (1 << 31) - 1


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


def keys(entry: Bytes, header: batch.BatchHeader, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> list[RecordKey]:
    """The ``RecordKey`` of every record of one v2 batch (``header`` parsed from ``entry``)."""
    return [span.record for span in _spans(_records_section(entry, header, max_decompressed), header)]


def keyed_offsets(
    entry: Bytes, header: batch.BatchHeader, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED
) -> list[tuple[bytes, int]]:
    """``(key, offset)`` of every record of one v2 batch that has a key (the cleaner's key map)."""
    section = _records_section(entry, header, max_decompressed)
    if _native_spans is None or header.timestamp_type == batch.TimestampType.LOG_APPEND_TIME:
        return [(key, span.record.offset) for span in _spans(section, header) if (key := span.record.key) is not None]
    base_offset = header.base_offset
    return [
        (key, base_offset + offset_delta)
        for _, _, offset_delta, _, key, _ in _native_walk(section, header)
        if key is not None
    ]


def retain(
    entry: Bytes,
    header: batch.BatchHeader,
    keep: Callable[[RecordKey], bool],
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
) -> bytes | None:
    """``entry`` with only the records for which ``keep(RecordKey)`` is true: the same bytes when it
    keeps all of them, None when it keeps none, otherwise a rebuilt batch (see the module doc)."""
    section = _records_section(entry, header, max_decompressed)
    spans = _spans(section, header)
    kept = [span for span in spans if keep(span.record)]
    if len(kept) == len(spans):
        return bytes(entry)
    if not kept:
        return None
    body = b"".join(section[span.start : span.end] for span in kept)
    if header.compression != Codec.NONE:
        body = compress(header.compression, body)
    max_timestamp = header.max_timestamp
    if header.timestamp_type == batch.TimestampType.CREATE_TIME:
        max_timestamp = max(span.record.timestamp for span in kept)
    rebuilt = bytearray(
        batch.HEADER.pack(
            *header._replace(
                batch_length=batch.HEADER_SIZE - batch.LOG_OVERHEAD + len(body),
                crc=0,
                max_timestamp=max_timestamp,
                records_count=len(kept),
            )
        )
    )
    rebuilt += body
    struct.pack_into(">I", rebuilt, batch.MAGIC_OFFSET + 1, batch.compute_crc(rebuilt))
    return bytes(rebuilt)


def _records_section(entry: Bytes, header: batch.BatchHeader, max_decompressed: int) -> bytes:
    section: Bytes = memoryview(entry)[batch.HEADER_SIZE : header.size]
    if header.compression != Codec.NONE:
        section = decompress(header.compression, section, max_decompressed)
    return bytes(section)


def _spans(section: bytes, header: batch.BatchHeader) -> list[_Span]:
    """Each record's byte range in the records section and its ``RecordKey``."""
    if _native_spans is None:
        return _python_spans(section, header)
    found = _native_walk(section, header)
    base_offset, base_timestamp = header.base_offset, header.base_timestamp
    if header.timestamp_type == batch.TimestampType.LOG_APPEND_TIME:
        return [
            _Span(start, end, RecordKey(base_offset + offset_delta, key, tombstone, header.max_timestamp))
            for start, end, offset_delta, _, key, tombstone in found
        ]
    return [
        _Span(start, end, RecordKey(base_offset + offset_delta, key, tombstone, base_timestamp + timestamp_delta))
        for start, end, offset_delta, timestamp_delta, key, tombstone in found
    ]


def _native_walk(section: bytes, header: batch.BatchHeader) -> list[_NativeSpan]:
    """``_recordwalk.spans`` of the section, or CorruptRecordError naming the bad record."""
    assert _native_spans is not None
    found = _native_spans(section, header.records_count)
    if isinstance(found, tuple):
        fault = record_walk.RecordWalkError.at(*found)
        raise CorruptRecordError(f"batch at offset {header.base_offset}: {fault}")
    return found


def _python_spans(section: bytes, header: batch.BatchHeader) -> list[_Span]:
    """``_spans`` with ``record_walk``."""
    spans = []
    log_append_time = header.timestamp_type == batch.TimestampType.LOG_APPEND_TIME
    try:
        for index, record in enumerate(record_walk.walk(section, header.records_count)):
            if not _INT64_MIN <= record.timestamp_delta <= _INT64_MAX:
                raise record_walk.RecordWalkError.at(index, "its timestamp delta is invalid")
            if not 0 <= record.offset_delta <= _INT32_MAX:
                raise record_walk.RecordWalkError.at(index, "its offset delta is invalid")
            timestamp = header.max_timestamp if log_append_time else header.base_timestamp + record.timestamp_delta
            spans.append(
                _Span(
                    record.start,
                    record.end,
                    RecordKey(header.base_offset + record.offset_delta, record.key, record.value is None, timestamp),
                )
            )
    except record_walk.RecordWalkError as exc:
        raise CorruptRecordError(f"batch at offset {header.base_offset}: {exc}") from None
    return spans
