"""The kafkalog source's options through Spark, alone and combined, against a real broker.

Every test compares the rows Spark reads (key, value, topic, partition, offset, timestamp,
timestampType, headers) with the records produced: ``subscribe`` (one and several topics, a topic
named twice, an empty topic), ``subscribePattern`` (a full match of the topic name; no match
gives an empty DataFrame), ``assign`` (a subset of partitions, with offset JSON),
``includeHeaders``, ``minPartitions`` and ``maxRecordsPerPartition`` (task counts, and every record
read exactly once), a bootstrap list with a dead entry, and the ``kafka.*`` pass-through options
(a tiny ``max.partition.fetch.bytes``; ``client.id``, seen on the wire through a recording proxy).
Offsets and timestamps have their own module (test_read_offsets.py).
"""

import json
import socket

import pytest

from .feed import (
    assert_rows,
    create_topic,
    in_range,
    load,
    messages,
    produce,
    produce_kp,
    rows,
    stored_entries,
    without_headers,
)
from .proxy import RecordingProxy

pytestmark = pytest.mark.timeout(120)

MAIN = "opts-main"  # 4 partitions, 6 records each
OTHER = "opts-other"  # 4 partitions, 2 records each
PATTERN_TOPICS = ["pat-x1", "pat-x2", "pat-y1", "pat-x1-extra", "zpat-x3"]


@pytest.fixture(scope="module")
def data(broker):
    """Records of the module's shared topics, keyed by topic."""
    out = {
        MAIN: produce(broker.bootstrap, MAIN, messages(24, partitions=(0, 1, 2, 3), tag="main")),
        OTHER: produce(broker.bootstrap, OTHER, messages(8, partitions=(0, 1, 2, 3), tag="other")),
    }
    for index, topic in enumerate(PATTERN_TOPICS):
        out[topic] = produce(broker.bootstrap, topic, messages(3, partitions=(index % 4,), tag=topic))
    return out


def test_subscribe_one_topic_reads_every_record(spark, broker, data):
    df = load(spark, broker.bootstrap, subscribe=MAIN)
    assert_rows(rows(df), without_headers(data[MAIN]))


def test_subscribe_several_topics(spark, broker, data):
    df = load(spark, broker.bootstrap, subscribe=f" {MAIN} , {OTHER} ")
    assert_rows(rows(df), without_headers(data[MAIN] + data[OTHER]))


def test_a_topic_named_twice_in_subscribe_is_read_once(spark, broker, data):
    # Spark subscribes to the set of topics: each record comes back once
    df = load(spark, broker.bootstrap, subscribe=f"{OTHER},{OTHER}")
    assert_rows(rows(df), without_headers(data[OTHER]))
    assert df.rdd.getNumPartitions() == 4


def test_bootstrap_list_with_an_unreachable_entry_still_reads(spark, broker, data):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    for servers in (f"{dead},{broker.bootstrap}", f"{broker.bootstrap},{dead}"):
        df = load(spark, servers, subscribe=OTHER, **{"kafka.request.timeout.ms": "3000"})
        assert_rows(rows(df), without_headers(data[OTHER]))


@pytest.mark.parametrize(
    "pattern, topics",
    [
        (r"pat-x\d", ["pat-x1", "pat-x2"]),  # full match: not pat-x1-extra, not zpat-x3
        (r"pat-.*", ["pat-x1", "pat-x2", "pat-y1", "pat-x1-extra"]),
        (r"pat-x1|pat-y1", ["pat-x1", "pat-y1"]),
    ],
)
def test_subscribe_pattern_is_a_full_match(spark, broker, data, pattern, topics):
    df = load(spark, broker.bootstrap, subscribePattern=pattern)
    assert_rows(rows(df), without_headers([r for t in topics for r in data[t]]))


def test_subscribe_pattern_matching_no_topic_gives_an_empty_dataframe(spark, broker, data):
    df = load(spark, broker.bootstrap, subscribePattern="no-such-topic-.*")
    assert df.count() == 0
    assert df.collect() == []


def test_an_empty_topic_gives_an_empty_dataframe(spark, broker, data):
    topic = "opts-empty"
    create_topic(broker.bootstrap, topic, 2)
    df = load(spark, broker.bootstrap, subscribe=topic, includeHeaders="true")
    assert df.collect() == []
    assert df.count() == 0


