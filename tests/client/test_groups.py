"""The client's consumer-group calls against librdkafka's mock cluster, which has a real group
coordinator (but no ListGroups, DescribeGroups, DeleteGroups or OffsetDelete): committed offsets
with metadata, a commit refused while a subscribed member is active, the missing APIs named; and
against this project's broker and its coordinator: every call, with a subscribed member and without."""

import time

import confluent_kafka
import pytest
from kafka.protocol.consumer import ConsumerProtocolAssignment

from broker.client import BrokerConnection, KafkaClient, KafkaError, parse_bootstrap
from broker.client.groups import GroupClient, GroupsUnsupportedError, assigned_partitions
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.server.handlers import HANDLERS

from .support import topic_for

WAIT_SECONDS = 20
GROUP_APIS = {
    ApiKey.FIND_COORDINATOR,
    ApiKey.OFFSET_COMMIT,
    ApiKey.OFFSET_FETCH,
    ApiKey.LIST_GROUPS,
    ApiKey.DESCRIBE_GROUPS,
    ApiKey.DELETE_GROUPS,
    ApiKey.OFFSET_DELETE,
}


@pytest.fixture
def groups(mock_cluster):
    with KafkaClient(mock_cluster.bootstrap, timeout=10, retries=2, retry_backoff_ms=50) as client:
        yield GroupClient(client)


def create_topic(bootstrap: str, topic: str) -> list[int]:
    """Auto-create a topic on the mock cluster (its default partition count) and return its partitions."""
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap})
    partitions = sorted(producer.list_topics(topic, timeout=WAIT_SECONDS).topics[topic].partitions)
    for partition in partitions:
        producer.produce(topic, value=b"v", partition=partition)
    assert producer.flush(WAIT_SECONDS) == 0
    return partitions


def subscribed_member(bootstrap: str, group: str, topic: str) -> confluent_kafka.Consumer:
    """A confluent-kafka consumer that joined ``group`` with subscribe() and got its assignment."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "log_level": 3,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    deadline = time.monotonic() + WAIT_SECONDS
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.2)
    assert consumer.assignment(), "the member got no assignment in time"
    return consumer


def test_our_broker_advertises_exactly_the_apis_it_handles(broker):
    [(host, port)] = parse_bootstrap(broker.bootstrap)
    connection = BrokerConnection(host, port)
    try:
        assert set(connection.versions) == set(HANDLERS)
        assert GROUP_APIS <= set(connection.versions)
    finally:
        connection.close()


def test_every_group_call_against_our_broker(broker, request):
    topic, group = topic_for(request), topic_for(request, "group")
    partitions = create_topic(broker.bootstrap, topic)
    with KafkaClient(broker.bootstrap, timeout=10, retries=2, retry_backoff_ms=50) as client:
        groups = GroupClient(client)
        groups.commit(group, {(topic, partitions[0]): 1, (topic, partitions[1]): 0}, metadata="run 7")
        expected = {(topic, partitions[0]): (1, "run 7"), (topic, partitions[1]): (0, "run 7")}
        found = groups.committed(group, {topic: partitions})
        assert {tp: (c.offset, c.metadata) for tp, c in found.items()} == expected
        assert {tp: (c.offset, c.metadata) for tp, c in groups.committed(group).items()} == expected  # topics=null
        assert groups.list_groups()[group] == ""  # offsets only: no protocol type
        assert groups.describe(group).state == "Empty"
        member = subscribed_member(broker.bootstrap, group, topic)
        try:
            description = groups.describe(group)
            assert (description.state, description.protocol_type) == ("Stable", "consumer")
            [described] = description.members
            assert sorted(described.assignment[topic]) == partitions and described.host == "/127.0.0.1"
            with pytest.raises(KafkaError) as refused:
                groups.commit(group, {(topic, partitions[0]): 0})
            assert refused.value.code == ErrorCode.UNKNOWN_MEMBER_ID
            assert (
                groups.delete_offsets(group, [(topic, partitions[0])])[(topic, partitions[0])].code
                == ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            )
            assert groups.delete_groups([group])[group].code == ErrorCode.NON_EMPTY_GROUP
        finally:
            member.close()
        assert groups.delete_offsets(group, [(topic, partitions[0])]) == {(topic, partitions[0]): None}
        assert set(groups.committed(group)) == {(topic, partitions[1])}
        assert groups.delete_groups([group]) == {group: None}
        assert groups.committed(group) == {} and group not in groups.list_groups()
        assert groups.delete_groups([group])[group].code == ErrorCode.GROUP_ID_NOT_FOUND
        # internal topics are left out of topic lists (so of subscribePattern), as Kafka's consumers do
        assert "__consumer_offsets" in client.topics(include_internal=True)
        assert "__consumer_offsets" not in client.topics() and topic in client.topics()


def test_commit_and_fetch_offsets_with_metadata(groups, mock_cluster, request):
    topic, group = topic_for(request), topic_for(request, "group")
    partitions = create_topic(mock_cluster.bootstrap, topic)
    groups.commit(group, {(topic, partitions[0]): 1, (topic, partitions[1]): 0}, metadata="run 7")
    found = groups.committed(group, {topic: partitions})  # the mock answers its partitions' leader epochs
    assert {tp: (c.offset, c.metadata) for tp, c in found.items()} == {
        (topic, partitions[0]): (1, "run 7"),
        (topic, partitions[1]): (0, "run 7"),
    }
    everything = groups.committed(group)  # all topics: the mock echoes null, the client asks for every partition
    assert {tp: c.offset for tp, c in everything.items()} == {(topic, partitions[0]): 1, (topic, partitions[1]): 0}


def test_commit_refused_while_a_subscribed_member_is_active(groups, mock_cluster, request):
    topic, group = topic_for(request), topic_for(request, "group")
    partitions = create_topic(mock_cluster.bootstrap, topic)
    member = subscribed_member(mock_cluster.bootstrap, group, topic)
    try:
        member.commit(offsets=[confluent_kafka.TopicPartition(topic, partitions[0], 1)], asynchronous=False)
        with pytest.raises(KafkaError) as refused:
            groups.commit(group, {(topic, partitions[0]): 0})
        assert refused.value.code == ErrorCode.UNKNOWN_MEMBER_ID
        assert groups.committed(group, {topic: partitions})[(topic, partitions[0])].offset == 1
    finally:
        member.close()


def test_apis_the_mock_lacks_are_named(groups):
    with pytest.raises(GroupsUnsupportedError, match="does not support describing consumer groups") as missing:
        groups.describe("any")
    assert missing.value.api == ApiKey.DESCRIBE_GROUPS
    with pytest.raises(GroupsUnsupportedError, match="does not support listing consumer groups"):
        groups.list_groups()


def test_assignments_decode_as_kafka_encodes_them():
    partition = ConsumerProtocolAssignment._struct.fields["assigned_partitions"].data_class
    for version in range(4):
        encoded = ConsumerProtocolAssignment(
            assigned_partitions=[
                partition(topic="orders", partitions=[2, 0]),
                partition(topic="\u00e9", partitions=[]),
            ],
            user_data=b"sticky",
        ).encode(version=version)
        assert assigned_partitions(bytes(encoded)) == {"orders": [0, 2], "\u00e9": []}
    assert assigned_partitions(b"") == {} and assigned_partitions(b"\x00\x00\x00") == {}
