"""Every codec and every record format the kafkalog source reads, compared row by row.

* v2 batches written by confluent-kafka with none/gzip/snappy/lz4/zstd and by kafka-python with
  gzip/snappy/lz4/zstd; the stored codec is checked too.
* LEGACY message sets (magic 0 and magic 1, uncompressed, gzip, snappy and lz4 wrappers, a
  LogAppendTime wrapper, and a segment mixing magic 0, 1 and 2), built with kafka-python's
  ``LegacyRecordBatchBuilder`` and written straight into a segment file (the broker up-converts
  legacy sets sent over Produce, so that is the only way to get legacy bytes on disk); a broker
  started on that log directory adopts the partitions. Magic 0 has no timestamp: Spark shows
  timestampType -1 and the timestamp -1 ms.
"""

import json
import os
import struct
import zlib

import pytest
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from broker.embedded import EmbeddedBroker
from broker.records import batch as v2

from .feed import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_TIMESTAMP_TYPE,
    Rec,
    assert_rows,
    base_time,
    create_topic,
    in_range,
    load,
    messages,
    produce,
    produce_kp,
    rows,
    stored_entries,
)

pytestmark = pytest.mark.timeout(120)

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@pytest.mark.parametrize(
    "producer, codec",
    [
        ("confluent", "none"),
        ("confluent", "gzip"),
        ("confluent", "snappy"),
        ("confluent", "lz4"),
        ("confluent", "zstd"),
        ("kafka-python", "gzip"),
        ("kafka-python", "snappy"),
        ("kafka-python", "lz4"),
        ("kafka-python", "zstd"),
    ],
)
def test_batches_of_every_codec_are_read_back_exactly(spark, broker, producer, codec):
    topic = f"codec-{producer}-{codec}"
    create_topic(broker.bootstrap, topic, 2)
    msgs = messages(40, partitions=(0, 1), tag=f"{producer}{codec}", value_size=120)
    if producer == "confluent":
        produced = produce(broker.bootstrap, topic, msgs, flush_every=8, **{"compression.codec": codec})
    else:
        produced = produce_kp(broker.bootstrap, topic, msgs, flush_every=8, compression_type=codec)
    codecs = {e.codec for p in (0, 1) for e in stored_entries(broker.bootstrap, topic, p)}
    assert codecs == {CODEC_IDS[codec]}
    assert_rows(rows(load(spark, broker.bootstrap, subscribe=topic, includeHeaders="true")), produced)


# -- legacy message sets written into a segment --------------------------------------------

LEGACY_CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3}


def legacy_plain(magic: int, offset: int, timestamp: int | None, key, value) -> bytes:
    builder = LegacyRecordBatchBuilder(magic, 0, 1 << 20)
    builder.append(offset, timestamp, key, value)
    return bytes(builder.build())


def legacy_wrapper(magic: int, codec: int, first: int, records: list, log_append_time: int | None = None) -> bytes:
    """A compressed wrapper holding ``records`` ((timestamp, key, value), ...) at offsets
    first.. first+n-1. Inner offsets are absolute in magic 0 and relative in magic 1; the wrapper's
    own offset is the last inner offset (kafka-python's builder writes 0 there, and timestamp 0:
    both are set as Kafka writes them, the CRC recomputed)."""
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    for index, (timestamp, key, value) in enumerate(records):
        builder.append(first + index if magic == 0 else index, timestamp, key, value)
    entry = bytearray(builder.build())
    struct.pack_into(">q", entry, 0, first + len(records) - 1)
    if magic == 1:
        if log_append_time is not None:
            entry[17] |= 0x08  # timestamp type bit: LogAppendTime
        struct.pack_into(
            ">q", entry, 18, log_append_time if log_append_time is not None else max(t for t, _, _ in records)
        )
        struct.pack_into(">I", entry, 12, zlib.crc32(bytes(entry[16:])))
    return bytes(entry)


