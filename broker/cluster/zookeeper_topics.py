"""The topics of a cluster, kept in ZooKeeper: a ``TopicStore`` as the single broker's
``TopicRegistry`` is (the handlers cannot tell them apart), writing the nodes Kafka's admin path writes.

Any broker takes a topic change and writes it; the controller acts on it and every broker's
``ZooKeeperMetadata`` publishes the result, which the change waits for on this broker (as Kafka's
CreateTopics and DeleteTopics wait for the metadata), up to ``wait_seconds``:

- a creation writes ``/config/topics/<topic>`` and ``/brokers/topics/<topic>`` (the replica lists:
  the client's manual assignment when it gives one, else round-robin over the live brokers from a
  random start) in one transaction, and waits until every partition has its leader;
- more partitions (CreatePartitions) extend ``/brokers/topics/<topic>`` (compare-and-set), placed
  the same way;
- a deletion creates ``/admin/delete_topics/<topic>`` and waits until the topic is gone;
- settings replace ``/config/topics/<topic>`` or ``/config/brokers/<default>`` / ``<id>``.

The settings every broker reads back are handed in with ``update_configs`` and applied to the
running logs of this broker, as a change in ``topics.json`` is.
"""

import contextlib
import random
from collections.abc import Callable, Iterator

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError

from broker.log.config import LogConfig
from broker.protocol.errors import ErrorCode
from broker.replica.replica_manager import ReplicaManager

from .metadata_cache import NO_LEADER, MetadataCache
from .metadata_source import MetadataSource
from .placement import PlacementError, assign_replicas, follow_assignment
from .topic_rules import (
    DEFAULT_BROKER_RESOURCE,
    TopicError,
    broker_defaults,
    check_new_name,
    check_partition_increase,
    checked_config,
    checked_new_topic,
    checked_topic_config,
)
from .zookeeper_data import (
    BROKER_CONFIGS_PATH,
    BROKER_IDS_PATH,
    DEFAULT_BROKER_CONFIG,
    DELETE_TOPICS_PATH,
    TOPIC_CONFIGS_PATH,
    TOPICS_PATH,
    ZooKeeperConnect,
    config_json,
    parse_topic_assignment,
    topic_assignment_json,
    topic_path,
)

WAIT_SECONDS = 30.0


