"""spark_kafka_source.arrow_records: Kafka record bytes to Spark-typed Arrow RecordBatches.

* the schema equals pyspark's ``to_arrow_schema`` and passes Spark's own first-batch check (no JVM);
* the C and pure-Python paths give identical results (RecordBatch.equals, next_offset,
  complete_entries) on random fetches: every codec, control and LogAppendTime batches, offset
  gaps, legacy entries, trailing partial entries, windows cutting batches;
* both agree with an independent expectation built from ``record_set.iter_batches``;
* both raise CorruptRecordError, and only that, on the same corrupt inputs: random mutations,
  bad CRCs, CRC-valid garbage records (the C parser's bounds checks), varint edge cases.
"""

import os
import random
import struct
import subprocess
import sys
import zlib

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from broker.records import batch, record_set
from broker.records.batch import ControlType, Record, TimestampType
from broker.records.compression import Codec, compress
from broker.records.errors import CorruptRecordError, UnsupportedCodecError
from spark_kafka_source import arrow_records
from spark_kafka_source.arrow_records import HEADERS_TYPE, arrow_schema, decode

HAVE_NATIVE = arrow_records.native_available()
needs_native = pytest.mark.skipif(not HAVE_NATIVE, reason="the _fastdecode extension is not built")

TOPIC, PARTITION = "events", 7
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
TS_MS_MAX = 9223372036854775

PROPERTY = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
FUZZ = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --- helpers ----------------------------------------------------------------------------------


def decode_both(data, start, end, include_headers=True):
    """Decode with both paths, check they agree exactly, return the Python path's result."""
    py = decode(data, TOPIC, PARTITION, start, end, include_headers, native=False)
    if not HAVE_NATIVE:
        return py
    c = decode(data, TOPIC, PARTITION, start, end, include_headers, native=True)
    assert (c.next_offset, c.complete_entries) == (py.next_offset, py.complete_entries)
    assert (c.batch is None) == (py.batch is None)
    if py.batch is not None:
        assert py.batch.schema.equals(arrow_schema(include_headers))
        assert c.batch.schema.equals(arrow_schema(include_headers))
        c.batch.validate(full=True)
        py.batch.validate(full=True)
        assert c.batch.equals(py.batch)
        assert rows(c.batch) == rows(py.batch)
    return py


def outcome(data, start, end, include_headers, native):
    """``("ok", result)`` or ``("error", exception type)``; anything but CorruptRecordError fails."""
    try:
        return "ok", decode(data, TOPIC, PARTITION, start, end, include_headers, native=native)
    except CorruptRecordError as exc:
        assert f"{TOPIC}-{PARTITION}: entry at position" in str(exc)
        return "error", type(exc)


def assert_paths_agree(data, start, end, include_headers=True):
    """Both paths fail with CorruptRecordError, or both succeed with identical results."""
    py = outcome(data, start, end, include_headers, False)
    if not HAVE_NATIVE:
        return py
    c = outcome(data, start, end, include_headers, True)
    assert c[0] == py[0], (c, py)
    if py[0] == "ok":
        a, b = py[1], c[1]
        assert (a.next_offset, a.complete_entries) == (b.next_offset, b.complete_entries)
        assert (a.batch is None) == (b.batch is None)
        if a.batch is not None:
            b.batch.validate(full=True)
            assert a.batch.equals(b.batch)
    return py


def rows(result_batch):
    """A RecordBatch as plain columns, timestamps as int64 microseconds."""
    if result_batch is None:
        return None
    # (timestamp[us] to_pylist makes datetimes, which stop at year 9999; Kafka's do not)
    return {
        name: (column.cast(pa.int64()) if name == "timestamp" else column).to_pylist()
        for name, column in zip(result_batch.schema.names, result_batch.columns, strict=True)
    }


def expected(data, start, end, include_headers=True):
    """``(columns or None, next_offset, complete_entries)`` from ``record_set.iter_batches``."""
    cols = {name: [] for name in arrow_schema(include_headers).names}
    next_offset, complete = start, 0
    if start < end:
        for decoded in record_set.iter_batches(data):
            complete += 1
            if not decoded.is_control:
                for r in decoded.records:
                    if start <= r.offset < end:
                        cols["key"].append(r.key)
                        cols["value"].append(r.value)
                        cols["topic"].append(TOPIC)
                        cols["partition"].append(PARTITION)
                        cols["offset"].append(r.offset)
                        cols["timestamp"].append(r.timestamp * 1000)
                        cols["timestampType"].append(int(decoded.timestamp_type))
                        if include_headers:
                            cols["headers"].append([{"key": k, "value": v} for k, v in r.headers] or None)
            next_offset = max(next_offset, decoded.last_offset + 1)
            if next_offset >= end:
                break
    return (cols if cols["offset"] else None), next_offset, complete


