"""The topics of this broker: names, partition counts and per-topic config overrides, persisted,
with the broker's dynamic log settings (AlterConfigs on a broker resource).

Kafka keeps topic metadata and dynamic configs in ZooKeeper (``/config/topics/<topic>``,
``/config/brokers/<default>`` and ``/config/brokers/<id>``) or its metadata log; a single broker
keeps them in ``<log-dir>/topics.json`` (written atomically). A config change is written first
and then applied to the running partition logs. A topic's settings are, lowest precedence
first: Kafka's defaults, the broker's static configuration, the dynamic cluster default (resource
name ``""``), the dynamic setting of this broker (its id), and the topic's own overrides.
Partition directories found on disk without an entry (a copied Kafka log directory, say) are
adopted as topics with the broker's defaults (an internal topic's ``cleanup.policy`` stays
``compact``). After every change of the topics or their partitions
the registry calls ``on_change`` (the one-node cluster's metadata source publishes them then).
Names, partition counts and settings follow the rules of ``broker.cluster.topic_rules``, as they
do in a cluster (``broker.cluster.zookeeper_topics``: both are a ``broker.cluster.topic_store.TopicStore``).

Every change is all or nothing, also on a full disk. A creation is committed by writing
``topics.json``, then its partition logs are made; if they cannot be, they are removed and the
entry withdrawn. A deletion first stops publishing the topic (so no request reaches a log being
closed, as Kafka stops a replica before deleting its log), and is committed by renaming the topic's
partition directories aside (Kafka's ``<topic>-<partition>.<id>-delete``, which needs no free
space), then ``topics.json`` is rewritten; if the disk is too full for that, the renamed files are
removed first to make room.
A start that finds a listed topic with a partition directory renamed aside and none in its place
finishes that deletion (a crash or a full disk interrupted it).
"""

import json
import logging
import os
import threading

from broker.cluster.topic_rules import (
    INTERNAL_TOPICS,
    TopicError,
    broker_defaults,
    check_new_name,
    check_partition_increase,
    checked_config,
    checked_new_topic,
    checked_topic_config,
)
from broker.common.files import write_atomically
from broker.common.settings import ConfigError
from broker.log.config import LogConfig
from broker.log.errors import LogError
from broker.protocol.errors import ErrorCode
from broker.replica.deleted_partitions import interrupted_deletions
from broker.replica.replica_manager import ReplicaManager

log = logging.getLogger(__name__)

TOPICS_FILE = "topics.json"


