"""The metadata cache: this broker's view of the cluster (its id, the live brokers and their
endpoints, the controller, each topic's partitions with leader, leader epoch, replicas and
in-sync replicas), as Kafka's ``MetadataCache`` holds it.

A metadata source (``local_metadata`` for a single broker) publishes whole images; readers
(Metadata, Produce, Fetch, ListOffsets, the admin handlers) see either the previous image or the
new one, never a mixture, without a lock: an image is never changed once published.
"""

import dataclasses
from types import MappingProxyType

NO_LEADER = -1  # Kafka's leader id of a partition whose leader is not available


@dataclasses.dataclass(frozen=True)
class BrokerEndpoint:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclasses.dataclass(frozen=True)
class PartitionState:
    """A partition as the cluster assigned it (Kafka's ``LeaderAndIsr`` plus the replica list)."""
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class ClusterImage:
    """One consistent picture of the cluster; ``topics`` maps a name to its partitions, by index."""
    cluster_id: str
    controller_id: int
    brokers: tuple[BrokerEndpoint, ...]
    topics: MappingProxyType  # str -> tuple[PartitionState, ...]

    @classmethod
    def of(cls, cluster_id: str, controller_id: int, brokers, topics: dict) -> "ClusterImage":
        return cls(cluster_id, controller_id, tuple(brokers),
                   MappingProxyType({name: tuple(partitions) for name, partitions in topics.items()}))


EMPTY = ClusterImage.of("", NO_LEADER, (), {})


class MetadataCache:
    """The latest published ``ClusterImage`` of the cluster this broker (``node_id``) belongs to."""

    def __init__(self, node_id: int):
        self.node_id = node_id
        self.image = EMPTY

    def update(self, image: ClusterImage) -> None:
        self.image = image

    @property
    def cluster_id(self) -> str:
        return self.image.cluster_id

    @property
    def controller_id(self) -> int:
        return self.image.controller_id

    def alive_brokers(self) -> tuple[BrokerEndpoint, ...]:
        return self.image.brokers

    def topic_names(self) -> list[str]:
        return sorted(self.image.topics)

    def contains_topic(self, name: str) -> bool:
        return name in self.image.topics

    def partitions(self, name: str) -> tuple[PartitionState, ...] | None:
        """The partitions of a topic, by index; None for a topic the cluster does not have."""
        return self.image.topics.get(name)

    def partition_count(self, name: str) -> int | None:
        partitions = self.image.topics.get(name)
        return None if partitions is None else len(partitions)
