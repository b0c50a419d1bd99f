"""The rules every topic change follows, wherever the topics are kept (``topics.json`` on a single
broker, ZooKeeper in a cluster): Kafka's topic names (1-249 characters from ``[a-zA-Z0-9._-]``, not
``.`` or ``..``, not colliding with an existing name that differs only by ``.`` versus ``_``),
partition counts, the internal topics no client may delete, empty or repartition and whose
settings must keep them compacted (their latest records are the coordinators' live state), and the
error a refused change answers with."""

import re
from collections.abc import Collection

from broker.common.settings import ConfigError
from broker.coordinator.offset_manager import OFFSETS_TOPIC
from broker.log.config import LogConfig
from broker.protocol.errors import ErrorCode

DEFAULT_BROKER_RESOURCE = ""  # AlterConfigs' name for the cluster-wide default of a broker setting
MAX_NAME_LENGTH = 249
MAX_PARTITIONS = 10_000  # Kafka's limit on the records of one metadata operation
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, "__transaction_state"})  # Kafka's: the group and transaction logs


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
        raise TopicError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"topic name is {len(name)} characters long, the limit is {MAX_NAME_LENGTH}",
        )
    if not _LEGAL_NAME.fullmatch(name):
        raise TopicError(
            ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic name {name!r} may only contain letters, digits, '.', '_' and '-'"
        )


def check_new_partitions(count: int) -> None:
    """TopicError unless a creation may make ``count`` partitions."""
    if count < 1:
        raise TopicError(ErrorCode.INVALID_PARTITIONS, f"number of partitions must be at least 1, got {count}")
    if count > MAX_PARTITIONS:
        raise TopicError(
            ErrorCode.POLICY_VIOLATION, f"{count} partitions is more than one operation may create ({MAX_PARTITIONS})"
        )


def check_partition_increase(name: str, current: int, count: int) -> None:
    """TopicError unless a topic of ``current`` partitions may grow to ``count`` (it never shrinks)."""
    if count <= current:
        raise TopicError(
            ErrorCode.INVALID_PARTITIONS,
            f"topic {name!r} has {current} partitions; the new count must be higher, got {count}",
        )
    if count - current > MAX_PARTITIONS:
        raise TopicError(
            ErrorCode.POLICY_VIOLATION,
            f"{count - current} new partitions is more than one operation may create ({MAX_PARTITIONS})",
        )


def check_new_name(name: str, existing: Collection[str]) -> None:
    """TopicError if ``name`` exists already or collides with an existing name ('.' and '_' collide)."""
    if name in existing:
        raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
    collision = next((t for t in existing if t.replace(".", "_") == name.replace(".", "_")), None)
    if collision:
        raise TopicError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"topic {name!r} collides with existing topic {collision!r} ('.' and '_' collide)",
        )


def check_not_internal(name: str, refused: str) -> None:
    """TopicError(INVALID_TOPIC_EXCEPTION, as Kafka answers DeleteRecords) if ``name`` is internal;
    ``refused`` says what cannot be done to it ("cannot be deleted")."""
    if name in INTERNAL_TOPICS:
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic {name!r} is an internal topic and {refused}")


def checked_topic_config(name: str, configs: dict[str, str], defaults: LogConfig) -> LogConfig:
    """The settings of topic ``name`` with the overrides ``configs``; TopicError(INVALID_CONFIG)
    naming a bad setting, or a ``cleanup.policy`` other than ``compact`` for an internal topic
    (retention would delete the live state its coordinator replays at start)."""
    config = checked_config(configs, defaults)
    if name in INTERNAL_TOPICS and config.cleanup_policy != "compact":
        raise TopicError(
            ErrorCode.INVALID_CONFIG,
            f"cleanup.policy: topic {name!r} is an internal topic and "
            f"must stay compact (it would be {config.cleanup_policy!r})",
        )
    return config


def checked_config(configs: dict[str, str], base: LogConfig, broker_level: bool = False) -> LogConfig:
    """``configs`` over ``base``; TopicError(INVALID_CONFIG) naming a bad setting."""
    try:
        return LogConfig.from_properties(configs, base=base, broker_level=broker_level)
    except ConfigError as exc:
        raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None


def checked_new_topic(name: str, partitions: int, configs: dict | None, defaults: LogConfig) -> dict[str, str]:
    """The settings of a new topic (null values left out); TopicError unless its name, partition count
    and settings are valid."""
    validate_name(name)
    check_new_partitions(partitions)
    configs = {k: v for k, v in (configs or {}).items() if v is not None}
    checked_topic_config(name, configs, defaults)
    return configs


def broker_defaults(static: LogConfig, broker_configs: dict[str, dict[str, str]], broker_id: int) -> LogConfig:
    """A broker's log settings, lowest precedence first: static, the dynamic cluster default (``""``),
    the dynamic settings of this broker (its id)."""
    config = static
    for resource in DEFAULT_BROKER_RESOURCE, str(broker_id):
        config = LogConfig.from_properties(broker_configs.get(resource, {}), base=config, broker_level=True)
    return config
