"""Kafka record bytes → ``pyarrow.RecordBatch``, typed exactly as the ``kafkalog`` source's schema.

``decode(data, topic, partition, start, end, include_headers)`` takes the records bytes of one
fetched partition (consecutive v2 batches and/or legacy magic 0/1 entries, possibly ending with a
partial entry) and returns one RecordBatch holding every record whose offset is in
``[start, end)``, with the schema ``arrow_schema(include_headers)``::

    key binary, value binary, topic string, partition int32, offset int64,
    timestamp timestamp[us, UTC], timestampType int32[, headers list<struct<key string, value binary>>]

which equals ``pyspark.sql.pandas.types.to_arrow_schema(<the Spark schema>, timezone="UTC")`` (the
check Spark makes on a data source's first RecordBatch). Every field is nullable, as in Spark.

Two implementations give identical results (the tests compare them on random and corrupt input):

* the C fast path (``spark_kafka_source._fastdecode``): Python walks the entries, checks each v2
  batch's CRC-32C and decompresses it, then C parses the records and appends them
  to Arrow column buffers accumulated across all batches of the call; the buffers become arrays
  through ``pa.Array.from_buffers`` without a copy. Legacy entries (rare) are decoded by
  ``broker.records.legacy`` and appended record by record.
* the pure-Python path: ``broker.records.batch.validate`` and ``record_set.decode_entry`` for
  every entry, then ``pa.array`` over lists.

``native=None`` picks C when the extension imported, ``True`` requires it (ImportError otherwise),
``False`` forces Python.

Semantics (both paths):

* Entries are processed in order until one takes the position to ``end`` or beyond; later entries
  are left alone. A trailing partial entry is ignored (normal at the end of a fetch response).
* Every processed entry is validated (v2: size, CRC-32C, codec; legacy: CRC-32). Its records are
  decoded unless the entry cannot hold a record in ``[start, end)`` (it ends before ``start``, or
  a v2 batch begins at or after ``end``) or the ``read_filter`` (``broker.records.committed``)
  drops it: a control batch always, an aborted transaction's batch under read_committed (skipped
  entirely, but counted). Every processed entry goes through the filter, in order, so a filter
  carried from one fetch of a partition to the next keeps its state.
* Records outside ``[start, end)`` are dropped, also inside a batch: a batch may begin before
  ``start``, and the last one may extend past ``end`` (the result stops exactly at ``end``).
* ``next_offset`` = 1 + the last offset of the last complete entry processed, never below
  ``start`` (nor below an earlier entry's: it never goes back); ``start`` when no entry is
  complete. ``complete_entries`` counts processed entries, control batches included.
* Timestamps: Kafka epoch milliseconds x 1000 as ``timestamp[us, UTC]``. LogAppendTime batches
  report the batch's maxTimestamp for every record. Magic-0 messages have no timestamp: Kafka
  reports -1 ms, which becomes 1969-12-31T23:59:59.999Z (what Spark's Kafka source shows: it
  converts the -1 with ``new java.sql.Timestamp(-1)``). A kept record whose timestamp does not fit
  ``timestamp[us]`` (|ms| > 9223372036854775, e.g. a producer that wrote nanoseconds) raises
  CorruptRecordError, where Spark's own source fails with an ArithmeticException.
* ``timestampType`` is Kafka's id: -1 none (magic 0), 0 CreateTime, 1 LogAppendTime.
* Null keys / values are Arrow nulls; empty ones are empty binaries.
* ``headers`` (only with ``include_headers``): the record's headers in order, as structs with a
  UTF-8 string key (invalid UTF-8 replaced by U+FFFD, as ``broker.records`` does) and a binary
  value (null when null). **A record without headers gets a null list**, not an empty one: that is
  what Spark's own Kafka source gives (``KafkaRecordToRowConverter`` returns ``null`` when
  ``cr.headers`` is empty; see docs/spark/batch.md for the schema). Legacy messages have
  no headers, so they always get null.
* Malformed input (bad sizes, CRCs, codecs, varints, truncated records, out-of-range timestamps)
  raises ``broker.records.errors.CorruptRecordError`` naming the entry's position in ``data`` and
  its offset. A column that would exceed 2 GiB of data (Arrow's int32 offsets) raises
  OverflowError: decode smaller ranges.

The headers list type names its child field ``element``, as pyspark's ``to_arrow_schema`` does;
``pa.list_(struct)`` (child ``item``) compares equal to it (pyarrow >= 11 ignores list child names
in ``equals``), so either spelling passes Spark's check.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import pyarrow as pa

from broker.records import batch as v2
from broker.records import legacy, record_set
from broker.records.committed import ReadFilter
from broker.records.compression import Codec, decompress
from broker.records.errors import CorruptRecordError

try:
    from . import _fastdecode  # the C extension (its types: _fastdecode.pyi)
except ImportError:  # the optional extension did not build: the pure-Python path still works
    _fastdecode = None  # type: ignore[assignment]  # every use checks native_available() first

__all__ = ["HEADERS_TYPE", "Decoded", "arrow_schema", "decode", "native_available"]

HEADER_STRUCT = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
HEADERS_TYPE = pa.list_(pa.field("element", HEADER_STRUCT))
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")

_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", TIMESTAMP_TYPE),
    pa.field("timestampType", pa.int32()),
]
_SCHEMAS = {
    False: pa.schema(_FIELDS),
    True: pa.schema(_FIELDS + [pa.field("headers", HEADERS_TYPE)]),
}

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
TS_MS_MAX = INT64_MAX // 1000  # 9223372036854775: the largest |ms| whose microseconds fit int64
TS_MS_MIN = -TS_MS_MAX
_MAX_COLUMN_BYTES = INT32_MAX
# what malformed input raises inside the walk (the C parser's DecodeError is mapped)
_DECODE_ERRORS = (CorruptRecordError,) + ((_fastdecode.DecodeError,) if _fastdecode else ())


def arrow_schema(include_headers: bool) -> pa.Schema:
    """The Arrow schema of every RecordBatch ``decode`` returns (all fields nullable)."""
    return _SCHEMAS[bool(include_headers)]


def native_available() -> bool:
    """True if the C extension imported (``decode(native=None)`` then uses it)."""
    return _fastdecode is not None


class Decoded(NamedTuple):
    batch: pa.RecordBatch | None  # None when no record fell in [start, end)
    next_offset: int  # 1 + last offset of the last complete entry processed (or start)
    complete_entries: int  # complete entries processed, control batches included


def decode(
    data: bytes | memoryview,
    topic: str,
    partition: int,
    start: int,
    end: int,
    include_headers: bool,
    native: bool | None = None,
    check_crcs: bool = True,
    read_filter: ReadFilter | None = None,
) -> Decoded:
    """Decode the records bytes of one fetched partition; keep offsets in ``[start, end)``.

    ``check_crcs=False`` skips the CRC of each entry (Kafka's consumer setting ``check.crcs``);
    sizes, codecs and every record are still checked. ``read_filter`` is the partition's filter
    (with the fetch's aborted transactions added); by default control batches only are dropped.
    """
    if native is None:
        native = _fastdecode is not None
    elif native and _fastdecode is None:
        raise ImportError(
            "spark_kafka_source._fastdecode is not built (native=True); "
            "reinstall with a C compiler, or pass native=None / False"
        )
    if not isinstance(topic, str):
        raise TypeError(f"topic must be a str, not {type(topic).__name__}")
    partition, start, end = operator.index(partition), operator.index(start), operator.index(end)
    for name, value, low, high in (
        ("partition", partition, INT32_MIN, INT32_MAX),
        ("start", start, INT64_MIN, INT64_MAX),
        ("end", end, INT64_MIN, INT64_MAX),
    ):
        if not low <= value <= high:
            raise ValueError(f"{name} must be in [{low}, {high}], got {value}")
    include_headers = bool(include_headers)
    view = memoryview(data)
    if view.ndim != 1 or view.format != "B":
        view = view.cast("B")
    columns = _NativeColumns(include_headers) if native else _PythonColumns(include_headers)
    if read_filter is None:
        read_filter = ReadFilter(read_committed=False)
    next_offset, complete = _walk(view, columns, start, end, topic, partition, check_crcs, read_filter)
    return Decoded(columns.finish(topic, partition), next_offset, complete)


def _walk(
    view, columns, start: int, end: int, topic: str, partition: int, check_crcs: bool, read_filter: ReadFilter
) -> tuple[int, int]:
    """Feed every complete entry that is needed for [start, end) to ``columns``."""
    next_offset = start
    complete = 0
    if start >= end:
        return next_offset, complete
    pos = 0  # where the entry being parsed starts (for error messages)
    header = None
    try:
        for pos, header in record_set.iter_entries(view):
            entry = view[pos : pos + header.size]
            if check_crcs:
                header = record_set.validate_entry(entry)  # size, CRC-32C, codec
            else:
                _ = header.compression  # raises UnsupportedCodecError for codec ids 5-7
            complete += 1
            last = header.last_offset
            if read_filter.keeps(entry, header) and last >= start:
                if isinstance(header, v2.BatchHeader):  # magic 2
                    if header.base_offset < end:
                        columns.add_v2(entry, header, start, end)
                else:
                    columns.add_legacy(entry, header, start, end)
            if last + 1 > next_offset:
                next_offset = last + 1
            if next_offset >= end:
                break
            pos += header.size
            header = None
    except _DECODE_ERRORS as exc:
        raise _corrupt(exc, topic, partition, pos, header) from exc
    return next_offset, complete


def _corrupt(exc, topic: str, partition: int, pos: int, header) -> CorruptRecordError:
    """The error with where it happened; CorruptRecordError subclasses keep their type."""
    where = f"entry at position {pos}"
    if header is not None:
        first = header.base_offset if header.magic == v2.MAGIC else header.offset
        where += f" (offset {first}, magic {header.magic})"
    cls = type(exc) if isinstance(exc, CorruptRecordError) else CorruptRecordError
    return cls(f"{topic}-{partition}: {where}: {exc}")


def _check_timestamp(timestamp: int, offset: int) -> None:
    if not TS_MS_MIN <= timestamp <= TS_MS_MAX:
        if INT64_MIN <= timestamp <= INT64_MAX:
            raise CorruptRecordError(
                f"timestamp {timestamp} ms of the record at offset {offset} is outside the range of timestamp[us]"
            )
        raise CorruptRecordError(f"timestamp of the record at offset {offset} is beyond int64 milliseconds")


def _constant_columns(topic: str, partition: int, n: int) -> tuple[pa.Array, pa.Array]:
    return (pa.repeat(pa.scalar(topic, pa.string()), n), pa.repeat(pa.scalar(partition, pa.int32()), n))


# --- pure Python ----------------------------------------------------------------------------


class _PythonColumns:
    """Records as Python lists, turned into arrays with ``pa.array`` at the end."""

    def __init__(self, include_headers: bool) -> None:
        self.include_headers = include_headers
        self.keys: list = []
        self.values: list = []
        self.offsets: list = []
        self.timestamps: list = []
        self.timestamp_types: list = []
        self.headers: list = []
        self.key_bytes = 0
        self.value_bytes = 0

    def add_v2(self, entry, header, start: int, end: int) -> None:
        decoded = record_set.decode_entry(entry, verify_crc=False)  # already validated
        self._add(decoded.records, int(decoded.timestamp_type), start, end)

    def add_legacy(self, entry, header, start: int, end: int) -> None:
        decoded = record_set.decode_entry(entry, verify_crc=False)
        self._add(decoded.records, int(decoded.timestamp_type), start, end)

    def _add(self, records, timestamp_type: int, start: int, end: int) -> None:
        for record in records:
            offset = record.offset
            if start <= offset < end:
                _check_timestamp(record.timestamp, offset)
                key, value = record.key, record.value
                if key is not None:
                    self.key_bytes += len(key)
                if value is not None:
                    self.value_bytes += len(value)
                if self.key_bytes > _MAX_COLUMN_BYTES or self.value_bytes > _MAX_COLUMN_BYTES:
                    raise OverflowError("more than 2 GiB of data in one binary column: decode a smaller range")
                self.offsets.append(offset)
                self.timestamps.append(record.timestamp * 1000)
                self.timestamp_types.append(timestamp_type)
                self.keys.append(key)
                self.values.append(value)
                if self.include_headers:
                    self.headers.append(list(record.headers) if record.headers else None)

    def finish(self, topic: str, partition: int) -> pa.RecordBatch | None:
        n = len(self.offsets)
        if n == 0:
            return None
        topic_array, partition_array = _constant_columns(topic, partition, n)
        arrays = [
            pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()),
            topic_array,
            partition_array,
            pa.array(self.offsets, pa.int64()),
            pa.array(self.timestamps, TIMESTAMP_TYPE),
            pa.array(self.timestamp_types, pa.int32()),
        ]
        if self.include_headers:
            arrays.append(pa.array(self.headers, HEADERS_TYPE))
        return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(self.include_headers))


# --- C --------------------------------------------------------------------------------------


class _NativeColumns:
    """Column buffers filled by ``_fastdecode.Columns``; arrays built with ``from_buffers``."""

    def __init__(self, include_headers: bool) -> None:
        self.include_headers = include_headers
        self.columns = _fastdecode.Columns(include_headers)

    def add_v2(self, entry, header, start: int, end: int) -> None:
        # what batch.decode does before decode_records
        payload = entry[v2.HEADER_SIZE :]
        codec = header.compression
        if codec != Codec.NONE:
            payload = decompress(codec, payload)
        self.columns.add_v2(entry, payload, start, end)

    def add_legacy(self, entry, header, start: int, end: int) -> None:
        decoded = legacy.decode(entry, verify_crc=False)
        timestamp_type = int(decoded.timestamp_type)
        append = self.columns.append
        for record in decoded.records:
            if start <= record.offset < end:
                append(record.offset, record.timestamp, timestamp_type, record.key, record.value)

    def finish(self, topic: str, partition: int) -> pa.RecordBatch | None:
        parts = self.columns.finish()
        n = parts[0]
        if n == 0:
            return None
        (
            _,
            offsets,
            timestamps,
            timestamp_types,
            key_valid,
            key_nulls,
            key_offsets,
            key_data,
            value_valid,
            value_nulls,
            value_offsets,
            value_data,
        ) = parts[:12]
        buf = _buffer
        topic_array, partition_array = _constant_columns(topic, partition, n)
        arrays = [
            pa.Array.from_buffers(
                pa.binary(), n, [buf(key_valid), buf(key_offsets), buf(key_data)], null_count=key_nulls
            ),
            pa.Array.from_buffers(
                pa.binary(), n, [buf(value_valid), buf(value_offsets), buf(value_data)], null_count=value_nulls
            ),
            topic_array,
            partition_array,
            pa.Array.from_buffers(pa.int64(), n, [None, buf(offsets)], null_count=0),
            pa.Array.from_buffers(TIMESTAMP_TYPE, n, [None, buf(timestamps)], null_count=0),
            pa.Array.from_buffers(pa.int32(), n, [None, buf(timestamp_types)], null_count=0),
        ]
        if self.include_headers:
            (
                list_valid,
                list_nulls,
                list_offsets,
                h,
                hkey_offsets,
                hkey_data,
                hvalue_valid,
                hvalue_nulls,
                hvalue_offsets,
                hvalue_data,
            ) = parts[12:]
            header_keys = pa.Array.from_buffers(pa.string(), h, [None, buf(hkey_offsets), buf(hkey_data)], null_count=0)
            header_values = pa.Array.from_buffers(
                pa.binary(), h, [buf(hvalue_valid), buf(hvalue_offsets), buf(hvalue_data)], null_count=hvalue_nulls
            )
            structs = pa.StructArray.from_arrays([header_keys, header_values], fields=list(HEADER_STRUCT))
            arrays.append(
                pa.Array.from_buffers(
                    HEADERS_TYPE, n, [buf(list_valid), buf(list_offsets)], null_count=list_nulls, children=[structs]
                )
            )
        return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(self.include_headers))


def _buffer(obj):
    return None if obj is None else pa.py_buffer(obj)
