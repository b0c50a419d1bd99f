"""Serving in cluster mode, on 3 real brokers and a real ZooKeeper: each broker serves the
partitions it leads and answers NOT_LEADER_OR_FOLLOWER for the others; confluent-kafka,
kafka-python and aiokafka find every partition's leader through Metadata and produce to and read
from all partitions; the project's own client and the command line (``kafkalog produce``,
``consume``, ``consume --group``, ``groups describe``) do too, auto-created topics are placed over
the brokers, and the Spark source reads a topic spread over the three brokers (the shared ``spark``
session)."""

import json

import pytest

from broker.client import BrokerConnection, KafkaClient
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from tests.cli.support import kafkalog
from tests.interop.clients import ADAPTERS
from tests.interop.common import assert_same_records, make_records, with_offsets
from tests.spark.feed import Msg, assert_rows, load, produce, rows
from tests.waiting import wait_for

from .test_cluster_topics import created_everywhere, leaders, list_offsets, metadata

PARTITIONS = 6


def test_a_broker_answers_not_leader_for_partitions_led_elsewhere(cluster):
    led_by = created_everywhere(cluster, 1, "led", PARTITIONS)
    for partition, leader in enumerate(led_by):
        for broker_id, broker in cluster.brokers.items():
            answer = list_offsets(broker, "led", partition)
            expected = ErrorCode.NONE if broker_id == leader else ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert (answer["error_code"], answer["offset"] if broker_id == leader else None) == (
                expected,
                0 if broker_id == leader else None,
            )


@pytest.mark.parametrize("kind", list(ADAPTERS))
def test_each_client_produces_to_and_reads_from_every_partition_across_the_brokers(cluster, kind):
    client = ADAPTERS[kind](cluster.bootstrap)
    topic = f"clients-{kind}"
    with client.admin() as admin:
        admin.create_topic(topic, PARTITIONS)
    wait_for(
        lambda: set(leaders(metadata(cluster.brokers[2], [topic]), topic)) == {1, 2, 3},
        timeout=30,
        what="the partitions' leaders on all three brokers",
    )  # another broker may learn of them a little later
    records = make_records(60, partitions=tuple(range(PARTITIONS)), tag=kind)
    client.produce(topic, records)
    got = client.consume_all(topic, len(records), partitions=range(PARTITIONS))
    assert_same_records(got, with_offsets(records))


def test_the_project_client_reads_what_a_third_party_client_wrote_from_each_leader(cluster):
    topic = "mixed"
    records = make_records(30, partitions=tuple(range(PARTITIONS)), tag="mixed")
    with ADAPTERS["confluent"](cluster.bootstrap).admin() as admin:
        admin.create_topic(topic, PARTITIONS)
    ADAPTERS["confluent"](cluster.bootstrap).produce(topic, records)
    with KafkaClient(cluster.bootstrap) as client:
        ends = client.list_offsets({(topic, p): -1 for p in range(PARTITIONS)})
        assert {p: ends[(topic, p)][0] for p in range(PARTITIONS)} == {p: 5 for p in range(PARTITIONS)}
        assert {client.leader_of(topic, p).node_id for p in range(PARTITIONS)} == {1, 2, 3}


def test_auto_created_topics_are_placed_over_the_brokers(cluster):
    for broker in cluster.brokers.values():
        connection = BrokerConnection("127.0.0.1", broker.port, timeout=60)
        try:
            response = connection.request(
                ApiKey.METADATA, {"topics": [{"name": f"auto-{broker.port}"}], "allow_auto_topic_creation": True}
            )
        finally:
            connection.close()
        [topic] = response["topics"]
        assert topic["error_code"] == ErrorCode.NONE and len(topic["partitions"]) == 1
        assert topic["partitions"][0]["leader_id"] in cluster.brokers


def test_the_spark_source_reads_a_topic_spread_over_three_brokers_one_task_per_partition(cluster, spark):
    topic = "spark-spread"
    created_everywhere(cluster, 3, topic, PARTITIONS)
    msgs = [
        Msg(p, f"k{i}".encode(), f"v{i}".encode(), 1_700_000_000_000 + i) for i in range(10) for p in range(PARTITIONS)
    ]
    expected = produce(cluster.bootstrap, topic, msgs)
    df = load(spark, cluster.bootstrap, subscribe=topic)
    assert df.rdd.getNumPartitions() == PARTITIONS  # one task per partition, each fetching from its leader
    assert_rows(rows(df), expected)
    with KafkaClient(cluster.bootstrap) as client:
        assert {client.leader_of(topic, p).port for p in range(PARTITIONS)} == {
            broker.port for broker in cluster.brokers.values()
        }


def test_the_command_line_produces_to_and_reads_from_every_partition_across_the_brokers(cluster):
    """``kafkalog produce`` spreads keyed lines over partitions led by three brokers, ``kafkalog consume``
    reads each back from its leader, and ``consume --group`` commits to the group's coordinator
    (whichever broker leads its ``__consumer_offsets`` partition), which ``groups describe`` shows."""
    topic = "cli-spread"
    created_everywhere(cluster, 2, topic, PARTITIONS)
    lines = [f"user-{i}:view-{i}" for i in range(60)]
    produced = kafkalog(
        "produce", topic, "--key-separator", ":", "--bootstrap-server", cluster.bootstrap, input="\n".join(lines) + "\n"
    )
    assert produced.returncode == 0, produced.stderr
    consumed = kafkalog("consume", topic, "--format", "json", "--bootstrap-server", cluster.bootstrap)
    assert consumed.returncode == 0, consumed.stderr
    read = [json.loads(line) for line in consumed.stdout.splitlines()]
    assert sorted(f"{r['key']}:{r['value']}" for r in read) == sorted(lines)
    assert {r["partition"] for r in read} == set(range(PARTITIONS))  # murmur2 of 60 keys reaches every partition
    with KafkaClient(cluster.bootstrap) as client:
        assert {client.leader_of(topic, r["partition"]).node_id for r in read} == {1, 2, 3}
    grouped = kafkalog(
        "consume", topic, "--group", "cli-spread-group", "--max-records", "60", "--bootstrap-server", cluster.bootstrap
    )
    assert grouped.returncode == 0 and len(grouped.stdout.splitlines()) == 60, grouped.stderr
    described = kafkalog(
        "groups", "describe", "cli-spread-group", "--format", "json", "--bootstrap-server", cluster.bootstrap
    )
    assert described.returncode == 0, described.stderr
    ends = {p: sum(r["partition"] == p for r in read) for p in range(PARTITIONS)}
    committed = {
        row["partition"]: (row["currentOffset"], row["lag"]) for row in json.loads(described.stdout)["partitions"]
    }
    assert committed == {p: (end, 0) for p, end in ends.items()}
