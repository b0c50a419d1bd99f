"""A broker process whose log directory fills up under an idempotent producer (confluent-kafka).

The producer gets KAFKA_STORAGE_ERROR while the disk is full and retries the same sequences; once
space is freed every record is stored exactly once, in order, and stays so across a restart.
(The defect: with an index entry per batch, the index write failed after the .log write, so each
retry was stored again: one record ten times.)
"""

import os
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from broker.embedded import EmbeddedBroker

from .full_disk import fill, free_bytes, small_tmpfs

TOPIC = "full"
TOTAL = 1000
VALUE_PADDING = b"." * 100
BATCH_BYTES = 200  # a batch of one record with this value, and then some
PAGE = 4096  # tmpfs allocates whole pages


def consume_values(bootstrap: str, count: int, timeout: float = 60.0, partition: int = 0) -> list:
    """``(offset, value number)`` of every record of a partition, read to its end."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "full-disk",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(TOPIC, partition, 0)])
    out = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF and len(out) >= count:
                    break
                continue
            out.append((message.offset(), int(message.value().split(b":")[0])))
    finally:
        consumer.close()
    return out


def segment_file(disk, suffix: str) -> str:
    return os.path.join(disk, f"{TOPIC}-0", f"{0:020d}{suffix}")


@pytest.mark.timeout(240)
def test_an_idempotent_producer_on_a_full_disk_stores_every_record_once(tmp_path):
    with small_tmpfs(tmp_path / "disk") as disk:
        broker = EmbeddedBroker(disk, {"log.index.interval.bytes": "1", "num.partitions": "1"}).start()
        try:
            producer = Producer(
                {
                    "bootstrap.servers": broker.bootstrap,
                    "enable.idempotence": True,
                    "acks": "all",
                    "linger.ms": 0,
                    "message.timeout.ms": 180_000,
                    "retry.backoff.ms": 50,
                }
            )
            acked, failed = {}, []

            def on_delivery(error, message):
                if error is None:
                    acked[int(message.value().split(b":")[0])] = message.offset()
                else:
                    failed.append(error)

            def produce(number: int) -> None:
                producer.produce(TOPIC, b"%d:" % number + VALUE_PADDING, on_delivery=on_delivery)

            # One batch at a time until the index has just filled a page of the tmpfs while the
            # .log's last page still has room for a batch: the moment the defect needed.
            number = 0
            while True:
                produce(number)
                assert producer.flush(30) == 0
                number += 1
                log_size, index_size = (os.path.getsize(segment_file(disk, s)) for s in (".log", ".index"))
                if index_size % PAGE == 0 and PAGE - log_size % PAGE > 2 * BATCH_BYTES:
                    break
                assert number < 3 * PAGE, "the index never ended on a page boundary"
            filler = fill(disk)
            for later in range(number, TOTAL):
                produce(later)
                producer.poll(0)
            stalled_polls, deadline = 0, time.monotonic() + 60
            while stalled_polls < 3 and time.monotonic() < deadline:  # the broker refuses while the disk is full
                before = len(acked)
                producer.poll(1.0)
                stalled_polls = stalled_polls + 1 if len(acked) == before else 0
            assert len(acked) < TOTAL, f"the disk did not fill up: {free_bytes(disk)} bytes free"
            assert broker.process.poll() is None, broker.stderr_tail()
            os.unlink(filler)
            assert producer.flush(120) == 0, "records still in flight after the disk was freed"
            assert not failed
            consumed = consume_values(broker.bootstrap, TOTAL)
            assert [number for _, number in consumed] == list(range(TOTAL))
            assert [offset for offset, _ in consumed] == list(range(TOTAL))
            assert all(acked[number] == offset for offset, number in consumed)
            assert broker.stop() == 0
            broker.start()
            assert consume_values(broker.bootstrap, TOTAL) == consumed
        finally:
            broker.kill()


@pytest.mark.timeout(120)
def test_sigterm_on_a_full_disk_attempts_every_step_and_the_next_start_recovers(tmp_path):
    settings = {"log.index.interval.bytes": "1", "log.index.size.max.bytes": "4096", "num.partitions": "2"}
    with small_tmpfs(tmp_path / "disk") as disk:
        broker = EmbeddedBroker(disk, settings).start()
        try:
            producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "acks": "all"})
            for number in range(200):
                producer.produce(TOPIC, b"%d:" % number + VALUE_PADDING, partition=number % 2)
            assert producer.flush(30) == 0
            filler = fill(disk)
            assert broker.stop() == 1
            failed_steps = [
                line for line in broker.stderr_tail(200).splitlines() if "ERROR broker.log.manager:" in line
            ]
            assert failed_steps and all(
                "shutdown: " in line and "No space left on device" in line for line in failed_steps
            ), failed_steps
            assert ".kafka_cleanshutdown" not in os.listdir(disk)
            os.unlink(filler)
            broker.start()
            numbers = sorted(number for _, number in consume_values(broker.bootstrap, 100)) + sorted(
                number for _, number in consume_values(broker.bootstrap, 100, partition=1)
            )
            assert sorted(numbers) == list(range(200))
        finally:
            broker.kill()
