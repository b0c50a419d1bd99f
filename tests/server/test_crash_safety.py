"""Crash safety through the network: SIGKILL the broker during a steady produce, restart, check.

With ``log.flush.interval.messages=1`` every acknowledged batch was fsynced before its ack, and
idempotent producers' state is rebuilt on restart, so after any number of kills every
acknowledged record is in the log exactly once and in order, and a consumer reading with
``assign()`` reads on from where it was, without gaps or repeats.
"""

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from broker.embedded import EmbeddedBroker

TOPIC = "crash"
TOTAL = 1500
KILL_AFTER_ACKS = (300, 800)


@pytest.mark.timeout(240)
def test_acknowledged_records_survive_sigkill_exactly_once(tmp_path):
    settings = {"log.flush.interval.messages": "1", "num.partitions": "1"}
    broker = EmbeddedBroker(tmp_path / "log", settings).start()
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 2,
            "message.timeout.ms": 120_000,
            "reconnect.backoff.max.ms": 500,
        }
    )
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "crash-test",
            "enable.auto.commit": False,
            "reconnect.backoff.max.ms": 500,
        }
    )
    acked, failed, consumed = {}, [], []

    def on_delivery(error, message):
        if error is None:
            acked[int(message.value())] = message.offset()
        else:
            failed.append((message.value(), error))

    def consume_some():
        message = consumer.poll(0.01)
        if message is not None and not message.error():
            consumed.append((message.offset(), int(message.value())))
        elif message is not None and message.error().code() != KafkaError._PARTITION_EOF:
            pass  # transport errors while the broker is down are expected

    try:
        producer.produce(TOPIC, b"0", on_delivery=on_delivery)
        producer.flush(30)
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        kills = list(KILL_AFTER_ACKS)
        deadline = time.monotonic() + 180
        for i in range(1, TOTAL):
            producer.produce(TOPIC, str(i).encode(), on_delivery=on_delivery)
            producer.poll(0)
            consume_some()
            if kills and len(acked) >= kills[0]:
                kills.pop(0)
                broker.kill()
                broker = EmbeddedBroker(tmp_path / "log", settings, port=broker.port).start()
            if i % 50 == 0:
                time.sleep(0.005)
        assert producer.flush(120) == 0, "records still in flight after 120 s"
        while len(consumed) < TOTAL and time.monotonic() < deadline:
            consume_some()
    finally:
        consumer.close()
        broker.kill()

    assert not kills, "the broker was not killed as planned"
    assert failed == []
    assert len(acked) == TOTAL
    # what the consumer read across the kills: every record once, in order, offsets without gaps
    assert [offset for offset, _ in consumed] == list(range(TOTAL))
    assert [value for _, value in consumed] == list(range(TOTAL))
    assert all(acked[value] == offset for offset, value in consumed)