def zigzag_varint(value: int, min_bytes: int = 1) -> bytes:
    """A zig-zag varint of any Python int (even beyond 64 bits), padded to ``min_bytes``."""
    raw = 2 * value if value >= 0 else -2 * value - 1
    out = bytearray()
    while True:
        out.append(raw & 0x7F)
        raw >>= 7
        if raw == 0 and len(out) >= min_bytes:
            break
        out[-1] |= 0x80
    return bytes(out)


def raw_record(
    ts_delta=0,
    offset_delta=0,
    key=b"k",
    value=b"v",
    headers=(),
    *,
    key_len=None,
    value_len=None,
    header_count=None,
    length=None,
    pad=1,
) -> bytes:
    """One v2 record with every field under control. ``headers``: (key bytes | None, value)."""

    def field(data, declared):
        if declared is None:
            declared = -1 if data is None else len(data)
        return zigzag_varint(declared, pad) + (data or b"")

    body = b"\x00" + zigzag_varint(ts_delta, pad) + zigzag_varint(offset_delta, pad)
    body += field(key, key_len) + field(value, value_len)
    body += zigzag_varint(len(headers) if header_count is None else header_count, pad)
    for hk, hv in headers:
        body += field(hk, None) + field(hv, None)
    return zigzag_varint(len(body) if length is None else length) + body


def raw_batch(
    payload: bytes,
    count: int,
    *,
    base_offset=0,
    last_offset_delta=None,
    base_timestamp=1_700_000_000_000,
    max_timestamp=1_700_000_000_000,
    codec=Codec.NONE,
    log_append=False,
    control=False,
) -> bytes:
    """A v2 batch around any records payload (compressed here if asked), with a valid CRC."""
    body = compress(codec, payload) if codec != Codec.NONE else payload
    attributes = int(codec) | (0x08 if log_append else 0) | (0x20 if control else 0)
    if last_offset_delta is None:
        last_offset_delta = max(count - 1, 0)
    out = bytearray(
        batch.HEADER.pack(
            base_offset,
            batch.HEADER_SIZE - batch.LOG_OVERHEAD + len(body),
            -1,
            2,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            -1,
            -1,
            -1,
            count,
        )
    )
    out += body
    struct.pack_into(">I", out, 17, batch.compute_crc(out))
    return bytes(out)


def legacy_set(magic, codec, messages) -> bytes:
    """A legacy message set from kafka-python; a compressed wrapper gets the last inner offset
    (which is how a broker stores it)."""
    builder = LegacyRecordBatchBuilder(magic, int(codec), batch_size=1 << 22)
    for offset, timestamp, key, value in messages:
        assert builder.append(offset, timestamp=timestamp, key=key, value=value) is not None
    built = bytearray(builder.build())
    if codec != Codec.NONE:
        struct.pack_into(">q", built, 0, messages[-1][0])
        struct.pack_into(">I", built, 12, zlib.crc32(built[16:]))
    return bytes(built)


def control_batch(offset: int) -> bytes:
    key, value = batch.control_record(ControlType.COMMIT)
    return batch.build(
        [Record(offset, 1_700_000_000_000, key, value)],
        base_offset=offset,
        is_control=True,
        is_transactional=True,
        producer_id=5,
        producer_epoch=0,
    )


# --- strategies -------------------------------------------------------------------------------

