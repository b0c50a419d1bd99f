"""A broker alone as a one-node cluster: the topic registry's changes published as cluster images
to the replica manager and the metadata cache, on a real log directory."""

import pytest

from broker.cluster.local_metadata import LocalMetadata
from broker.cluster.metadata_cache import BrokerEndpoint, MetadataCache, PartitionState
from broker.log.config import LogConfig
from broker.log.manager import LogManager
from broker.protocol.errors import ErrorCode
from broker.replica.replica_manager import PartitionError, ReplicaManager
from broker.server.topics import TopicRegistry

NODE = 7


@pytest.fixture
def cluster(tmp_path):
    topics = TopicRegistry(str(tmp_path), LogConfig(), NODE)
    with LogManager(str(tmp_path), broker_id=NODE, topic_config=topics.config_for) as log_manager:
        cache, replicas = MetadataCache(NODE), ReplicaManager(log_manager, NODE)
        topics.attach(replicas)
        LocalMetadata(topics, log_manager.cluster_id, BrokerEndpoint(NODE, "h", 9), cache, replicas).start()
        yield topics, cache, replicas


def test_this_broker_is_the_controller_and_leads_every_partition_at_epoch_0(cluster):
    topics, cache, replicas = cluster
    topics.create("views", 2)
    assert cache.controller_id == NODE and cache.alive_brokers() == (BrokerEndpoint(NODE, "h", 9),)
    assert cache.partitions("views") == (PartitionState(NODE, 0, (NODE,), (NODE,)),) * 2
    assert replicas.leader_partition("views", 1, 0).high_watermark == 0
    topics.add_partitions("views", 3)
    assert cache.partition_count("views") == 3 and replicas.leader_partition("views", 2).leader_epoch == 0


def test_a_deleted_topic_is_unpublished_before_its_logs_are_closed(cluster):
    topics, cache, replicas = cluster
    topics.create("doomed", 1)
    seen = []
    publish = topics.on_change

    def watching_publish():
        publish()
        seen.append((cache.contains_topic("doomed"), replicas.local_log("doomed", 0) is not None))

    topics.on_change = watching_publish
    topics.delete("doomed")
    assert seen == [(False, True), (False, False)]  # unpublished while its log was still open, then deleted
    with pytest.raises(PartitionError) as raised:
        replicas.leader_partition("doomed", 0)
    assert raised.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
