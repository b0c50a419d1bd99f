"""The metadata cache: this broker's view of the cluster (its id, the live brokers and their
endpoints, one per listener, the controller, each topic's partitions with leader, leader epoch, replicas and
in-sync replicas), as Kafka's ``MetadataCache`` holds it.

A metadata source (``local_metadata`` for a single broker) publishes whole images; readers
(Metadata, Produce, Fetch, ListOffsets, the admin handlers) see either the previous image or the
new one, never a mixture, without a lock: an image is never changed once published.
"""

import dataclasses
from collections.abc import Iterable, Mapping
from types import MappingProxyType

NO_LEADER = -1  # Kafka's leader id of a partition whose leader is not available


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """One listener of a broker as its clients reach it (Kafka's ``EndPoint``): the listener's name,
    its security protocol and the advertised host and port."""

    listener: str
    security_protocol: str
    host: str
    port: int

    @property
    def url(self) -> str:
        """``NAME://host:port`` (an IPv6 host in brackets), as in ``/brokers/ids/<id>``'s endpoints."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener}://{host}:{self.port}"


@dataclasses.dataclass(frozen=True)
class BrokerEndpoint:
    """A live broker: its id, rack and one endpoint per listener (Kafka's ``Broker``). ``host`` and
    ``port`` are Kafka's legacy fields, those of its PLAINTEXT endpoint (None and -1 without one);
    built with ``endpoints`` left out, the broker has the one PLAINTEXT listener at ``host:port``."""

    node_id: int
    host: str | None
    port: int
    rack: str | None = None
    endpoints: tuple[Endpoint, ...] = ()

    def __post_init__(self):
        if not self.endpoints:
            object.__setattr__(self, "endpoints", (Endpoint("PLAINTEXT", "PLAINTEXT", self.host, self.port),))

    @classmethod
    def of(cls, node_id: int, endpoints: Iterable[Endpoint], rack: str | None = None) -> "BrokerEndpoint":
        endpoints = tuple(endpoints)
        plaintext = next((e for e in endpoints if e.security_protocol == "PLAINTEXT"), None)
        return cls(node_id, plaintext.host if plaintext else None, plaintext.port if plaintext else -1, rack, endpoints)

    def endpoint(self, listener: str) -> Endpoint | None:
        """The endpoint of the listener named ``listener``; None when this broker has no such listener."""
        return next((e for e in self.endpoints if e.listener == listener), None)


@dataclasses.dataclass(frozen=True)
class PartitionState:
    """A partition as the cluster assigned it (Kafka's ``LeaderAndIsr`` plus the replica list)."""

    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class ClusterImage:
    """One consistent picture of the cluster; ``topics`` maps a name to its partitions, by index;
    ``topic_ids`` a name to the id that tells it from an earlier topic of the same name (in
    ZooKeeper, the creation zxid of ``/brokers/topics/<topic>``; a single broker has none)."""

    cluster_id: str
    controller_id: int
    brokers: tuple[BrokerEndpoint, ...]
    topics: MappingProxyType  # str -> tuple[PartitionState, ...]
    topic_ids: MappingProxyType = dataclasses.field(default_factory=lambda: MappingProxyType({}))  # str -> int

    @classmethod
    def of(
        cls,
        cluster_id: str,
        controller_id: int,
        brokers: Iterable[BrokerEndpoint],
        topics: Mapping[str, Iterable[PartitionState]],
        topic_ids: Mapping[str, int] | None = None,
    ) -> "ClusterImage":
        return cls(
            cluster_id,
            controller_id,
            tuple(brokers),
            MappingProxyType({name: tuple(partitions) for name, partitions in topics.items()}),
            MappingProxyType(dict(topic_ids or {})),
        )


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