codecs = st.sampled_from(list(Codec))
large_bytes = st.integers(0, 2**32).map(lambda seed: random.Random(seed).randbytes(150 * 1024))
small_bytes = st.binary(max_size=300)
optional_bytes = st.one_of(st.none(), st.just(b""), small_bytes)
payload_bytes = st.integers(0, 39).flatmap(lambda n: large_bytes if n == 0 else optional_bytes)
timestamps = st.one_of(st.just(-1), st.just(0), st.integers(0, 2**42), st.integers(-TS_MS_MAX // 2, TS_MS_MAX // 2))
header_keys = st.one_of(st.text(max_size=12), st.sampled_from(["", "trace-id", "ключ", "鍵🔑"]))
headers = st.lists(st.tuples(header_keys, optional_bytes), max_size=3).map(tuple)


@st.composite
def entry_specs(draw, first_offset):
    """One entry of a fetch: ``(kind, bytes, next free offset)``."""
    kind = draw(st.sampled_from(["data"] * 6 + ["control", "log_append", "empty"]))
    if kind == "control":
        return kind, control_batch(first_offset), first_offset + 1
    base = first_offset
    if kind == "empty":  # what compaction leaves: no records, lastOffsetDelta kept
        last_delta = draw(st.integers(0, 3))
        data = raw_batch(b"", 0, base_offset=base, last_offset_delta=last_delta)
        return kind, data, base + last_delta + 1
    offsets, offset = [], base + draw(st.integers(0, 2))
    for _ in range(draw(st.integers(1, 6))):
        offsets.append(offset)
        offset += draw(st.sampled_from([1, 1, 1, 2, 5]))
    records = [Record(o, draw(timestamps), draw(payload_bytes), draw(payload_bytes), draw(headers)) for o in offsets]
    codec = draw(codecs)
    if kind == "log_append":
        append_time = draw(st.integers(0, 2**42))
        data = batch.build(
            records,
            base_offset=base,
            compression=codec,
            timestamp_type=TimestampType.LOG_APPEND_TIME,
            max_timestamp=append_time,
        )
    else:
        data = batch.build(records, base_offset=base, compression=codec)
    return kind, data, offsets[-1] + 1


LEGACY_CODECS = {0: [Codec.NONE, Codec.GZIP, Codec.SNAPPY], 1: [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4]}


@st.composite
def fetches(draw):
    """``(data, first offset, next free offset)``: entries with increasing offsets, maybe legacy
    entries first (a log from before an upgrade), maybe a trailing partial entry."""
    offset = draw(st.integers(0, 2**40))
    first = offset
    parts = []
    if draw(st.integers(0, 4)) == 0:
        magic = draw(st.sampled_from([0, 1]))
        codec = draw(st.sampled_from(LEGACY_CODECS[magic]))
        messages = []
        for _ in range(draw(st.integers(1, 4))):
            ts = draw(st.integers(0, 2**42)) if magic == 1 else -1
            messages.append((offset, ts, draw(optional_bytes), draw(optional_bytes)))
            offset += 1
        parts.append(legacy_set(magic, codec, messages))
    for _ in range(draw(st.integers(1, 5))):
        _, data, offset = draw(entry_specs(offset))
        parts.append(data)
    if draw(st.booleans()):
        _, tail, _ = draw(entry_specs(offset))
        parts.append(tail[: draw(st.integers(1, len(tail) - 1))])
    return b"".join(parts), first, offset


@st.composite
def fetch_and_window(draw):
    data, first, stop = draw(fetches())
    start = draw(st.integers(first - 2, stop + 1))
    end = draw(st.one_of(st.integers(start - 1, stop + 2), st.just(INT64_MAX)))
    return data, start, end


# --- schema -----------------------------------------------------------------------------------


def spark_schema(include_headers):
    from pyspark.sql.types import ArrayType, BinaryType, IntegerType, LongType, StringType, StructField, StructType
    from pyspark.sql.types import TimestampType as SparkTimestamp

    # "key binary, value binary, topic string, partition int, offset bigint, timestamp timestamp,
    #  timestampType int[, headers array<struct<key: string, value: binary>>]": the DDL parser
    # (_parse_datatype_string) needs a running JVM, so the same schema is spelt out here
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", SparkTimestamp()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(
            StructField(
                "headers", ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))
            )
        )
    return StructType(fields)


@pytest.mark.parametrize("include_headers", [False, True])
def test_schema_equals_pyspark_to_arrow_schema(include_headers):
    from pyspark.sql.pandas.types import to_arrow_schema

    spark = to_arrow_schema(spark_schema(include_headers), timezone="UTC")
    ours = arrow_schema(include_headers)
    assert ours.equals(spark)
    assert str(ours) == str(spark)  # the list child is named "element" on both sides
    assert [f.nullable for f in ours] == [True] * len(ours)
    assert ours.names == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"] + (
        ["headers"] if include_headers else []
    )
    assert ours.field("timestamp").type == pa.timestamp("us", tz="UTC")


def test_headers_type_equals_the_plain_list_spelling():
    plain = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
    assert HEADERS_TYPE == plain and HEADERS_TYPE.equals(plain)


