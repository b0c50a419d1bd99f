"""kafka-python (3.x) against the kafkalog broker, unmodified client.

Covers, comparing every consumed record field by field (partition, offset, key, value, headers,
timestamp) with what was produced:

* produce with acks 0, 1 and all (-1), then consume everything back with ``assign()``;
* the idempotent producer, both kafka-python 3's default and ``enable_idempotence=True``
  explicitly (no duplicates, order kept, producer id and sequences stored);
* every codec (none, gzip, snappy, lz4, zstd), checking with ``kafkalog dump-log --json`` that the
  stored batches really used the codec;
* null and empty keys and values, headers (repeated keys, empty and binary values), explicit
  partitions (kafka-python refuses null header values and a record with both key and value null
  on the client side, so those are not sent);
* ``assign()`` from earliest, from latest (then only new records arrive) and from explicit offsets in
  the middle of a stored batch (plain and compressed);
* ``offsets_for_times`` (None after the last record), ``beginning_offsets`` and ``end_offsets``;
* KafkaAdminClient: create (partitions and a config), list and describe via metadata, delete,
  re-create, and the errors for an existing topic, replication factor 3, invalid names, zero
  partitions and unknown or invalid config; ``describe_configs`` and ``describe_log_dirs``;
* records at and over the broker's ``message.max.bytes`` (``max_request_size`` raised so the broker,
  not the client, enforces it), with and without idempotence;
* also: LogAppendTime topics (and time lookups on them), records larger than the fetch limits,
  positions past the end (each ``auto_offset_reset``), a parked fetch woken by a produce, and the
  default idempotent producer and a consumer carrying on across a clean and a crashed broker restart.

Every test also fails if the broker logged a warning or an error meanwhile (it does so for each
connection it closes on a bad request). The broker has no group coordinator, so consumers use
``group_id=None`` with ``assign()``.
"""

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka import errors as kafka_errors
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

from .common import (CODECS, PARTITIONS, Rec, assert_no_duplicates, assert_same_records, assert_sequences_continuous,
                     broker_log_checked, compressible_records, deadline, expired, make_records, now_ms, stored_batches,
                     topic_configs, topic_name, with_offsets)

CLIENT = "kafka-python"
WAIT_SECONDS = 20


# -- helpers ---------------------------------------------------------------------------------


@pytest.fixture
def topic(request):
    return topic_name(request, CLIENT)


@pytest.fixture(autouse=True)
def no_broker_warnings(broker):
    with broker_log_checked(broker):
        yield


def make_producer(bootstrap: str, **conf) -> KafkaProducer:
    settings = {"bootstrap_servers": bootstrap, "linger_ms": 5, "request_timeout_ms": 15000,
                "max_block_ms": 15000}
    settings.update(conf)
    return KafkaProducer(**settings)


def make_consumer(bootstrap: str, **conf) -> KafkaConsumer:
    settings = {"bootstrap_servers": bootstrap, "group_id": None, "enable_auto_commit": False,
                "auto_offset_reset": "earliest", "fetch_max_wait_ms": 100, "request_timeout_ms": 15000}
    settings.update(conf)
    return KafkaConsumer(**settings)


def send(producer: KafkaProducer, topic: str, rec: Rec):
    return producer.send(topic, value=rec.value, key=rec.key, headers=list(rec.headers), partition=rec.partition,
                         timestamp_ms=rec.timestamp)


def produce_all(bootstrap: str, topic: str, records: list[Rec], **conf) -> list:
    """Produce ``records``, flush, and return their RecordMetadata in produce order."""
    producer = make_producer(bootstrap, **conf)
    try:
        futures = [send(producer, topic, rec) for rec in records]
        producer.flush(timeout=WAIT_SECONDS)
        return [future.get(timeout=WAIT_SECONDS) for future in futures]
    finally:
        producer.close(timeout=10)


CREATE_TIME, LOG_APPEND_TIME = 0, 1


