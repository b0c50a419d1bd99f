"""The topics of this broker: names, partition counts and per-topic config overrides, persisted,
with the broker's dynamic log settings (AlterConfigs on a broker resource).

Kafka keeps topic metadata and dynamic configs in ZooKeeper (``/config/topics/<topic>``,
``/config/brokers/<default>`` and ``/config/brokers/<id>``) or its metadata log; a single broker
keeps them in ``<log-dir>/topics.json`` (written atomically). A config change is written first
and then applied to the running partition logs. A topic's settings are, lowest precedence
first: Kafka's defaults, the broker's static configuration, the dynamic cluster default (resource
name ``""``), the dynamic setting of this broker (its id), and the topic's own overrides.
Partition directories found on disk without an entry (a copied Kafka log directory, say) are
adopted as topics with the broker's defaults.
Topic names follow Kafka's rules: 1-249 characters from ``[a-zA-Z0-9._-]``, not ``.`` or ``..``,
and not colliding with an existing name that differs only by ``.`` versus ``_``.
"""

import json
import os
import re
import threading

from broker.log.checkpoints import write_atomically
from broker.log.config import ConfigError, LogConfig
from broker.log.errors import LogError
from broker.protocol.errors import ErrorCode

TOPICS_FILE = "topics.json"
DEFAULT_BROKER_RESOURCE = ""  # AlterConfigs' name for the cluster-wide default of a broker setting
MAX_NAME_LENGTH = 249
MAX_PARTITIONS = 10_000  # Kafka's limit on the records of one metadata operation
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")