@pytest.mark.parametrize("include_headers", [False, True])
@pytest.mark.parametrize("native", [False, pytest.param(True, marks=needs_native)])
def test_batches_pass_sparks_own_first_batch_check(include_headers, native):
    plan = pytest.importorskip("pyspark.sql.worker.plan_data_source_read")
    data = batch.build([Record(0, 1, b"k", b"v", (("h", b"x"),)), Record(1, 2, None, None)])
    result = decode(data, TOPIC, PARTITION, 0, 2, include_headers, native=native).batch
    out = list(plan.records_to_arrow_batches(iter([result]), 10_000, spark_schema(include_headers), None))
    assert out == [result]


# --- C and Python agree, and match the independent expectation --------------------------------


@given(fetch_and_window(), st.booleans())
@PROPERTY
def test_paths_identical_and_match_expectation(case, include_headers):
    data, start, end = case
    result = decode_both(data, start, end, include_headers)
    cols, next_offset, complete = expected(data, start, end, include_headers)
    assert (result.next_offset, result.complete_entries) == (next_offset, complete)
    assert rows(result.batch) == cols


@given(fetches(), st.data())
@settings(PROPERTY, max_examples=60)
def test_consecutive_calls_cover_every_record_once(fetch, data):
    """A reader loop (decode, continue at next_offset) sees every record exactly once, in order."""
    buf, first, stop = fetch
    start = first - 1
    end = data.draw(st.integers(first, stop + 2))
    seen = []
    offset = start
    view = memoryview(buf)
    cut = 0
    while offset < end:
        # re-fetch from `offset`: drop whole entries that end before it (as a broker would)
        entries = list(record_set.iter_entries(view))
        kept = [(p, h) for p, h in entries if h.last_offset >= offset]
        if not kept:
            break
        cut = kept[0][0]
        result = decode_both(view[cut:], offset, end)
        if result.batch is not None:
            seen.extend(result.batch.column("offset").to_pylist())
        if result.complete_entries == 0:
            break
        assert result.next_offset > offset
        offset = result.next_offset
    cols, _, _ = expected(buf, start, end)
    assert seen == (cols["offset"] if cols else [])


def test_window_cuts_batches_and_stops_at_end():
    records = [Record(o, 1_700_000_000_000 + o, b"k%d" % o, b"v%d" % o) for o in range(100, 110)]
    data = (
        batch.build(records[:4], base_offset=100)
        + control_batch(104)
        + batch.build(records[5:], base_offset=105, compression=Codec.LZ4)
        + batch.build([Record(110, 0, b"x", b"y")], base_offset=110)
    )
    result = decode_both(data, 102, 107)
    assert result.batch.column("offset").to_pylist() == [102, 103, 105, 106]
    assert result.batch.column("key").to_pylist() == [b"k102", b"k103", b"k105", b"k106"]
    # the third entry reached `end`: next_offset is 1 + its last offset, the fourth is left alone
    assert (result.next_offset, result.complete_entries) == (110, 3)
    assert result.batch.column("topic").to_pylist() == [TOPIC] * 4
    assert result.batch.column("partition").to_pylist() == [PARTITION] * 4
    assert result.batch.column("headers").to_pylist() == [None] * 4


def test_values_null_empty_and_large_and_headers():
    big = os.urandom(300_000)
    records = [
        Record(0, 5, None, b""),
        Record(1, 6, b"", None),
        Record(2, 7, b"k", big, (("a", b"1"), ("ünï", None), ("", b""))),
        Record(3, 8, None, None, ()),
    ]
    for codec in Codec:
        result = decode_both(batch.build(records, compression=codec), 0, 10)
        d = rows(result.batch)
        assert d["key"] == [None, b"", b"k", None]
        assert d["value"] == [b"", None, big, None]
        assert d["headers"] == [
            None,
            None,
            [{"key": "a", "value": b"1"}, {"key": "ünï", "value": None}, {"key": "", "value": b""}],
            None,
        ]
        assert rows(result.batch)["timestamp"] == [5000, 6000, 7000, 8000]
        assert d["timestampType"] == [0, 0, 0, 0]
        assert result.batch.column("key").null_count == 2


def test_without_headers_the_column_is_absent():
    result = decode_both(batch.build([Record(0, 5, b"k", b"v", (("h", b"x"),))]), 0, 1, include_headers=False)
    assert result.batch.schema.names[-1] == "timestampType"
    assert result.batch.num_columns == 7


def test_log_append_time_reports_max_timestamp():
    records = [Record(i, 1000 + i, b"k", b"v") for i in range(3)]
    data = batch.build(records, timestamp_type=TimestampType.LOG_APPEND_TIME, max_timestamp=1_700_000_000_123)
    result = decode_both(data, 0, 3)
    assert rows(result.batch)["timestamp"] == [1_700_000_000_123_000] * 3
    assert rows(result.batch)["timestampType"] == [1, 1, 1]


