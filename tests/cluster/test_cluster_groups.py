"""Consumer groups spread over a 3-broker cluster: a group's coordinator is the leader of its
partition of ``__consumer_offsets`` (every broker's FindCoordinator says the same), the other
brokers answer NOT_COORDINATOR; a confluent-kafka consumer group reads a topic spread over the
brokers and commits; when the coordinator's broker dies its groups have no coordinator until it
returns, and then it loads the partition again with every commit. A topic deleted through one
broker loses its offsets in the groups of every coordinator (one that was down then drops them when
it loads its groups), and ``__consumer_offsets`` refuses to
be deleted, emptied, repartitioned or made non-compacted through any broker."""

import confluent_kafka

from broker.client import GroupClient, KafkaClient
from broker.coordinator.group_partition import partition_for
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from tests.cli.support import kafkalog
from tests.interop.clients import ADAPTERS
from tests.interop.common import make_records
from tests.waiting import wait_for

from .test_cluster_topics import create_topic, created_everywhere, leaders, metadata, request

OFFSETS_PARTITIONS = 6  # offsets.topic.num.partitions of the cluster fixture


def find_coordinator(broker, group: str) -> dict:
    return request(broker, ApiKey.FIND_COORDINATOR, {"key": group, "key_type": 0})


def offsets_leaders(cluster) -> list[int]:
    """The leaders of ``__consumer_offsets`` (made by a FindCoordinator), once every live broker knows them."""
    find_coordinator(cluster.brokers[1], "creates-the-topic")
    found = [
        wait_for(
            lambda broker=broker: (
                (ids := leaders(metadata(broker, ["__consumer_offsets"]), "__consumer_offsets"))
                and -1 not in ids
                and ids
            ),
            timeout=30,
            what="__consumer_offsets with its leaders",
        )
        for broker in cluster.brokers.values()
        if broker.running
    ]
    assert all(ids == found[0] for ids in found)
    return found[0]


def test_every_broker_names_the_leader_of_the_group_s_partition_and_the_others_answer_not_coordinator(cluster):
    led_by = offsets_leaders(cluster)
    assert set(led_by) == {1, 2, 3}  # the groups' partitions are spread over the brokers
    groups = {}
    for n in range(200):  # a group coordinated by each broker
        groups.setdefault(led_by[partition_for(f"g{n}", OFFSETS_PARTITIONS)], f"g{n}")
    for leader, group in groups.items():
        for broker in cluster.brokers.values():
            answer = find_coordinator(broker, group)
            assert (answer["error_code"], answer["node_id"], answer["port"]) == (
                ErrorCode.NONE,
                leader,
                cluster.brokers[leader].port,
            )
        for broker_id, broker in cluster.brokers.items():

            def fetched(broker=broker, group=group) -> int:
                return request(broker, ApiKey.OFFSET_FETCH, {"group_id": group, "topics": None})["error_code"]

            if broker_id == leader:  # once it has taken its image of the new topic (clients retry until then)
                wait_for(lambda: fetched() == ErrorCode.NONE, timeout=30, what="the coordinator to answer")
            else:
                assert fetched() == ErrorCode.NOT_COORDINATOR