def to_rec(record, timestamp_type: int = CREATE_TIME) -> Rec:
    assert record.timestamp_type == timestamp_type, f"timestamp type {record.timestamp_type}"
    return Rec(record.partition, record.offset, record.key, record.value, tuple(record.headers or ()),
               record.timestamp)


def poll_records(consumer: KafkaConsumer, count: int, seconds: float = WAIT_SECONDS, grace: float = 0.3,
                 timestamp_type: int = CREATE_TIME) -> list[Rec]:
    """Poll until ``count`` records arrived (failing after ``seconds``), then ``grace`` seconds more."""
    got = []
    until = deadline(seconds)
    while len(got) < count and not expired(until):
        for batch in consumer.poll(timeout_ms=200).values():
            got += [to_rec(r, timestamp_type) for r in batch]
    assert len(got) >= count, f"only {len(got)} of {count} records arrived within {seconds}s"
    until = deadline(grace)
    while not expired(until):
        for batch in consumer.poll(timeout_ms=50).values():
            got += [to_rec(r, timestamp_type) for r in batch]
    return got


def consume(bootstrap: str, topic: str, positions: dict, count: int, timestamp_type: int = CREATE_TIME,
            **conf) -> list[Rec]:
    """Assign the partitions in ``positions`` (partition -> offset, or "earliest") and read ``count`` records."""
    consumer = make_consumer(bootstrap, **conf)
    try:
        partitions = [TopicPartition(topic, p) for p in positions]
        consumer.assign(partitions)
        for tp in partitions:
            if positions[tp.partition] == "earliest":
                consumer.seek_to_beginning(tp)
            else:
                consumer.seek(tp, positions[tp.partition])
        return poll_records(consumer, count, timestamp_type=timestamp_type)
    finally:
        consumer.close()


def consume_all(bootstrap: str, topic: str, count: int, partitions=range(PARTITIONS), **conf) -> list[Rec]:
    return consume(bootstrap, topic, {p: "earliest" for p in partitions}, count, **conf)


# -- 1. acks ---------------------------------------------------------------------------------


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_produce_with_acks_then_consume_every_record(broker, topic, acks):
    records = with_offsets(make_records(200))  # small batches: many requests in a row (no responses for acks=0)
    metadata = produce_all(broker.bootstrap, topic, records, acks=acks, enable_idempotence=False, batch_size=512)
    if acks != 0:  # with acks=0 the broker sends no response; kafka-python's offsets are not the broker's
        assert [(m.partition, m.offset) for m in metadata] == [(r.partition, r.offset) for r in records]
    got = consume_all(broker.bootstrap, topic, len(records))
    assert_same_records(got, records)


def test_beginning_and_end_offsets_match_the_records_produced(broker, topic):
    records = with_offsets(make_records(22, partitions=(0, 1, 2)))
    produce_all(broker.bootstrap, topic, records)
    consumer = make_consumer(broker.bootstrap)
    try:
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        assert consumer.beginning_offsets(partitions, timeout_ms=10000) == {tp: 0 for tp in partitions}
        assert consumer.end_offsets(partitions, timeout_ms=10000) == \
            {tp: sum(1 for r in records if r.partition == tp.partition) for tp in partitions}
    finally:
        consumer.close()


# -- 2. idempotence ----------------------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("setting", ["default", "explicit"])
def test_idempotent_producer_stores_each_record_once_in_order(broker, topic, setting):
    conf = {"batch_size": 1024, "linger_ms": 1, "max_in_flight_requests_per_connection": 5}
    if setting == "explicit":
        conf["enable_idempotence"] = True
    records = with_offsets(make_records(300, partitions=(0, 1)))
    produce_all(broker.bootstrap, topic, records, **conf)
    got = consume_all(broker.bootstrap, topic, len(records), partitions=(0, 1))
    assert_no_duplicates(got)
    assert_same_records(got, records)
    for partition in (0, 1):
        batches = stored_batches(broker.log_dir, topic, partition)
        assert len(batches) > 1
        assert_sequences_continuous(batches)


