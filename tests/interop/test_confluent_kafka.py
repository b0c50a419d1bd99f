"""confluent-kafka (librdkafka) against the kafkalog broker, unmodified client, default protocol path.

Covers, comparing every consumed record field by field (partition, offset, key, value, headers,
timestamp) with what was produced:

* produce with acks 0, 1 and all, then consume everything back with ``assign()``;
* the idempotent producer (several batches in flight; no duplicates, order kept, sequences stored);
* every codec (none, gzip, snappy, lz4, zstd), checking in the broker's ``.log`` files
  (``kafkalog dump-log --json``) that the stored batches really used the codec;
* null and empty keys and values, headers (with a null header value and repeated keys), explicit
  partitions;
* ``assign()`` from earliest, from latest (then only new records arrive) and from explicit offsets in
  the middle of a stored batch (plain and compressed);
* ``offsets_for_times`` before, at, between and after the records' timestamps, and the admin
  ``list_offsets`` (earliest, latest, for a timestamp);
* AdminClient: create (partitions and a config), list and describe, delete, re-create, and the
  errors for an existing topic, replication factor 3, invalid names, zero partitions and unknown or
  invalid config; ``describe_configs`` (values, sources, synonyms, errors);
* records at and over the broker's ``message.max.bytes`` (the broker, not the client, enforces it);
* the consumer's default ``isolation.level`` (read_committed) and the default
  ``api.version.request`` negotiation (features that need it: headers, zstd, idempotence);
* also: LogAppendTime topics, records larger than the fetch limits, positions past the end (each
  ``auto.offset.reset``), a parked fetch woken by a produce, batches written by kafka-python with
  every codec, and an idempotent producer and a consumer carrying on across a clean and a crashed
  broker restart.

Every test also fails if the broker logged a warning or an error meanwhile (it does so for each
connection it closes on a bad request). The broker has no group coordinator, so consumers use
``assign()`` and never commit.
"""

import json
import logging
import time
from typing import NamedTuple

import pytest
from confluent_kafka import (OFFSET_BEGINNING, OFFSET_END, TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Consumer,
                             KafkaError, KafkaException, Producer, TopicCollection, TopicPartition)
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic, OffsetSpec, ResourceType
from kafka import KafkaProducer

from .common import (CODECS, PARTITIONS, Rec, assert_no_duplicates, assert_same_records, assert_sequences_continuous,
                     broker_log_checked, compressible_records, deadline, expired, make_records, now_ms, stored_batches,
                     topic_configs, topic_name, with_offsets)

CLIENT = "confluent"
FLUSH_SECONDS = 20


# -- helpers ---------------------------------------------------------------------------------


@pytest.fixture
def topic(request):
    return topic_name(request, CLIENT)


@pytest.fixture(autouse=True)
def no_broker_warnings(broker):
    with broker_log_checked(broker):
        yield


def make_producer(bootstrap: str, **conf) -> Producer:
    settings = {"bootstrap.servers": bootstrap, "linger.ms": 5, "message.timeout.ms": 15000}
    settings.update(conf)
    return Producer(settings)


def make_consumer(bootstrap: str, topic: str, **conf) -> Consumer:
    settings = {"bootstrap.servers": bootstrap, "group.id": f"interop-{topic}", "enable.auto.commit": False,
                "enable.auto.offset.store": False, "auto.offset.reset": "error", "fetch.wait.max.ms": 100}
    settings.update(conf)
    return Consumer(settings)


class Delivery(NamedTuple):
    error: KafkaError | None
    partition: int
    offset: int | None
    timestamp: tuple


def produce(producer: Producer, topic: str, records: list[Rec]) -> list[Delivery]:
    """Produce ``records`` (explicit partitions, timestamps if given), flush, and return the
    delivery reports in produce order."""
    reports = [None] * len(records)

    def reporter(index):
        def on_delivery(err, msg):
            reports[index] = Delivery(err, msg.partition(), msg.offset(), msg.timestamp())
        return on_delivery

    for index, rec in enumerate(records):
        producer.produce(topic, value=rec.value, key=rec.key, partition=rec.partition,
                         headers=list(rec.headers) if rec.headers else None,
                         timestamp=rec.timestamp or 0, on_delivery=reporter(index))
        producer.poll(0)
    assert producer.flush(FLUSH_SECONDS) == 0, "messages still undelivered after flush"
    assert None not in reports, "a delivery report is missing"
    return reports