def test_invalid_utf8_header_keys_are_replaced_like_the_python_decoder():
    payload = raw_record(0, 0, b"k", b"v", [(b"ok\xff\xfe", b"1"), (b"\xed\xa0\x80", None), (b"caf\xc3\xa9", b"2")])
    result = decode_both(raw_batch(payload, 1), 0, 1)
    keys = [h["key"] for h in result.batch.column("headers").to_pylist()[0]]
    assert keys == ["ok\ufffd\ufffd", "\ufffd\ufffd\ufffd", "café"]


def test_timestamp_limits():
    ok = [Record(0, TS_MS_MAX, b"k", b"v"), Record(1, -TS_MS_MAX, b"k", b"v")]
    result = decode_both(batch.build(ok), 0, 2)
    assert rows(result.batch)["timestamp"] == [TS_MS_MAX * 1000, -TS_MS_MAX * 1000]
    for bad in (TS_MS_MAX + 1, -TS_MS_MAX - 1, 1_700_000_000_000_000_000):  # e.g. nanoseconds
        data = batch.build([Record(0, 0, b"k", b"v"), Record(1, bad, b"k", b"v")])
        assert assert_paths_agree(data, 0, 2)[0] == "error"
        # only kept records have to fit
        assert decode_both(data, 0, 1).batch.num_rows == 1
    data = batch.build(
        [Record(0, 0, b"k", b"v")], timestamp_type=TimestampType.LOG_APPEND_TIME, max_timestamp=INT64_MAX
    )
    assert assert_paths_agree(data, 0, 1)[0] == "error"


# --- legacy entries ---------------------------------------------------------------------------

LEGACY_MESSAGES = [
    (0, 1_600_000_000_000, b"key-0", b"value-0" * 30),
    (1, 1_600_000_000_500, None, b"value-1"),
    (2, 1_599_999_999_000, b"key-2", None),
    (3, 1_600_000_000_001, b"", b""),
]


@pytest.mark.parametrize(
    "magic, codec",
    [(m, c) for m in (0, 1) for c in LEGACY_CODECS[m]],
    ids=lambda v: str(v) if isinstance(v, int) else v.name.lower(),
)
def test_legacy_entries(magic, codec):
    shifted = [(o + 50, ts, k, v) for o, ts, k, v in LEGACY_MESSAGES]
    data = legacy_set(magic, codec, shifted)
    result = decode_both(data, 51, 100)
    d = rows(result.batch)
    assert d["offset"] == [51, 52, 53]
    assert d["key"] == [None, b"key-2", b""]
    assert d["value"] == [b"value-1", None, b""]
    if magic == 0:  # no timestamps: Kafka's -1 ms, type -1 (NO_TIMESTAMP_TYPE)
        assert d["timestamp"] == [-1000] * 3
        assert d["timestampType"] == [-1] * 3
    else:
        assert d["timestamp"] == [ts * 1000 for _, ts, _, _ in shifted[1:]]
        assert d["timestampType"] == [0] * 3
    assert d["headers"] == [None] * 3
    assert result.next_offset == 54
    assert result.complete_entries == (4 if codec == Codec.NONE else 1)
    assert rows(result.batch) == expected(data, 51, 100)[0]


def test_legacy_then_v2_in_one_fetch():
    data = legacy_set(1, Codec.GZIP, LEGACY_MESSAGES) + batch.build(
        [Record(4, 1_700_000_000_000, b"k4", b"v4", (("h", b"x"),))], base_offset=4
    )
    result = decode_both(data, 0, 5)
    assert result.batch.column("offset").to_pylist() == [0, 1, 2, 3, 4]
    assert result.batch.column("timestampType").to_pylist() == [0, 0, 0, 0, 0]
    assert result.batch.column("headers").to_pylist()[-1] == [{"key": "h", "value": b"x"}]


# --- next_offset and complete_entries ---------------------------------------------------------


def test_only_a_partial_batch():
    whole = batch.build([Record(10, 0, b"k", b"v" * 100)], base_offset=10)
    for cut in (1, 16, 30, 60, 61, len(whole) - 1):
        result = decode_both(whole[:cut], 10, 20)
        assert result == (None, 10, 0)
    assert decode_both(b"", 10, 20) == (None, 10, 0)