# -- 3. codecs ---------------------------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("codec", CODECS)
def test_codec_round_trip_and_batches_stored_with_that_codec(broker, topic, codec):
    records = with_offsets(compressible_records(400, partition=0, base_timestamp=now_ms() - 60_000))
    produce_all(broker.bootstrap, topic, records, compression_type=None if codec == "none" else codec,
                linger_ms=100, batch_size=64 * 1024)
    got = consume(broker.bootstrap, topic, {0: "earliest"}, len(records))
    assert_same_records(got, records)
    batches = stored_batches(broker.log_dir, topic, 0)
    assert sum(b["count"] for b in batches) == len(records)
    assert {b["compression"] for b in batches} == {codec}, [b["compression"] for b in batches]


# -- 4. keys, values, headers, partitions --------------------------------------------------------


def edge_case_records(base_ts: int) -> list[Rec]:
    return with_offsets([
        Rec(3, None, None, b"null key", (), base_ts),
        Rec(2, None, b"null value", None, (), base_ts + 1),
        Rec(1, None, b"", b"", (), base_ts + 2),  # empty key and empty value
        Rec(0, None, b"k\x00\xff", b"\x00binary\xff" * 3, (("bin", b"\x00\x01\xff"),), base_ts + 3),
        Rec(1, None, b"hdrs", b"v", (("empty", b""), ("dup", b"1"), ("dup", b"2"),
                                     ("unicode-\u00e9", "\u00e9t\u00e9".encode())), base_ts + 4),
        Rec(3, None, "cl\u00e9".encode(), "val\u00fce".encode(), (), base_ts + 5),
        Rec(2, None, b"big", b"x" * 100_000, (("size", b"100000"),), base_ts + 6),
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
    got = consume(broker.bootstrap, topic, {2: "earliest"}, 30 // PARTITIONS)
    assert_same_records(got, [r for r in records if r.partition == 2])


def test_assign_from_latest_sees_only_records_produced_afterwards(broker, topic):
    old = with_offsets(make_records(20, tag="old"))
    produce_all(broker.bootstrap, topic, old)
    consumer = make_consumer(broker.bootstrap)
    try:
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        consumer.seek_to_end(*partitions)
        assert [consumer.position(tp, timeout_ms=10000) for tp in partitions] == [5] * PARTITIONS
        new = with_offsets(make_records(12, tag="new"), start={p: 5 for p in range(PARTITIONS)})
        produce_all(broker.bootstrap, topic, new)
        got = poll_records(consumer, len(new), grace=0.5)
    finally:
        consumer.close()
    assert_same_records(got, new)


def test_auto_offset_reset_latest_sees_only_new_records(broker, topic):
    old = with_offsets(make_records(8, partitions=(3,), tag="old"))
    produce_all(broker.bootstrap, topic, old)
    consumer = make_consumer(broker.bootstrap, auto_offset_reset="latest")
    try:
        tp = TopicPartition(topic, 3)
        consumer.assign([tp])
        assert consumer.position(tp, timeout_ms=10000) == 8
        new = with_offsets(make_records(3, partitions=(3,), tag="new"), start={3: 8})
        produce_all(broker.bootstrap, topic, new)
        got = poll_records(consumer, len(new))
    finally:
        consumer.close()
    assert_same_records(got, new)


def test_a_waiting_fetch_returns_as_soon_as_records_arrive(broker, topic):
    """With fetch_max_wait_ms=5000 the broker parks the fetch; a produce must wake it at once."""
    consumer = make_consumer(broker.bootstrap, fetch_max_wait_ms=5000)
    producer = make_producer(broker.bootstrap, linger_ms=0)
    try:
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        consumer.seek_to_end(*partitions)
        assert [consumer.position(tp, timeout_ms=10000) for tp in partitions] == [0] * PARTITIONS
        assert consumer.poll(timeout_ms=500) == {}  # a fetch is now waiting on the broker
        for partition in (3, 0):
            record = with_offsets([Rec(partition, None, b"k", b"wake up", (), now_ms())])
            started = time.monotonic()
            send(producer, topic, record[0]).get(timeout=WAIT_SECONDS)
            got = poll_records(consumer, 1, seconds=10, grace=0)
            assert time.monotonic() - started < 2.5, "the waiting fetch was not woken by the produce"
            assert_same_records(got, record)
    finally:
        producer.close(timeout=10)
        consumer.close()


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_assign_at_offsets_inside_a_stored_batch(broker, topic, codec):
    records = with_offsets(make_records(50, partitions=(0,)))
    produce_all(broker.bootstrap, topic, records, linger_ms=200, batch_size=64 * 1024,
                compression_type=None if codec == "none" else codec)
    batches = stored_batches(broker.log_dir, topic, 0)
    for offset in (1, 17, 49):
        containing = [b for b in batches if b["baseOffset"] <= offset <= b["lastOffset"]]
        assert containing, f"offset {offset} not stored"
        if offset == 17:
            assert containing[0]["baseOffset"] < 17 < containing[0]["lastOffset"], \
                f"offset 17 should be mid-batch; batches: {[(b['baseOffset'], b['lastOffset']) for b in batches]}"
        got = consume(broker.bootstrap, topic, {0: offset}, len(records) - offset)
        assert_same_records(got, records[offset:])


# -- 6. offsets_for_times -----------------------------------------------------------------------


def test_offsets_for_times_before_at_between_and_after_the_records(broker, topic):
    base = now_ms() - 3_600_000
    records = with_offsets([r._replace(timestamp=base + i * 10_000)
                            for i, r in enumerate(make_records(20, partitions=(0,)))])
    producer = make_producer(broker.bootstrap)
    try:  # several batches: one flush per 6 records
        for start in range(0, len(records), 6):
            for rec in records[start:start + 6]:
                send(producer, topic, rec)
            producer.flush(timeout=WAIT_SECONDS)
    finally:
        producer.close(timeout=10)
    assert len(stored_batches(broker.log_dir, topic, 0)) == 4
    lookups = {
        base - 1_000_000: (0, base),  # before the first record: the first offset
        base: (0, base),
        base + 50_000: (5, base + 50_000),  # exactly record 5's timestamp
        base + 55_000: (6, base + 60_000),  # between records 5 and 6: the next one
        base + 190_000: (19, base + 190_000),  # the last record
        base + 190_001: None,  # after the last record: no offset
    }
    consumer = make_consumer(broker.bootstrap)
    tp = TopicPartition(topic, 0)
    try:
        for timestamp, expected in lookups.items():
            found = consumer.offsets_for_times({tp: timestamp}, timeout_ms=10000)[tp]
            assert (found and (found.offset, found.timestamp)) == expected, (timestamp - base, found)
        empty = TopicPartition(topic, 1)
        assert consumer.offsets_for_times({empty: base}, timeout_ms=10000) == {empty: None}
        start = consumer.offsets_for_times({tp: base + 55_000}, timeout_ms=10000)[tp].offset
        consumer.assign([tp])
        consumer.seek(tp, start)
        got = poll_records(consumer, len(records) - 6)
    finally:
        consumer.close()
    assert_same_records(got, records[6:])


# -- 7. admin -------------------------------------------------------------------------------


@pytest.fixture
def admin(broker):
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=15000)
    try:
        yield client
    finally:
        client.close()


def test_admin_creates_lists_describes_and_deletes_a_topic_with_config(broker, admin, topic):
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1,
                                  topic_configs={"retention.ms": "3600000"})], timeout_ms=10000)
    assert topic in admin.list_topics()
    [described] = admin.describe_topics([topic])
    assert described["error_code"] == 0 and described["name"] == topic
    assert sorted(p["partition_index"] for p in described["partitions"]) == [0, 1, 2]
    assert all(p["error_code"] == 0 and p["leader_id"] == 0 and p["replica_nodes"] == [0] and p["isr_nodes"] == [0]
               for p in described["partitions"])
    assert topic_configs(broker.log_dir, topic) == {"retention.ms": "3600000"}
    records = with_offsets(make_records(9, partitions=(0, 1, 2)))
    produce_all(broker.bootstrap, topic, records)
    assert_same_records(consume_all(broker.bootstrap, topic, 9, partitions=(0, 1, 2)), records)

    admin.delete_topics([topic], timeout_ms=10000)
    assert topic not in admin.list_topics()
    assert topic_configs(broker.log_dir, topic) is None

    # the same name again: a new, empty topic with its own partition count
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)], timeout_ms=10000)
    [described] = admin.describe_topics([topic])
    assert sorted(p["partition_index"] for p in described["partitions"]) == [0, 1]
    consumer = make_consumer(broker.bootstrap)
    try:
        partitions = [TopicPartition(topic, p) for p in (0, 1)]
        assert consumer.end_offsets(partitions, timeout_ms=10000) == {tp: 0 for tp in partitions}
    finally:
        consumer.close()