def produce_all(bootstrap: str, topic: str, records: list[Rec], **conf) -> list[Delivery]:
    producer = make_producer(bootstrap, **conf)
    try:
        reports = produce(producer, topic, records)
    finally:
        producer.close()
    errors = [r for r in reports if r.error is not None]
    assert not errors, f"delivery failed: {errors[:3]}"
    return reports


def to_rec(msg, timestamp_type: int = TIMESTAMP_CREATE_TIME) -> Rec:
    ts_type, ts = msg.timestamp()
    assert ts_type == timestamp_type, f"timestamp type {ts_type}"
    return Rec(msg.partition(), msg.offset(), msg.key(), msg.value(), tuple(msg.headers() or ()), ts)


def poll_records(consumer: Consumer, count: int, seconds: float = 20, grace: float = 0.3,
                 timestamp_type: int = TIMESTAMP_CREATE_TIME) -> list[Rec]:
    """Poll until ``count`` records arrived (failing after ``seconds``), then ``grace`` seconds more
    to catch anything unexpected."""
    got = []
    until = deadline(seconds)
    while len(got) < count and not expired(until):
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            raise KafkaException(msg.error())
        got.append(to_rec(msg, timestamp_type))
    assert len(got) >= count, f"only {len(got)} of {count} records arrived within {seconds}s"
    until = deadline(grace)
    while not expired(until):
        msg = consumer.poll(0.05)
        if msg is not None:
            if msg.error():
                raise KafkaException(msg.error())
            got.append(to_rec(msg, timestamp_type))
    return got


def consume(bootstrap: str, topic: str, assignments, count: int, timestamp_type: int = TIMESTAMP_CREATE_TIME,
            **conf) -> list[Rec]:
    consumer = make_consumer(bootstrap, topic, **conf)
    try:
        consumer.assign([TopicPartition(topic, p, o) for p, o in assignments])
        return poll_records(consumer, count, timestamp_type=timestamp_type)
    finally:
        consumer.close()


def consume_all(bootstrap: str, topic: str, count: int, partitions=range(PARTITIONS), **conf) -> list[Rec]:
    return consume(bootstrap, topic, [(p, OFFSET_BEGINNING) for p in partitions], count, **conf)


# -- 1. acks ---------------------------------------------------------------------------------


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_produce_with_acks_then_consume_every_record(broker, topic, acks):
    records = with_offsets(make_records(200))  # small batches: many requests in a row (no responses for acks=0)
    reports = produce_all(broker.bootstrap, topic, records, acks=acks, **{"batch.num.messages": 10})
    if acks == "0":
        assert all(r.offset is None or r.offset < 0 for r in reports), "acks=0 cannot know offsets"
    else:
        assert [(r.partition, r.offset) for r in reports] == [(r.partition, r.offset) for r in records]
    got = consume_all(broker.bootstrap, topic, len(records))
    assert_same_records(got, records)


def test_watermarks_match_the_records_produced(broker, topic):
    records = with_offsets(make_records(22, partitions=(0, 1, 2)))
    produce_all(broker.bootstrap, topic, records)
    consumer = make_consumer(broker.bootstrap, topic)
    try:
        for partition in range(PARTITIONS):
            expected_high = sum(1 for r in records if r.partition == partition)
            assert consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10) == (0, expected_high)
    finally:
        consumer.close()


# -- 2. idempotence ----------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_idempotent_producer_stores_each_record_once_in_order(broker, topic):
    records = with_offsets(make_records(300, partitions=(0, 1)))
    produce_all(broker.bootstrap, topic, records, **{"enable.idempotence": True, "batch.num.messages": 20,
                                                     "linger.ms": 1, "max.in.flight.requests.per.connection": 5})
    got = consume_all(broker.bootstrap, topic, len(records), partitions=(0, 1))
    assert_no_duplicates(got)
    assert_same_records(got, records)
    for partition in (0, 1):
        assert_sequences_continuous(stored_batches(broker.log_dir, topic, partition))


# -- 3. codecs ---------------------------------------------------------------------------------


LZ4_NEEDS_FIND_COORDINATOR = pytest.mark.xfail(
    strict=True, reason="librdkafka enables LZ4 only when the broker lists FindCoordinator, a group API this "
                        "broker does not advertise until the group coordinator exists; it then sends lz4 "
                        "batches uncompressed (records intact). Remove this mark when group APIs land.")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("codec", [pytest.param(c, marks=LZ4_NEEDS_FIND_COORDINATOR) if c == "lz4" else c
                                   for c in CODECS])
