"""A kafkalog DataFrame is repeatable: its offsets are resolved once, at planning, on the driver.

Counted twice, counted then collected, or split into tasks, the same DataFrame reads the same
records even when more records are produced in between (the new ones are not included), for
``earliest``/``latest`` as for timestamps. A new DataFrame (a new ``load()``) sees the new records.
"""

import pytest

from .feed import assert_rows, create_topic, load, messages, produce, rows

pytestmark = pytest.mark.timeout(120)


def test_count_twice_and_collect_with_records_produced_in_between(spark, broker):
    topic = "repeat-grow"
    create_topic(broker.bootstrap, topic, 3)
    first = produce(broker.bootstrap, topic, messages(12, partitions=(0, 1, 2), tag="first"))
    df = load(spark, broker.bootstrap, subscribe=topic, includeHeaders="true")
    assert df.count() == 12
    more = produce(broker.bootstrap, topic, messages(9, partitions=(0, 1, 2), tag="more"))
    assert df.count() == 12
    assert_rows(rows(df), first)
    more += produce(broker.bootstrap, topic, messages(3, partitions=(2,), tag="again"))
    assert df.filter("partition = 2").count() == 4
    assert_rows(rows(load(spark, broker.bootstrap, subscribe=topic, includeHeaders="true")), first + more)


def test_collect_first_then_count_after_new_records(spark, broker):
    topic = "repeat-collect-first"
    create_topic(broker.bootstrap, topic, 2)
    first = produce(broker.bootstrap, topic, messages(8, partitions=(0, 1), tag="first"))
    df = load(spark, broker.bootstrap, subscribe=topic, includeHeaders="true", minPartitions="4")
    assert_rows(rows(df), first)
    produce(broker.bootstrap, topic, messages(10, partitions=(0, 1), tag="more"))
    assert df.rdd.getNumPartitions() == 4
    assert df.count() == 8
    assert_rows(rows(df), first)


def test_timestamp_bounds_are_resolved_once(spark, broker):
    topic = "repeat-timestamps"
    create_topic(broker.bootstrap, topic, 1)
    msgs = messages(10, partitions=(0,), tag="ts")
    first = produce(broker.bootstrap, topic, msgs)
    start = msgs[4].timestamp
    df = load(spark, broker.bootstrap, subscribe=topic, includeHeaders="true", startingTimestamp=str(start))
    assert_rows(rows(df), first[4:])
    # later records with timestamps inside the range: still not part of this DataFrame
    produce(broker.bootstrap, topic, messages(5, partitions=(0,), base_ts=start + 500, tag="late"))
    assert_rows(rows(df), first[4:])
    assert df.count() == 6