def test_admin_describe_configs_with_synonyms_and_log_dirs_with_partition_sizes(broker, admin, topic):
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1,
                                  topic_configs={"max.message.bytes": "500000"})], timeout_ms=10000)
    described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], include_synonyms=True,
                                       config_filter="all")
    configs = described["topic"][topic]
    assert configs["max.message.bytes"]["value"] == "500000"
    assert configs["max.message.bytes"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert [(s["name"], s["value"], s["source"]) for s in configs["max.message.bytes"]["synonyms"]] == [
        ("max.message.bytes", "500000", "DYNAMIC_TOPIC_CONFIG"), ("message.max.bytes", "1048588", "DEFAULT_CONFIG")]
    assert (configs["retention.ms"]["value"], configs["retention.ms"]["config_source"]) == \
        ("604800000", "DEFAULT_CONFIG")
    assert configs["cleanup.policy"]["config_type"] == "LIST"

    produce_all(broker.bootstrap, topic, make_records(20, partitions=(1,)))
    [answer] = admin.describe_log_dirs({topic: [0, 1]})
    [log_dir] = answer["log_dirs"]
    [described_topic] = log_dir["topics"]
    sizes = {p["partition_index"]: p["partition_size"] for p in described_topic["partitions"]}
    stored = sum(b["size"] for b in stored_batches(broker.log_dir, topic, 1))
    assert sizes == {0: 0, 1: stored} and stored > 20 * 16


def test_admin_validate_only_does_not_create(admin, topic):
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)], timeout_ms=10000,
                        validate_only=True)
    assert topic not in admin.list_topics()


