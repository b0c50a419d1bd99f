"""What publishes the cluster to a broker's replica manager and metadata cache, whichever back end
it reads: the topic registry of a single broker (``broker.cluster.local_metadata.LocalMetadata``)
or ZooKeeper in a cluster (``broker.cluster.zookeeper_metadata.ZooKeeperMetadata``). Each image
goes to the replica manager first (the partitions it names can be served), then to the cache
(Metadata starts naming them)."""

from collections.abc import Callable
from typing import Protocol


class MetadataSource(Protocol):
    def start(self) -> None:
        """Publish the cluster as it is now, then after each of its changes."""
        ...

    def stop(self) -> None:
        """Publish no more."""
        ...

    def refresh(self) -> None:
        """Read the cluster and publish it now."""
        ...

    def wait_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``condition()`` holds after a publication (False after ``timeout`` seconds)."""
        ...
