"""The topics of this broker: names, partition counts and per-topic config overrides, persisted.

Kafka keeps topic metadata in ZooKeeper or its metadata log; a single broker keeps it in
``<log-dir>/topics.json`` (written atomically). Partition directories found on disk without an
entry (a copied Kafka log directory, say) are adopted as topics with the broker's defaults.
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

    def __init__(self, log_dir: str, defaults: LogConfig):
        self.path = os.path.join(log_dir, TOPICS_FILE)
        self.defaults = defaults
        self._lock = threading.Lock()
        self._topics: dict[str, dict] = {}
        self._log_manager = None
        try:
            with open(self.path, encoding="utf-8") as f:
                stored = json.load(f)
            self._topics = {name: {"partitions": int(t["partitions"]), "configs": dict(t["configs"])}
                            for name, t in stored["topics"].items()}
        except FileNotFoundError:
            pass
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{self.path} is not a valid topics file ({exc}); restore it or move it aside") from None

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
        data = {"version": 1, "topics": self._topics}
        write_atomically(self.path, json.dumps(data, indent=1, sort_keys=True).encode())

    # -- queries -------------------------------------------------------------------------

    def names(self) -> list[str]:
        return sorted(self._topics)

    def partitions(self, name: str) -> int | None:
        topic = self._topics.get(name)
        return topic["partitions"] if topic else None

    def overrides(self, name: str) -> dict[str, str]:
        return dict(self._topics[name]["configs"])

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