def test_control_batches_only():
    data = control_batch(7) + control_batch(8)
    assert decode_both(data, 7, 100) == (None, 9, 2)


def test_entries_before_start_are_counted_not_kept():
    data = batch.build([Record(0, 0, b"a", b"a")]) + batch.build([Record(1, 0, b"b", b"b")], base_offset=1)
    result = decode_both(data, 1, 5)
    assert result.batch.column("offset").to_pylist() == [1]
    assert (result.next_offset, result.complete_entries) == (2, 2)
    assert decode_both(data, 5, 10) == (None, 5, 2)  # never below start


def test_empty_window():
    data = batch.build([Record(0, 0, b"a", b"a")])
    assert decode_both(data, 3, 3) == (None, 3, 0)
    assert decode_both(data, 3, 1) == (None, 3, 0)


def test_gaps_in_offsets():
    data = batch.build([Record(5, 0, b"a", b"a"), Record(9, 0, b"b", b"b")], base_offset=3)
    result = decode_both(data, 0, 100)
    assert result.batch.column("offset").to_pylist() == [5, 9]
    assert result.next_offset == 10


def test_bytes_like_inputs():
    data = batch.build([Record(0, 0, b"a", b"a")])
    for native in [False, True] if HAVE_NATIVE else [False]:
        for buf in (data, bytearray(data), memoryview(data), memoryview(b"xx" + data)[2:]):
            assert decode(buf, TOPIC, PARTITION, 0, 1, True, native=native).batch.num_rows == 1


def test_native_selection(monkeypatch):
    data = batch.build([Record(0, 0, b"a", b"a")])
    used = []
    monkeypatch.setattr(arrow_records, "_NativeColumns", lambda h: used.append(h) or arrow_records._PythonColumns(h))
    decode(data, TOPIC, PARTITION, 0, 1, True)
    assert used == ([True] if HAVE_NATIVE else [])
    monkeypatch.setattr(arrow_records, "_fastdecode", None)
    with pytest.raises(ImportError):
        decode(data, TOPIC, PARTITION, 0, 1, True, native=True)
    assert decode(data, TOPIC, PARTITION, 0, 1, True).batch.num_rows == 1  # falls back


def test_bad_arguments():
    data = batch.build([Record(0, 0, b"a", b"a")])
    with pytest.raises(ValueError):
        decode(data, TOPIC, 2**31, 0, 1, True)
    with pytest.raises(ValueError):
        decode(data, TOPIC, 0, 0, 2**63, True)
    with pytest.raises(TypeError):
        decode(data, b"topic", 0, 0, 1, True)
    with pytest.raises(TypeError):
        decode(data, TOPIC, 0, 0.0, 1, True)


# --- corrupt input ----------------------------------------------------------------------------


def test_bad_crc_names_the_position_and_offset():
    good = batch.build([Record(40, 0, b"k", b"v")], base_offset=40)
    bad = bytearray(batch.build([Record(41, 0, b"k", b"value")], base_offset=41))
    bad[-2] ^= 0xFF
    data = good + bytes(bad)
    for native in [False, True] if HAVE_NATIVE else [False]:
        with pytest.raises(CorruptRecordError, match=rf"position {len(good)} \(offset 41.*CRC"):
            decode(data, TOPIC, PARTITION, 40, 50, True, native=native)
        # a window that stops before the corrupt batch never reads it
        assert decode(data, TOPIC, PARTITION, 40, 41, True, native=native).batch.num_rows == 1


def test_unknown_codec():
    data = raw_batch(raw_record(), 1)
    data = bytearray(data)
    data[22] |= 0x07  # codec id 7
    struct.pack_into(">I", data, 17, batch.compute_crc(data))
    for native in [False, True] if HAVE_NATIVE else [False]:
        with pytest.raises(UnsupportedCodecError):
            decode(bytes(data), TOPIC, PARTITION, 0, 1, True, native=native)


