"""Per-log configuration under Kafka's own key names, meanings and defaults.

Each setting has a topic-level name (``segment.bytes``) and the broker-level name that supplies
its default (``log.segment.bytes``). ``LogConfig.from_properties`` reads either kind, checking
each value as Kafka does and naming the key in any error. Every topic setting Kafka knows is
accepted; those that cannot change anything on a single broker without replicas or tiered
storage are stored and described, and their ``Setting.no_effect`` says why.
"""

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any

from broker.common.settings import LONG_MAX, ConfigError, boolean_setting, choice_setting, integer_setting
from broker.records.compression import Codec

TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


def _ratio(key: str, text: str) -> float:
    try:
        value = float(str(text).strip())
    except ValueError:
        raise ConfigError(f"{key}: {text!r} is not a number (for example {key}=0.5)") from None
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"{key}: {value} is out of range, it must be between 0 and 1")
    return value


def _level(minimum: int, maximum: int, *extra: int) -> Callable[[str, str], int]:
    """A compression level: ``minimum``..``maximum``, or one of ``extra`` (gzip's -1, "the codec's default")."""
    in_range = integer_setting(minimum, maximum)

    def parse(key: str, text: str) -> int:
        value = integer_setting(-(2**31), 2**31 - 1)(key, text)
        return value if value in extra else in_range(key, text)

    return parse


def _cleanup_policy(key: str, text: str) -> str:
    """``delete``, ``compact`` or both (``compact,delete``, in that order whatever the input's)."""
    policies = {p.strip() for p in str(text).split(",")}
    if not policies or not policies <= {"delete", "compact"}:
        raise ConfigError(f"{key}: {text!r} is not a list of delete and compact (for example {key}=compact)")
    return ",".join(sorted(policies))


_THROTTLED_REPLICA = re.compile(r"\d+:\d+")


def _throttled_replicas(key: str, text: str) -> str:
    """Kafka's throttled-replica list: empty, ``*``, or ``partition:broker`` pairs separated by commas."""
    value = str(text).strip()
    items = [item.strip() for item in value.split(",")] if value else []
    if value != "*" and not all(_THROTTLED_REPLICA.fullmatch(item) for item in items):
        raise ConfigError(f"{key}: {text!r} is not '*' or a list of partition:broker (for example {key}=0:0,1:0)")
    return ",".join(items) if value != "*" else value


_FORMAT_VERSION = re.compile(r"0\.(8|9|10|11)\.\d+(\.\d+)?(-IV\d+)?|[1-3]\.\d+(-IV\d+)?")


def _message_format_version(key: str, text: str) -> str:
    value = str(text).strip()
    if not _FORMAT_VERSION.fullmatch(value):
        raise ConfigError(f"{key}: {value!r} is not a Kafka version (for example {key}=3.0-IV1)")
    return value


def _remote_storage(key: str, text: str) -> bool:
    if boolean_setting(key, text):
        raise ConfigError(
            f"{key}: tiered storage is not enabled on this broker "
            f"(remote.log.storage.system.enable is false), so it cannot be enabled for a topic"
        )
    return False


@dataclasses.dataclass(frozen=True)
class Setting:
    """One Kafka topic setting: its field in LogConfig, its topic-level key, the broker-level key
    that supplies its default (None: Kafka has none), its value parser, its type as DescribeConfigs
    reports it, and, for a setting this broker stores but does not act on, the reason."""

    field: str
    topic_key: str
    broker_key: str | None
    parse: Callable[[str, str], object]
    config_type: str = "LONG"
    no_effect: str | None = None