@pytest.mark.parametrize("case, expected", [
    ("existing", kafka_errors.TopicAlreadyExistsError),
    ("replication-3", kafka_errors.InvalidReplicationFactorError),
    ("bad-name", kafka_errors.InvalidTopicError),
    ("name-too-long", kafka_errors.InvalidTopicError),
    ("zero-partitions", kafka_errors.InvalidPartitionsError),
    ("unknown-config", kafka_errors.InvalidConfigurationError),
    ("bad-config-value", kafka_errors.InvalidConfigurationError),
])
def test_admin_create_topic_errors(admin, topic, case, expected):
    name = topic
    new_topic = NewTopic(name, num_partitions=2, replication_factor=1)
    if case == "existing":
        admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=1)], timeout_ms=10000)
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
        new_topic = NewTopic(name, num_partitions=2, replication_factor=1, topic_configs={"no.such.config": "1"})
    elif case == "bad-config-value":
        new_topic = NewTopic(name, num_partitions=2, replication_factor=1, topic_configs={"retention.ms": "soon"})
    with pytest.raises(expected):
        admin.create_topics([new_topic], timeout_ms=10000)
    if case != "existing":
        assert name not in admin.list_topics()


def test_admin_delete_unknown_topic_fails_with_unknown_topic(admin, topic):
    with pytest.raises(kafka_errors.UnknownTopicOrPartitionError):
        admin.delete_topics([topic], timeout_ms=10000)