@pytest.mark.parametrize(
    "payload, count",
    [
        (raw_record()[:-1], 1),  # truncated record
        (raw_record() + raw_record(offset_delta=1), 3),  # more records declared than present
        (raw_record() + raw_record(offset_delta=1), 1),  # bytes left over
        (raw_record(), -1),  # negative count
        (raw_record(), 2**31 - 1),  # huge count
        (raw_record(length=200), 1),  # length overruns the batch
        (raw_record(length=-3), 1),
        (raw_record(key_len=50), 1),  # key overruns its record
        (raw_record(value_len=2), 1),
        (raw_record(header_count=-1), 1),
        (raw_record(header_count=5, headers=[(b"a", b"b")]), 1),
        (raw_record(headers=[(None, b"x")]), 1),  # null header key
        (raw_record(key=b"\x80" * 11, key_len=-1), 1),  # garbage where the key length said null
        (zigzag_varint(9) + b"\x00" + b"\x80" * 10 + b"\x00", 1),  # varint longer than 10 bytes
        (b"\x80", 1),
        (b"", 1),
        (b"\x00", 1),
        (b"\x02\x00", 1),
        (raw_record(key_len=2**64), 1),  # 10-byte length beyond int64: overrun
        (raw_record(length=2**70 - 2), 1),
    ],
)
@pytest.mark.parametrize("codec", [Codec.NONE, Codec.ZSTD])
def test_crc_valid_batches_with_malformed_records(payload, count, codec):
    data = raw_batch(payload, count, codec=codec)
    assert assert_paths_agree(data, 0, 10)[0] == "error"
    assert assert_paths_agree(data, 0, 10, include_headers=False)[0] == "error"
    if HAVE_NATIVE:  # both walk with the one record walker: the same words name the same record
        messages = []
        for native in (False, True):
            with pytest.raises(CorruptRecordError) as raised:
                decode(data, TOPIC, PARTITION, 0, 10, True, native=native)
            messages.append(str(raised.value))
        assert messages[0] == messages[1]
        assert " is invalid: " in messages[0]


@pytest.mark.parametrize(
    "payload, offsets, keys",
    [
        # any negative key length means null, like the Python decoder and Kafka's Java client
        (raw_record(key=None, key_len=-5), [0], [None]),
        (raw_record(key=None, key_len=-(2**64)), [0], [None]),  # 10-byte varint, beyond int64, odd
        (raw_record(pad=10), [0], [b"k"]),  # every varint padded to 10 bytes
        (raw_record(pad=9), [0], [b"k"]),
    ],
)
def test_unusual_but_valid_encodings(payload, offsets, keys):
    result = decode_both(raw_batch(payload, 1), 0, 10)
    assert result.batch.column("offset").to_pylist() == offsets
    assert result.batch.column("key").to_pylist() == keys


def test_deltas_use_exact_arithmetic_like_python_ints():
    """A delta beyond int64 (a 10-byte varint) can still land in range: both paths keep it."""
    payload = raw_record(ts_delta=2**63 + 5, offset_delta=2**63 + 3)
    data = raw_batch(payload, 1, base_offset=-(2**63), base_timestamp=-(2**63))
    # (the header puts the batch at -2**63, so the window must start there for it to be read)
    result = decode_both(data, INT64_MIN, 10)
    assert rows(result.batch)["offset"] == [3]
    assert rows(result.batch)["timestamp"] == [5000]
    # and out of range offsets are simply not kept
    data = raw_batch(raw_record(offset_delta=2**68), 1, base_offset=0)
    assert decode_both(data, 0, INT64_MAX).batch is None


