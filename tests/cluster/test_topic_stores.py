"""The two back ends of a broker's topics and cluster metadata, held to one contract: ``topics.json``
on a single broker (``TopicRegistry`` published by ``LocalMetadata``) and ZooKeeper in a cluster
(``ZooKeeperTopics`` published by ``ZooKeeperMetadata``, on a real ZooKeeper server), each in a real
broker running in this process. Every test runs against both, through the ``TopicStore`` and
``MetadataSource`` protocols: a change answers the same Kafka error, is published to the metadata
cache, reaches the partition logs of the replica manager and outlives a restart the same way."""

import contextlib
from collections.abc import Iterator

import pytest

from broker.cluster.metadata_cache import MetadataCache
from broker.cluster.metadata_source import MetadataSource
from broker.cluster.topic_rules import TopicError
from broker.cluster.topic_store import TopicStore
from broker.protocol.errors import ErrorCode
from broker.replica.replica_manager import PartitionError, ReplicaManager
from tests.server.in_process import running_in_this_process
from tests.waiting import wait_for

NODE = 1
WAIT_SECONDS = 30


class Node:
    """One broker's back ends, as the protocols declare them."""

    def __init__(self, topics: TopicStore, source: MetadataSource, cache: MetadataCache, replicas: ReplicaManager):
        self.topics, self.source, self.cache, self.replicas = topics, source, cache, replicas


@pytest.fixture(params=["topics.json", "zookeeper"])
def settings(request) -> dict[str, str]:
    """The broker settings of each back end (ZooKeeper: a chroot of its own on the real server)."""
    if request.param == "zookeeper":
        return {"broker.id": str(NODE), "zookeeper.connect": request.getfixturevalue("zookeeper")}
    return {"broker.id": str(NODE)}


@contextlib.contextmanager
def running(log_dir, settings: dict[str, str]) -> Iterator[Node]:
    with running_in_this_process(log_dir, settings) as (broker, _):
        yield Node(broker.ctx.topics, broker.metadata_source, broker.ctx.metadata, broker.ctx.replicas)


@pytest.fixture
def node(settings, tmp_path):
    with running(tmp_path / "log", settings) as started:
        yield started


def error_of(change, *args, **kwargs) -> ErrorCode:
    with pytest.raises(TopicError) as raised:
        change(*args, **kwargs)
    return raised.value.code


def local_log_names(replicas: ReplicaManager) -> set[str]:
    return {partition_log.name for partition_log in replicas.local_logs()}


def test_a_created_topic_is_published_and_its_partitions_led_here_with_their_overrides(node):
    node.topics.create("views", 2, {"retention.ms": "60000"})
    assert node.topics.partitions("views") == 2 and node.cache.partition_count("views") == 2
    assert [node.replicas.leader_partition("views", p).log.name for p in range(2)] == ["views-0", "views-1"]
    assert node.topics.overrides("views") == {"retention.ms": "60000"}
    assert node.topics.config_for("views").retention_ms == 60000
    assert node.replicas.leader_partition("views", 1).log.config.retention_ms == 60000


def test_a_taken_name_is_refused_and_validate_only_creates_nothing(node):
    node.topics.create("views", 1)
    assert error_of(node.topics.create, "views", 1) == ErrorCode.TOPIC_ALREADY_EXISTS
    node.topics.create("checked", 3, validate_only=True)
    assert node.topics.partitions("checked") is None and not node.cache.contains_topic("checked")
    assert error_of(node.topics.create, "bad/name", 1) == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_added_partitions_are_led_here_and_a_topic_never_shrinks(node):
    node.topics.create("views", 1)
    node.topics.add_partitions("views", 3)
    assert node.topics.partitions("views") == 3 and node.replicas.leader_partition("views", 2).leader_epoch == 0
    assert error_of(node.topics.add_partitions, "views", 2) == ErrorCode.INVALID_PARTITIONS
    node.topics.add_partitions("views", 5, validate_only=True)
    assert node.topics.partitions("views") == 3
    assert error_of(node.topics.add_partitions, "missing", 2) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_settings_of_a_topic_and_of_the_broker_reach_the_running_logs(node):
    node.topics.create("views", 1)
    node.topics.create("kept", 1, {"retention.ms": "1000"})
    node.topics.alter_topic_configs("views", {"retention.ms": "2000"})
    assert node.topics.overrides("views") == {"retention.ms": "2000"}
    assert node.replicas.leader_partition("views", 0).log.config.retention_ms == 2000
    node.topics.alter_broker_configs("", {"log.retention.bytes": "4096"})
    assert node.topics.broker_overrides("") == {"log.retention.bytes": "4096"}
    assert node.topics.defaults.retention_bytes == 4096
    assert node.replicas.leader_partition("kept", 0).log.config.retention_bytes == 4096
    assert node.replicas.leader_partition("kept", 0).log.config.retention_ms == 1000  # its override stays
    assert error_of(node.topics.alter_topic_configs, "missing", {}) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_a_deleted_topic_is_unpublished_and_its_logs_deleted(node):
    node.topics.create("doomed", 2)
    node.topics.delete("doomed")
    assert node.topics.partitions("doomed") is None and not node.cache.contains_topic("doomed")
    # in a cluster the logs go right after the topic is unpublished, on the thread that publishes
    wait_for(lambda: local_log_names(node.replicas).isdisjoint({"doomed-0", "doomed-1"}), what="logs deleted")
    with pytest.raises(PartitionError) as raised:
        node.replicas.leader_partition("doomed", 0)
    assert raised.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert error_of(node.topics.delete, "doomed") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_the_metadata_source_publishes_each_change_and_again_on_refresh(node):
    node.topics.create("views", 2)
    assert node.source.wait_until(lambda: node.cache.partition_count("views") == 2, WAIT_SECONDS)
    node.source.refresh()
    assert node.cache.partition_count("views") == 2 and node.replicas.image.topics.keys() >= {"views"}
    assert not node.source.wait_until(lambda: node.cache.contains_topic("never-created"), 0.1)


def test_topics_and_settings_are_kept_across_a_restart(settings, tmp_path):
    with running(tmp_path / "log", settings) as node:
        node.topics.create("views", 2, {"retention.ms": "60000"})
        node.topics.alter_broker_configs("", {"log.retention.bytes": "4096"})
    with running(tmp_path / "log", settings) as node:
        assert node.topics.partitions("views") == 2 and node.topics.overrides("views") == {"retention.ms": "60000"}
        assert node.topics.broker_overrides("") == {"log.retention.bytes": "4096"}
        assert node.replicas.leader_partition("views", 1).log.config.retention_bytes == 4096
