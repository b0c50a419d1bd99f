"""ACLs in a cluster live in ZooKeeper, as Kafka keeps them: an ACL created through one broker is
enforced by another (each request sent to one broker on its own connection), the nodes read back
with kazoo are Kafka's layout and JSON, a broker restarted keeps the ACLs, and one deleted through
a broker stops being enforced by the others. Three real broker processes with the authorizer on
(open to everyone where no ACL names the resource) on a real ZooKeeper server."""

import json
import uuid

import pytest
from kazoo.client import KazooClient

from broker.client import BrokerConnection
from broker.common.java import java_executable
from broker.embedded_cluster import EmbeddedCluster
from broker.protocol.apis import ApiKey
from broker.security.acls import Operation, PatternType, Permission, ResourceType

from ..waiting import wait_for

TOPIC_AUTHORIZATION_FAILED = 29
WAIT = 30


@pytest.fixture(scope="module")
def secured_cluster(tmp_path_factory):
    if java_executable() is None:
        pytest.skip("no Java: the ZooKeeper server of PySpark's jars needs Java 17+")
    settings = {
        "zookeeper.session.timeout.ms": "2000",
        "offsets.topic.num.partitions": "3",
        "num.partitions": "1",
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
    }
    with EmbeddedCluster(tmp_path_factory.mktemp("acls"), brokers=3, settings=settings) as running:
        yield running


def request(broker, api: ApiKey, body: dict) -> dict:
    """One request to exactly this broker."""
    host, port = broker.bootstrap.split(":")
    connection = BrokerConnection(host, int(port), WAIT)
    try:
        return connection.request(api, body)
    finally:
        connection.close()


def topic_error(broker, topic: str) -> int:
    """The error of ``topic`` in this broker's Metadata answer (0: described)."""
    response = request(broker, ApiKey.METADATA, {"topics": [{"name": topic}], "allow_auto_topic_creation": False})
    return response["topics"][0]["error_code"]


def test_an_acl_created_through_one_broker_is_enforced_by_the_others_and_kept_in_kafkas_layout(secured_cluster):
    a, b = secured_cluster.brokers[1], secured_cluster.brokers[2]
    prefix = f"secret-{uuid.uuid4().hex[:6]}-"
    topic = prefix + "orders"
    created = request(
        b,
        ApiKey.CREATE_TOPICS,
        {
            "topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout_ms": WAIT * 1000,
        },
    )
    assert created["topics"][0]["error_code"] == 0, created
    assert topic_error(b, topic) == 0

    answer = request(
        a,
        ApiKey.CREATE_ACLS,
        {
            "creations": [
                {
                    "resource_type": ResourceType.TOPIC,
                    "resource_name": prefix,
                    "resource_pattern_type": PatternType.PREFIXED,
                    "principal": "User:*",
                    "host": "*",
                    "operation": Operation.DESCRIBE,
                    "permission_type": Permission.DENY,
                },
                {
                    "resource_type": ResourceType.TOPIC,
                    "resource_name": "audit-" + prefix,
                    "resource_pattern_type": PatternType.LITERAL,
                    "principal": "User:etl",
                    "host": "*",
                    "operation": Operation.DESCRIBE_CONFIGS,
                    "permission_type": Permission.ALLOW,
                },
            ]
        },
    )
    assert [r["error_code"] for r in answer["results"]] == [0, 0], answer
    assert topic_error(a, topic) == TOPIC_AUTHORIZATION_FAILED  # the broker that took it, at once
    wait_for(lambda: topic_error(b, topic) == TOPIC_AUTHORIZATION_FAILED, WAIT, what="broker 2 enforcing the ACL")

    kazoo = KazooClient(hosts=secured_cluster.zookeeper.connect)
    kazoo.start(timeout=WAIT)
    try:
        prefixed, _ = kazoo.get(f"/kafka-acl-extended/prefixed/Topic/{prefix}")
        assert json.loads(prefixed) == {
            "version": 1,
            "acls": [{"principal": "User:*", "permissionType": "Deny", "operation": "Describe", "host": "*"}],
        }
        literal, _ = kazoo.get(f"/kafka-acl/Topic/audit-{prefix}")
        assert json.loads(literal) == {
            "version": 1,
            "acls": [{"principal": "User:etl", "permissionType": "Allow", "operation": "DescribeConfigs", "host": "*"}],
        }
        literal_changes = [kazoo.get(f"/kafka-acl-changes/{c}")[0] for c in kazoo.get_children("/kafka-acl-changes")]
        assert f"Topic:audit-{prefix}".encode() in literal_changes
        extended_changes = [
            json.loads(kazoo.get(f"/kafka-acl-extended-changes/{c}")[0])
            for c in kazoo.get_children("/kafka-acl-extended-changes")
        ]
        assert {"version": 1, "resourceType": "Topic", "name": prefix, "patternType": "PREFIXED"} in extended_changes

        assert b.stop() == 0
        b.start()
        assert topic_error(b, topic) == TOPIC_AUTHORIZATION_FAILED  # read from ZooKeeper as it starts

        deleted = request(
            b,
            ApiKey.DELETE_ACLS,
            {
                "filters": [
                    {
                        "resource_type_filter": ResourceType.TOPIC,
                        "resource_name_filter": prefix,
                        "pattern_type_filter": PatternType.PREFIXED,
                        "principal_filter": None,
                        "host_filter": None,
                        "operation": Operation.ANY,
                        "permission_type": Permission.ANY,
                    }
                ]
            },
        )
        assert len(deleted["filter_results"][0]["matching_acls"]) == 1, deleted
        wait_for(lambda: topic_error(a, topic) == 0, WAIT, what="broker 1 lifting the deleted ACL")
        assert not kazoo.exists(f"/kafka-acl-extended/prefixed/Topic/{prefix}")  # no ACLs left: the node goes
    finally:
        kazoo.stop()
        kazoo.close()
