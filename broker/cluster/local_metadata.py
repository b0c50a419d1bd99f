"""The metadata source of a broker that runs alone: a one-node cluster whose topics come from the
local topic registry (``topics.json``) instead of ZooKeeper.

This broker is the only live broker and the controller; every partition is placed on it (one
replica) with leader epoch 0, which never changes because no other broker can take over. Each
change of the registry publishes a new image, to the replica manager first (so the partitions it
names can be served) and then to the metadata cache (so Metadata starts naming them).
"""

import threading
from collections.abc import Callable
from typing import Protocol

from broker.replica.replica_manager import ReplicaManager

from .metadata_cache import BrokerEndpoint, ClusterImage, MetadataCache, PartitionState
from .placement import assign_replicas

LOCAL_LEADER_EPOCH = 0


class _ChangingTopics(Protocol):
    """The topic registry as this source reads it."""

    on_change: Callable[[], None]

    def partition_counts(self) -> dict[str, int]: ...


class LocalMetadata:
    def __init__(
        self,
        topics: _ChangingTopics,
        cluster_id: str,
        endpoint: BrokerEndpoint,
        cache: MetadataCache,
        replicas: ReplicaManager,
    ):
        self._topics = topics
        self._cluster_id = cluster_id
        self._endpoint = endpoint
        self._cache = cache
        self._replicas = replicas
        self._published = threading.Condition()  # images are published in the order they are read

    def start(self) -> None:
        """Publish the registry's topics now and after each of its changes."""
        self._topics.on_change = self.refresh
        self.refresh()

    def stop(self) -> None:
        self._topics.on_change = lambda: None

    def refresh(self) -> None:
        """Publish the registry's current topics as the cluster's image."""
        with self._published:
            node = self._endpoint.node_id
            topics = {
                name: [
                    PartitionState(replicas[0], LOCAL_LEADER_EPOCH, tuple(replicas), tuple(replicas))
                    for replicas in assign_replicas(0, count, [node])
                ]
                for name, count in self._topics.partition_counts().items()
            }
            image = ClusterImage.of(self._cluster_id, node, [self._endpoint], topics)
            self._replicas.apply(image)
            self._cache.update(image)
            self._published.notify_all()

    def wait_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``condition()`` holds after a publication (False after ``timeout`` seconds)."""
        with self._published:
            return self._published.wait_for(condition, timeout)
