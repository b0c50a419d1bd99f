"""The metadata source of a broker in a cluster: every broker's view of the cluster, read from
ZooKeeper (the live brokers in ``/brokers/ids``, the controller, each topic's replica assignment and
partition states, topic and broker settings) and published as cluster images, as the one-node
``local_metadata`` publishes ``topics.json``.

Any change under the watched nodes wakes one reader thread, which reads the whole picture again
(with one round of pipelined reads, setting the watches anew) and publishes it: to the topic store
first (the settings new logs take), then to the replica manager (the partitions led here get their
logs), then to the metadata cache (Metadata starts naming them). A topic that disappears while this
broker watches had its deletion completed by the controller: its local logs are deleted then; so
are those of a topic deleted and created again between two reads (its node's creation zxid, which
serves as the topic's id, changed), before the new topic is served. A partition without a
state node yet (the controller has not elected its leader) has leader -1.

What happened while this broker was away (a deletion completed without it, a topic created again)
is found once, at start: after the first complete read, before anything is served, the replica
manager sets aside the local partitions the cluster no longer assigns to this broker
(``ReplicaManager.set_aside_strays``).
"""

import logging
import threading
from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.protocol.states import WatchedEvent

from broker.replica.replica_manager import ReplicaManager

from .metadata_cache import NO_LEADER, BrokerEndpoint, ClusterImage, Endpoint, MetadataCache, PartitionState
from .rerun_thread import RerunThread
from .topic_rules import DEFAULT_BROKER_RESOURCE
from .zookeeper_data import (
    BROKER_CONFIGS_PATH,
    BROKER_IDS_PATH,
    CONTROLLER_PATH,
    DEFAULT_BROKER_CONFIG,
    TOPIC_CONFIGS_PATH,
    TOPICS_PATH,
    ZooKeeperConnect,
    broker_path,
    parse_broker_registration,
    parse_config,
    parse_controller,
    parse_partition_state,
    parse_topic_assignment,
    partition_state_path,
    topic_path,
)
from .zookeeper_topics import ZooKeeperTopics

log = logging.getLogger(__name__)