def test_assign_reads_only_the_assigned_partitions(spark, broker, data):
    df = load(spark, broker.bootstrap, assign=json.dumps({MAIN: [1, 3], OTHER: [2]}))
    expected = [r for r in data[MAIN] if r.partition in (1, 3)] + [r for r in data[OTHER] if r.partition == 2]
    assert_rows(rows(df), without_headers(expected))


def test_assign_with_offset_json_on_both_ends(spark, broker, data):
    df = load(
        spark,
        broker.bootstrap,
        assign=json.dumps({MAIN: [0, 2], OTHER: [1]}),
        startingOffsets=json.dumps({MAIN: {"0": 2, "2": -2}, OTHER: {"1": 1}}),
        endingOffsets=json.dumps({MAIN: {"0": 5, "2": -1}, OTHER: {"1": -1}}),
    )
    expected = (
        in_range(data[MAIN], MAIN, 0, 2, 5)
        + in_range(data[MAIN], MAIN, 2, 0, 6)
        + in_range(data[OTHER], OTHER, 1, 1, 2)
    )
    assert_rows(rows(df), without_headers(expected))


def test_subscribe_with_offset_json_naming_every_partition(spark, broker, data):
    starting = {MAIN: {"0": 1, "1": 0, "2": 5, "3": -2}}
    ending = {MAIN: {"0": 3, "1": -1, "2": 6, "3": 1}}
    df = load(
        spark, broker.bootstrap, subscribe=MAIN, startingOffsets=json.dumps(starting), endingOffsets=json.dumps(ending)
    )
    expected = (
        in_range(data[MAIN], MAIN, 0, 1, 3)
        + in_range(data[MAIN], MAIN, 1, 0, 6)
        + in_range(data[MAIN], MAIN, 2, 5, 6)
        + in_range(data[MAIN], MAIN, 3, 0, 1)
    )
    assert_rows(rows(df), without_headers(expected))


def test_earliest_and_latest_words_are_the_defaults(spark, broker, data):
    df = load(spark, broker.bootstrap, subscribe=OTHER, startingOffsets="EARLIEST", endingOffsets="latest")
    assert_rows(rows(df), without_headers(data[OTHER]))


def test_option_names_are_case_insensitive(spark, broker, data):
    df = load(
        spark,
        broker.bootstrap,
        {
            "SUBSCRIBE": OTHER,
            "IncludeHeaders": "TRUE",
            "startingoffsets": json.dumps({OTHER: {"0": 1, "1": 0, "2": 0, "3": 0}}),
        },
    )
    assert_rows(rows(df), [r for r in data[OTHER] if not (r.partition == 0 and r.offset == 0)])


def test_include_headers_gives_every_header_in_order_and_null_for_none(spark, broker, data):
    df = load(spark, broker.bootstrap, subscribe=MAIN, includeHeaders="true")
    read = rows(df)
    assert_rows(read, data[MAIN])
    assert any(r.headers is None for r in read) and any(r.headers and len(r.headers) == 3 for r in read)
    with_null_value = [r for r in read if r.headers and ("nothing", None) in r.headers]
    assert with_null_value, "a header with a null value was expected"


def test_include_headers_false_has_no_headers_column(spark, broker, data):
    df = load(spark, broker.bootstrap, subscribe=OTHER, includeHeaders="false")
    assert "headers" not in df.columns
    assert_rows(rows(df), without_headers(data[OTHER]))


@pytest.mark.parametrize(
    "options, tasks",
    [
        ({}, 4),  # one task per topic partition
        ({"minPartitions": "3"}, 4),  # not above the partition count: nothing split
        ({"minPartitions": "4"}, 4),
        ({"minPartitions": "8"}, 8),  # 6 records each: round(6 / 24 * 8) = 2 parts each
        ({"minPartitions": "24"}, 24),
        ({"maxRecordsPerPartition": "4"}, 8),  # ceil(6 / 4) = 2 parts each
        ({"maxRecordsPerPartition": "1"}, 24),
        ({"maxRecordsPerPartition": "6"}, 4),
        # Spark 4's order: pieces of at most 5 first (3 + 3: 8 pieces), then minPartitions over the pieces,
        # round(3 / 24 * 12) = 2 parts each
        ({"minPartitions": "12", "maxRecordsPerPartition": "5"}, 16),
        ({"minPartitions": "5", "maxRecordsPerPartition": "2"}, 12),
    ],
    ids=lambda v: json.dumps(v) if isinstance(v, dict) else str(v),
)
def test_splitting_sets_the_task_count_and_reads_each_record_once(spark, broker, data, options, tasks):
    df = load(spark, broker.bootstrap, options, subscribe=MAIN, includeHeaders="true")
    assert df.rdd.getNumPartitions() == tasks
    read = rows(df)
    assert len(read) == len(set(read)), "a record was read twice"
    assert_rows(read, data[MAIN])