# -- 8. message.max.bytes -------------------------------------------------------------------------

BROKER_LIMIT = 20_000
# One uncompressed record with a null key and no headers in a batch of its own: 61 bytes of batch
# header (12 of them offset and size) + 11 bytes of record framing (for values of this size) + value.
BATCH_OVERHEAD = 72


@pytest.mark.timeout(120)
@pytest.mark.parametrize("idempotence", [False, True])
def test_message_max_bytes_is_enforced_by_the_broker_and_nothing_else_is_lost(start_broker, topic, idempotence):
    small_broker = start_broker({"message.max.bytes": str(BROKER_LIMIT)})
    base = now_ms() - 60_000
    at_limit = Rec(0, None, None, b"a" * (BROKER_LIMIT - BATCH_OVERHEAD), (), base + 1)
    over_limit = Rec(0, None, None, b"o" * (BROKER_LIMIT - BATCH_OVERHEAD + 1), (), base + 2)
    before = Rec(0, None, b"before", b"small", (("h", b"1"),), base)
    after = Rec(0, None, b"after", b"small", (), base + 3)

    def new_producer():
        return make_producer(small_broker.bootstrap, max_request_size=1_000_000, linger_ms=0, acks="all",
                             enable_idempotence=idempotence)

    def produce_one(producer, rec):  # one request each
        future = send(producer, topic, rec)
        producer.flush(timeout=WAIT_SECONDS)
        try:
            return future.get(timeout=WAIT_SECONDS).offset
        except kafka_errors.KafkaError as exc:
            return exc

    producer = new_producer()
    try:
        outcomes = [produce_one(producer, rec) for rec in (before, at_limit, over_limit)]
        if idempotence:
            # kafka-python 3.0.12 classifies any non-retriable batch error of a non-transactional
            # idempotent producer as fatal, so this producer is unusable now (client behaviour;
            # Kafka's answer is the same). Go on with a new producer.
            producer.close(timeout=10)
            producer = new_producer()
        outcomes.append(produce_one(producer, after))
    finally:
        producer.close(timeout=10)
    assert outcomes[:2] == [0, 1] and outcomes[3] == 2, outcomes
    assert isinstance(outcomes[2], kafka_errors.MessageSizeTooLargeError), outcomes
    assert "exceeds max.message.bytes" in str(outcomes[2]), "expected the broker's error message"
    expected = with_offsets([before, at_limit, after])
    got = consume(small_broker.bootstrap, topic, {0: "earliest"}, len(expected))
    assert_same_records(got, expected)
    sizes = [b["size"] for b in stored_batches(small_broker.log_dir, topic, 0)]
    assert sizes[1] == BROKER_LIMIT, f"the at-limit batch should be exactly {BROKER_LIMIT} bytes: {sizes}"


# -- more: LogAppendTime topics, fetch limits, out-of-range positions ------------------------------


def test_log_append_time_topic_stamps_records_with_the_broker_clock(broker, admin, topic):
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1,
                                  topic_configs={"message.timestamp.type": "LogAppendTime"})], timeout_ms=10000)
    records = with_offsets(compressible_records(100, partition=0, base_timestamp=1_000_000))
    before = now_ms()
    metadata = produce_all(broker.bootstrap, topic, records, compression_type="gzip", linger_ms=50,
                           batch_size=64 * 1024)
    after = now_ms()
    got = consume(broker.bootstrap, topic, {0: "earliest"}, len(records), timestamp_type=LOG_APPEND_TIME)
    assert_same_records(got, records, compare_timestamps=False)
    assert all(before <= r.timestamp <= after for r in got), "not the broker's append time"
    assert [m.timestamp for m in metadata] == [r.timestamp for r in got], \
        "the produce response's log_append_time differs from the stored timestamps"
    # time lookups use the append time, not the producer's timestamps
    consumer = make_consumer(broker.bootstrap)
    tp = TopicPartition(topic, 0)
    try:
        for timestamp, expected in ((1_000_050, 0), (got[0].timestamp, 0), (got[-1].timestamp + 1, None)):
            found = consumer.offsets_for_times({tp: timestamp}, timeout_ms=10000)[tp]
            assert (found and found.offset) == expected, (timestamp, found)
    finally:
        consumer.close()