def test_a_consumer_group_reads_a_topic_spread_over_the_brokers_and_its_commits_survive_the_coordinator_s_death(
    cluster,
):
    topic, group = "grouped", "readers"
    assert create_topic(cluster.brokers[1], topic, 6) == ErrorCode.NONE
    records = make_records(60, partitions=tuple(range(6)), tag="grouped")
    ADAPTERS["confluent"](cluster.bootstrap).produce(topic, records)
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        got = []
        wait_for(
            lambda: got.extend(m for m in consumer.consume(60, 0.5) if not m.error()) or len(got) >= 60,
            timeout=90,
            interval=0,
            what="the group member to read all 60 records",
        )
        assert sorted((m.partition(), m.offset()) for m in got) == sorted((p, o) for p in range(6) for o in range(10))
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    coordinator = offsets_leaders(cluster)[partition_for(group, OFFSETS_PARTITIONS)]
    with KafkaClient(cluster.bootstrap) as client:
        committed = GroupClient(client).committed(group, {topic: list(range(6))})
    assert {p: c.offset for (_, p), c in committed.items()} == dict.fromkeys(range(6), 10)
    cluster.brokers[coordinator].kill()
    other = cluster.brokers[coordinator % 3 + 1]
    wait_for(
        lambda: find_coordinator(other, group)["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE,
        timeout=60,
        what="the group to have no coordinator",
    )
    cluster.brokers[coordinator].start()
    wait_for(
        lambda: find_coordinator(other, group)["node_id"] == coordinator,
        timeout=60,
        what="the broker to coordinate the group again",
    )
    with KafkaClient(cluster.bootstrap) as client:  # retries while the partition loads
        committed = GroupClient(client).committed(group, {topic: list(range(6))})
    assert {p: c.offset for (_, p), c in committed.items()} == dict.fromkeys(range(6), 10)


def test_a_topic_deleted_through_one_broker_loses_its_offsets_in_every_coordinator_and_internal_topics_refuse(cluster):
    led_by = offsets_leaders(cluster)
    groups = {}
    for n in range(200):  # a group coordinated by each broker
        groups.setdefault(led_by[partition_for(f"doomed-{n}", OFFSETS_PARTITIONS)], f"doomed-{n}")
    created_everywhere(cluster, 1, "doomed", 3)
    created_everywhere(cluster, 1, "spared", 1)
    with KafkaClient(cluster.bootstrap) as client:
        for group in groups.values():
            GroupClient(client).commit(group, {("doomed", 0): 5, ("doomed", 2): 7, ("spared", 0): 3})
    one = cluster.brokers[1].bootstrap  # the deletion goes through broker 1; the groups are coordinated by all three
    refused = [
        kafkalog("topics", "delete", "__consumer_offsets", "--bootstrap-server", one),
        kafkalog("delete-records", "__consumer_offsets", "--before", "0:end", "--bootstrap-server", one),
        kafkalog("topics", "alter", "__consumer_offsets", "--partitions", "7", "--bootstrap-server", one),
        kafkalog(
            "configs",
            "alter",
            "--topic",
            "__consumer_offsets",
            "--add-config",
            "cleanup.policy=delete",
            "--bootstrap-server",
            one,
        ),
    ]
    assert [done.returncode for done in refused] == [1] * 4
    assert ["INVALID_TOPIC_EXCEPTION"] * 3 + ["INVALID_CONFIG"] == [done.stderr.split("(")[-1][:-2] for done in refused]
    assert kafkalog("topics", "delete", "doomed", "--bootstrap-server", one).returncode == 0
    with KafkaClient(cluster.bootstrap) as client:
        for group in groups.values():
            wait_for(
                lambda group=group: set(GroupClient(client).committed(group)) == {("spared", 0)},
                timeout=30,
                what=f"group {group!r} to lose the offsets of the deleted topic",
            )
        assert leaders(metadata(cluster.brokers[2], ["__consumer_offsets"]), "__consumer_offsets") == led_by


def test_offsets_of_a_topic_deleted_while_their_coordinator_was_down_are_gone_once_it_loads_them(cluster):
    led_by = offsets_leaders(cluster)
    coordinator = led_by[partition_for("away-group", OFFSETS_PARTITIONS)]
    other_id = coordinator % 3 + 1
    other = cluster.brokers[other_id]
    created = request(
        other,
        ApiKey.CREATE_TOPICS,
        {  # on a broker that stays up: the deletion can complete
            "topics": [
                {
                    "name": "away",
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "configs": [],
                    "assignments": [{"partition_index": 0, "broker_ids": [other_id]}],
                }
            ],
            "timeout_ms": 30000,
            "validate_only": False,
        },
    )
    assert created["topics"][0]["error_code"] == ErrorCode.NONE
    for broker in cluster.brokers.values():  # the coordinator too, or it refuses the commit
        wait_for(
            lambda broker=broker: leaders(metadata(broker, ["away"]), "away") == [other_id],
            timeout=30,
            what="topic away",
        )
    with KafkaClient(cluster.bootstrap) as client:
        GroupClient(client).commit("away-group", {("away", 0): 9})
    cluster.brokers[coordinator].kill()
    wait_for(
        lambda: find_coordinator(other, "away-group")["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE,
        timeout=60,
        what="the group to have no coordinator",
    )
    assert kafkalog("topics", "delete", "away", "--bootstrap-server", other.bootstrap).returncode == 0
    wait_for(lambda: leaders(metadata(other, ["away"]), "away") == [], timeout=30, what="the deletion to complete")
    cluster.brokers[coordinator].start()
    with KafkaClient(cluster.bootstrap) as client:  # retries while the partition loads
        wait_for(
            lambda: GroupClient(client).committed("away-group") == {},
            timeout=60,
            what="the offsets of the deleted topic to go once the coordinator loaded them",
        )
