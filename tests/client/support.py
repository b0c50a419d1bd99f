"""Helpers shared by the client tests: the two clusters, producing with confluent-kafka, reading back.

* ``Cluster``: what a test needs of a cluster (its name, bootstrap list, and our broker's process).
* ``topic_for``: a fresh, legal topic name per test (both clusters are shared by a module).
* ``Msg`` / ``produce``: records produced with confluent-kafka to explicit partitions, one group
  after another (each group is flushed, so it becomes one batch per partition); returns the
  records as the broker must hand them back (``Record`` with the offsets it assigned).
* ``read_partition``: every record of a partition from an offset up to the high watermark, through
  ``KafkaClient.fetch`` (following batch boundaries, with bounded iterations).
* ``closed_port``: a loopback port nothing listens on (connections are refused).
"""

import re
import socket
import uuid
from typing import NamedTuple

import confluent_kafka

from broker.client import LATEST
from broker.records import record_set
from broker.records.batch import Record

PRODUCE_TIMEOUT = 20  # seconds for every flush


class Cluster(NamedTuple):
    name: str  # "kafkalog" (this project's broker) or "mock" (librdkafka's mock cluster)
    bootstrap: str
    process: object = None  # the EmbeddedBroker for "kafkalog"


class Msg(NamedTuple):
    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple = ()
    timestamp: int = 0


def topic_for(request, tag: str = "") -> str:
    raw = f"{request.node.name}-{tag}" if tag else request.node.name
    name = re.sub(r"[^a-zA-Z0-9._-]+", "_", raw).strip("_")[:180]
    return f"{name}-{uuid.uuid4().hex[:8]}"


def produce(bootstrap: str, topic: str, groups, compression: str = "none") -> list[Record]:
    """Produce each group of ``Msg`` (flushing after each one) and return, in production order,
    one ``(partition, Record)`` per message with the offset the broker assigned."""
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": compression,
            "linger.ms": 1000,
            "message.timeout.ms": PRODUCE_TIMEOUT * 1000,
            "enable.idempotence": False,
        }
    )
    delivered, errors = {}, []

    def on_delivery(index):
        def report(err, message):
            if err is not None:
                errors.append(err)
            else:
                delivered[index] = (message.partition(), message.offset())

        return report

    produced = []
    try:
        # learn (and auto-create) the topic first, so no record waits in librdkafka's unassigned
        # queue and each group really becomes one batch per partition
        producer.list_topics(topic, timeout=PRODUCE_TIMEOUT)
        for group in groups:
            for msg in group:
                index = len(produced)
                produced.append(msg)
                producer.produce(
                    topic,
                    key=msg.key,
                    value=msg.value,
                    partition=msg.partition,
                    timestamp=msg.timestamp,
                    headers=list(msg.headers) or None,
                    on_delivery=on_delivery(index),
                )
            remaining = producer.flush(PRODUCE_TIMEOUT)
            assert remaining == 0, f"{remaining} messages not delivered within {PRODUCE_TIMEOUT}s"
    finally:
        if hasattr(producer, "close"):
            producer.close()
    assert not errors, f"delivery failed: {errors}"
    assert len(delivered) == len(produced)
    out = []
    for index, msg in enumerate(produced):
        partition, offset = delivered[index]
        assert partition == msg.partition
        out.append((partition, Record(offset, msg.timestamp, msg.key, msg.value, tuple(msg.headers))))
    return out


def expected_by_partition(produced) -> dict[int, list[Record]]:
    out: dict[int, list[Record]] = {}
    for partition, record in produced:
        out.setdefault(partition, []).append(record)
    for records in out.values():
        records.sort(key=lambda r: r.offset)
    return out


def stored_batches(client, topic: str, partition: int) -> list[tuple[int, int]]:
    """``(base offset, last offset)`` of every batch of a partition, as the broker stores them
    (librdkafka decides the batching, so tests read the boundaries rather than assume them)."""
    end = client.list_offsets({(topic, partition): LATEST})[(topic, partition)][0]
    out, offset = [], 0
    for _ in range(10_000):
        if offset >= end:
            return out
        first = next(record_set.iter_batches(client.fetch(topic, partition, offset, 1).records))
        out.append((first.base_offset, first.last_offset))
        offset = first.last_offset + 1
    raise AssertionError(f"{topic}-{partition}: still below {end} after 10000 fetches")


def read_partition(
    client, topic: str, partition: int, start: int = 0, max_bytes: int = 1 << 16, end: int | None = None
) -> list[Record]:
    """Every data record of ``topic``-``partition`` in ``[start, end)`` (end: the high watermark)."""
    if end is None:
        end = client.list_offsets({(topic, partition): LATEST})[(topic, partition)][0]
    records, offset = [], start
    for _ in range(10_000):
        if offset >= end:
            return records
        result = client.fetch(topic, partition, offset, max_bytes)
        batches = list(record_set.iter_batches(result.records))
        assert batches, f"{topic}-{partition}@{offset}: no whole batch (high watermark {result.high_watermark})"
        for decoded in batches:
            if not decoded.is_control:
                records.extend(r for r in decoded.records if offset <= r.offset < end)
        offset = batches[-1].last_offset + 1
    raise AssertionError(f"{topic}-{partition}: still below {end} after 10000 fetches")


def closed_port() -> int:
    """A loopback port that was free a moment ago and has no listener (connecting is refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def existing_topic(cluster, request) -> str:
    """A fresh topic, created by asking for its metadata (both brokers auto-create, 4 partitions)."""
    topic = topic_for(request)
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap})
    assert topic in producer.list_topics(topic, timeout=20).topics
    return topic