def test_codec_round_trip_and_batches_stored_with_that_codec(broker, topic, codec):
    records = with_offsets(compressible_records(400, partition=0, base_timestamp=now_ms() - 60_000))
    produce_all(broker.bootstrap, topic, records, **{"compression.type": codec, "linger.ms": 100})
    got = consume(broker.bootstrap, topic, [(0, OFFSET_BEGINNING)], len(records))
    assert_same_records(got, records)
    batches = stored_batches(broker.log_dir, topic, 0)
    assert sum(b["count"] for b in batches) == len(records)
    # librdkafka derives its "LZ4" feature from the ApiVersions table (it needs FindCoordinator to be
    # advertised); without it, it logs "Broker does not support compression type lz4: not
    # compressing batch" at debug level and silently sends lz4 batches uncompressed.
    assert {b["compression"] for b in batches} == {codec}, \
        f"librdkafka asked for {codec} but the broker stored {[b['compression'] for b in batches]}"


# -- 4. keys, values, headers, partitions --------------------------------------------------------


def edge_case_records(base_ts: int) -> list[Rec]:
    return with_offsets([
        Rec(3, None, None, b"null key", (), base_ts),
        Rec(2, None, b"null value", None, (), base_ts + 1),
        Rec(1, None, b"", b"", (), base_ts + 2),  # empty key and empty value
        Rec(0, None, None, None, (), base_ts + 3),  # both null
        Rec(0, None, b"k\x00\xff", b"\x00binary\xff" * 3, (("bin", b"\x00\x01\xff"),), base_ts + 4),
        Rec(1, None, b"hdrs", b"v", (("null", None), ("empty", b""), ("dup", b"1"), ("dup", b"2"),
                                     ("unicode-\u00e9", "\u00e9t\u00e9".encode())), base_ts + 5),
        Rec(3, None, "cl\u00e9".encode(), "val\u00fce".encode(), (), base_ts + 6),
        Rec(2, None, b"big", b"x" * 100_000, (("size", b"100000"),), base_ts + 7),
    ])


def test_null_and_empty_keys_values_headers_and_explicit_partitions(broker, topic):
    records = edge_case_records(now_ms() - 60_000)
    produce_all(broker.bootstrap, topic, records)
    got = consume_all(broker.bootstrap, topic, len(records))
    assert_same_records(got, records)


def test_records_produced_without_a_timestamp_get_the_producer_clock(broker, topic):
    before = now_ms()
    records = with_offsets(make_records(5, partitions=(1,), base_timestamp=None))
    produce_all(broker.bootstrap, topic, records)
    after = now_ms()
    got = consume_all(broker.bootstrap, topic, len(records), partitions=(1,))
    assert_same_records(got, records, compare_timestamps=False)
    assert all(before - 1000 <= r.timestamp <= after + 1000 for r in got), [r.timestamp for r in got]


# -- 5. assign() positions -----------------------------------------------------------------------


def test_assign_from_earliest_reads_one_partition_from_offset_zero(broker, topic):
    records = with_offsets(make_records(30))
    produce_all(broker.bootstrap, topic, records)
    got = consume(broker.bootstrap, topic, [(2, OFFSET_BEGINNING)], 30 // PARTITIONS)
    assert_same_records(got, [r for r in records if r.partition == 2])


def wait_until_fetching(consumer: Consumer, stats: dict, topic: str, partitions, seconds: float = 15) -> None:
    """Poll until librdkafka's statistics show every partition fetching (its start offset resolved)."""
    until = deadline(seconds)
    while not expired(until):
        msg = consumer.poll(0.05)
        assert msg is None or msg.error() is not None, f"unexpected record before new ones were produced: {msg}"
        states = stats.get("topics", {}).get(topic, {}).get("partitions", {})
        if all(states.get(str(p), {}).get("fetch_state") == "active" for p in partitions):
            return
    raise AssertionError(f"partitions not fetching within {seconds}s: {stats.get('topics', {}).get(topic)}")


def test_assign_from_latest_sees_only_records_produced_afterwards(broker, topic):
    old = with_offsets(make_records(20, tag="old"))
    produce_all(broker.bootstrap, topic, old)
    stats = {}
    consumer = make_consumer(broker.bootstrap, topic, **{"statistics.interval.ms": 50,
                                                         "stats_cb": lambda s: stats.update(json.loads(s))})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_END) for p in range(PARTITIONS)])
        wait_until_fetching(consumer, stats, topic, range(PARTITIONS))
        new = with_offsets(make_records(12, tag="new"), start={p: 5 for p in range(PARTITIONS)})
        produce_all(broker.bootstrap, topic, new)
        got = poll_records(consumer, len(new), grace=0.5)
    finally:
        consumer.close()
    assert_same_records(got, new)


