"""Data loss, both ways of ``failOnDataLoss``, on a broker whose retention really deletes segments.

The module's broker rolls segments at 2000 bytes and checks retention every 200 ms; each test's
topic sets its own ``retention.bytes``. Batches are ~1.2 KB (5 records), so each segment holds
one batch and the log start moves in steps of 5.

* At planning: ``startingOffsets`` JSON below the log start fails the query, naming topic,
  partition and offsets (``failOnDataLoss=true``), or reads from the log start (``false``);
  ``earliest`` is never loss; an assigned partition of a missing topic is loss too (one past the
  topic's partition count is an option error).
* Between planning and reading: retention deletes part (or all) of a planned range, or the topic
  is deleted; collecting the planned DataFrame then fails the task naming the range (``true``),
  or reads only what survives (``false``).
"""

import json
import time

import pytest

from broker.embedded import EmbeddedBroker
from tests.waiting import wait_for

from .feed import (
    assert_rows,
    client,
    create_topic,
    delete_topic,
    in_range,
    load,
    log_start,
    messages,
    produce,
    rows,
    without_headers,
)

pytestmark = pytest.mark.timeout(150)

RECORDS_PER_BATCH = 5
VALUE_SIZE = 200


@pytest.fixture(scope="module")
def loss_broker(tmp_path_factory):
    process = EmbeddedBroker(
        tmp_path_factory.mktemp("loss") / "log",
        {"num.partitions": "2", "log.segment.bytes": "2000", "log.retention.check.interval.ms": "200"},
    ).start()
    yield process
    process.kill()


def batches(bootstrap: str, topic: str, partition: int, count: int, tag: str):
    """Produce ``count`` batches of 5 records each (one flush per batch) to one partition."""
    msgs = [
        m
        for b in range(count)
        for m in messages(RECORDS_PER_BATCH, partitions=(partition,), tag=f"{tag}{b}", value_size=VALUE_SIZE)
    ]
    return produce(bootstrap, topic, msgs, flush_every=RECORDS_PER_BATCH)


def settled_log_start(bootstrap: str, topic: str, partition: int, timeout: float = 20) -> int:
    """The log start offset once retention has moved it and it stays put for a second."""
    seen = []

    def settled():
        seen.append(log_start(bootstrap, topic, partition))
        return len(seen) >= 6 and seen[-1] > 0 and len(set(seen[-6:])) == 1

    wait_for(settled, timeout, interval=0.2, what=f"{topic}-{partition} log start moving and settling")
    return seen[-1]


def grow_until_log_start_moves(bootstrap: str, topic: str, partition: int, tag: str, steps: int = 8):
    """Produce one batch at a time until retention moves the log start; return (records, log start)."""
    produced = []
    for step in range(steps):
        produced += batches(bootstrap, topic, partition, 1, f"{tag}{step}")
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            start = log_start(bootstrap, topic, partition)
            if start > 0:
                return produced, settled_log_start(bootstrap, topic, partition)
            time.sleep(0.1)
    raise AssertionError(f"retention did not move the log start of {topic}-{partition} after {steps} batches")


def topics(bootstrap: str) -> list[str]:
    with client(bootstrap) as c:
        return c.topics()


def error_of(action) -> str:
    with pytest.raises(Exception) as raised:
        action()
    return str(raised.value)


@pytest.fixture(scope="module")
def trimmed(loss_broker):
    """A topic whose partition 0 lost its first segments to retention; partition 1 is intact."""
    topic = "loss-trimmed"
    create_topic(loss_broker.bootstrap, topic, 2, {"retention.bytes": "3000"})
    recs = batches(loss_broker.bootstrap, topic, 0, 8, "t")
    recs += produce(loss_broker.bootstrap, topic, messages(3, partitions=(1,), tag="intact"))
    start = settled_log_start(loss_broker.bootstrap, topic, 0)
    assert 0 < start < 40 and start % RECORDS_PER_BATCH == 0
    return topic, recs, start


def test_start_below_the_log_start_fails_naming_topic_partition_and_offsets(spark, loss_broker, trimmed):
    topic, _, start = trimmed
    message = error_of(
        lambda: load(
            spark, loss_broker.bootstrap, subscribe=topic, startingOffsets=json.dumps({topic: {"0": 2, "1": 0}})
        ).collect()
    )
    assert f"{topic}-0" in message and f"offsets [2, {start}) are gone" in message, message[:800]
    assert "failOnDataLoss=false" in message


