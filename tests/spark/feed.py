"""Helpers of the kafkalog read tests: produce known records, read them back with Spark, compare.

* ``Msg`` is what a test asks to produce (partition, key, value, timestamp, headers); ``Rec`` is a
  record as stored and as read (topic, partition, offset, key, value, timestamp in epoch ms,
  timestamp type, headers or None), so produced and read records compare as plain tuples.
* ``produce`` (confluent-kafka) and ``produce_kp`` (kafka-python) send ``Msg``es with explicit
  partitions and timestamps, wait for every acknowledgement (bounded) and return the ``Rec``s with
  the offsets the broker assigned.
* ``load`` builds ``spark.read.format("kafkalog")`` with options; ``rows`` collects a DataFrame as
  sorted ``Rec``s (timestamps through ``unix_millis``, so no time zone is involved);
  ``assert_rows`` compares with a readable difference.
* ``stored_entries`` lists the batches (or legacy entries) a partition holds, as the broker
  serves them, to check batch boundaries; ``log_start`` / ``log_end`` ask ListOffsets.
"""

import hashlib
import re
import time
from typing import NamedTuple

from pyspark.sql import functions as F

from broker.client import EARLIEST, LATEST, KafkaClient
from broker.records import record_set

FLUSH_SECONDS = 20
LONG_LINGER_MS = 5000  # below message.timeout.ms, as librdkafka requires
CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP_TYPE = 0, 1, -1


class Msg(NamedTuple):
    partition: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple | None = None  # ((str, bytes | None), ...) or None for no headers


class Rec(NamedTuple):
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    timestamp_type: int
    headers: tuple | None


def base_time() -> int:
    """A recent whole second, in epoch ms (an hour ago: far from the default retention of 7 days)."""
    return (int(time.time()) - 3600) * 1000


def topic_name(request, suffix: str = "") -> str:
    """A distinct legal topic name per test (and parameter), from the test's node name."""
    name = re.sub(r"[^a-zA-Z0-9._-]+", "_", request.node.name + suffix).strip("_")
    return name[-180:]


def messages(
    count: int, partitions=(0,), base_ts: int | None = None, tag: str = "m", headers: bool = True, value_size: int = 0
) -> list[Msg]:
    """``count`` messages round-robin over ``partitions`` with distinct keys and values and
    timestamps ``base_ts + 1000 * i``; every third has no headers, one in five a null key,
    one in seven an empty value, the rest a repeated header key and a null header value."""
    base_ts = base_time() if base_ts is None else base_ts
    out = []
    for i in range(count):
        key = None if i % 5 == 4 else f"{tag}-key-{i}".encode()
        value = b"" if i % 7 == 6 else (f"{tag}-value-{i}-".encode() + _filler(f"{tag}{i}", value_size))
        hdrs = None
        if headers and i % 3:
            hdrs = (("h", f"{i}".encode()), ("h", b"again"), ("nothing", None)) if i % 3 == 1 else (("k", b"v"),)
        out.append(Msg(partitions[i % len(partitions)], key, value, base_ts + 1000 * i, hdrs))
    return out


def _filler(seed: str, size: int) -> bytes:
    """``size`` bytes of hex digits that compress to about half (so compressed batches stay large)."""
    digest = hashlib.sha256(seed.encode()).hexdigest().encode()
    out = bytearray()
    while len(out) < size:
        digest = hashlib.sha256(digest).hexdigest().encode()
        out += digest
    return bytes(out[:size])


def _rec(topic: str, msg: Msg, offset: int, timestamp_type: int = CREATE_TIME) -> Rec:
    return Rec(topic, msg.partition, offset, msg.key, msg.value, msg.timestamp, timestamp_type, msg.headers)


