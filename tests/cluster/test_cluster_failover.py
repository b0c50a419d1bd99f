"""Brokers dying in a 3-broker cluster (SIGKILL: no clean shutdown): a dead broker's partitions
have no leader (leader -1, LEADER_NOT_AVAILABLE) until it returns, then it leads them again at a
new leader epoch with every acknowledged record; a dead controller is replaced by another broker,
which goes on placing topics."""

from broker.protocol.errors import ErrorCode
from tests.interop.clients import ADAPTERS
from tests.interop.common import assert_same_records, make_records, with_offsets
from tests.waiting import wait_for

from .test_cluster_topics import create_topic, created_everywhere, list_offsets, metadata

PARTITIONS = 6


def partitions(broker, topic: str) -> list[dict]:
    [found] = metadata(broker, [topic])["topics"]
    return sorted(found["partitions"], key=lambda p: p["partition_index"])


def test_a_dead_broker_s_partitions_have_no_leader_until_it_returns_with_every_acknowledged_record(cluster):
    client = ADAPTERS["confluent"](cluster.bootstrap)
    topic = "survivor"
    created_everywhere(cluster, 1, topic, PARTITIONS)
    records = make_records(120, partitions=tuple(range(PARTITIONS)), tag="before")
    client.produce(topic, records, acks=-1)
    victim = 2
    survivor = cluster.brokers[1]
    led = [p["partition_index"] for p in partitions(survivor, topic) if p["leader_id"] == victim]
    assert len(led) == 2
    cluster.brokers[victim].kill()
    wait_for(
        lambda: all(p["leader_id"] == -1 for p in partitions(survivor, topic) if p["partition_index"] in led),
        timeout=60,
        what="the dead broker's partitions to lose their leader",
    )
    for p in partitions(survivor, topic):
        if p["partition_index"] in led:
            assert (p["error_code"], p["leader_epoch"]) == (ErrorCode.LEADER_NOT_AVAILABLE, 1)
            assert list_offsets(survivor, topic, p["partition_index"])["error_code"] == ErrorCode.LEADER_NOT_AVAILABLE
        else:
            assert (p["error_code"], p["leader_epoch"]) == (ErrorCode.NONE, 0)
    assert sorted(b["node_id"] for b in metadata(survivor)["brokers"]) == [1, 3]
    cluster.brokers[victim].start()
    wait_for(
        lambda: all(p["leader_id"] == victim for p in partitions(survivor, topic) if p["partition_index"] in led),
        timeout=60,
        what="the broker to lead its partitions again",
    )
    assert {p["leader_epoch"] for p in partitions(survivor, topic) if p["partition_index"] in led} == {2}
    wait_for(
        lambda: all(
            p["leader_id"] == victim for p in partitions(cluster.brokers[victim], topic) if p["partition_index"] in led
        ),
        timeout=30,
        what="the returned broker's own metadata",
    )
    got = ADAPTERS["confluent"](cluster.bootstrap).consume_all(topic, len(records), partitions=range(PARTITIONS))
    assert_same_records(got, with_offsets(records))


def test_a_dead_controller_is_replaced_and_the_new_one_places_topics(cluster):
    old = metadata(cluster.brokers[1])["controller_id"]
    assert old in cluster.brokers
    cluster.brokers[old].kill()
    other = cluster.brokers[next(i for i in cluster.brokers if i != old)]
    new = wait_for(
        lambda: (c := metadata(other)["controller_id"]) not in (old, -1) and c, timeout=60, what="another controller"
    )
    assert new in cluster.brokers
    wait_for(
        lambda: old not in [b["node_id"] for b in metadata(other)["brokers"]],
        timeout=30,
        what="the dead controller to leave the live brokers",
    )
    assert create_topic(other, "after-failover", 4) == ErrorCode.NONE
    assert {p["leader_id"] for p in partitions(other, "after-failover")} == set(cluster.brokers) - {old}
    cluster.brokers[old].start()  # it comes back as an ordinary broker
    wait_for(lambda: old in [b["node_id"] for b in metadata(other)["brokers"]], timeout=60, what="the broker's return")
    assert metadata(cluster.brokers[old])["controller_id"] == new
