"""``KafkaClient.produce`` on both brokers: one v2 batch per call, stored with the codec asked for,
records read back exactly; acks 0, 1 and all; errors for unknown partitions and oversized batches."""

import time

import pytest

from broker.client import ACKS_ALL, KafkaClient, KafkaError, NewTopic, RecordsRefusedError, UnknownTopicOrPartitionError
from broker.protocol.errors import ErrorCode
from broker.records import record_set
from broker.records.batch import Record
from broker.records.compression import Codec

from .support import existing_topic, read_partition, topic_for

TIMESTAMP = 1_700_000_000_000
RECORDS = [
    (b"k1", b"v1"),
    (None, b"no key"),
    (b"tombstone", None),
    (b"", b""),
    ("ключ".encode(), bytes(range(256)) * 20),
]


def stored_codecs(client, topic: str, partition: int, end: int) -> list[Codec]:
    """The codec of every batch below ``end``, one fetch per batch (the mock answers one batch a fetch)."""
    codecs, offset = [], 0
    while offset < end:
        _, header = next(record_set.iter_entries(client.fetch(topic, partition, offset, 1).records))
        codecs.append(header.compression)
        offset = header.last_offset + 1
    return codecs


@pytest.mark.parametrize("codec", list(Codec), ids=lambda c: c.name.lower())
def test_each_call_is_one_batch_with_its_codec_and_reads_back_exactly(cluster, request, codec):
    topic = existing_topic(cluster, request)
    with KafkaClient(cluster.bootstrap, timeout=10) as client:
        assert client.produce(topic, 1, RECORDS, codec, timestamp=TIMESTAMP) == 0
        assert client.produce(topic, 1, RECORDS[:2], codec, acks=ACKS_ALL, timestamp=TIMESTAMP + 5) == len(RECORDS)
        expected = [Record(i, TIMESTAMP, k, v) for i, (k, v) in enumerate(RECORDS)]
        expected += [Record(len(RECORDS) + i, TIMESTAMP + 5, k, v) for i, (k, v) in enumerate(RECORDS[:2])]
        assert read_partition(client, topic, 1) == expected
        assert stored_codecs(client, topic, 1, len(expected)) == [codec, codec]
        assert read_partition(client, topic, 0) == []


def test_acks_0_gets_no_answer_and_the_records_arrive(broker, request):
    """Only on this broker: librdkafka's mock cluster answers acks=0 produces, which Kafka never does."""
    topic = topic_for(request)
    with KafkaClient(broker.bootstrap, timeout=10) as client:
        assert client.create_topics([NewTopic(topic, 3)]) == {topic: None}
        assert client.produce(topic, 2, [(b"a", b"1")], acks=0) is None
        assert client.produce(topic, 2, [(b"b", b"2")], acks=0) is None
        assert client.produce(topic, 2, [(b"c", b"3")], acks=1) == 2  # answered after the two before it
        assert [(r.key, r.value) for r in read_partition(client, topic, 2)] == [
            (b"a", b"1"),
            (b"b", b"2"),
            (b"c", b"3"),
        ]


def test_records_default_to_the_current_time(cluster, request):
    topic = existing_topic(cluster, request)
    with KafkaClient(cluster.bootstrap, timeout=10) as client:
        before = int(time.time() * 1000)
        client.produce(topic, 0, [(None, b"now")])
        [record] = read_partition(client, topic, 0)
        assert before <= record.timestamp <= int(time.time() * 1000)


def test_an_unknown_partition_is_an_error_and_creates_nothing(cluster, request):
    topic = existing_topic(cluster, request)
    missing = topic_for(request, "missing")
    with KafkaClient(cluster.bootstrap, timeout=10, retries=1, retry_backoff_ms=10) as client:
        with pytest.raises(UnknownTopicOrPartitionError, match=f"{topic}-9 does not exist"):
            client.produce(topic, 9, [(None, b"x")])
        with pytest.raises(UnknownTopicOrPartitionError):
            client.produce(missing, 0, [(None, b"x")])
        assert missing not in client.topics()


def test_a_batch_over_the_topic_limit_is_refused_with_the_brokers_reason(broker, request):
    topic = topic_for(request)
    with KafkaClient(broker.bootstrap, timeout=10) as client:
        assert client.create_topics([NewTopic(topic, 1, {"max.message.bytes": "1000"})]) == {topic: None}
        with pytest.raises(KafkaError, match=f"{topic}-0: .*max.message.bytes.*MESSAGE_TOO_LARGE") as raised:
            client.produce(topic, 0, [(None, b"x" * 2000)])
        assert raised.value.code == ErrorCode.MESSAGE_TOO_LARGE
        assert client.produce(topic, 0, [(None, b"x" * 500)]) == 0


def test_produce_each_splits_a_refused_batch_until_each_refused_record_is_alone(broker, request):
    topic = topic_for(request)
    records = [(None, b"big %d " % i + b"x" * 2000 if i in (3, 4, 9) else b"small %d" % i) for i in range(12)]
    with KafkaClient(broker.bootstrap, timeout=10) as client:
        assert client.create_topics([NewTopic(topic, 1, {"max.message.bytes": "1000"})]) == {topic: None}
        refused = client.produce_each(topic, 0, records)
        assert sorted(refused) == [3, 4, 9]
        assert all(
            isinstance(e, RecordsRefusedError) and e.code == ErrorCode.MESSAGE_TOO_LARGE for e in refused.values()
        )
        stored = [r.value for r in read_partition(client, topic, 0)]
    assert stored == [value for i, (_, value) in enumerate(records) if i not in (3, 4, 9)]


def test_produce_each_sends_the_runs_between_every_record_the_broker_names_once(broker, request, monkeypatch):
    topic = topic_for(request)
    keyless = {3, 10, 11, 25, 39}
    records = [(None if i in keyless else b"k%d" % i, b"v%d" % i) for i in range(40)]
    with KafkaClient(broker.bootstrap, timeout=10) as client:
        assert client.create_topics([NewTopic(topic, 1, {"cleanup.policy": "compact"})]) == {topic: None}
        batches, produce = [], client.produce

        def counted(topic, partition, part, *args):  # the real produce, its batch sizes noted
            batches.append(len(part))
            return produce(topic, partition, part, *args)

        monkeypatch.setattr(client, "produce", counted)
        refused = client.produce_each(topic, 0, records)
        assert sorted(refused) == sorted(keyless)
        assert all(e.code == ErrorCode.INVALID_RECORD and "without a key" in str(e) for e in refused.values())
        # the whole batch, each keyless record alone, the four runs between them: each once
        assert batches == [40, 3, 1, 6, 1, 1, 13, 1, 13, 1]
        stored = [r.value for r in read_partition(client, topic, 0)]
    assert stored == [value for i, (_, value) in enumerate(records) if i not in keyless]


def test_produce_each_names_every_record_not_sent_after_another_failure(broker, request):
    missing = topic_for(request)
    with KafkaClient(broker.bootstrap, timeout=10, retries=0) as client:
        refused = client.produce_each(missing, 0, [(None, b"a"), (None, b"b")])
    assert sorted(refused) == [0, 1]
    assert all(isinstance(e, UnknownTopicOrPartitionError) for e in refused.values())