class TopicRegistry:
    """Topic metadata; partition logs are made and deleted by the ReplicaManager given to ``attach``."""

    def __init__(self, log_dir: str, static_defaults: LogConfig, broker_id: int = 0):
        self.log_dir = log_dir
        self.on_change = lambda: None  # the broker sets it: publish the topics as the cluster's metadata
        self.path = os.path.join(log_dir, TOPICS_FILE)
        self.static_defaults = static_defaults
        self.broker_id = broker_id
        self._lock = threading.Lock()
        self._topics: dict[str, dict] = {}
        # the topic whose logs are being deleted: listed until committed, not published
        self._deleting: str | None = None
        self._broker_configs: dict[str, dict[str, str]] = {}  # "" (cluster default) or broker id -> log keys
        self._replicas: ReplicaManager  # set by attach, before any change
        try:
            with open(self.path, encoding="utf-8") as f:
                stored = json.load(f)
            self._topics = {
                name: {"partitions": int(t["partitions"]), "configs": dict(t["configs"])}
                for name, t in stored["topics"].items()
            }
            self._broker_configs = {name: dict(c) for name, c in stored.get("broker_configs", {}).items()}
            for name in self._topics:  # every stored setting must still be valid
                self.config_for(name)
        except FileNotFoundError:
            pass
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"{self.path} is not a valid topics file ({exc}); restore it or move it aside") from None
        # seen before the log manager opens the directory and removes the renamed-aside partitions
        self._interrupted_deletions = interrupted_deletions(
            log_dir, {name: topic["partitions"] for name, topic in self._topics.items()}
        )

    @property
    def defaults(self) -> LogConfig:
        """The broker's log settings: static, then the dynamic cluster default, then this broker's."""
        return broker_defaults(self.static_defaults, self._broker_configs, self.broker_id)

    def config_for(self, topic: str) -> LogConfig:
        """The log settings of a topic: the broker defaults with the topic's overrides."""
        overrides = self._topics.get(topic, {}).get("configs", {})
        return LogConfig.from_properties(overrides, base=self.defaults)

    def attach(self, replicas: ReplicaManager) -> None:
        """Finish interrupted deletions, make the missing partition logs of known topics, and adopt
        partition directories found on disk, through ``replicas``, which makes every later change."""
        self._replicas = replicas
        topics = dict(self._topics)
        for name in self._interrupted_deletions:
            for partition in range(topics.pop(name)["partitions"]):
                replicas.delete_partition(name, partition)
            log.info("finished deleting topic %r (a crash or a full disk interrupted its deletion)", name)
        adopted: dict[str, int] = {}
        for partition_log in replicas.local_logs():
            if partition_log.topic not in topics:
                adopted[partition_log.topic] = max(adopted.get(partition_log.topic, 0), partition_log.partition + 1)
        for name, partitions in adopted.items():  # an internal topic stays compacted, as Kafka made it
            configs = {"cleanup.policy": "compact"} if name in INTERNAL_TOPICS else {}
            topics[name] = {"partitions": partitions, "configs": configs}
        if adopted or self._interrupted_deletions:
            try:
                self._commit(topics, "cannot record the topics found at start")
            except TopicError as exc:  # a full disk must not stop the start: deleting topics frees it
                log.warning("%s; they are recorded with the next change of topics", exc)
                self._topics = topics
        for name, topic in topics.items():
            replicas.make_partitions(name, range(topic["partitions"]))
        self._apply(sorted(adopted.keys() & INTERNAL_TOPICS))  # opened with the defaults before they were adopted

    def _commit(self, topics: dict[str, dict], failure: str, broker_configs: dict[str, dict] | None = None) -> None:
        """Write ``topics`` (and ``broker_configs``, if given) to ``topics.json``, then make them the
        registry's view (TopicError if they cannot be written: nothing changes)."""
        if broker_configs is None:
            broker_configs = self._broker_configs
        data = {"version": 1, "topics": topics, "broker_configs": broker_configs}
        try:
            write_atomically(self.path, json.dumps(data, indent=1, sort_keys=True).encode())
        except OSError as exc:
            raise TopicError(ErrorCode.KAFKA_STORAGE_ERROR, f"{failure}: cannot write {self.path}: {exc}") from None
        self._topics = topics
        self._broker_configs = broker_configs

    # -- queries -------------------------------------------------------------------------

    def names(self) -> list[str]:
        return sorted(self._topics)

    def partition_counts(self) -> dict[str, int]:
        """Every topic's partition count, from one consistent state, without a topic being deleted."""
        return {name: topic["partitions"] for name, topic in self._topics.items() if name != self._deleting}

    def partitions(self, name: str) -> int | None:
        topic = self._topics.get(name)
        return topic["partitions"] if topic else None

    def overrides(self, name: str) -> dict[str, str]:
        return dict(self._topics[name]["configs"])

    def broker_overrides(self, resource_name: str) -> dict[str, str]:
        """The dynamic broker settings of ``resource_name``: "" (the cluster default) or a broker id."""
        return dict(self._broker_configs.get(resource_name, {}))

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
        """Create a topic, or raise TopicError with the Kafka error code to answer. A manual
        assignment (``replicas``) and ``replication_factor``, checked by the handler against the one
        live broker, can only name this broker: nothing to follow."""
        configs = checked_new_topic(name, partitions, configs, self.defaults)
        with self._lock:
            check_new_name(name, self._topics)
            if validate_only:
                return
            before = self._topics
            self._commit(
                {**before, name: {"partitions": partitions, "configs": configs}}, f"cannot create topic {name!r}"
            )
            try:
                self._replicas.make_partitions(name, range(partitions))
            except (OSError, LogError) as exc:
                self._withdraw(name, range(partitions), before)
                raise TopicError(
                    ErrorCode.KAFKA_STORAGE_ERROR, f"cannot create the partitions of {name!r}: {exc}"
                ) from None
            self.on_change()

    def _withdraw(self, name: str, partitions: range, before: dict[str, dict]) -> None:
        """Undo a creation (of a topic or of new partitions) whose partition logs could not all be made."""
        for partition in partitions:
            try:
                self._replicas.delete_partition(name, partition)
            except OSError as exc:
                log.error("cannot remove partition %s-%d of a failed creation: %s", name, partition, exc)
        # removed whole: no record of a deletion may remain for a start to "finish"
        self._replicas.remove_deleted(name, partitions)
        try:
            self._commit(before, f"cannot withdraw topic {name!r}")
        except TopicError as exc:
            log.error("%s; it stays listed, and the next start makes its missing partitions", exc)
        self.on_change()

    def delete(self, name: str) -> None:
        """Delete a topic, or raise TopicError (KAFKA_STORAGE_ERROR when nothing could be deleted)."""
        with self._lock:
            topic = self._topics.get(name)
            if topic is None:
                raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
            self._deleting = name  # unpublished first, so no request reaches a log being closed
            self.on_change()
            try:
                self._set_partitions_aside(name, topic["partitions"])
            except TopicError:
                self._deleting = None  # nothing was deleted (the first partition's log was opened anew)
                self.on_change()
                raise
            remaining = {other: t for other, t in self._topics.items() if other != name}
            try:
                self._commit(remaining, f"cannot delete topic {name!r}")
            except TopicError:
                self._replicas.free_deleted(name, range(topic["partitions"]))  # the disk is full: make room
                try:
                    self._commit(remaining, f"cannot delete topic {name!r}")
                except TopicError as exc:
                    self._topics = remaining
                    log.error("%s; its data is gone and the next start finishes the deletion", exc)
            self._deleting = None
            self.on_change()

    def _set_partitions_aside(self, name: str, partitions: int) -> None:
        """Rename the topic's partition directories aside: the deletion is committed once the first is.

        If even the first cannot be renamed, its log is reopened and nothing has changed."""
        failures = []
        for partition in range(partitions):
            try:
                self._replicas.delete_partition(name, partition)
            except OSError as exc:
                failures.append(f"{name}-{partition}: {exc}")
                if partition == 0:
                    self._replicas.make_partitions(name, [partition])
                    raise TopicError(ErrorCode.KAFKA_STORAGE_ERROR, f"cannot delete topic {name!r}: {exc}") from None
        if failures:
            log.error("deleting topic %r: %s; the next start finishes the deletion", name, "; ".join(failures))

    def add_partitions(
        self, name: str, count: int, validate_only: bool = False, replicas: list[list[int]] | None = None
    ) -> None:
        """Grow a topic to ``count`` partitions (CreatePartitions); a topic never shrinks. ``replicas``
        as for ``create``."""
        with self._lock:
            topic = self._topics.get(name)
            if topic is None:
                raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
            current = topic["partitions"]
            check_partition_increase(name, current, count)
            if validate_only:
                return
            before = self._topics
            self._commit({**before, name: {**topic, "partitions": count}}, f"cannot add partitions to {name!r}")
            try:
                self._replicas.make_partitions(name, range(current, count))
            except (OSError, LogError) as exc:
                self._withdraw(name, range(current, count), before)
                raise TopicError(
                    ErrorCode.KAFKA_STORAGE_ERROR, f"cannot create the new partitions of {name!r}: {exc}"
                ) from None
            self.on_change()

    def alter_topic_configs(self, name: str, configs: dict[str, str], validate_only: bool = False) -> None:
        """Replace a topic's overrides with ``configs`` (AlterConfigs), saved, then applied to its logs."""
        checked_topic_config(name, configs, self.defaults)
        with self._lock:
            topic = self._topics.get(name)
            if topic is None:
                raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
            if validate_only:
                return
            self._commit(
                {**self._topics, name: {**topic, "configs": dict(configs)}},
                f"cannot alter the settings of topic {name!r}",
            )
        self._apply([name])

    def alter_broker_configs(self, resource_name: str, configs: dict[str, str], validate_only: bool = False) -> None:
        """Replace the dynamic broker log settings of ``resource_name`` ("" or this broker's id),
        saved, then applied to every log that does not override them."""
        checked_config(configs, self.defaults, broker_level=True)
        if validate_only:
            return
        with self._lock:
            broker_configs = {other: c for other, c in self._broker_configs.items() if other != resource_name}
            if configs:
                broker_configs[resource_name] = dict(configs)
            self._commit(
                self._topics, f"cannot alter the settings of broker resource {resource_name!r}", broker_configs
            )
        self._apply(self.names())

    def _apply(self, names: list[str]) -> None:
        """Hand the running logs of ``names`` their current settings."""
        self._replicas.reconfigure({name: self.config_for(name) for name in names})
