"""What a broker asks of its topics, whichever back end keeps them: ``topics.json`` on a single
broker (``broker.server.topics.TopicRegistry``) or ZooKeeper in a cluster
(``broker.cluster.zookeeper_topics.ZooKeeperTopics``). The request handlers cannot tell them apart.

Every change raises ``TopicError`` with the Kafka error code to answer; ``validate_only`` checks a
change without making it. Partition logs are never touched here: each store hands its settings and
changes to the ``ReplicaManager`` given to ``attach``."""

from typing import Protocol

from broker.log.config import LogConfig
from broker.replica.replica_manager import ReplicaManager


class TopicStore(Protocol):
    static_defaults: LogConfig  # the broker's static log settings
    broker_id: int

    @property
    def defaults(self) -> LogConfig:
        """The broker's log settings: static, then the dynamic cluster default, then this broker's."""
        ...

    def attach(self, replicas: ReplicaManager) -> None:
        """Apply topic changes and settings to the partition logs of ``replicas`` from now on."""
        ...

    def config_for(self, topic: str) -> LogConfig:
        """The log settings of a topic: the broker defaults with the topic's overrides."""
        ...

    def overrides(self, name: str) -> dict[str, str]:
        """The settings a topic overrides."""
        ...

    def broker_overrides(self, resource_name: str) -> dict[str, str]:
        """The dynamic broker settings of ``resource_name``: "" (the cluster default) or a broker id."""
        ...

    def partitions(self, name: str) -> int | None:
        """The partition count of a topic; None when there is no such topic."""
        ...

    def create(
        self,
        name: str,
        partitions: int,
        configs: dict[str, str] | None = None,
        validate_only: bool = False,
        replicas: list[list[int]] | None = None,
        replication_factor: int = 1,
    ) -> None:
        """Create a topic; ``replicas``: a manual assignment, each partition's replica list, else
        ``replication_factor`` replicas each."""
        ...

    def delete(self, name: str) -> None: ...

    def add_partitions(
        self, name: str, count: int, validate_only: bool = False, replicas: list[list[int]] | None = None
    ) -> None:
        """Grow a topic to ``count`` partitions; ``replicas``: a manual assignment of the new ones."""
        ...

    def alter_topic_configs(self, name: str, configs: dict[str, str], validate_only: bool = False) -> None:
        """Replace a topic's overrides with ``configs``."""
        ...

    def alter_broker_configs(self, resource_name: str, configs: dict[str, str], validate_only: bool = False) -> None:
        """Replace the dynamic broker settings of ``resource_name`` ("" or a broker id)."""
        ...