@dataclasses.dataclass(frozen=True)
class LogConfig:
    """The settings one partition log runs with (Kafka's defaults)."""

    segment_bytes: int = 1024**3
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    max_message_bytes: int = 1024 * 1024 + 12
    message_timestamp_type: str = "CreateTime"
    cleanup_policy: str = "delete"
    file_delete_delay_ms: int = 60_000
    compression_type: str = "producer"
    delete_retention_ms: int = 24 * 3600 * 1000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = 3600 * 1000  # Kafka 4's default
    message_timestamp_difference_max_ms: int = LONG_MAX  # deprecated by Kafka 3.6, removed in 4
    # accepted and stored, with no effect here (see each Setting's no_effect)
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    leader_replication_throttled_replicas: str = ""
    follower_replication_throttled_replicas: str = ""
    preallocate: bool = False
    message_downconversion_enable: bool = True
    message_format_version: str = "3.0-IV1"
    remote_storage_enable: bool = False
    local_retention_ms: int = -2
    local_retention_bytes: int = -2

    @classmethod
    def from_properties(
        cls, properties: Mapping[str, str], base: "LogConfig | None" = None, broker_level: bool = False
    ) -> "LogConfig":
        """``base`` (default: Kafka's defaults) with ``properties`` applied.

        Keys are topic-level names (``retention.ms``), or broker-level names (``log.retention.ms``)
        when ``broker_level``. Unknown keys and bad values raise ConfigError.
        """
        table = BROKER_SETTINGS if broker_level else TOPIC_SETTINGS
        changes: dict[str, Any] = {}  # field -> value, each parsed to its field's type
        for key, text in properties.items():
            setting = table.get(key)
            if setting is None:
                raise ConfigError(f"{key}: unknown {'broker' if broker_level else 'topic'} log setting")
            changes[setting.field] = setting.parse(key, text)
        return dataclasses.replace(base or cls(), **changes)

    @property
    def compacted(self) -> bool:
        """The cleaner keeps the latest record of each key (``cleanup.policy`` has ``compact``)."""
        return "compact" in self.cleanup_policy.split(",")

    @property
    def deletes(self) -> bool:
        """Retention by time and size applies (``cleanup.policy`` has ``delete``)."""
        return "delete" in self.cleanup_policy.split(",")

    @property
    def uses_log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def timestamp_bounds_ms(self) -> tuple[int, int]:
        """How far before and after the broker's clock a CreateTime record's timestamp may lie
        (``message.timestamp.before.max.ms`` and ``...after.max.ms``; each left at Long.MAX falls back
        to the deprecated ``message.timestamp.difference.max.ms``, as Kafka 3.6+ does)."""

        def bound(value: int) -> int:
            return value if value != LONG_MAX else self.message_timestamp_difference_max_ms

        return bound(self.message_timestamp_before_max_ms), bound(self.message_timestamp_after_max_ms)

    @property
    def broker_codec(self) -> Codec | None:
        """The codec the broker stores batches in, or None to keep the producer's (``producer``)."""
        if self.compression_type == "producer":
            return None
        return Codec.NONE if self.compression_type == "uncompressed" else Codec.from_name(self.compression_type)

    def to_topic_properties(self) -> dict[str, str]:
        """Every setting under its topic-level name, as strings (for describe and persistence)."""
        return {s.topic_key: format_value(getattr(self, s.field)) for s in SETTINGS}