def test_splitting_unequal_partitions_keeps_small_ones_whole(spark, broker):
    topic = "opts-unequal"
    create_topic(broker.bootstrap, topic, 3)
    produced = (
        produce(broker.bootstrap, topic, messages(40, partitions=(0,), tag="big"))
        + produce(broker.bootstrap, topic, messages(2, partitions=(1,), tag="s1"))
        + produce(broker.bootstrap, topic, messages(2, partitions=(2,), tag="s2"))
    )
    df = load(spark, broker.bootstrap, subscribe=topic, minPartitions="6", includeHeaders="true")
    # the two small ranges stay whole; the big one takes the other 4 tasks
    assert df.rdd.getNumPartitions() == 6
    per_task = df.rdd.mapPartitions(lambda it: [sorted((r.partition, r.offset) for r in it)]).collect()
    small = [task for task in per_task if task and task[0][0] != 0]
    assert sorted(small) == [[(1, 0), (1, 1)], [(2, 0), (2, 1)]]
    big = [task for task in per_task if task and task[0][0] == 0]
    assert len(big) == 4 and sorted(o for task in big for _, o in task) == list(range(40))
    assert_rows(rows(df), produced)


def test_small_max_partition_fetch_bytes_needs_many_fetches_but_reads_the_same(spark, broker):
    topic = "opts-small-fetch"
    create_topic(broker.bootstrap, topic, 2)
    # partition 0: small uncompressed batches of ~300-byte records; partition 1: gzip batches of 30
    # records, each batch larger than 1024 bytes (the client must grow its fetch size)
    produced = produce(
        broker.bootstrap, topic, messages(60, partitions=(0,), tag="plain", value_size=300), flush_every=3
    )
    produced += produce_kp(
        broker.bootstrap,
        topic,
        messages(90, partitions=(1,), tag="gz", value_size=400),
        flush_every=30,
        compression_type="gzip",
    )
    entries = {p: stored_entries(broker.bootstrap, topic, p) for p in (0, 1)}
    assert len(entries[0]) == 20 and sum(e.size for e in entries[0]) > 15 * 1024
    assert len(entries[1]) == 3 and all(e.codec == 1 and e.size > 2048 for e in entries[1])
    small = load(
        spark,
        broker.bootstrap,
        {"kafka.max.partition.fetch.bytes": "1024", "kafka.fetch.max.bytes": "1024"},
        subscribe=topic,
        includeHeaders="true",
    )
    assert_rows(rows(small), produced)
    default = load(spark, broker.bootstrap, subscribe=topic, includeHeaders="true")
    assert rows(default) == rows(small)


def test_kafka_client_id_is_sent_by_the_driver_and_the_tasks(spark, broker, data):
    with RecordingProxy(target=("127.0.0.1", broker.port)) as proxy:
        df = load(spark, f"127.0.0.1:{proxy.port}", {"kafka.client.id": "kafkalog-test-client"}, subscribe=OTHER)
        assert_rows(rows(df), without_headers(data[OTHER]))
        seen = [client_id for _, client_id, _ in proxy.take()]
    # every connection to the bootstrap address (planning's and each of the 4 tasks') is named
    assert seen and set(seen) == {"kafkalog-test-client"}
    assert len(seen) >= 2 * 5, seen  # ApiVersions and Metadata, by the planner and each task


def test_kafka_client_id_and_other_pass_through_options_are_accepted(spark, broker, data):
    df = load(
        spark,
        broker.bootstrap,
        {
            "kafka.client.id": "kafkalog-test-client",
            "kafka.request.timeout.ms": "20000",
            "kafka.group.id": "ignored-by-a-batch-read",
            "kafka.isolation.level": "read_uncommitted",
            "kafka.check.crcs": "false",
            "kafka.security.protocol": "PLAINTEXT",
        },
        subscribe=OTHER,
    )
    assert_rows(rows(df), without_headers(data[OTHER]))


def test_streaming_only_options_are_ignored_by_a_batch_read(spark, broker, data):
    df = load(spark, broker.bootstrap, subscribe=OTHER, maxOffsetsPerTrigger="1", minOffsetsPerTrigger="1")
    assert_rows(rows(df), without_headers(data[OTHER]))
