"""Topics in cluster mode, on 3 real brokers and a real ZooKeeper: created, grown, configured and
deleted through any broker, written as Kafka writes them (read back with kazoo), spread over the
brokers by the controller (or as a client's manual assignment says), and every broker's Metadata naming
all brokers, leaders and the controller."""

import json
import os

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from broker.client import BrokerConnection, KafkaClient
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from tests.waiting import wait_for


@pytest.fixture(scope="module")
def kazoo(cluster_kazoo):
    return cluster_kazoo


def request(broker, api: ApiKey, body: dict) -> dict:
    connection = BrokerConnection("127.0.0.1", broker.port, timeout=60)
    try:
        return connection.request(api, body)
    finally:
        connection.close()


def create_topic(broker, name: str, partitions: int, configs: dict | None = None) -> int:
    response = request(
        broker,
        ApiKey.CREATE_TOPICS,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                }
            ],
            "timeout_ms": 30000,
            "validate_only": False,
        },
    )
    return response["topics"][0]["error_code"]


def created_everywhere(cluster, through: int, name: str, partitions: int) -> list[int]:
    """Create a topic through broker ``through``; its partitions' leaders once every broker knows them
    (the others learn of the topic from ZooKeeper a moment after the one that created it)."""
    assert create_topic(cluster.brokers[through], name, partitions) == ErrorCode.NONE
    found = {}
    for broker_id, broker in cluster.brokers.items():
        found[broker_id] = wait_for(
            lambda broker=broker: (
                len(ids := leaders(metadata(broker, [name]), name)) == partitions and -1 not in ids and ids
            ),
            timeout=30,
            what=f"broker {broker_id} to know {name}'s leaders",
        )
    assert len({tuple(ids) for ids in found.values()}) == 1
    return found[through]


def list_offsets(broker, topic: str, partition: int) -> dict:
    """ListOffsets (latest) of one partition, asked of ``broker``."""
    response = request(
        broker,
        ApiKey.LIST_OFFSETS,
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": topic,
                    "partitions": [{"partition_index": partition, "current_leader_epoch": -1, "timestamp": -1}],
                }
            ],
        },
    )
    return response["topics"][0]["partitions"][0]


def metadata(broker, topics=None) -> dict:
    return request(
        broker,
        ApiKey.METADATA,
        {"topics": None if topics is None else [{"name": t} for t in topics], "allow_auto_topic_creation": False},
    )


def leaders(response: dict, topic: str) -> list[int]:
    """Each partition's leader, by index (none for a topic the broker does not know)."""
    found = next((t for t in response["topics"] if t["name"] == topic), {"partitions": []})
    return [p["leader_id"] for p in sorted(found["partitions"], key=lambda p: p["partition_index"])]


def znode(kazoo, path: str):
    return json.loads(kazoo.get(path)[0])


def test_topics_created_through_each_broker_are_spread_over_all_three_and_written_as_kafka_does(cluster, kazoo):
    controller = znode(kazoo, "/controller")["brokerid"]
    controller_epoch = int(kazoo.get("/controller_epoch")[0])
    for broker_id, broker in cluster.brokers.items():
        name = f"spread-{broker_id}"
        assert create_topic(broker, name, 6, {"retention.ms": "3600000"}) == ErrorCode.NONE
        assignment = znode(kazoo, f"/brokers/topics/{name}")
        assert set(assignment) == {"version", "partitions", "adding_replicas", "removing_replicas"}
        assert assignment["version"] == 2 and assignment["adding_replicas"] == assignment["removing_replicas"] == {}
        replicas = [assignment["partitions"][str(p)] for p in range(6)]
        assert all(len(r) == 1 for r in replicas)
        assert all(replicas[p + 1][0] == replicas[p][0] % 3 + 1 for p in range(5))  # round-robin over 1, 2, 3
        for p in range(6):
            state = znode(kazoo, f"/brokers/topics/{name}/partitions/{p}/state")
            assert state == {
                "controller_epoch": controller_epoch,
                "leader": replicas[p][0],
                "version": 1,
                "leader_epoch": 0,
                "isr": replicas[p],
            }
        assert znode(kazoo, f"/config/topics/{name}") == {"version": 1, "config": {"retention.ms": "3600000"}}
        for other in cluster.brokers.values():  # every broker knows the topic and its leaders at once or soon
            wait_for(
                lambda other=other, name=name, replicas=replicas: (
                    leaders(metadata(other, [name]), name) == [r[0] for r in replicas]
                ),
                timeout=30,
                what=f"broker {other.port} to see {name}'s leaders",
            )
    response = metadata(cluster.brokers[1])
    assert response["controller_id"] == controller
    assert sorted((b["node_id"], b["port"]) for b in response["brokers"]) == sorted(
        (broker_id, broker.port) for broker_id, broker in cluster.brokers.items()
    )


