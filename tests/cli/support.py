"""Helpers of the command-line tests: run ``kafkalog`` as a real process, name topics, and read or
write records with third-party clients (confluent-kafka) to check what the commands did.

* ``kafkalog(*args, input=...)``: ``python -m broker.cli ...`` with a timeout; the completed process.
* ``one_line_error(done, prefix)``: the process failed with exactly one line on stderr, no traceback.
* ``topic_for(request)``: a fresh, legal topic name per test.
* ``produce_records`` / ``consume_records``: confluent-kafka producer and ``assign()`` consumer,
  both bounded; records as ``Rec`` tuples (partition, offset, key, value, timestamp).
* ``stored_codecs``: the codec of every batch a partition holds, as the broker serves them.
* ``committed``: a group's committed offset of each partition, read as any Kafka client does.
"""

import re
import subprocess
import sys
import time
import uuid
from typing import NamedTuple

import confluent_kafka

from broker.client import LATEST, GroupClient, KafkaClient
from broker.records import record_set

COMMAND_TIMEOUT = 60
WAIT_SECONDS = 20


class Rec(NamedTuple):
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int


def kafkalog(*args, input: bytes | str | None = None, timeout: float = COMMAND_TIMEOUT) -> subprocess.CompletedProcess:
    text = not isinstance(input, bytes)
    return subprocess.run(
        [sys.executable, "-m", "broker.cli", *map(str, args)],
        input=input,
        capture_output=True,
        text=text,
        timeout=timeout,
    )


def one_line_error(done: subprocess.CompletedProcess, code: int, prefix: str) -> str:
    """The single stderr line of a command that exited with ``code``; it must start with ``prefix``."""
    stderr = done.stderr if isinstance(done.stderr, str) else done.stderr.decode()
    assert done.returncode == code, f"exit {done.returncode}, expected {code}; stderr: {stderr}"
    assert "Traceback" not in stderr and stderr.count("\n") == 1, stderr
    assert stderr.startswith(prefix), stderr
    return stderr.strip()


def topic_for(request, tag: str = "") -> str:
    raw = f"cli-{request.node.name}-{tag}" if tag else f"cli-{request.node.name}"
    return re.sub(r"[^a-zA-Z0-9._-]+", "_", raw).strip("_")[:180] + "-" + uuid.uuid4().hex[:6]


def produce_records(bootstrap: str, topic: str, records) -> None:
    """Produce ``(partition, key, value, timestamp)`` tuples with confluent-kafka, every one acknowledged."""
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, "message.timeout.ms": WAIT_SECONDS * 1000}
    )
    errors = []
    for partition, key, value, timestamp in records:
        producer.produce(
            topic,
            key=key,
            value=value,
            partition=partition,
            timestamp=timestamp,
            on_delivery=lambda err, msg: errors.append(err) if err else None,
        )
    assert producer.flush(WAIT_SECONDS) == 0, "records not delivered in time"
    assert not errors, errors


def consume_records(bootstrap: str, topic: str, partitions, count: int) -> list[Rec]:
    """``count`` records from the beginning of ``partitions`` (confluent-kafka, ``assign()``), sorted by
    partition and offset; fails if they do not all arrive within WAIT_SECONDS."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"cli-{topic}",
            "enable.auto.commit": False,
            "auto.offset.reset": "error",
        }
    )
    got = []
    try:
        consumer.assign(
            [confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING) for p in partitions]
        )
        deadline = time.monotonic() + WAIT_SECONDS
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            assert message.error() is None, message.error()
            got.append(
                Rec(message.partition(), message.offset(), message.key(), message.value(), message.timestamp()[1])
            )
    finally:
        consumer.close()
    assert len(got) == count, f"{len(got)} records consumed, {count} expected"
    return sorted(got)


def latest_offsets(bootstrap: str, topic: str, partitions) -> dict:
    with KafkaClient(bootstrap, timeout=10) as client:
        found = client.list_offsets({(topic, p): LATEST for p in partitions})
    return {p: offset for (_, p), (offset, _) in found.items()}


def stored_codecs(bootstrap: str, topic: str, partition: int) -> list[str]:
    """The codec name of every batch of a partition, in order."""
    codecs, offset = [], 0
    with KafkaClient(bootstrap, timeout=10) as client:
        end = client.list_offsets({(topic, partition): LATEST})[(topic, partition)][0]
        while offset < end:
            records = client.fetch(topic, partition, offset, 1 << 20).records
            for _, header in record_set.iter_entries(records):
                codecs.append(header.compression.name.lower())
                offset = header.last_offset + 1
    return codecs


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict:
    """``{partition: offset}`` the group committed, of the topic's first ``partitions`` partitions."""
    with KafkaClient(bootstrap, timeout=10) as client:
        found = GroupClient(client).committed(group, {topic: list(range(partitions))})
    return {p: c.offset for (_, p), c in found.items()}
