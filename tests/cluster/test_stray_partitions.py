"""Stray partitions, with 3 real brokers on a real ZooKeeper: a broker that was down while a topic
was deleted (or deleted and created again) finds, when it starts, the partition directories the
cluster no longer assigns to it, and sets them aside as ``<topic>-<p>.<id>-stray`` (kept, never
loaded again) before serving anything; the partitions it is still assigned keep their records, and
a topic created again starts empty.

A broker misses a deletion only in a race (it dies between the controller's deletion in ZooKeeper
and its own removal of the directories, or the deletion completes before its first read of
ZooKeeper on return), since the controller waits for every holder to be live. These tests make the
same state without the race: while the broker is down they write to ZooKeeper what the controller's
deletion (and a new creation) writes, as test_cluster_topics' re-creation test does."""

import json
import os

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from broker.client import KafkaClient
from tests.waiting import wait_for

AWAY = 3  # the broker that misses the changes


def create(cluster, name: str, replicas: list[list[int]]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, len(replicas), replica_assignment=replicas)])[name].result(timeout=60)


def latest(client, name: str, partitions: int) -> list[int]:
    offsets = client.list_offsets({(name, p): -1 for p in range(partitions)})
    return [offsets[(name, p)][0] for p in range(partitions)]


def removal(kazoo, name: str):
    """A transaction deleting every node of a topic, as the controller's deletion does (in one
    transaction: the controller would give a partition whose state node is gone a new one)."""
    transaction = kazoo.transaction()
    for partition in kazoo.get_children(f"/brokers/topics/{name}/partitions"):
        transaction.delete(f"/brokers/topics/{name}/partitions/{partition}/state")
        transaction.delete(f"/brokers/topics/{name}/partitions/{partition}")
    for path in (f"/brokers/topics/{name}/partitions", f"/brokers/topics/{name}", f"/config/topics/{name}"):
        transaction.delete(path)
    return transaction


def commit(transaction) -> None:
    assert not any(isinstance(result, Exception) for result in transaction.commit())


def strays(broker, name: str) -> list[str]:
    return sorted(
        entry for entry in os.listdir(broker.log_dir) if entry.startswith(f"{name}-") and entry.endswith("-stray")
    )


@pytest.fixture
def away(cluster):
    """Broker AWAY, started again at the end if a test left it down."""
    broker = cluster.brokers[AWAY]
    yield broker
    if not broker.running:
        broker.start()


def kill(broker, kazoo) -> None:
    broker.kill()
    wait_for(lambda: not kazoo.exists(f"/brokers/ids/{AWAY}"), timeout=60, what="the killed broker's session to expire")


def test_a_broker_that_missed_a_deletion_sets_the_old_partitions_aside_and_keeps_its_others(
    cluster, cluster_kazoo, away
):
    create(cluster, "missed", [[AWAY], [AWAY], [1]])
    create(cluster, "kept", [[AWAY]])
    with KafkaClient(cluster.bootstrap) as client:
        client.produce("missed", 0, [(b"k", b"old")] * 3)
        client.produce("kept", 0, [(b"k", b"mine")] * 2)
    broker = away
    kill(broker, cluster_kazoo)
    commit(removal(cluster_kazoo, "missed"))
    broker.start()
    assert not any(os.path.exists(os.path.join(broker.log_dir, f"missed-{p}")) for p in (0, 1))
    aside = strays(broker, "missed")
    assert [name.split(".")[0] for name in aside] == ["missed-0", "missed-1"]
    assert os.path.getsize(os.path.join(broker.log_dir, aside[0], f"{0:020d}.log")) > 0  # the records are kept
    log = broker.stderr_tail(200)
    for partition in (0, 1):
        assert f"set aside stray partition missed-{partition} as " in log
    assert "topic 'missed' no longer exists" in log
    with KafkaClient(cluster.bootstrap) as client:  # the partition it is still assigned, with its records
        assert wait_for(lambda: latest(client, "kept", 1), timeout=60, what="kept-0 to be led again") == [2]
    assert broker.stop() == 0  # started again, it neither loads nor warns about the directories set aside
    broker.start()
    assert strays(broker, "missed") == aside
    assert "not a partition directory" not in broker.stderr_tail(30)


def test_a_topic_created_again_while_a_broker_was_away_starts_empty_there(cluster, cluster_kazoo, away):
    """The old topic's partition 0 is assigned to the same broker again (its directory's topic id
    tells the old topic from the new one), partition 1 to another broker now."""
    create(cluster, "again", [[AWAY], [AWAY]])
    with KafkaClient(cluster.bootstrap) as client:
        for partition in (0, 1):
            client.produce("again", partition, [(b"k", b"old")] * 3)
    old_id = int(open(os.path.join(away.log_dir, "again-0", "topic.id")).read())
    assert old_id == cluster_kazoo.exists("/brokers/topics/again").czxid
    kill(away, cluster_kazoo)
    assignment = {"version": 2, "partitions": {"0": [AWAY], "1": [1]}, "adding_replicas": {}, "removing_replicas": {}}
    again = removal(cluster_kazoo, "again")  # and created again, as CreateTopics writes it
    again.create("/config/topics/again", json.dumps({"version": 1, "config": {}}).encode())
    again.create("/brokers/topics/again", json.dumps(assignment).encode())
    commit(again)
    away.start()
    assert [name.split(".")[0] for name in strays(away, "again")] == ["again-0", "again-1"]
    assert "it belongs to an earlier topic 'again'" in away.stderr_tail(200)
    assert "the partition is assigned to broker(s) [1]" in away.stderr_tail(200)
    with KafkaClient(cluster.bootstrap) as client:
        assert wait_for(lambda: latest(client, "again", 2), timeout=60, what="the new topic to be served") == [0, 0]
        client.produce("again", 0, [(b"k", b"new")])
        assert latest(client, "again", 2) == [1, 0]
    new_id = int(open(os.path.join(away.log_dir, "again-0", "topic.id")).read())
    assert new_id == cluster_kazoo.exists("/brokers/topics/again").czxid != old_id