def test_a_waiting_fetch_returns_as_soon_as_records_arrive(broker, topic):
    """With fetch.wait.max.ms=5000 the broker parks the fetch; a produce must wake it at once."""
    stats = {}
    producer = make_producer(broker.bootstrap, **{"linger.ms": 0})
    producer.list_topics(topic, timeout=10)  # creates the topic (librdkafka consumers do not auto-create)
    consumer = make_consumer(broker.bootstrap, topic, **{"fetch.wait.max.ms": 5000, "statistics.interval.ms": 50,
                                                         "auto.offset.reset": "latest",
                                                         "stats_cb": lambda s: stats.update(json.loads(s))})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_END) for p in range(PARTITIONS)])
        wait_until_fetching(consumer, stats, topic, range(PARTITIONS))
        assert consumer.poll(0.5) is None  # a fetch is now waiting on the broker
        for partition in (3, 0):
            record = with_offsets([Rec(partition, None, b"k", b"wake up", (), now_ms())])
            started = time.monotonic()
            produce(producer, topic, record)
            got = poll_records(consumer, 1, seconds=10, grace=0)
            assert time.monotonic() - started < 2.5, "the waiting fetch was not woken by the produce"
            assert_same_records(got, record)
    finally:
        producer.close()
        consumer.close()


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_assign_at_offsets_inside_a_stored_batch(broker, topic, codec):
    records = with_offsets(make_records(50, partitions=(0,)))
    produce_all(broker.bootstrap, topic, records, **{"linger.ms": 200, "compression.type": codec})
    batches = stored_batches(broker.log_dir, topic, 0)
    for offset in (1, 17, 49):
        containing = [b for b in batches if b["baseOffset"] <= offset <= b["lastOffset"]]
        assert containing, f"offset {offset} not stored"
        if offset == 17:
            assert containing[0]["baseOffset"] < 17 < containing[0]["lastOffset"], \
                f"offset 17 should be mid-batch; batches: {[(b['baseOffset'], b['lastOffset']) for b in batches]}"
        got = consume(broker.bootstrap, topic, [(0, offset)], len(records) - offset)
        assert_same_records(got, records[offset:])


def test_assign_at_the_end_offset_then_receives_new_records(broker, topic):
    first = with_offsets(make_records(6, partitions=(3,)))
    produce_all(broker.bootstrap, topic, first)
    consumer = make_consumer(broker.bootstrap, topic)
    try:
        consumer.assign([TopicPartition(topic, 3, 6)])
        assert consumer.poll(0.5) is None
        second = with_offsets(make_records(4, partitions=(3,), tag="second"), start={3: 6})
        produce_all(broker.bootstrap, topic, second)
        got = poll_records(consumer, len(second))
    finally:
        consumer.close()
    assert_same_records(got, second)


# -- 6. offsets_for_times -----------------------------------------------------------------------


def test_offsets_for_times_before_at_between_and_after_the_records(broker, topic):
    base = now_ms() - 3_600_000
    records = with_offsets([r._replace(timestamp=base + i * 10_000)
                            for i, r in enumerate(make_records(20, partitions=(0,)))])
    produce_all(broker.bootstrap, topic, records, **{"batch.num.messages": 6})
    lookups = {
        base - 1_000_000: 0,  # before the first record: the first offset
        base: 0,
        base + 50_000: 5,  # exactly record 5's timestamp
        base + 55_000: 6,  # between records 5 and 6: the next one
        base + 190_000: 19,  # the last record
        base + 190_001: -1,  # after the last record: librdkafka reports -1 (OFFSET_END)
    }
    consumer = make_consumer(broker.bootstrap, topic)
    try:
        for timestamp, expected in lookups.items():
            found = consumer.offsets_for_times([TopicPartition(topic, 0, timestamp)], timeout=10)
            assert found[0].error is None and found[0].offset == expected, (timestamp - base, found)
        empty = consumer.offsets_for_times([TopicPartition(topic, 1, base)], timeout=10)
        assert empty[0].error is None and empty[0].offset == -1
        # the offset found is a usable position: consuming from it gives exactly the later records
        start = consumer.offsets_for_times([TopicPartition(topic, 0, base + 55_000)], timeout=10)[0]
        consumer.assign([start])
        got = poll_records(consumer, len(records) - 6)
    finally:
        consumer.close()
    assert_same_records(got, records[6:])


