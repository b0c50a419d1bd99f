"""The kafkalog source against another Kafka implementation: librdkafka's in-process mock cluster.

``Producer({"test.mock.num.brokers": 3})`` starts a three-broker mock cluster inside this process
(the handle is kept for the whole module). Topics are auto-created with 4 partitions whose leaders
are spread over the brokers, so a read must find each partition's leader and fetch from it. The
rows Spark reads must equal what another producer wrote there (explicit partitions, keys, values,
headers, timestamps), also with compressed batches, offsets inside them, splitting, and a
bootstrap list naming only one of the brokers. (The mock keeps ~5 MiB per partition and answers
ListOffsets by time with -1, so timestamps options are not exercised here.)
"""

import json

import pytest

from .feed import assert_rows, in_range, leaders, load, messages, produce, rows, topic_led_by_several_brokers

pytestmark = pytest.mark.timeout(120)


def test_partitions_led_by_different_mock_brokers_are_all_read(spark, mock):
    bootstrap, _ = mock
    topic, led_by = topic_led_by_several_brokers(bootstrap, "mock-spread")
    produced = produce(bootstrap, topic, messages(40, partitions=(0, 1, 2, 3), tag="mock"), flush_every=10)
    assert leaders(bootstrap, topic) == led_by
    df = load(spark, bootstrap, subscribe=topic, includeHeaders="true")
    assert df.rdd.getNumPartitions() == 4
    assert_rows(rows(df), produced)


def test_bootstrap_naming_one_broker_finds_the_other_leaders(spark, mock):
    bootstrap, _ = mock
    topic, _ = topic_led_by_several_brokers(bootstrap, "mock-one-bootstrap")
    produced = produce(bootstrap, topic, messages(16, partitions=(0, 1, 2, 3), tag="one"))
    first = bootstrap.split(",")[0]
    assert_rows(rows(load(spark, first, subscribe=topic, includeHeaders="true")), produced)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "zstd"])
def test_compressed_batches_and_offsets_inside_them(spark, mock, codec):
    bootstrap, _ = mock
    topic = f"mock-{codec}"
    msgs = [m for p in range(4) for m in messages(20, partitions=(p,), tag=f"{codec}{p}", value_size=40)]
    produced = produce(bootstrap, topic, msgs, flush_every=10, **{"compression.codec": codec})
    assert_rows(rows(load(spark, bootstrap, subscribe=topic, includeHeaders="true")), produced)
    starting = {topic: {"0": 3, "1": 0, "2": 10, "3": 19}}
    ending = {topic: {"0": 17, "1": 11, "2": -1, "3": 20}}
    df = load(
        spark,
        bootstrap,
        subscribe=topic,
        includeHeaders="true",
        startingOffsets=json.dumps(starting),
        endingOffsets=json.dumps(ending),
    )
    assert_rows(
        rows(df),
        in_range(produced, topic, 0, 3, 17)
        + in_range(produced, topic, 1, 0, 11)
        + in_range(produced, topic, 2, 10, 20)
        + in_range(produced, topic, 3, 19, 20),
    )


def test_split_reads_on_the_mock_cluster(spark, mock):
    bootstrap, _ = mock
    topic = "mock-split"
    produced = produce(bootstrap, topic, messages(40, partitions=(0, 1, 2, 3), tag="split"))
    df = load(
        spark, bootstrap, assign=json.dumps({topic: [0, 2, 3]}), maxRecordsPerPartition="3", includeHeaders="true"
    )
    assert df.rdd.getNumPartitions() == 12
    got = rows(df)
    assert len(got) == len(set(got))
    assert_rows(got, [r for r in produced if r.partition != 1])