@given(
    fetch_and_window(),
    st.lists(st.tuples(st.integers(0, 2**32), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(0, 3),
)
@FUZZ
def test_random_mutations(case, mutations, kind):
    data, start, end = case
    buf = bytearray(data)
    for where, value in mutations:
        i = where % len(buf)
        if kind == 0:
            buf[i] = value
        elif kind == 1:
            buf[i] ^= 1 << (value % 8)
        elif kind == 2:
            del buf[i : i + 1 + value % 16]
        else:
            buf[i:i] = bytes([value]) * (1 + value % 3)
        if not buf:
            buf = bytearray(b"\x00")
    assert_paths_agree(bytes(buf), start, end)


@st.composite
def crc_valid_garbage(draw):
    """A CRC-valid batch around a records payload that is mutated (or random) bytes."""
    records = [
        raw_record(
            draw(st.integers(-3, 3)),
            i,
            draw(optional_bytes),
            draw(optional_bytes),
            draw(
                st.lists(
                    st.tuples(st.one_of(st.none(), st.binary(max_size=8)), st.one_of(st.none(), st.binary(max_size=8))),
                    max_size=2,
                )
            ),
            pad=draw(st.sampled_from([1, 1, 1, 2, 10])),
        )
        for i in range(draw(st.integers(1, 4)))
    ]
    payload = bytearray(b"".join(records))
    for _ in range(draw(st.integers(0, 4))):
        action = draw(st.integers(0, 3))
        i = draw(st.integers(0, len(payload)))
        if action == 0 and i < len(payload):
            payload[i] = draw(st.integers(0, 255))
        elif action == 1:
            payload[i:i] = draw(
                st.sampled_from(
                    [
                        b"\x01",
                        b"\xff" * 9 + b"\x01",
                        b"\x7f",
                        b"\x80",
                        zigzag_varint(-1),
                        zigzag_varint(2**63),
                        zigzag_varint(-(2**70)),
                    ]
                )
            )
        elif action == 2:
            del payload[i : i + draw(st.integers(1, 4))]
        else:
            payload = bytearray(draw(st.binary(max_size=40)))
    count = len(records) + draw(st.sampled_from([0, 0, 0, -1, 1, -len(records) - 1]))
    codec = draw(st.sampled_from([Codec.NONE, Codec.NONE, Codec.LZ4]))
    return raw_batch(
        bytes(payload), count, codec=codec, log_append=draw(st.booleans()), base_offset=draw(st.integers(0, 3))
    )


@given(crc_valid_garbage(), st.integers(0, 4), st.booleans())
@settings(FUZZ, max_examples=800)
def test_crc_valid_garbage_records(data, start, include_headers):
    assert_paths_agree(data, start, 8, include_headers)


@given(st.binary(max_size=200))
@FUZZ
def test_random_bytes(data):
    assert_paths_agree(data, 0, 100)


@needs_native
@pytest.mark.slow  # starts a process
def test_native_parser_survives_heavy_fuzzing_in_a_subprocess():
    """Thousands of CRC-valid garbage batches through the C parser in a child process: a crash
    (rather than an exception) would show up as a signal exit here, not kill the test run."""
    script = r"""
import random, struct, sys
from broker.records import batch
from broker.records.batch import Record
from broker.records.errors import CorruptRecordError
from spark_kafka_source.arrow_records import decode
rng = random.Random(1234)
seeds = [batch.build([Record(i, i, rng.randbytes(rng.randrange(0, 20)) if rng.random() < .9 else None,
                             rng.randbytes(rng.randrange(0, 60)), (("h", b"x"),) if i % 2 else ())
                      for i in range(rng.randrange(1, 6))]) for _ in range(50)]
empty = rows = errors = 0
for n in range(30000):
    buf = bytearray(rng.choice(seeds))
    for _ in range(rng.randrange(1, 6)):
        i = rng.randrange(61, len(buf)) if len(buf) > 61 else 61
        op = rng.randrange(3)
        if op == 0 and i < len(buf): buf[i] = rng.randrange(256)
        elif op == 1: buf[i:i] = rng.randbytes(rng.randrange(1, 11))
        elif i < len(buf): del buf[i:i + rng.randrange(1, 5)]
    count = struct.unpack_from(">i", buf, 57)[0] + rng.choice([0, 0, 0, 1, -1])
    struct.pack_into(">ii", buf, 8, len(buf) - 12, -1)
    struct.pack_into(">i", buf, 57, count)
    struct.pack_into(">I", buf, 17, batch.compute_crc(buf))
    try:
        result = decode(bytes(buf), "t", 0, rng.randrange(0, 3), rng.choice([2, 6, 2**62]),
                        n % 2 == 0, native=True)
    except CorruptRecordError:
        errors += 1
    else:
        if result.batch is None:
            empty += 1
        else:
            result.batch.validate(full=True)
            rows += 1
print(empty, rows, errors)
"""
    proc = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    empty, rows, errors = map(int, proc.stdout.split())
    assert empty > 1000 and rows > 200 and errors > 10000  # every outcome well exercised


@pytest.mark.parametrize("native", [False, pytest.param(True, marks=needs_native)])
def test_check_crcs_false_skips_only_the_crc(native):
    """Kafka's consumer setting check.crcs=false: a wrong CRC is not checked, garbage still is."""
    good = batch.build([Record(0, 1_700_000_000_000, b"k", b"v")])
    bad_crc = bytearray(good)
    bad_crc[17] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        arrow_records.decode(bytes(bad_crc), "t", 0, 0, 10, False, native=native)
    decoded = arrow_records.decode(bytes(bad_crc), "t", 0, 0, 10, False, native=native, check_crcs=False)
    assert decoded.batch.column("value").to_pylist() == [b"v"]
    garbage = bytearray(good)
    garbage[61:] = b"\xff" * (len(good) - 61)
    with pytest.raises(CorruptRecordError):
        arrow_records.decode(bytes(garbage), "t", 0, 0, 10, False, native=native, check_crcs=False)