def test_admin_list_offsets_earliest_latest_and_for_timestamp(broker, topic):
    base = now_ms() - 3_600_000
    records = with_offsets([r._replace(timestamp=base + i * 10_000)
                            for i, r in enumerate(make_records(10, partitions=(0,)))])
    produce_all(broker.bootstrap, topic, records)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    tp = TopicPartition(topic, 0)
    specs = {"earliest": (OffsetSpec.earliest(), 0), "latest": (OffsetSpec.latest(), 10),
             "at record 3": (OffsetSpec.for_timestamp(base + 30_000), 3),
             "before record 4": (OffsetSpec.for_timestamp(base + 35_000), 4),
             "after the last": (OffsetSpec.for_timestamp(base + 100_000), -1)}
    for name, (spec, expected) in specs.items():
        info = admin.list_offsets({tp: spec}, request_timeout=15)[tp].result(timeout=20)
        assert info.offset == expected, (name, info)
        if name.startswith(("at", "before")):
            assert info.timestamp == base + expected * 10_000, (name, info)


# -- 7. admin -------------------------------------------------------------------------------


def admin_client(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def create(admin: AdminClient, new_topic: NewTopic, **kwargs):
    return admin.create_topics([new_topic], operation_timeout=10, request_timeout=15, **kwargs)[new_topic.topic] \
        .result(timeout=20)


def listed_topics(admin: AdminClient) -> dict:
    return admin.list_topics(timeout=10).topics


def test_admin_creates_lists_and_deletes_a_topic_with_config(broker, topic):
    admin = admin_client(broker.bootstrap)
    create(admin, NewTopic(topic, num_partitions=3, replication_factor=1, config={"retention.ms": "3600000"}))
    metadata = listed_topics(admin)[topic]
    assert metadata.error is None
    assert sorted(metadata.partitions) == [0, 1, 2]
    assert all(p.leader == 0 and p.replicas == [0] and p.isrs == [0] for p in metadata.partitions.values())
    described = admin.describe_topics(TopicCollection([topic]), request_timeout=15)[topic].result(timeout=20)
    assert described.name == topic and not described.is_internal
    assert [(p.id, p.leader.id, [r.id for r in p.replicas]) for p in described.partitions] == \
        [(0, 0, [0]), (1, 0, [0]), (2, 0, [0])]
    assert topic_configs(broker.log_dir, topic) == {"retention.ms": "3600000"}
    records = with_offsets(make_records(9, partitions=(0, 1, 2)))
    produce_all(broker.bootstrap, topic, records)
    assert_same_records(consume_all(broker.bootstrap, topic, 9, partitions=(0, 1, 2)), records)

    admin.delete_topics([topic], operation_timeout=10, request_timeout=15)[topic].result(timeout=20)
    assert topic not in listed_topics(admin)
    assert topic_configs(broker.log_dir, topic) is None

    # the same name again: a new, empty topic with its own partition count
    create(admin, NewTopic(topic, num_partitions=2, replication_factor=1))
    assert sorted(listed_topics(admin)[topic].partitions) == [0, 1]
    consumer = make_consumer(broker.bootstrap, topic)
    try:
        assert [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in (0, 1)] == [(0, 0)] * 2
    finally:
        consumer.close()


def test_admin_describe_configs_gives_values_sources_and_synonyms(broker, topic):
    admin = admin_client(broker.bootstrap)
    create(admin, NewTopic(topic, num_partitions=2, replication_factor=1, config={"retention.ms": "3600000"}))
    resource = ConfigResource(ResourceType.TOPIC, topic)
    configs = admin.describe_configs([resource], request_timeout=15)[resource].result(timeout=20)
    retention, segment = configs["retention.ms"], configs["segment.bytes"]
    assert (retention.value, retention.source, retention.is_default) == \
        ("3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value, False)
    assert (segment.value, segment.source, segment.is_default) == ("1073741824", ConfigSource.DEFAULT_CONFIG.value, True)
    assert all(c.is_read_only and not c.is_sensitive for c in configs.values())
    assert {name: s.source for name, s in retention.synonyms.items()} == {
        "retention.ms": ConfigSource.DYNAMIC_TOPIC_CONFIG.value, "log.retention.ms": ConfigSource.DEFAULT_CONFIG.value}

    missing = ConfigResource(ResourceType.TOPIC, topic + "-missing")
    with pytest.raises(KafkaException) as raised:
        admin.describe_configs([missing], request_timeout=15)[missing].result(timeout=20)
    assert raised.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    broker_resource = ConfigResource(ResourceType.BROKER, "0")
    with pytest.raises(KafkaException) as raised:
        admin.describe_configs([broker_resource], request_timeout=15)[broker_resource].result(timeout=20)
    assert raised.value.args[0].code() == KafkaError.INVALID_REQUEST


def test_admin_validate_only_does_not_create(broker, topic):
    admin = admin_client(broker.bootstrap)
    create(admin, NewTopic(topic, num_partitions=2, replication_factor=1), validate_only=True)
    assert topic not in listed_topics(admin)


@pytest.mark.parametrize("case, expected", [
    ("existing", KafkaError.TOPIC_ALREADY_EXISTS),
    ("replication-3", KafkaError.INVALID_REPLICATION_FACTOR),
    ("bad-name", KafkaError.TOPIC_EXCEPTION),
    ("name-too-long", KafkaError.TOPIC_EXCEPTION),
    ("zero-partitions", KafkaError.INVALID_PARTITIONS),
    ("unknown-config", KafkaError.INVALID_CONFIG),
    ("bad-config-value", KafkaError.INVALID_CONFIG),
])
def test_admin_create_topic_errors(broker, topic, case, expected):
    admin = admin_client(broker.bootstrap)
    name = topic
    new_topic = NewTopic(name, num_partitions=2, replication_factor=1)
    if case == "existing":
        create(admin, NewTopic(name, num_partitions=2, replication_factor=1))
    elif case == "replication-3":
        new_topic = NewTopic(name, num_partitions=2, replication_factor=3)
    elif case == "bad-name":
        name = "bad name with spaces!"
        new_topic = NewTopic(name, num_partitions=2, replication_factor=1)
    elif case == "name-too-long":
        name = "x" * 250
        new_topic = NewTopic(name, num_partitions=2, replication_factor=1)
    elif case == "zero-partitions":
        new_topic = NewTopic(name, num_partitions=0, replication_factor=1)
    elif case == "unknown-config":
        new_topic = NewTopic(name, num_partitions=2, replication_factor=1, config={"no.such.config": "1"})
    elif case == "bad-config-value":
        new_topic = NewTopic(name, num_partitions=2, replication_factor=1, config={"retention.ms": "soon"})
    with pytest.raises(KafkaException) as raised:
        create(admin, new_topic)
    assert raised.value.args[0].code() == expected, raised.value.args[0]
    if case != "existing":
        assert name not in listed_topics(admin)


def test_admin_delete_unknown_topic_fails_with_unknown_topic(broker, topic):
    admin = admin_client(broker.bootstrap)
    future = admin.delete_topics([topic], operation_timeout=10, request_timeout=15)[topic]
    with pytest.raises(KafkaException) as raised:
        future.result(timeout=20)
    assert raised.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


# -- 8. message.max.bytes -------------------------------------------------------------------------

BROKER_LIMIT = 20_000
# One uncompressed record with a null key and no headers in a batch of its own: 61 bytes of batch
# header (12 of them offset and size) + 11 bytes of record framing (for values of this size) + value.
BATCH_OVERHEAD = 72


@pytest.mark.timeout(120)
def test_message_max_bytes_is_enforced_by_the_broker_and_nothing_else_is_lost(start_broker, topic):
    small_broker = start_broker({"message.max.bytes": str(BROKER_LIMIT)})
    producer = make_producer(small_broker.bootstrap, **{"message.max.bytes": 1_000_000, "linger.ms": 0,
                                                        "compression.type": "none", "acks": "all"})
    base = now_ms() - 60_000
    at_limit = Rec(0, None, None, b"a" * (BROKER_LIMIT - BATCH_OVERHEAD), (), base + 1)
    over_limit = Rec(0, None, None, b"o" * (BROKER_LIMIT - BATCH_OVERHEAD + 1), (), base + 2)
    sent = [Rec(0, None, b"before", b"small", (("h", b"1"),), base), at_limit, over_limit,
            Rec(0, None, b"after", b"small", (), base + 3)]
    try:
        reports = [produce(producer, topic, [rec])[0] for rec in sent]  # one request each
    finally:
        producer.close()
    errors = [r.error.code() if r.error else None for r in reports]
    assert errors == [None, None, KafkaError.MSG_SIZE_TOO_LARGE, None], [str(r.error) for r in reports]
    assert "Broker:" in str(reports[2].error), f"expected the broker's error, got {reports[2].error}"
    expected = with_offsets([sent[0], at_limit, sent[3]])
    assert [r.offset for r in reports if r.offset is not None and r.offset >= 0] == [0, 1, 2]
    got = consume(small_broker.bootstrap, topic, [(0, OFFSET_BEGINNING)], len(expected))
    assert_same_records(got, expected)
    sizes = [b["size"] for b in stored_batches(small_broker.log_dir, topic, 0)]
    assert sizes[1] == BROKER_LIMIT, f"the at-limit batch should be exactly {BROKER_LIMIT} bytes: {sizes}"


# -- confluent specifics: isolation level, ApiVersions negotiation ------------------------------------


@pytest.mark.parametrize("isolation", [None, "read_committed", "read_uncommitted"])
def test_consumer_isolation_levels_including_the_read_committed_default(broker, topic, isolation):
    records = with_offsets(make_records(16))
    produce_all(broker.bootstrap, topic, records)
    conf = {} if isolation is None else {"isolation.level": isolation}
    got = consume_all(broker.bootstrap, topic, len(records), **conf)
    assert_same_records(got, records)


class _Captured(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def test_api_version_request_negotiates_the_features_it_needs(broker, topic):
    """``api.version.request=true`` is librdkafka's default: ApiVersions must succeed and enable
    MsgVer2 (headers), idempotence and zstd; the records then round-trip."""
    captured = _Captured()
    logger = logging.getLogger(f"interop.{topic}")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(captured)
    records = with_offsets(compressible_records(200, partition=1, base_timestamp=now_ms() - 60_000))
    try:
        produce_all(broker.bootstrap, topic, records,
                    **{"api.version.request": True, "compression.type": "zstd", "enable.idempotence": True,
                       "linger.ms": 50, "debug": "feature", "logger": logger})
    finally:
        logger.removeHandler(captured)
    log = "\n".join(captured.lines)
    for feature in ("ApiVersion", "MsgVer2", "ZSTD", "IdempotentProducer"):
        assert f"Enabling feature {feature}" in log, f"librdkafka did not enable {feature}"
    assert {(b["magic"], b["compression"]) for b in stored_batches(broker.log_dir, topic, 1)} == {(2, "zstd")}
    assert_same_records(consume_all(broker.bootstrap, topic, len(records), partitions=(1,)), records)


def test_producer_and_consumer_fetch_metadata_for_an_auto_created_topic(broker, topic):
    producer = make_producer(broker.bootstrap)
    try:
        metadata = producer.list_topics(topic, timeout=10)
    finally:
        producer.close()
    assert metadata.controller_id == 0 and list(metadata.brokers) == [0]
    assert metadata.brokers[0].host == "127.0.0.1" and f":{metadata.brokers[0].port}" in broker.bootstrap
    assert sorted(metadata.topics[topic].partitions) == list(range(PARTITIONS))
    assert metadata.cluster_id


# -- more: LogAppendTime topics, fetch limits, out-of-range positions, other clients' codecs ------------


def test_log_append_time_topic_stamps_records_with_the_broker_clock(broker, topic):
    admin = admin_client(broker.bootstrap)
    create(admin, NewTopic(topic, num_partitions=1, replication_factor=1,
                           config={"message.timestamp.type": "LogAppendTime"}))
    records = with_offsets(compressible_records(100, partition=0, base_timestamp=1_000_000))
    before = now_ms()
    reports = produce_all(broker.bootstrap, topic, records, **{"compression.type": "gzip", "linger.ms": 50})
    after = now_ms()
    got = consume(broker.bootstrap, topic, [(0, OFFSET_BEGINNING)], len(records),
                  timestamp_type=TIMESTAMP_LOG_APPEND_TIME, **{"check.crcs": True})
    assert_same_records(got, records, compare_timestamps=False)
    assert all(before <= r.timestamp <= after for r in got), "not the broker's append time"
    assert [r.timestamp for r in reports] == [(TIMESTAMP_LOG_APPEND_TIME, r.timestamp) for r in got], \
        "the produce response's log_append_time differs from the stored timestamps"


def test_records_larger_than_the_fetch_limits_still_arrive(broker, topic):
    base = now_ms() - 60_000
    records = with_offsets([rec for p in range(PARTITIONS)
                            for rec in (Rec(p, None, b"big", bytes([65 + p]) * 60_000, (), base),
                                        Rec(p, None, b"small", b"s", (), base + 1))])
    produce_all(broker.bootstrap, topic, records, **{"linger.ms": 0})
    got = consume_all(broker.bootstrap, topic, len(records), **{"max.partition.fetch.bytes": 1024,
                                                               "fetch.max.bytes": 2048,
                                                               "message.max.bytes": 1000})
    assert_same_records(got, records)


@pytest.mark.parametrize("reset", ["earliest", "latest", "error"])
def test_position_past_the_end_is_out_of_range(broker, topic, reset):
    records = with_offsets(make_records(6, partitions=(2,)))
    produce_all(broker.bootstrap, topic, records)
    consumer = make_consumer(broker.bootstrap, topic, **{"auto.offset.reset": reset})
    try:
        consumer.assign([TopicPartition(topic, 2, 1000)])
        if reset == "earliest":
            assert_same_records(poll_records(consumer, len(records)), records)
        elif reset == "latest":
            assert consumer.poll(1.0) is None
            later = with_offsets(make_records(2, partitions=(2,), tag="later"), start={2: 6})
            produce_all(broker.bootstrap, topic, later)
            assert_same_records(poll_records(consumer, len(later)), later)
        else:
            until = deadline(10)
            msg = None
            while (msg is None or msg.error() is None) and not expired(until):
                msg = consumer.poll(0.2)
            assert msg is not None and msg.error() is not None, "no error for an out-of-range position"
            assert msg.error().code() == KafkaError._AUTO_OFFSET_RESET, msg.error()
            assert "out of range" in msg.error().str().lower(), msg.error()
    finally:
        consumer.close()


@pytest.mark.parametrize("codec", CODECS)
def test_consumes_batches_that_kafka_python_wrote_with_each_codec(broker, topic, codec):
    """librdkafka must read every codec, including lz4 it will not write to this broker."""
    records = with_offsets(compressible_records(200, partition=3, base_timestamp=now_ms() - 60_000))
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, compression_type=None if codec == "none" else codec,
                             linger_ms=50, batch_size=64 * 1024, max_block_ms=15000)
    try:
        futures = [producer.send(topic, value=r.value, key=r.key, headers=list(r.headers), partition=r.partition,
                                 timestamp_ms=r.timestamp) for r in records]
        producer.flush(timeout=20)
        assert [f.get(timeout=20).offset for f in futures] == [r.offset for r in records]
    finally:
        producer.close(timeout=10)
    assert {b["compression"] for b in stored_batches(broker.log_dir, topic, 3)} == {codec}
    got = consume(broker.bootstrap, topic, [(3, OFFSET_BEGINNING)], len(records), **{"check.crcs": True})
    assert_same_records(got, records)


# -- broker restarts -------------------------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["clean", "crash"])
def test_idempotent_producer_and_consumer_carry_on_across_a_broker_restart(start_broker, topic, how):
    restarting = start_broker({"num.partitions": "2"})
    first = with_offsets(make_records(10, partitions=(0, 1), tag="first"))
    second = with_offsets(make_records(10, partitions=(0, 1), tag="second"), start={0: 5, 1: 5})
    producer = make_producer(restarting.bootstrap, **{"enable.idempotence": True, "linger.ms": 0})
    consumer = make_consumer(restarting.bootstrap, topic)
    try:
        assert all(r.error is None for r in produce(producer, topic, first))
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in (0, 1)])
        got_first = poll_records(consumer, len(first), grace=0)
        if how == "clean":
            assert restarting.stop() == 0
        else:
            restarting.kill()
        restarting.start()
        assert all(r.error is None for r in produce(producer, topic, second))
        got_second = poll_records(consumer, len(second))
    finally:
        producer.close()
        consumer.close()
    assert_same_records(got_first, first)
    assert_same_records(got_second, second)
    for partition in (0, 1):
        assert_sequences_continuous(stored_batches(restarting.log_dir, topic, partition))