def legacy_segment(topic: str, magic: int, codec: str, base_ts: int, log_append_time: int | None = None):
    """Entries for offsets 0..9: two plain messages, a wrapper of 4, one plain, a wrapper of 3
    (all plain for codec none). Returns (segment bytes, expected Recs)."""
    code = LEGACY_CODECS[codec]
    values = [
        (
            base_ts + 10 * i if magic == 1 else None,
            None if i == 3 else f"k{i}".encode(),
            None if i == 8 else b"" if i == 5 else f"{topic}-v{i}".encode(),
        )
        for i in range(10)
    ]
    groups = [[0], [1], [2, 3, 4, 5], [6], [7, 8, 9]]
    data = b""
    for group in groups:
        if len(group) == 1 or code == 0:
            data += b"".join(legacy_plain(magic, i, *values[i]) for i in group)
        else:
            data += legacy_wrapper(magic, code, group[0], [values[i] for i in group], log_append_time)
    expected = []
    for i, (timestamp, key, value) in enumerate(values):
        in_wrapper = code != 0 and 2 <= i <= 5 or code != 0 and i >= 7
        if magic == 0:
            ts, ts_type = -1, NO_TIMESTAMP_TYPE
        elif log_append_time is not None and in_wrapper:
            ts, ts_type = log_append_time, LOG_APPEND_TIME
        else:
            ts, ts_type = timestamp, CREATE_TIME
        expected.append(Rec(topic, 0, i, key, value, ts, ts_type, None))
    return data, expected


def mixed_segment(topic: str, base_ts: int):
    """Magic 0 (offsets 0-1), a magic 1 gzip wrapper (2-4), a v2 zstd batch with headers (5-7), a
    magic 1 plain message (8), as in a log written across client upgrades."""
    data = legacy_plain(0, 0, None, b"a", b"m0-0") + legacy_plain(0, 1, None, None, b"m0-1")
    data += legacy_wrapper(
        1, 1, 2, [(base_ts + 2, b"b", b"m1-2"), (base_ts + 3, b"c", None), (base_ts + 4, None, b"m1-4")]
    )
    records = [
        v2.Record(5, base_ts + 5, b"d", b"v2-5", (("h", b"1"),)),
        v2.Record(6, base_ts + 6, None, b"v2-6", ()),
        v2.Record(7, base_ts + 7, b"e", None, (("h", None), ("i", b""))),
    ]
    data += v2.build(records, base_offset=5, compression=4)
    data += legacy_plain(1, 8, base_ts + 8, b"f", b"m1-8")
    expected = [
        Rec(topic, 0, 0, b"a", b"m0-0", -1, -1, None),
        Rec(topic, 0, 1, None, b"m0-1", -1, -1, None),
        Rec(topic, 0, 2, b"b", b"m1-2", base_ts + 2, 0, None),
        Rec(topic, 0, 3, b"c", None, base_ts + 3, 0, None),
        Rec(topic, 0, 4, None, b"m1-4", base_ts + 4, 0, None),
        Rec(topic, 0, 5, b"d", b"v2-5", base_ts + 5, 0, (("h", b"1"),)),
        Rec(topic, 0, 6, None, b"v2-6", base_ts + 6, 0, None),
        Rec(topic, 0, 7, b"e", None, base_ts + 7, 0, (("h", None), ("i", b""))),
        Rec(topic, 0, 8, b"f", b"m1-8", base_ts + 8, 0, None),
    ]
    return data, expected


def compacted_segment(topic: str, base_ts: int):
    """v2 batches with offset gaps, as compaction leaves them: 0,1,2,5 | 8,10 (batch ends at 12) |
    gzip 13,14,17. The log end offset is 18."""

    def rec(offset):
        return v2.Record(offset, base_ts + offset, f"k{offset}".encode(), f"{topic}-{offset}".encode(), ())

    tail = bytearray(v2.build([rec(8), rec(10)], base_offset=8))
    struct.pack_into(">i", tail, 23, 4)  # lastOffsetDelta: the batch still spans 8-12
    struct.pack_into(">I", tail, 17, v2.compute_crc(tail))
    data = (
        v2.build([rec(o) for o in (0, 1, 2, 5)], base_offset=0)
        + bytes(tail)
        + v2.build([rec(o) for o in (13, 14, 17)], base_offset=13, compression=1)
    )
    expected = [
        Rec(topic, 0, o, f"k{o}".encode(), f"{topic}-{o}".encode(), base_ts + o, CREATE_TIME, None)
        for o in (0, 1, 2, 5, 8, 10, 13, 14, 17)
    ]
    return data, expected