class ZooKeeperTopics:
    def __init__(
        self,
        client: KazooClient,
        connect: ZooKeeperConnect,
        static_defaults: LogConfig,
        broker_id: int,
        cache: MetadataCache,
        wait_seconds: float = WAIT_SECONDS,
    ):
        self._client = client
        self._connect = connect
        self.static_defaults = static_defaults
        self.broker_id = broker_id
        self._cache = cache
        self._wait_seconds = wait_seconds
        # the ZooKeeperMetadata that publishes what this writes; set before any change
        self.metadata: MetadataSource
        self._replicas: ReplicaManager  # set by attach, before any setting is read
        self._topic_configs: dict[str, dict[str, str]] = {}
        self._broker_configs: dict[str, dict[str, str]] = {}

    def attach(self, replicas: ReplicaManager) -> None:
        """Apply the settings read from now on to the local logs of ``replicas``."""
        self._replicas = replicas

    # -- settings, as every broker reads them back ------------------------------------------------

    @property
    def defaults(self) -> LogConfig:
        return broker_defaults(self.static_defaults, self._broker_configs, self.broker_id)

    def config_for(self, topic: str) -> LogConfig:
        return LogConfig.from_properties(self._topic_configs.get(topic, {}), base=self.defaults)

    def overrides(self, name: str) -> dict[str, str]:
        return dict(self._topic_configs.get(name, {}))

    def broker_overrides(self, resource_name: str) -> dict[str, str]:
        return dict(self._broker_configs.get(resource_name, {}))

    def update_configs(
        self, topic_configs: dict[str, dict[str, str]], broker_configs: dict[str, dict[str, str]]
    ) -> None:
        """The settings read from ZooKeeper; those that changed go to this broker's running logs."""
        broker_changed = broker_configs != self._broker_configs
        changed = [
            name
            for name, configs in topic_configs.items()
            if broker_changed or self._topic_configs.get(name) != configs
        ]
        self._topic_configs, self._broker_configs = topic_configs, broker_configs
        self._replicas.reconfigure({name: self.config_for(name) for name in changed})

    # -- queries -------------------------------------------------------------------------

    def partitions(self, name: str) -> int | None:
        return self._cache.partition_count(name)

    # -- changes -------------------------------------------------------------------------

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
        configs = checked_new_topic(name, partitions, configs, self.defaults)
        with _zookeeper(f"create topic {name!r}"):
            check_new_name(name, self._client.get_children(self._path(TOPICS_PATH)))
            if self._client.exists(self._path(f"{DELETE_TOPICS_PATH}/{name}")):
                raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} is marked for deletion")
            replicas = self._place(0, partitions, replicas, replication_factor)
            if validate_only:
                return
            transaction = self._client.transaction()
            transaction.create(self._path(f"{TOPIC_CONFIGS_PATH}/{name}"), config_json(configs))
            transaction.create(self._path(topic_path(name)), topic_assignment_json(replicas))
            results = transaction.commit()
        if any(isinstance(r, NodeExistsError) for r in results):
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        failure = next((r for r in results if isinstance(r, Exception)), None)
        if failure is not None:
            raise TopicError(ErrorCode.UNKNOWN_SERVER_ERROR, f"cannot create topic {name!r} in ZooKeeper: {failure!r}")
        self._wait_for_leaders(name, partitions, "created")

    def delete(self, name: str) -> None:
        with _zookeeper(f"delete topic {name!r}"):
            if not self._client.exists(self._path(topic_path(name))):
                raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
            try:
                self._client.create(self._path(f"{DELETE_TOPICS_PATH}/{name}"), makepath=True)
            except NodeExistsError:  # asked already: wait for it as well
                pass
        if not self.metadata.wait_until(lambda: not self._cache.contains_topic(name), self._wait_seconds):
            raise TopicError(
                ErrorCode.REQUEST_TIMED_OUT,
                f"topic {name!r} is marked for deletion; the controller deletes it once every broker "
                f"holding its partitions is live",
            )

    def add_partitions(
        self, name: str, count: int, validate_only: bool = False, replicas: list[list[int]] | None = None
    ) -> None:
        """Grow a topic to ``count`` partitions; ``replicas``: a manual assignment of the new ones."""
        path = self._path(topic_path(name))
        with _zookeeper(f"add partitions to {name!r}"):
            while True:
                try:
                    data, stat = self._client.get(path)
                except NoNodeError:
                    raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist") from None
                current = parse_topic_assignment(data)
                check_partition_increase(name, len(current), count)
                added = self._place(len(current), count - len(current), replicas, len(current[0]))
                if validate_only:
                    return
                try:
                    assignment = topic_assignment_json([list(r) for r in current] + added)
                    self._client.set(path, assignment, version=stat.version)
                    break
                except BadVersionError:  # changed meanwhile: look again
                    continue
        self._wait_for_leaders(name, count, "given new partitions")

    def alter_topic_configs(self, name: str, configs: dict[str, str], validate_only: bool = False) -> None:
        checked_topic_config(name, configs, self.defaults)
        with _zookeeper(f"alter the settings of topic {name!r}"):
            if not self._client.exists(self._path(topic_path(name))):
                raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
            if validate_only:
                return
            self._write_config(self._path(f"{TOPIC_CONFIGS_PATH}/{name}"), configs)
        self._wait_for_configs(lambda: self._topic_configs.get(name, {}) == configs, f"topic {name!r}")

    def alter_broker_configs(self, resource_name: str, configs: dict[str, str], validate_only: bool = False) -> None:
        checked_config(configs, self.defaults, broker_level=True)
        if validate_only:
            return
        node = DEFAULT_BROKER_CONFIG if resource_name == DEFAULT_BROKER_RESOURCE else resource_name
        with _zookeeper(f"alter the settings of broker resource {resource_name!r}"):
            self._write_config(self._path(f"{BROKER_CONFIGS_PATH}/{node}"), configs)
        self._wait_for_configs(
            lambda: self._broker_configs.get(resource_name, {}) == configs, f"broker resource {resource_name!r}"
        )

    # -- helpers ----------------------------------------------------------------------------

    def _path(self, path: str) -> str:
        return self._connect.path(path)

    def _place(
        self, first_partition: int, count: int, requested: list[list[int]] | None, replication_factor: int
    ) -> list[list[int]]:
        """Replica lists of ``count`` new partitions: the ``requested`` ones (checked against the live
        brokers again: the handler checked them against its cache), else ``replication_factor``
        replicas each, placed over the live brokers from a random start and shift."""
        live = [int(i) for i in self._client.get_children(self._path(BROKER_IDS_PATH))]
        if requested is not None:
            try:
                return follow_assignment(requested, count, live)
            except PlacementError as exc:
                raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, str(exc)) from None
        try:
            start, shift = (random.randrange(len(live)), random.randrange(len(live))) if live else (0, 0)
            return assign_replicas(first_partition, count, live, start, replication_factor, shift)
        except PlacementError as exc:
            raise TopicError(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc)) from None

    def _write_config(self, path: str, configs: dict[str, str]) -> None:
        try:
            self._client.set(path, config_json(configs))
        except NoNodeError:
            self._client.create(path, config_json(configs), makepath=True)

    def _wait_for_leaders(self, name: str, partitions: int, done: str) -> None:
        def placed() -> bool:
            states = self._cache.partitions(name)
            return states is not None and len(states) >= partitions and all(s.leader != NO_LEADER for s in states)

        if not self.metadata.wait_until(placed, self._wait_seconds):
            raise TopicError(
                ErrorCode.REQUEST_TIMED_OUT,
                f"topic {name!r} was {done}, but its partitions have no leader yet (is a controller running?)",
            )

    def _wait_for_configs(self, applied: Callable[[], bool], what: str) -> None:
        if not self.metadata.wait_until(applied, self._wait_seconds):
            raise TopicError(
                ErrorCode.REQUEST_TIMED_OUT,
                f"the settings of {what} were written to ZooKeeper but have not reached this broker yet",
            )


@contextlib.contextmanager
def _zookeeper(what: str) -> Iterator[None]:
    """ZooKeeper failing under a change (connection lost, no permission) as a TopicError."""
    try:
        yield
    except KazooException as exc:
        raise TopicError(ErrorCode.UNKNOWN_SERVER_ERROR, f"cannot {what} in ZooKeeper: {exc!r}") from None