class TopicError(Exception):
    """A topic operation refused with a Kafka error code and a message for the client."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code


def validate_name(name: str) -> None:
    if not name:
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, "topic name is empty")
    if name in (".", ".."):
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic name cannot be {name!r}")
    if len(name) > MAX_NAME_LENGTH:
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                         f"topic name is {len(name)} characters long, the limit is {MAX_NAME_LENGTH}")
    if not _LEGAL_NAME.fullmatch(name):
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                         f"topic name {name!r} may only contain letters, digits, '.', '_' and '-'")


class TopicRegistry:
    """Topic metadata; partition logs live in the LogManager attached with ``attach``."""

    def __init__(self, log_dir: str, static_defaults: LogConfig, broker_id: int = 0):
        self.path = os.path.join(log_dir, TOPICS_FILE)
        self.static_defaults = static_defaults
        self.broker_id = broker_id
        self._lock = threading.Lock()
        self._topics: dict[str, dict] = {}
        self._broker_configs: dict[str, dict[str, str]] = {}  # "" (cluster default) or broker id -> log keys
        self._log_manager = None
        try:
            with open(self.path, encoding="utf-8") as f:
                stored = json.load(f)
            self._topics = {name: {"partitions": int(t["partitions"]), "configs": dict(t["configs"])}
                            for name, t in stored["topics"].items()}
            self._broker_configs = {name: dict(c) for name, c in stored.get("broker_configs", {}).items()}
            for name in self._topics:  # every stored setting must still be valid
                self.config_for(name)
        except FileNotFoundError:
            pass
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"{self.path} is not a valid topics file ({exc}); restore it or move it aside") from None

    @property
    def defaults(self) -> LogConfig:
        """The broker's log settings: static, then the dynamic cluster default, then this broker's."""
        config = self.static_defaults
        for resource in DEFAULT_BROKER_RESOURCE, str(self.broker_id):
            config = LogConfig.from_properties(self._broker_configs.get(resource, {}), base=config, broker_level=True)
        return config

    def config_for(self, topic: str) -> LogConfig:
        """The log settings of a topic: the broker defaults with the topic's overrides."""
        overrides = self._topics.get(topic, {}).get("configs", {})
        return LogConfig.from_properties(overrides, base=self.defaults)

    def attach(self, log_manager) -> None:
        """Create missing partition logs of known topics; adopt partition directories found on disk."""
        self._log_manager = log_manager
        adopted = {}
        for partition_log in log_manager.all_logs():
            if partition_log.topic not in self._topics:
                adopted[partition_log.topic] = max(adopted.get(partition_log.topic, 0), partition_log.partition + 1)
        for name, partitions in adopted.items():
            self._topics[name] = {"partitions": partitions, "configs": {}}
        for name, topic in self._topics.items():
            for partition in range(topic["partitions"]):
                log_manager.get_or_create_log(name, partition)
        if adopted:
            self._save()

    def _save(self) -> None:
        data = {"version": 1, "topics": self._topics, "broker_configs": self._broker_configs}
        write_atomically(self.path, json.dumps(data, indent=1, sort_keys=True).encode())

    # -- queries -------------------------------------------------------------------------

    def names(self) -> list[str]:
        return sorted(self._topics)

    def partitions(self, name: str) -> int | None:
        topic = self._topics.get(name)
        return topic["partitions"] if topic else None

    def overrides(self, name: str) -> dict[str, str]:
        return dict(self._topics[name]["configs"])

    def broker_overrides(self, resource_name: str) -> dict[str, str]:
        """The dynamic broker settings of ``resource_name``: "" (the cluster default) or a broker id."""
        return dict(self._broker_configs.get(resource_name, {}))

    # -- changes -------------------------------------------------------------------------

    def create(self, name: str, partitions: int, configs: dict[str, str] | None = None,
               validate_only: bool = False) -> None:
        """Create a topic, or raise TopicError with the Kafka error code to answer."""
        validate_name(name)
        if partitions < 1:
            raise TopicError(ErrorCode.INVALID_PARTITIONS, f"number of partitions must be at least 1, got {partitions}")
        if partitions > MAX_PARTITIONS:
            raise TopicError(ErrorCode.POLICY_VIOLATION,
                             f"{partitions} partitions is more than one operation may create ({MAX_PARTITIONS})")
        configs = {k: v for k, v in (configs or {}).items() if v is not None}
        try:
            LogConfig.from_properties(configs, base=self.defaults)
        except ConfigError as exc:
            raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        with self._lock:
            if name in self._topics:
                raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
            collision = next((t for t in self._topics if t.replace(".", "_") == name.replace(".", "_")), None)
            if collision:
                raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                 f"topic {name!r} collides with existing topic {collision!r} ('.' and '_' collide)")
            if validate_only:
                return
            self._topics[name] = {"partitions": partitions, "configs": configs}  # config_for sees it now
        try:
            for partition in range(partitions):
                self._log_manager.get_or_create_log(name, partition)
        except (OSError, LogError) as exc:
            for partition in range(partitions):
                self._log_manager.delete_log(name, partition)
            with self._lock:
                self._topics.pop(name, None)
            raise TopicError(ErrorCode.KAFKA_STORAGE_ERROR, f"cannot create the partitions of {name!r}: {exc}") from None
        with self._lock:
            self._save()

    def delete(self, name: str) -> None:
        with self._lock:
            topic = self._topics.pop(name, None)
            if topic is None:
                raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
            self._save()
        for partition in range(topic["partitions"]):
            self._log_manager.delete_log(name, partition)

    def add_partitions(self, name: str, count: int, validate_only: bool = False) -> None:
        """Grow a topic to ``count`` partitions (CreatePartitions); a topic never shrinks."""
        with self._lock:
            topic = self._topics.get(name)
            if topic is None:
                raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
            current = topic["partitions"]
            if count <= current:
                raise TopicError(ErrorCode.INVALID_PARTITIONS,
                                 f"topic {name!r} has {current} partitions; the new count must be higher, got {count}")
            if count - current > MAX_PARTITIONS:
                raise TopicError(ErrorCode.POLICY_VIOLATION, f"{count - current} new partitions is more than one "
                                                              f"operation may create ({MAX_PARTITIONS})")
            if validate_only:
                return
            try:
                for partition in range(current, count):
                    self._log_manager.get_or_create_log(name, partition)
                topic["partitions"] = count
                self._save()
            except (OSError, LogError) as exc:
                topic["partitions"] = current
                for partition in range(current, count):
                    self._log_manager.delete_log(name, partition)
                raise TopicError(ErrorCode.KAFKA_STORAGE_ERROR,
                                 f"cannot create the new partitions of {name!r}: {exc}") from None

    def alter_topic_configs(self, name: str, configs: dict[str, str], validate_only: bool = False) -> None:
        """Replace a topic's overrides with ``configs`` (AlterConfigs), saved, then applied to its logs."""
        try:
            LogConfig.from_properties(configs, base=self.defaults)
        except ConfigError as exc:
            raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        with self._lock:
            topic = self._topics.get(name)
            if topic is None:
                raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
            if validate_only:
                return
            previous, topic["configs"] = topic["configs"], dict(configs)
            self._save_or_restore(lambda: topic.update(configs=previous))
        self._apply([name])

    def alter_broker_configs(self, resource_name: str, configs: dict[str, str], validate_only: bool = False) -> None:
        """Replace the dynamic broker log settings of ``resource_name`` ("" or this broker's id),
        saved, then applied to every log that does not override them."""
        try:
            LogConfig.from_properties(configs, base=self.defaults, broker_level=True)
        except ConfigError as exc:
            raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        if validate_only:
            return
        with self._lock:
            previous = self._broker_configs.get(resource_name)
            self._broker_configs[resource_name] = dict(configs)
            if not configs:
                del self._broker_configs[resource_name]
            self._save_or_restore(lambda: self._restore_broker_configs(resource_name, previous))
        self._apply(self.names())

    def _restore_broker_configs(self, resource_name: str, previous: dict | None) -> None:
        self._broker_configs.pop(resource_name, None)
        if previous is not None:
            self._broker_configs[resource_name] = previous

    def _save_or_restore(self, restore) -> None:
        """Save the changed metadata; on failure undo the change in memory (``restore``) as well."""
        try:
            self._save()
        except OSError as exc:
            restore()
            raise TopicError(ErrorCode.KAFKA_STORAGE_ERROR, f"cannot save {self.path}: {exc.strerror or exc}") from None

    def _apply(self, names: list[str]) -> None:
        """Hand the running logs of ``names`` their current settings."""
        for name in names:
            config = self.config_for(name)
            for partition in range(self.partitions(name) or 0):
                partition_log = self._log_manager.get_log(name, partition)
                if partition_log is not None:
                    partition_log.update_config(config)