LEGACY_VARIANTS = {
    "legacy-m0-none": (0, "none", None),
    "legacy-m0-gzip": (0, "gzip", None),
    "legacy-m0-snappy": (0, "snappy", None),
    "legacy-m1-none": (1, "none", None),
    "legacy-m1-gzip": (1, "gzip", None),
    "legacy-m1-snappy": (1, "snappy", None),
    "legacy-m1-lz4": (1, "lz4", None),
    "legacy-m1-gzip-logappend": (1, "gzip", "log-append"),
}


@pytest.fixture(scope="module")
def legacy_broker(tmp_path_factory):
    """A broker on a log directory whose partitions hold legacy message sets on disk."""
    log_dir = tmp_path_factory.mktemp("legacy") / "log"
    base_ts = base_time()
    expected = {}
    segments = {}
    for topic, (magic, codec, log_append) in LEGACY_VARIANTS.items():
        segments[topic], expected[topic] = legacy_segment(
            topic, magic, codec, base_ts, base_ts + 5000 if log_append else None
        )
    segments["legacy-mixed"], expected["legacy-mixed"] = mixed_segment("legacy-mixed", base_ts)
    segments["compacted"], expected["compacted"] = compacted_segment("compacted", base_ts)
    for topic, data in segments.items():
        os.makedirs(log_dir / f"{topic}-0")
        (log_dir / f"{topic}-0" / "00000000000000000000.log").write_bytes(data)
    process = EmbeddedBroker(log_dir).start()
    yield process, expected
    process.kill()


@pytest.mark.parametrize("topic", list(LEGACY_VARIANTS) + ["legacy-mixed"])
def test_legacy_message_sets_on_disk_are_read(spark, legacy_broker, topic):
    broker, expected = legacy_broker
    entries = stored_entries(broker.bootstrap, topic, 0)
    magic = LEGACY_VARIANTS.get(topic, (None,))[0]
    if magic is not None:
        assert {e.magic for e in entries} == {magic}, entries
    else:
        assert [e.magic for e in entries] == [0, 0, 1, 2, 1]
    df = load(spark, broker.bootstrap, subscribe=topic, includeHeaders="true")
    assert_rows(rows(df), expected[topic])


@pytest.mark.parametrize("topic", ["legacy-m0-gzip", "legacy-m1-snappy", "legacy-mixed"])
def test_legacy_read_starting_and_ending_inside_wrappers(spark, legacy_broker, topic):
    broker, expected = legacy_broker
    df = load(
        spark,
        broker.bootstrap,
        subscribe=topic,
        startingOffsets=json.dumps({topic: {"0": 3}}),
        endingOffsets=json.dumps({topic: {"0": 8}}),
        includeHeaders="true",
    )
    assert_rows(rows(df), in_range(expected[topic], topic, 0, 3, 8))


def test_legacy_partition_split_into_tasks(spark, legacy_broker):
    broker, expected = legacy_broker
    topic = "legacy-m1-gzip"
    df = load(spark, broker.bootstrap, subscribe=topic, maxRecordsPerPartition="3")
    assert df.rdd.getNumPartitions() == 4
    assert_rows(rows(df), expected[topic])


def test_offset_gaps_of_a_compacted_log(spark, legacy_broker):
    broker, expected = legacy_broker
    topic = "compacted"
    assert [(e.first, e.last) for e in stored_entries(broker.bootstrap, topic, 0)] == [(0, 5), (8, 12), (13, 17)]
    assert_rows(rows(load(spark, broker.bootstrap, subscribe=topic, includeHeaders="true")), expected[topic])
    for start, end in [(3, 5), (6, 9), (11, 13), (11, 18), (5, 14)]:
        df = load(
            spark,
            broker.bootstrap,
            subscribe=topic,
            startingOffsets=json.dumps({topic: {"0": start}}),
            endingOffsets=json.dumps({topic: {"0": end}}),
            includeHeaders="true",
        )
        assert_rows(rows(df), in_range(expected[topic], topic, 0, start, end))
    split = load(spark, broker.bootstrap, subscribe=topic, maxRecordsPerPartition="2", includeHeaders="true")
    assert split.rdd.getNumPartitions() == 9  # [0, 18) by offsets, not by records
    assert_rows(rows(split), expected[topic])
