"""Metadata: brokers and partition leaders, routing to leaders, unknown topics, and no auto-creation."""

import os

import pytest

from broker.client import EARLIEST, LATEST, BrokerConnection, KafkaClient, UnknownTopicOrPartitionError
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode

from .support import Msg, expected_by_partition, produce, read_partition, topic_for

PARTITIONS = 4  # num.partitions of our broker; librdkafka's mock also auto-creates 4


def _fill(cluster, topic, per_partition=(3, 5, 7, 2)):
    groups = [
        [
            Msg(
                p,
                f"{topic}-{p}-{i}".encode(),
                f"p{p}-value-{i}".encode(),
                (("p", str(p).encode()),),
                1_700_000_000_000 + i,
            )
            for p, count in enumerate(per_partition)
            for i in range(count)
        ]
    ]
    return expected_by_partition(produce(cluster.bootstrap, topic, groups))


def test_metadata_lists_brokers_and_a_leader_per_partition(cluster, request):
    topic = topic_for(request)
    _fill(cluster, topic)
    with KafkaClient(cluster.bootstrap, timeout=10) as client:
        metadata = client.metadata([topic])
        assert {f"{b.host}:{b.port}" for b in metadata.brokers.values()} == set(cluster.bootstrap.split(","))
        assert client.partitions_of(topic) == list(range(PARTITIONS))
        assert metadata.topic_errors == {}
        for partition in range(PARTITIONS):
            leader = metadata.leaders[(topic, partition)]
            assert leader in metadata.brokers
            assert client.leader_of(topic, partition) == metadata.brokers[leader]
        assert topic in client.topics()


def test_mock_spreads_leaders_and_every_partition_is_read_from_its_leader(mock_cluster, request):
    # the mock places leaders at random: now and then all on one broker; take a topic where not
    for attempt in range(10):
        topic = topic_for(request, str(attempt))
        expected = _fill(mock_cluster, topic)
        with KafkaClient(mock_cluster.bootstrap, timeout=10) as client:
            metadata = client.metadata([topic])
        leaders = {p: metadata.leaders[(topic, p)] for p in range(PARTITIONS)}
        if len(set(leaders.values())) > 1:
            break
    assert len(set(leaders.values())) > 1, f"the mock put every leader on one broker 10 times: {leaders}"
    with KafkaClient(mock_cluster.bootstrap, timeout=10, retries=0) as client:
        # with retries=0 a request sent to a non-leader would fail (NOT_LEADER_OR_FOLLOWER)
        for partition in range(PARTITIONS):
            assert read_partition(client, topic, partition) == expected[partition]
        wanted = {(topic, p): LATEST for p in range(PARTITIONS)}
        assert client.list_offsets(wanted) == {(topic, p): (len(expected[p]), -1) for p in range(PARTITIONS)}
        assert client.list_offsets({(topic, p): EARLIEST for p in range(PARTITIONS)}) == {
            (topic, p): (0, -1) for p in range(PARTITIONS)
        }
        assert set(client._connections) == set(leaders.values())  # one connection per leader used


def test_mock_non_leaders_refuse_so_routing_matters(mock_cluster, request):
    """The check above is meaningful: the mock answers NOT_LEADER_OR_FOLLOWER off the leader."""
    topic = topic_for(request)
    _fill(mock_cluster, topic)
    with KafkaClient(mock_cluster.bootstrap, timeout=10) as client:
        metadata = client.metadata([topic])
    leader = metadata.leaders[(topic, 0)]
    other = next(b for n, b in metadata.brokers.items() if n != leader)
    connection = BrokerConnection(other.host, other.port, timeout=10)
    try:
        response = connection.request(
            ApiKey.LIST_OFFSETS,
            {
                "replica_id": -1,
                "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": LATEST}]}],
            },
        )
    finally:
        connection.close()
    assert response["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER


@pytest.mark.parametrize("call", ["partitions_of", "leader_of", "fetch", "list_offsets"])
def test_unknown_topic(cluster, request, call):
    topic = topic_for(request, "missing")
    with KafkaClient(cluster.bootstrap, timeout=10, retries=1, retry_backoff_ms=10) as client:
        with pytest.raises(UnknownTopicOrPartitionError) as info:
            {
                "partitions_of": lambda: client.partitions_of(topic),
                "leader_of": lambda: client.leader_of(topic, 0),
                "fetch": lambda: client.fetch(topic, 0, 0, 1024),
                "list_offsets": lambda: client.list_offsets({(topic, 0): LATEST}),
            }[call]()
    assert info.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert topic in str(info.value)


def test_unknown_partition_of_an_existing_topic(cluster, request):
    topic = topic_for(request)
    _fill(cluster, topic)
    with KafkaClient(cluster.bootstrap, timeout=10, retries=1, retry_backoff_ms=10) as client:
        with pytest.raises(UnknownTopicOrPartitionError, match=f"{topic}-{PARTITIONS}"):
            client.fetch(topic, PARTITIONS, 0, 1024)
        with pytest.raises(UnknownTopicOrPartitionError):
            client.list_offsets({(topic, 0): LATEST, (topic, 99): LATEST})


def test_metadata_does_not_create_topics(cluster, request):
    """Our broker auto-creates on Metadata by default (auto.create.topics.enable): the client must
    ask it not to."""
    topic = topic_for(request, "ghost")
    with KafkaClient(cluster.bootstrap, timeout=10) as client:
        metadata = client.metadata([topic])
        assert metadata.topic_errors == {topic: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert not any(t == topic for t, _ in metadata.leaders)
    with KafkaClient(cluster.bootstrap, timeout=10) as fresh:
        assert topic not in fresh.topics()
        with pytest.raises(UnknownTopicOrPartitionError):
            fresh.partitions_of(topic)
    if cluster.process is not None:
        assert not [d for d in os.listdir(cluster.process.log_dir) if d.startswith(topic)]


def test_metadata_of_no_topic_and_all_topics(cluster, request):
    topic = topic_for(request)
    _fill(cluster, topic)
    with KafkaClient(cluster.bootstrap, timeout=10) as client:
        assert client.metadata([]).leaders == {}
        every = client.metadata(None)
        assert {(topic, p) for p in range(PARTITIONS)} <= set(every.leaders)
        assert topic in client.topics()