def test_a_topic_name_is_taken_cluster_wide(cluster):
    assert create_topic(cluster.brokers[1], "taken", 1) == ErrorCode.NONE
    assert create_topic(cluster.brokers[2], "taken", 1) == ErrorCode.TOPIC_ALREADY_EXISTS
    assert create_topic(cluster.brokers[3], "tak.en", 1) == ErrorCode.NONE
    assert create_topic(cluster.brokers[3], "tak_en", 1) == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_partitions_added_through_any_broker_get_leaders(cluster, kazoo):
    assert create_topic(cluster.brokers[1], "growing", 2) == ErrorCode.NONE
    response = request(
        cluster.brokers[3],
        ApiKey.CREATE_PARTITIONS,
        {"topics": [{"name": "growing", "count": 5, "assignments": None}], "timeout_ms": 30000, "validate_only": False},
    )
    assert response["results"][0]["error_code"] == ErrorCode.NONE
    assert len(znode(kazoo, "/brokers/topics/growing")["partitions"]) == 5
    found = leaders(metadata(cluster.brokers[3], ["growing"]), "growing")
    assert len(found) == 5 and set(found) == {1, 2, 3}


def test_topic_settings_changed_through_one_broker_reach_every_broker(cluster, kazoo):
    assert create_topic(cluster.brokers[1], "tuned", 3) == ErrorCode.NONE
    response = request(
        cluster.brokers[2],
        ApiKey.ALTER_CONFIGS,
        {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": "tuned",
                    "configs": [{"name": "retention.bytes", "value": "12345"}],
                }
            ],
            "validate_only": False,
        },
    )
    assert response["responses"][0]["error_code"] == ErrorCode.NONE
    assert znode(kazoo, "/config/topics/tuned") == {"version": 1, "config": {"retention.bytes": "12345"}}

    def described(broker) -> str | None:
        result = request(
            broker,
            ApiKey.DESCRIBE_CONFIGS,
            {
                "resources": [
                    {"resource_type": 2, "resource_name": "tuned", "configuration_keys": ["retention.bytes"]}
                ],
                "include_synonyms": False,
                "include_documentation": False,
            },
        )["results"][0]
        return result["configs"][0]["value"] if result["configs"] else None

    for broker in cluster.brokers.values():
        wait_for(lambda broker=broker: described(broker) == "12345", timeout=30, what="the setting on every broker")