def produce(bootstrap: str, topic: str, msgs: list[Msg], flush_every: int | None = None, **conf) -> list[Rec]:
    """Produce with confluent-kafka; ``flush_every`` = N flushes after every N messages (so each
    group becomes its own batch). Returns the stored records with their offsets.

    With ``flush_every`` the linger is long, so only a flush sends: a short linger on a loaded
    machine lets the producer send a group in several batches. The topic's metadata is fetched
    first: librdkafka re-queues records produced before it knows the topic one at a time, and a
    flush running meanwhile sends each as a batch of its own."""
    from confluent_kafka import Producer

    settings = {
        "bootstrap.servers": bootstrap,
        "linger.ms": LONG_LINGER_MS if flush_every else 20,
        "message.timeout.ms": 15000,
        "batch.num.messages": 100000,
    }
    settings.update(conf)
    producer = Producer(settings)
    reports: list = [None] * len(msgs)

    def reporter(index):
        def on_delivery(err, msg):
            reports[index] = (err, msg.offset())

        return on_delivery

    if flush_every:  # see ConfluentProducer in tests/interop/client_confluent.py
        assert producer.list_topics(topic, timeout=FLUSH_SECONDS).topics[topic].partitions, "topic has no partitions"
    try:
        for index, msg in enumerate(msgs):
            producer.produce(
                topic,
                key=msg.key,
                value=msg.value,
                partition=msg.partition,
                timestamp=msg.timestamp,
                headers=list(msg.headers) if msg.headers else None,
                on_delivery=reporter(index),
            )
            producer.poll(0)
            if flush_every and (index + 1) % flush_every == 0:
                assert producer.flush(FLUSH_SECONDS) == 0, "messages undelivered after flush"
        assert producer.flush(FLUSH_SECONDS) == 0, "messages undelivered after flush"
    finally:
        producer.flush(1)
    errors = [r for r in reports if r is None or r[0] is not None]
    assert not errors, f"delivery failed: {errors[:3]}"
    return [_rec(topic, msg, offset) for msg, (_, offset) in zip(msgs, reports, strict=True)]


def produce_kp(bootstrap: str, topic: str, msgs: list[Msg], flush_every: int | None = None, **conf) -> list[Rec]:
    """Produce with kafka-python (same contract as ``produce``; kafka-python cannot send a null
    header value, so those are sent, and returned, as empty values)."""
    from kafka import KafkaProducer

    msgs = [
        m._replace(headers=tuple((k, b"" if v is None else v) for k, v in m.headers)) if m.headers else m for m in msgs
    ]

    settings = {
        "bootstrap_servers": bootstrap,
        "linger_ms": LONG_LINGER_MS if flush_every else 20,
        "request_timeout_ms": 15000,
        "max_block_ms": 15000,
        "batch_size": 1 << 20,
    }
    settings.update(conf)
    producer = KafkaProducer(**settings)
    futures = []
    try:
        for index, msg in enumerate(msgs):
            futures.append(
                producer.send(
                    topic,
                    key=msg.key,
                    value=msg.value,
                    partition=msg.partition,
                    timestamp_ms=msg.timestamp,
                    headers=list(msg.headers or ()),
                )
            )
            if flush_every and (index + 1) % flush_every == 0:
                producer.flush(FLUSH_SECONDS)
        producer.flush(FLUSH_SECONDS)
        offsets = [future.get(timeout=FLUSH_SECONDS).offset for future in futures]
    finally:
        producer.close(timeout=5)
    return [_rec(topic, msg, offset) for msg, offset in zip(msgs, offsets, strict=True)]


def create_topic(bootstrap: str, topic: str, partitions: int, config: dict | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1, config=config or {})], operation_timeout=10)
    futures[topic].result(timeout=20)


def delete_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([topic], operation_timeout=10)[topic].result(timeout=20)


def load(spark, bootstrap: str, options: dict | None = None, **kw):
    """``spark.read.format("kafkalog")`` with the bootstrap servers, ``options`` and keyword options."""
    reader = spark.read.format("kafkalog").option("kafka.bootstrap.servers", bootstrap)
    for key, value in {**(options or {}), **kw}.items():
        reader = reader.option(key, value)
    return reader.load()


def _headers(value) -> tuple | None:
    if value is None:
        return None
    return tuple((h["key"], None if h["value"] is None else bytes(h["value"])) for h in value)


def _bytes(value):
    return None if value is None else bytes(value)