def test_start_below_the_log_start_without_fail_reads_from_the_log_start(spark, loss_broker, trimmed):
    topic, recs, start = trimmed
    df = load(
        spark,
        loss_broker.bootstrap,
        subscribe=topic,
        failOnDataLoss="false",
        startingOffsets=json.dumps({topic: {"0": 2, "1": 0}}),
        endingOffsets=json.dumps({topic: {"0": 38, "1": -1}}),
    )
    assert_rows(rows(df), without_headers(in_range(recs, topic, 0, start, 38) + in_range(recs, topic, 1, 0, 3)))


def test_earliest_after_retention_is_not_data_loss(spark, loss_broker, trimmed):
    topic, recs, start = trimmed
    df = load(spark, loss_broker.bootstrap, subscribe=topic, startingOffsets="earliest", failOnDataLoss="true")
    assert_rows(rows(df), without_headers(in_range(recs, topic, 0, start, 40) + in_range(recs, topic, 1, 0, 3)))


def test_range_ending_below_the_log_start(spark, loss_broker, trimmed):
    topic, recs, start = trimmed
    options = dict(
        assign=json.dumps({topic: [0, 1]}),
        startingOffsets=json.dumps({topic: {"0": 0, "1": 0}}),
        endingOffsets=json.dumps({topic: {"0": start - 1, "1": 2}}),
    )
    message = error_of(lambda: load(spark, loss_broker.bootstrap, **options).collect())
    assert f"{topic}-0" in message and "failOnDataLoss" in message, message[:800]
    df = load(spark, loss_broker.bootstrap, failOnDataLoss="false", **options)
    assert_rows(rows(df), without_headers(in_range(recs, topic, 1, 0, 2)))


def test_assigned_partition_that_does_not_exist(spark, loss_broker, trimmed):
    """Not data loss (partitions are never removed from a topic): the topic's count is the answer."""
    topic, recs, _ = trimmed
    for fail_on_data_loss in ("true", "false"):
        message = error_of(
            lambda fail_on_data_loss=fail_on_data_loss: load(
                spark, loss_broker.bootstrap, assign=json.dumps({topic: [1, 7]}), failOnDataLoss=fail_on_data_loss
            ).collect()
        )
        assert (
            f"option assign: partition {topic}-7 does not exist: topic '{topic}' has 2 partitions (0 to 1)" in message
            and "lost" not in message
        ), message[:800]
    gone = "loss-never-created"  # a whole topic missing is data loss (it may have been deleted)
    message = error_of(lambda: load(spark, loss_broker.bootstrap, assign=json.dumps({topic: [1], gone: [0]})).collect())
    assert f"assigned partition {gone}-0 does not exist" in message and "failOnDataLoss" in message, message[:800]
    df = load(spark, loss_broker.bootstrap, assign=json.dumps({topic: [1], gone: [0]}), failOnDataLoss="false")
    assert_rows(rows(df), without_headers(in_range(recs, topic, 1, 0, 3)))


def test_retention_deletes_part_of_a_planned_range(spark, loss_broker):
    topic = "loss-during"
    create_topic(loss_broker.bootstrap, topic, 2, {"retention.bytes": "2500"})
    first = batches(loss_broker.bootstrap, topic, 0, 2, "first")  # offsets 0-9 in two segments
    first += produce(loss_broker.bootstrap, topic, messages(3, partitions=(1,), tag="p1"))
    assert log_start(loss_broker.bootstrap, topic, 0) == 0
    failing = load(spark, loss_broker.bootstrap, subscribe=topic, includeHeaders="true")
    lenient = load(spark, loss_broker.bootstrap, subscribe=topic, includeHeaders="true", failOnDataLoss="false")
    assert failing.rdd.getNumPartitions() == 2 and lenient.rdd.getNumPartitions() == 2  # planned: [0, 10), [0, 3)
    _, start = grow_until_log_start_moves(loss_broker.bootstrap, topic, 0, "more")
    assert 0 < start < 10, f"the log start moved to {start}, past the whole planned range"
    message = error_of(failing.collect)
    assert f"{topic}-0: offsets [0, {start}) were deleted before this task read them" in message, message[:800]
    assert_rows(rows(lenient), in_range(first, topic, 0, start, 10) + in_range(first, topic, 1, 0, 3))