def format_value(value: object) -> str:
    """A setting's value as Kafka writes it (``true``, not ``True``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


_NO_THROTTLE = "replication is not throttled"
_NO_TIERED_STORAGE = "tiered storage is not implemented"
_DEFAULT_LEVEL = "the broker recompresses with the codec's default level"
CODEC_NAMES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

SETTINGS = (
    Setting("segment_bytes", "segment.bytes", "log.segment.bytes", integer_setting(14, 2**31 - 1), "INT"),
    Setting("segment_ms", "segment.ms", "log.roll.ms", integer_setting(1)),
    Setting("segment_jitter_ms", "segment.jitter.ms", "log.roll.jitter.ms", integer_setting(0)),
    Setting(
        "segment_index_bytes", "segment.index.bytes", "log.index.size.max.bytes", integer_setting(12, 2**31 - 1), "INT"
    ),
    Setting(
        "index_interval_bytes", "index.interval.bytes", "log.index.interval.bytes", integer_setting(0, 2**31 - 1), "INT"
    ),
    Setting("retention_ms", "retention.ms", "log.retention.ms", integer_setting(-1)),
    Setting("retention_bytes", "retention.bytes", "log.retention.bytes", integer_setting(-1)),
    Setting("flush_messages", "flush.messages", "log.flush.interval.messages", integer_setting(1)),
    Setting("flush_ms", "flush.ms", "log.flush.interval.ms", integer_setting(0)),
    Setting("max_message_bytes", "max.message.bytes", "message.max.bytes", integer_setting(0, 2**31 - 1), "INT"),
    Setting(
        "message_timestamp_type",
        "message.timestamp.type",
        "log.message.timestamp.type",
        choice_setting(*TIMESTAMP_TYPES),
        "STRING",
    ),
    Setting("cleanup_policy", "cleanup.policy", "log.cleanup.policy", _cleanup_policy, "LIST"),
    Setting("file_delete_delay_ms", "file.delete.delay.ms", "log.segment.delete.delay.ms", integer_setting(0)),
    Setting("compression_type", "compression.type", "compression.type", choice_setting(*CODEC_NAMES), "STRING"),
    Setting(
        "compression_gzip_level",
        "compression.gzip.level",
        "compression.gzip.level",
        _level(1, 9, -1),
        "INT",
        _DEFAULT_LEVEL,
    ),
    Setting(
        "compression_lz4_level", "compression.lz4.level", "compression.lz4.level", _level(1, 17), "INT", _DEFAULT_LEVEL
    ),
    Setting(
        "compression_zstd_level",
        "compression.zstd.level",
        "compression.zstd.level",
        _level(-131072, 22),
        "INT",
        _DEFAULT_LEVEL,
    ),
    Setting("delete_retention_ms", "delete.retention.ms", "log.cleaner.delete.retention.ms", integer_setting(0)),
    Setting("min_compaction_lag_ms", "min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms", integer_setting(0)),
    Setting("max_compaction_lag_ms", "max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", integer_setting(1)),
    Setting(
        "min_cleanable_dirty_ratio", "min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio", _ratio, "DOUBLE"
    ),
    Setting(
        "min_insync_replicas",
        "min.insync.replicas",
        "min.insync.replicas",
        integer_setting(1, 2**31 - 1),
        "INT",
    ),
    Setting(
        "unclean_leader_election_enable",
        "unclean.leader.election.enable",
        "unclean.leader.election.enable",
        boolean_setting,
        "BOOLEAN",
    ),
    Setting(
        "leader_replication_throttled_replicas",
        "leader.replication.throttled.replicas",
        None,
        _throttled_replicas,
        "LIST",
        _NO_THROTTLE,
    ),
    Setting(
        "follower_replication_throttled_replicas",
        "follower.replication.throttled.replicas",
        None,
        _throttled_replicas,
        "LIST",
        _NO_THROTTLE,
    ),
    Setting(
        "preallocate",
        "preallocate",
        "log.preallocate",
        boolean_setting,
        "BOOLEAN",
        "segment files grow as they are written",
    ),
    Setting(
        "message_timestamp_before_max_ms",
        "message.timestamp.before.max.ms",
        "log.message.timestamp.before.max.ms",
        integer_setting(0),
    ),
    Setting(
        "message_timestamp_after_max_ms",
        "message.timestamp.after.max.ms",
        "log.message.timestamp.after.max.ms",
        integer_setting(0),
    ),
    Setting(
        "message_timestamp_difference_max_ms",
        "message.timestamp.difference.max.ms",
        "log.message.timestamp.difference.max.ms",
        integer_setting(0),
    ),
    Setting(
        "message_downconversion_enable",
        "message.downconversion.enable",
        "log.message.downconversion.enable",
        boolean_setting,
        "BOOLEAN",
        "fetches below v4 are not served, so nothing is ever down-converted",
    ),
    Setting(
        "message_format_version",
        "message.format.version",
        "log.message.format.version",
        _message_format_version,
        "STRING",
        "deprecated by Kafka 3.0: batches are always stored in format v2",
    ),
    Setting("remote_storage_enable", "remote.storage.enable", None, _remote_storage, "BOOLEAN", _NO_TIERED_STORAGE),
    Setting(
        "local_retention_ms",
        "local.retention.ms",
        "log.local.retention.ms",
        integer_setting(-2),
        no_effect=_NO_TIERED_STORAGE,
    ),
    Setting(
        "local_retention_bytes",
        "local.retention.bytes",
        "log.local.retention.bytes",
        integer_setting(-2),
        no_effect=_NO_TIERED_STORAGE,
    ),
)
TOPIC_SETTINGS = {s.topic_key: s for s in SETTINGS}
BROKER_SETTINGS = {s.broker_key: s for s in SETTINGS if s.broker_key}