def rows(df) -> list[Rec]:
    """The DataFrame's rows as sorted ``Rec``s (headers None when the column is absent)."""
    with_headers = "headers" in df.columns
    columns = [
        F.col("key"),
        F.col("value"),
        F.col("topic"),
        F.col("partition"),
        F.col("offset"),
        F.unix_millis(F.col("timestamp")).alias("ts_ms"),
        F.col("timestampType"),
    ]
    if with_headers:
        columns.append(F.col("headers"))
    out = [
        Rec(
            r["topic"],
            r["partition"],
            r["offset"],
            _bytes(r["key"]),
            _bytes(r["value"]),
            r["ts_ms"],
            r["timestampType"],
            _headers(r["headers"]) if with_headers else None,
        )
        for r in df.select(*columns).collect()
    ]
    return sorted(out, key=sort_key)


def sort_key(rec: Rec):
    return rec.topic, rec.partition, rec.offset


def without_headers(recs) -> list[Rec]:
    return [rec._replace(headers=None) for rec in recs]


def assert_rows(actual: list[Rec], expected, limit: int = 5) -> None:
    """Compare read records with expected ones, as sorted lists; show what is missing or extra."""
    expected = sorted(expected, key=sort_key)
    actual = sorted(actual, key=sort_key)
    if actual == expected:
        return
    missing = [r for r in expected if r not in actual]
    extra = [r for r in actual if r not in expected]
    raise AssertionError(
        f"read {len(actual)} records, expected {len(expected)}; "
        f"missing {len(missing)} e.g. {missing[:limit]}; unexpected {len(extra)} e.g. {extra[:limit]}"
    )


def in_range(recs, topic: str, partition: int, start: int, end: int) -> list[Rec]:
    return [r for r in recs if r.topic == topic and r.partition == partition and start <= r.offset < end]


def client(bootstrap: str) -> KafkaClient:
    return KafkaClient(bootstrap, timeout=10, retries=2, retry_backoff_ms=100)


def log_start(bootstrap: str, topic: str, partition: int) -> int:
    with client(bootstrap) as c:
        return c.list_offsets({(topic, partition): EARLIEST})[(topic, partition)][0]


def log_end(bootstrap: str, topic: str, partition: int) -> int:
    with client(bootstrap) as c:
        return c.list_offsets({(topic, partition): LATEST})[(topic, partition)][0]


class Entry(NamedTuple):
    first: int
    last: int
    codec: int
    size: int
    magic: int


def stored_entries(bootstrap: str, topic: str, partition: int) -> list[Entry]:
    """Every entry (v2 batch or legacy message) the partition holds, in order, as served by Fetch."""
    out = []
    with client(bootstrap) as c:
        offset, end = (
            c.list_offsets({(topic, partition): EARLIEST})[(topic, partition)][0],
            c.list_offsets({(topic, partition): LATEST})[(topic, partition)][0],
        )
        while offset < end:
            fetched = c.fetch(topic, partition, offset, 1 << 20)
            entries = list(record_set.iter_entries(fetched.records))
            assert entries, f"no entry fetched at {topic}-{partition}@{offset}"
            for pos, header in entries:
                decoded = record_set.decode_entry(fetched.records[pos : pos + header.size])
                first = decoded.records[0].offset if decoded.records else decoded.base_offset
                if header.last_offset >= offset:
                    out.append(Entry(first, header.last_offset, int(header.compression), header.size, header.magic))
                offset = max(offset, header.last_offset + 1)
    return out


def leaders(bootstrap: str, topic: str) -> dict:
    """partition -> the id of its leader, as a third-party client sees them."""
    from confluent_kafka import Producer

    probe = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
    metadata = probe.list_topics(topic, timeout=10)
    return {p: m.leader for p, m in metadata.topics[topic].partitions.items()}


MOCK_PARTITIONS = 4  # librdkafka's mock cluster auto-creates topics with 4 partitions


def topic_led_by_several_brokers(bootstrap: str, prefix: str) -> tuple[str, dict]:
    """Auto-create topics ``<prefix>-0``, ``-1``, ... on librdkafka's mock cluster (by asking for
    their metadata) until one has its partitions led by at least two brokers (the mock picks each
    leader at random, so 4 partitions all land on one of 3 brokers 1 time in 27); the topic and its
    leaders."""
    for attempt in range(10):
        topic = f"{prefix}-{attempt}"
        led_by = leaders(bootstrap, topic)
        assert sorted(led_by) == list(range(MOCK_PARTITIONS)), led_by
        if len(set(led_by.values())) >= 2:
            return topic, led_by
    raise AssertionError(f"ten topics on the mock cluster all had a single leader: {led_by}")
