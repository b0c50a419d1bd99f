"""A compacted topic on a real broker: each client produces to one, the cleaner compacts it in
the background, and the same client reads back each key's latest record at its offset, across
the gaps; records without a key are refused; a broker SIGKILLed while cleaning loses nothing."""

import time
from collections import Counter

import pytest

from broker.client import KafkaClient, RecordsRefusedError
from broker.embedded import EmbeddedBroker
from broker.protocol.errors import ErrorCode
from tests.compaction import active_segment_base, create_compacted, read_partition, wait_until_cleaned

from .common import Rec, now_ms

KEYS = 20


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    process = EmbeddedBroker(
        tmp_path_factory.mktemp("compaction") / "log", {"num.partitions": "1", "log.cleaner.backoff.ms": "50"}
    ).start()
    yield process
    process.kill()


def keyed_records(count: int, tag: str = "v") -> list:
    start = now_ms() - 60_000
    return [
        Rec(0, None, f"key-{i % KEYS}".encode(), f"{tag}-{i}".encode(), (("n", str(i).encode()),), start + i)
        for i in range(count)
    ]


def test_each_client_reads_a_compacted_topic_it_produced(broker, client, topic):
    create_compacted(broker.bootstrap, topic, **{"segment.bytes": "1024"})
    produced = keyed_records(600)
    for first in range(0, 600, 50):  # batches of 50 (gzip), a few to a segment
        client.produce(topic, produced[first : first + 50], compression="gzip")
    active = active_segment_base(broker.log_dir, topic)
    assert active > 0
    wait_until_cleaned(broker.log_dir, topic, active)
    latest = {}  # of each key, below the active segment (which is never cleaned)
    for offset, record in enumerate(produced[:active]):
        latest[record.key] = offset
    expected = sorted(set(latest.values()) | set(range(active, 600)))
    got = client.consume_all(topic, len(expected), partitions=[0])
    assert [r.offset for r in got] == expected  # gaps where older values were, every offset once
    by_offset = {offset: record._replace(offset=offset) for offset, record in enumerate(produced)}
    assert all(
        (r.key, r.value, r.headers) == (by_offset[r.offset].key, by_offset[r.offset].value, by_offset[r.offset].headers)
        for r in got
    )
    assert {r.key: r.value for r in got} == {r.key: r.value for r in produced}


def test_records_without_a_key_are_refused_with_invalid_record(broker, topic):
    create_compacted(broker.bootstrap, topic)
    client = KafkaClient(broker.bootstrap)
    try:
        with pytest.raises(RecordsRefusedError) as refused:
            client.produce(topic, 0, [(b"k", b"v"), (None, b"no key")])
        assert refused.value.code == ErrorCode.INVALID_RECORD and refused.value.record_indexes == [1]
        assert "without a key" in str(refused.value)
        assert client.produce(topic, 0, [(b"k", b"v")]) == 0
        client.alter_configs(topic, {"cleanup.policy": "compact,delete"})
        assert {c.name: c.value for c in client.describe_configs(topic)}["cleanup.policy"] == "compact,delete"
    finally:
        client.close()


@pytest.mark.parametrize("batch_size, failed_alongside, stored", [(1_000_000, 90, 0), (1, 0, 90)])
def test_librdkafka_fails_only_the_keyless_records_the_broker_names(
    broker, topic, batch_size, failed_alongside, stored
):
    """librdkafka's 0011_produce_batch: every tenth of 100 records has no key. In one batch the broker
    names those ten (INVALID_RECORD) and the client fails the other 90 with them (_INVALID_DIFFERENT_RECORD);
    one record per batch, the 90 with keys are stored."""
    from confluent_kafka import KafkaError, Producer

    create_compacted(broker.bootstrap, topic)
    reports = []
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "batch.size": batch_size,
            "linger.ms": 10_000,
            "message.timeout.ms": 20_000,
        }
    )
    for i in range(100):
        producer.produce(
            topic,
            f"value-{i}".encode(),
            None if i % 10 == 0 else f"key-{i}".encode(),
            partition=0,
            on_delivery=lambda err, msg: reports.append(err and err.code()),
        )
    assert producer.flush(30) == 0
    expected = {ErrorCode.INVALID_RECORD: 10, KafkaError._INVALID_DIFFERENT_RECORD: failed_alongside, None: stored}
    assert Counter(reports) == {outcome: count for outcome, count in expected.items() if count}
    client = KafkaClient(broker.bootstrap)
    try:
        assert len(read_partition(client, topic)) == stored
    finally:
        client.close()


def test_a_broker_killed_while_cleaning_keeps_every_keys_latest_record(tmp_path):
    log_dir = tmp_path / "log"
    settings = {"num.partitions": "1", "log.cleaner.backoff.ms": "20", "log.flush.interval.messages": "1"}
    topic = "killed-while-cleaning"
    broker = EmbeddedBroker(log_dir, settings).start()
    client = KafkaClient(broker.bootstrap)
    latest = {}
    try:
        create_compacted(broker.bootstrap, topic, **{"segment.bytes": "16384"})
        for round_ in range(3):
            for i in range(0, 3000, 100):
                records = [(f"key-{(i + j) % 500}".encode(), f"{round_}-{i + j}".encode()) for j in range(100)]
                first = client.produce(topic, 0, records)
                latest.update({key: (first + j, value) for j, (key, value) in enumerate(records)})
            client.close()
            time.sleep(0.02 * round_)  # the cleaner is at a different point of its pass each time
            broker.kill()
            broker = EmbeddedBroker(log_dir, settings).start()
            client = KafkaClient(broker.bootstrap)
            held = read_partition(client, topic)
            offsets = [offset for offset, _, _ in held]
            assert offsets == sorted(set(offsets))
            found = {key: (offset, value) for offset, key, value in held}
            assert found == latest  # the last record of each key is there, at its offset
    finally:
        client.close()
        broker.kill()
