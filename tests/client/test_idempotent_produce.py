"""An idempotent producer (``init_producer_id`` and the sequences it returns): a batch whose answer
was lost is sent again by the client's retry and stored once on this broker, where the same retry
without sequences stores it twice (Kafka's ``enable.idempotence=false``); sequences advance per
partition, on both brokers; acks other than all are refused."""

import pytest

from broker.client import ACKS_ALL, KafkaClient, NewTopic
from broker.protocol.apis import ApiKey

from ..spark.proxy import RecordingProxy
from .support import existing_topic, read_partition, topic_for

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def behind_proxy(start_broker):
    """A broker reached only through a proxy that can lose answers (the broker advertises the proxy)."""
    with RecordingProxy() as proxy:
        broker = start_broker({"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"})
        proxy.target = ("127.0.0.1", broker.port)
        yield proxy, f"127.0.0.1:{proxy.port}"


def values_after_a_lost_answer(proxy, bootstrap: str, topic: str, idempotent: bool) -> list[bytes]:
    with KafkaClient(bootstrap, retry_backoff_ms=10) as client:
        client.create_topics([NewTopic(topic, 1)])
        sequences = client.init_producer_id() if idempotent else None
        client.produce(topic, 0, [(None, b"first")], acks=ACKS_ALL, sequences=sequences)
        proxy.cut_answer_to(ApiKey.PRODUCE)
        client.produce(topic, 0, [(None, b"second"), (None, b"third")], acks=ACKS_ALL, sequences=sequences)
        client.produce(topic, 0, [(None, b"fourth")], acks=ACKS_ALL, sequences=sequences)
        return [record.value for record in read_partition(client, topic, 0)]


def test_a_retried_batch_of_an_idempotent_producer_is_stored_once(behind_proxy, request):
    proxy, bootstrap = behind_proxy
    assert values_after_a_lost_answer(proxy, bootstrap, topic_for(request), idempotent=True) == [
        b"first",
        b"second",
        b"third",
        b"fourth",
    ]


def test_without_sequences_the_same_retry_stores_the_batch_twice(behind_proxy, request):
    proxy, bootstrap = behind_proxy
    assert values_after_a_lost_answer(proxy, bootstrap, topic_for(request), idempotent=False) == [
        b"first",
        b"second",
        b"third",
        b"second",
        b"third",
        b"fourth",
    ]


def test_sequences_count_records_per_partition_on_both_brokers(cluster, request):
    topic = existing_topic(cluster, request)
    with KafkaClient(cluster.bootstrap) as client:
        sequences = client.init_producer_id()
        assert sequences.producer_id >= 0
        for partition, count in ((0, 3), (1, 2), (0, 4)):
            client.produce(topic, partition, [(None, b"v")] * count, acks=ACKS_ALL, sequences=sequences)
        assert sequences.batch_fields(topic, 0)["base_sequence"] == 7
        assert sequences.batch_fields(topic, 1)["base_sequence"] == 2
        assert [len(read_partition(client, topic, p)) for p in (0, 1)] == [7, 2]


def test_an_idempotent_producer_needs_acks_all(broker, request):
    with KafkaClient(broker.bootstrap) as client:
        with pytest.raises(ValueError, match="acks=all"):
            client.produce(topic_for(request), 0, [(None, b"v")], acks=1, sequences=client.init_producer_id())