def test_records_larger_than_the_fetch_limits_still_arrive(broker, topic):
    base = now_ms() - 60_000
    records = with_offsets([rec for p in range(PARTITIONS)
                            for rec in (Rec(p, None, b"big", bytes([65 + p]) * 60_000, (), base),
                                        Rec(p, None, b"small", b"s", (), base + 1))])
    produce_all(broker.bootstrap, topic, records, linger_ms=0)
    got = consume_all(broker.bootstrap, topic, len(records), max_partition_fetch_bytes=1024, fetch_max_bytes=2048)
    assert_same_records(got, records)


@pytest.mark.parametrize("reset", ["earliest", "latest", "none"])
def test_position_past_the_end_is_out_of_range(broker, topic, reset):
    records = with_offsets(make_records(6, partitions=(2,)))
    produce_all(broker.bootstrap, topic, records)
    consumer = make_consumer(broker.bootstrap, auto_offset_reset=reset)
    tp = TopicPartition(topic, 2)
    try:
        consumer.assign([tp])
        consumer.seek(tp, 1000)
        if reset == "earliest":
            assert_same_records(poll_records(consumer, len(records)), records)
        elif reset == "latest":
            assert consumer.poll(timeout_ms=1000) == {}
            assert consumer.position(tp, timeout_ms=10000) == 6
            later = with_offsets(make_records(2, partitions=(2,), tag="later"), start={2: 6})
            produce_all(broker.bootstrap, topic, later)
            assert_same_records(poll_records(consumer, len(later)), later)
        else:
            with pytest.raises(kafka_errors.OffsetOutOfRangeError):
                until = deadline(10)
                while not expired(until):
                    assert consumer.poll(timeout_ms=200) == {}
    finally:
        consumer.close()


# -- broker restarts -------------------------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["clean", "crash"])
def test_idempotent_producer_and_consumer_carry_on_across_a_broker_restart(start_broker, topic, how):
    restarting = start_broker({"num.partitions": "2"})
    first = with_offsets(make_records(10, partitions=(0, 1), tag="first"))
    second = with_offsets(make_records(10, partitions=(0, 1), tag="second"), start={0: 5, 1: 5})
    producer = make_producer(restarting.bootstrap, linger_ms=0)  # idempotent: kafka-python 3's default
    consumer = make_consumer(restarting.bootstrap)
    try:
        first_futures = [send(producer, topic, rec) for rec in first]
        producer.flush(timeout=WAIT_SECONDS)
        assert [f.get(timeout=WAIT_SECONDS).offset for f in first_futures] == [r.offset for r in first]
        partitions = [TopicPartition(topic, p) for p in (0, 1)]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        got_first = poll_records(consumer, len(first), grace=0)
        if how == "clean":
            assert restarting.stop() == 0
        else:
            restarting.kill()
        restarting.start()
        second_futures = [send(producer, topic, rec) for rec in second]
        producer.flush(timeout=WAIT_SECONDS)
        assert [f.get(timeout=WAIT_SECONDS).offset for f in second_futures] == [r.offset for r in second]
        got_second = poll_records(consumer, len(second))
    finally:
        producer.close(timeout=10)
        consumer.close()
    assert_same_records(got_first, first)
    assert_same_records(got_second, second)
    for partition in (0, 1):
        assert_sequences_continuous(stored_batches(restarting.log_dir, topic, partition))