def test_a_topic_deleted_through_a_broker_leaves_zookeeper_and_every_broker_s_disk(cluster, kazoo):
    assert create_topic(cluster.brokers[2], "doomed", 3) == ErrorCode.NONE
    directories = [f"{b.log_dir}/doomed-{p}" for b in cluster.brokers.values() for p in range(3)]
    wait_for(
        lambda: sum(os.path.isdir(d) for d in directories) == 3,
        timeout=30,
        what="each partition's directory on its leader (and only there)",
    )
    response = request(cluster.brokers[1], ApiKey.DELETE_TOPICS, {"topic_names": ["doomed"], "timeout_ms": 30000})
    assert response["responses"][0]["error_code"] == ErrorCode.NONE
    assert not kazoo.exists("/brokers/topics/doomed") and not kazoo.exists("/config/topics/doomed")
    assert kazoo.get_children("/admin/delete_topics") == []
    wait_for(lambda: not any(os.path.isdir(d) for d in directories), timeout=30, what="the partition directories to go")
    for broker in cluster.brokers.values():
        wait_for(
            lambda broker=broker: (
                metadata(broker, ["doomed"])["topics"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            ),
            timeout=30,
            what="every broker to forget the topic",
        )
    assert create_topic(cluster.brokers[3], "doomed", 1) == ErrorCode.NONE  # the name is free again


def test_a_topic_deleted_and_created_again_between_two_reads_starts_empty(cluster, kazoo):
    """Every broker sees both changes at once (one ZooKeeper transaction): the new topic is told from
    the old one by its node's creation, and the old partition's records are not served as the new one's."""
    [leader] = created_everywhere(cluster, 1, "reborn", 1)
    with KafkaClient(cluster.bootstrap) as client:
        client.produce("reborn", 0, [(b"k", b"old")] * 3)
        assert client.list_offsets({("reborn", 0): -1})[("reborn", 0)][0] == 3
    assignment = kazoo.get("/brokers/topics/reborn")[0]
    again = kazoo.transaction()
    for path in (
        "/brokers/topics/reborn/partitions/0/state",
        "/brokers/topics/reborn/partitions/0",
        "/brokers/topics/reborn/partitions",
        "/brokers/topics/reborn",
    ):
        again.delete(path)
    again.create("/brokers/topics/reborn", assignment)
    assert not any(isinstance(result, Exception) for result in again.commit())

    def latest() -> int | None:
        answer = list_offsets(cluster.brokers[leader], "reborn", 0)
        return answer["offset"] if answer["error_code"] == ErrorCode.NONE else None

    wait_for(
        lambda: kazoo.exists("/brokers/topics/reborn/partitions/0/state"),
        timeout=30,
        what="the controller to elect the new partition's leader",
    )
    assert wait_for(
        lambda: [offset] if (offset := latest()) is not None else None,
        timeout=30,
        what="the leader to serve the new partition",
    ) == [0]


def confluent_admin(cluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap})


def confluent_error(future) -> int:
    """The Kafka error code a confluent-kafka admin future failed with (0 when it succeeded)."""
    try:
        future.result(timeout=60)
    except KafkaException as exc:
        return exc.args[0].code()
    return ErrorCode.NONE


def test_a_manual_replica_assignment_from_a_third_party_admin_client_is_followed(cluster, kazoo):
    admin = confluent_admin(cluster)
    wanted = [[3], [1], [3], [2]]
    created = admin.create_topics([NewTopic("placed", len(wanted), replica_assignment=wanted)])["placed"]
    assert confluent_error(created) == 0
    assert [znode(kazoo, "/brokers/topics/placed")["partitions"][str(p)] for p in range(4)] == wanted
    for broker in cluster.brokers.values():
        wait_for(
            lambda broker=broker: leaders(metadata(broker, ["placed"]), "placed") == [3, 1, 3, 2],
            timeout=30,
            what=f"broker {broker.port} to see the named leaders",
        )
    grown = admin.create_partitions([NewPartitions("placed", 6, replica_assignment=[[1], [1]])])["placed"]
    assert confluent_error(grown) == 0
    assert leaders(metadata(cluster.brokers[2], ["placed"]), "placed") == [3, 1, 3, 2, 1, 1]
    with KafkaClient(cluster.bootstrap) as client:  # each named broker serves its partition
        for partition in range(6):
            client.produce("placed", partition, [(b"k", b"v")])
        assert {
            p: offsets[0] for (_, p), offsets in client.list_offsets({("placed", p): -1 for p in range(6)}).items()
        } == {p: 1 for p in range(6)}


def test_a_manual_replica_assignment_naming_a_broker_that_is_not_live_is_refused(cluster, kazoo):
    admin = confluent_admin(cluster)
    refused = admin.create_topics([NewTopic("misplaced", 2, replica_assignment=[[1], [7]])])["misplaced"]
    assert confluent_error(refused) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert not kazoo.exists("/brokers/topics/misplaced")
    assert confluent_error(admin.create_topics([NewTopic("regrown", 1, replica_assignment=[[2]])])["regrown"]) == 0
    for assignment in ([[7]], [[1], [2]]):  # a broker that is not live; two lists for one new partition
        refused = admin.create_partitions([NewPartitions("regrown", 2, replica_assignment=assignment)])["regrown"]
        assert confluent_error(refused) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert len(znode(kazoo, "/brokers/topics/regrown")["partitions"]) == 1