class ZooKeeperMetadata:
    def __init__(
        self,
        client: KazooClient,
        connect: ZooKeeperConnect,
        cluster_id: str,
        cache: MetadataCache,
        replicas: ReplicaManager,
        topics: ZooKeeperTopics,
    ):
        """``topics`` is the ZooKeeperTopics store (settings), ``replicas`` the ReplicaManager."""
        self._client = client
        self._connect = connect
        self._cluster_id = cluster_id
        self._cache = cache
        self._replicas = replicas
        self._topics = topics
        # name -> creation zxid of /brokers/topics/<name>: a topic created again has another
        self._topic_ids: dict[str, int] = {}
        self._thread = RerunThread("zookeeper-metadata", self.refresh, (KazooException,))
        self._published = threading.Condition()

    def start(self) -> None:
        """Set aside the stray partitions of this broker once the whole cluster is read, publish the
        cluster as ZooKeeper has it now, then follow its changes."""
        image, topic_ids, topic_configs, broker_configs = self._read()
        self._replicas.set_aside_strays(image)
        self._refresh_with(image, topic_ids, topic_configs, broker_configs)
        self._thread.start()

    def changed(self, event: WatchedEvent | None = None) -> None:
        """A watch fired (or the session is new and its watches are gone): read everything again."""
        self._thread.wake()

    def wait_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``condition()`` holds after a publication (False after ``timeout`` seconds)."""
        with self._published:
            return self._published.wait_for(condition, timeout)

    def stop(self) -> None:
        self._thread.stop()

    def refresh(self) -> None:
        """Read the cluster and publish it."""
        self._refresh_with(*self._read())

    def _refresh_with(
        self,
        image: ClusterImage,
        topic_ids: dict[str, int],
        topic_configs: dict[str, dict[str, str]],
        broker_configs: dict[str, dict[str, str]],
    ) -> None:
        before = self._cache.image
        self._topics.update_configs(topic_configs, broker_configs)
        recreated = {name for name, created in topic_ids.items() if self._topic_ids.get(name, created) != created}
        if recreated:  # deleted and created again since the last read: the old logs go before the new topic is served
            self._publish(
                ClusterImage.of(
                    image.cluster_id,
                    image.controller_id,
                    image.brokers,
                    {n: s for n, s in image.topics.items() if n not in recreated},
                    {n: i for n, i in image.topic_ids.items() if n not in recreated},
                )
            )
            for topic in recreated & before.topics.keys():
                self._replicas.delete_topic_logs(topic, len(before.topics[topic]))
        self._publish(image)
        self._topic_ids = topic_ids
        for topic in before.topics.keys() - image.topics.keys():
            self._replicas.delete_topic_logs(topic, len(before.topics[topic]))

    def _publish(self, image: ClusterImage) -> None:
        self._replicas.apply(image)
        with self._published:
            self._cache.update(image)
            self._published.notify_all()

    # -- reading ----------------------------------------------------------------------------

    def _read(self) -> tuple[ClusterImage, dict[str, int], dict[str, dict[str, str]], dict[str, dict[str, str]]]:
        """The cluster as ZooKeeper has it: the image, the topic ids, the topics' and the broker's settings."""
        path = self._connect.path
        ids = self._client.get_children(path(BROKER_IDS_PATH), watch=self.changed)
        names = self._client.get_children(path(TOPICS_PATH), watch=self.changed)
        default_configs = path(f"{BROKER_CONFIGS_PATH}/{DEFAULT_BROKER_CONFIG}")
        own_configs = path(f"{BROKER_CONFIGS_PATH}/{self._cache.node_id}")
        created: dict[str, int] = {}
        first = self._get_all(
            [path(CONTROLLER_PATH), default_configs, own_configs]
            + [path(broker_path(int(i))) for i in ids]
            + [path(topic_path(n)) for n in names]
            + [path(f"{TOPIC_CONFIGS_PATH}/{n}") for n in names],
            created,
        )
        controller = first[path(CONTROLLER_PATH)]
        brokers = [self._broker(int(i), first[path(broker_path(int(i)))]) for i in sorted(ids, key=int)]
        found = {n: first[path(topic_path(n))] for n in names}
        assignments = {n: parse_topic_assignment(data) for n, data in found.items() if data is not None}
        states = self._get_all(
            [path(partition_state_path(n, p)) for n, replicas in assignments.items() for p in range(len(replicas))]
        )
        topics = {
            name: [
                self._partition(replicas, states[path(partition_state_path(name, p))])
                for p, replicas in enumerate(replica_lists)
            ]
            for name, replica_lists in assignments.items()
        }
        topic_ids = {n: created[path(topic_path(n))] for n in assignments}
        image = ClusterImage.of(
            self._cluster_id,
            NO_LEADER if controller is None else parse_controller(controller),
            [b for b in brokers if b is not None],
            topics,
            topic_ids,
        )
        topic_configs = {n: _config(first[path(f"{TOPIC_CONFIGS_PATH}/{n}")]) for n in assignments}
        broker_configs = {
            DEFAULT_BROKER_RESOURCE: _config(first[default_configs]),
            str(self._cache.node_id): _config(first[own_configs]),
        }
        return image, topic_ids, topic_configs, broker_configs

    def _get_all(self, paths: list[str], created: dict[str, int] | None = None) -> dict[str, bytes | None]:
        """The data of each node (None for a missing one, watched for its creation), read pipelined;
        the creation zxid of each node found into ``created``."""
        pending = {p: self._client.get_async(p, watch=self.changed) for p in paths}
        found = {}
        for p, result in pending.items():
            try:
                found[p], stat = result.get()
                if created is not None:
                    created[p] = stat.czxid
            except NoNodeError:
                found[p] = None
                if self._client.exists(p, watch=self.changed) is not None:  # created meanwhile
                    self.changed()
        return found

    @staticmethod
    def _broker(node_id: int, data: bytes | None) -> BrokerEndpoint | None:
        if data is None:  # gone between listing and reading
            return None
        try:
            endpoints, rack = parse_broker_registration(data)
        except ValueError as exc:
            log.error("broker %d's registration is unreadable, leaving it out: %s", node_id, exc)
            return None
        return BrokerEndpoint.of(node_id, [Endpoint(*e) for e in endpoints], rack)

    @staticmethod
    def _partition(replicas: tuple[int, ...], state: bytes | None) -> PartitionState:
        if state is None:
            return PartitionState(NO_LEADER, -1, replicas, ())
        leader, leader_epoch, isr, _ = parse_partition_state(state)
        return PartitionState(leader, leader_epoch, replicas, isr)


def _config(data: bytes | None) -> dict[str, str]:
    return {} if data is None else parse_config(data)