def test_retention_deletes_a_whole_planned_range(spark, loss_broker):
    topic = "loss-during-whole"
    create_topic(loss_broker.bootstrap, topic, 2, {"retention.bytes": "2500"})
    first = batches(loss_broker.bootstrap, topic, 0, 1, "first")  # offsets 0-4
    first += produce(loss_broker.bootstrap, topic, messages(3, partitions=(1,), tag="p1"))
    failing = load(spark, loss_broker.bootstrap, subscribe=topic)
    lenient = load(spark, loss_broker.bootstrap, subscribe=topic, failOnDataLoss="false")
    assert failing.rdd.getNumPartitions() == 2 and lenient.rdd.getNumPartitions() == 2
    batches(loss_broker.bootstrap, topic, 0, 6, "more")
    start = settled_log_start(loss_broker.bootstrap, topic, 0)
    assert start >= 5
    message = error_of(failing.collect)
    assert f"{topic}-0: offsets [0, 5) were deleted before this task read them" in message, message[:800]
    assert_rows(rows(lenient), without_headers(in_range(first, topic, 1, 0, 3)))


def test_topic_deleted_between_planning_and_reading(spark, loss_broker):
    topic = "loss-deleted"
    create_topic(loss_broker.bootstrap, topic, 2)
    produce(loss_broker.bootstrap, topic, messages(6, partitions=(0, 1), tag="gone"))
    failing = load(spark, loss_broker.bootstrap, subscribe=topic)
    lenient = load(spark, loss_broker.bootstrap, subscribe=topic, failOnDataLoss="false")
    assert failing.rdd.getNumPartitions() == 2 and lenient.rdd.getNumPartitions() == 2
    delete_topic(loss_broker.bootstrap, topic)
    wait_for(lambda: topic not in topics(loss_broker.bootstrap), 20, what="topic deleted")
    message = error_of(failing.collect)
    assert f"{topic}-" in message and "no longer exists: offsets [0, 3) cannot be read" in message, message[:800]
    assert lenient.collect() == []


def test_subscribe_to_a_deleted_topic_at_planning_is_an_error(spark, loss_broker):
    topic = "loss-deleted-before"
    create_topic(loss_broker.bootstrap, topic, 1)
    delete_topic(loss_broker.bootstrap, topic)
    for fail in ("true", "false"):
        message = error_of(
            lambda fail=fail: load(spark, loss_broker.bootstrap, subscribe=topic, failOnDataLoss=fail).collect()
        )
        assert "option subscribe" in message and f"{topic!r} does not exist" in message, message[:800]


def test_records_deleted_with_delete_records_are_data_loss_exactly_as_retention(spark, loss_broker):
    """``kafkalog delete-records`` (DeleteRecords) moves the log start like retention does: a planned
    range it cuts fails the task, or reads what is left; a later start below it fails at planning."""
    topic = "loss-delete-records"
    create_topic(loss_broker.bootstrap, topic, 2)
    recs = batches(loss_broker.bootstrap, topic, 0, 2, "kept")  # offsets 0-9
    recs += produce(loss_broker.bootstrap, topic, messages(3, partitions=(1,), tag="p1"))
    failing = load(spark, loss_broker.bootstrap, subscribe=topic)
    lenient = load(spark, loss_broker.bootstrap, subscribe=topic, failOnDataLoss="false")
    assert failing.rdd.getNumPartitions() == 2 and lenient.rdd.getNumPartitions() == 2  # planned: [0, 10), [0, 3)
    with client(loss_broker.bootstrap) as c:
        assert c.delete_records({(topic, 0): 7}) == {(topic, 0): 7}
    message = error_of(failing.collect)
    assert f"{topic}-0: offsets [0, 7) were deleted before this task read them" in message, message[:800]
    assert_rows(rows(lenient), without_headers(in_range(recs, topic, 0, 7, 10) + in_range(recs, topic, 1, 0, 3)))
    message = error_of(
        lambda: load(
            spark, loss_broker.bootstrap, subscribe=topic, startingOffsets=json.dumps({topic: {"0": 2, "1": 0}})
        ).collect()
    )
    assert f"{topic}-0" in message and "offsets [2, 7) are gone" in message, message[:800]
