"""A follower truncates by leader epoch, not by high watermark, on 2 real brokers and a real
ZooKeeper: after an unclean election the old leader comes back with a committed tail (acks=1
records it held alone in its ISR) that the new leader never had, at offsets the new leader has
since written; it asks the new leader where its last epoch ends (OffsetForLeaderEpoch), cuts its
log there and then holds exactly the new leader's log. A follower whose log ends below its
leader's log start (records deleted while it was away) restarts its log there."""

import glob
import os
import signal

import pytest
from confluent_kafka import Consumer, TopicPartition

from broker.client import KafkaClient
from broker.protocol.errors import ErrorCode
from broker.records import batch
from tests.waiting import wait_for

from .test_replication import (
    create,
    partitions_everywhere,
    paused,
    produce,
    replicating_cluster,
    segment_bytes,
    state_node,
)

TOPIC = "diverging"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # a paused follower leaves the ISR (replica.lag.time.max.ms) and its leader checkpoints its
    # high watermark (every 5 s) well before the follower's session ends
    settings = {"zookeeper.session.timeout.ms": "15000", "replica.lag.time.max.ms": "2000"}
    with replicating_cluster(tmp_path_factory.mktemp("diverging"), 2, settings) as running:
        yield running


@pytest.fixture(scope="module")
def kazoo(cluster_kazoo):
    return cluster_kazoo


def batches(data: bytes) -> list[tuple[int, int, bytes]]:
    """``(base offset, leader epoch, bytes)`` of each batch of a segment."""
    found = []
    while data:
        header = batch.parse_header(data)
        found.append((header.base_offset, header.partition_leader_epoch, data[: header.size]))
        data = data[header.size :]
    return found


def checkpointed(broker) -> str:
    path = os.path.join(broker.log_dir, "replication-offset-checkpoint")
    if not os.path.exists(path):
        return ""
    with open(path) as f:
        return f.read()


def consumed(bootstrap: str) -> list[tuple[int, bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "divergence", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        found: list[tuple[int, bytes]] = []

        def more() -> bool:
            message = consumer.poll(1)
            if message is not None and message.error() is None:
                found.append((message.offset(), message.value()))
            return len(found) >= 8

        wait_for(more, timeout=30, what="the records")
        return found
    finally:
        consumer.close()


@pytest.mark.slow
def test_the_old_leader_drops_its_divergent_tail_and_holds_the_new_leaders_log(cluster, kazoo):
    created = create(cluster.brokers[1], TOPIC, 1, 2, configs={"unclean.leader.election.enable": "true"})
    assert created["error_code"] == ErrorCode.NONE
    [partition] = partitions_everywhere(cluster, TOPIC, 1)
    old_id = partition["leader_id"]
    new_id = next(i for i in cluster.brokers if i != old_id)
    old, new = cluster.brokers[old_id], cluster.brokers[new_id]
    produce(old, TOPIC, [b"both %d" % i for i in range(3)], acks="all")  # offsets 0-2 on both

    os.kill(new.pid(), signal.SIGSTOP)
    try:
        wait_for(lambda: state_node(kazoo, TOPIC, 0)["isr"] == [old_id], timeout=30, what="the follower to leave")
        produce(old, TOPIC, [b"old only %d" % i for i in range(2)], acks="1")  # 3-4, committed on the old leader
        # and checkpointed as committed: the old rule (truncating to the high watermark) would keep them
        wait_for(lambda: f"{TOPIC} 0 5" in checkpointed(old), timeout=30, what="the high watermark checkpoint")
        old.kill()
    finally:
        os.kill(new.pid(), signal.SIGCONT)
    state = wait_for(
        lambda: (node := state_node(kazoo, TOPIC, 0))["leader"] == new_id and node, timeout=60, what="unclean election"
    )
    assert state["isr"] == [new_id] and state["leader_epoch"] > partition["leader_epoch"]
    produce(new, TOPIC, [b"new %d" % i for i in range(5)], acks="1")  # 3-7 at the new epoch

    cluster.restart(old_id)
    old = cluster.brokers[old_id]
    wait_for(lambda: len(state_node(kazoo, TOPIC, 0)["isr"]) == 2, timeout=60, what="the old leader to rejoin")
    expected = batches(segment_bytes(new, TOPIC))
    assert [epoch for offset, epoch, _ in expected] == [
        0 if offset < 3 else state["leader_epoch"] for offset, *_ in expected
    ]
    wait_for(lambda: batches(segment_bytes(old, TOPIC)) == expected, timeout=30, what="the new leader's log")
    with open(os.path.join(old.log_dir, f"{TOPIC}-0", "leader-epoch-checkpoint")) as f:
        assert f.read() == f"0\n2\n0 0\n{state['leader_epoch']} 3\n"
    assert consumed(cluster.bootstrap) == [(i, b"both %d" % i) for i in range(3)] + [
        (3 + i, b"new %d" % i) for i in range(5)
    ]


def log_batches(broker, topic: str) -> list[tuple[int, int, bytes]]:
    """The batches of every segment of ``topic``-0 on ``broker``, in offset order."""
    found = []
    for path in sorted(glob.glob(os.path.join(broker.log_dir, f"{topic}-0", "*.log"))):
        with open(path, "rb") as file:
            found += batches(file.read())
    return found


def test_a_follower_behind_its_leaders_log_start_restarts_its_log_there(cluster, kazoo):
    assert create(cluster.brokers[1], "deleted-away", 1, 2)["error_code"] == ErrorCode.NONE
    [partition] = partitions_everywhere(cluster, "deleted-away", 1)
    leader = cluster.brokers[partition["leader_id"]]
    follower = cluster.brokers[next(i for i in cluster.brokers if i != partition["leader_id"])]
    produce(leader, "deleted-away", [b"early %d" % i for i in range(3)], acks="all")
    with paused(follower):
        wait_for(
            lambda: state_node(kazoo, "deleted-away", 0)["isr"] == [partition["leader_id"]],
            timeout=30,
            what="the follower to leave the ISR",
        )
        produce(leader, "deleted-away", [b"late %d" % i for i in range(5)], acks="1")
        with KafkaClient(leader.bootstrap) as client:
            assert client.delete_records({("deleted-away", 0): 6}) == {("deleted-away", 0): 6}
    wait_for(lambda: len(state_node(kazoo, "deleted-away", 0)["isr"]) == 2, timeout=30, what="the follower to rejoin")
    # from the batch holding offset 6: the leader's log start can fall inside a batch
    expected = [
        b for b in log_batches(leader, "deleted-away") if b[0] + batch.parse_header(b[2]).last_offset_delta >= 6
    ]
    wait_for(lambda: log_batches(follower, "deleted-away") == expected, timeout=30, what="the leader's batches from 6")
