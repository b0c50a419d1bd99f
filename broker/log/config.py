"""Per-log configuration under Kafka's own key names, meanings and defaults.

Each setting has a topic-level name (``segment.bytes``) and the broker-level name that supplies
its default (``log.segment.bytes``). ``LogConfig.from_properties`` reads either kind, checking
each value and naming the key in any error.
"""

import dataclasses
from typing import Callable, Mapping

LONG_MAX = 2**63 - 1
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


class ConfigError(ValueError):
    """A configuration key is unknown or its value is invalid; the message names the key."""


def integer_setting(minimum: int, maximum: int = LONG_MAX) -> Callable[[str, str], int]:
    def parse(key: str, text: str) -> int:
        try:
            value = int(str(text).strip())
        except ValueError:
            raise ConfigError(f"{key}: {text!r} is not an integer (for example {key}={max(minimum, 1000)})") from None
        if not minimum <= value <= maximum:
            raise ConfigError(f"{key}: {value} is out of range, it must be between {minimum} and {maximum}")
        return value
    return parse


def _choice(*choices: str) -> Callable[[str, str], str]:
    def parse(key: str, text: str) -> str:
        value = str(text).strip()
        if value not in choices:
            raise ConfigError(f"{key}: {value!r} is not one of {', '.join(choices)}")
        return value
    return parse


def _cleanup_policy(key: str, text: str) -> str:
    policies = {p.strip() for p in str(text).split(",")}
    if policies != {"delete"}:
        raise ConfigError(f"{key}: {text!r} is not supported; only 'delete' is (log compaction is not implemented)")
    return "delete"


@dataclasses.dataclass(frozen=True)
class Setting:
    field: str
    topic_key: str
    broker_key: str
    parse: Callable[[str, str], object]


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

    @classmethod
    def from_properties(cls, properties: Mapping[str, str], base: "LogConfig | None" = None,
                        broker_level: bool = False) -> "LogConfig":
        """``base`` (default: Kafka's defaults) with ``properties`` applied.

        Keys are topic-level names (``retention.ms``), or broker-level names (``log.retention.ms``)
        when ``broker_level``. Unknown keys and bad values raise ConfigError.
        """
        table = BROKER_SETTINGS if broker_level else TOPIC_SETTINGS
        changes = {}
        for key, text in properties.items():
            setting = table.get(key)
            if setting is None:
                raise ConfigError(f"{key}: unknown {'broker' if broker_level else 'topic'} log setting")
            changes[setting.field] = setting.parse(key, text)
        return dataclasses.replace(base or cls(), **changes)

    @property
    def uses_log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    def to_topic_properties(self) -> dict[str, str]:
        """Every setting under its topic-level name, as strings (for describe and persistence)."""
        return {s.topic_key: str(getattr(self, s.field)) for s in SETTINGS}


SETTINGS = (
    Setting("segment_bytes", "segment.bytes", "log.segment.bytes", integer_setting(14, 2**31 - 1)),
    Setting("segment_ms", "segment.ms", "log.roll.ms", integer_setting(1)),
    Setting("segment_jitter_ms", "segment.jitter.ms", "log.roll.jitter.ms", integer_setting(0)),
    Setting("segment_index_bytes", "segment.index.bytes", "log.index.size.max.bytes", integer_setting(12, 2**31 - 1)),
    Setting("index_interval_bytes", "index.interval.bytes", "log.index.interval.bytes", integer_setting(0, 2**31 - 1)),
    Setting("retention_ms", "retention.ms", "log.retention.ms", integer_setting(-1)),
    Setting("retention_bytes", "retention.bytes", "log.retention.bytes", integer_setting(-1)),
    Setting("flush_messages", "flush.messages", "log.flush.interval.messages", integer_setting(1)),
    Setting("flush_ms", "flush.ms", "log.flush.interval.ms", integer_setting(0)),
    Setting("max_message_bytes", "max.message.bytes", "message.max.bytes", integer_setting(0, 2**31 - 1)),
    Setting("message_timestamp_type", "message.timestamp.type", "log.message.timestamp.type",
            _choice(*TIMESTAMP_TYPES)),
    Setting("cleanup_policy", "cleanup.policy", "log.cleanup.policy", _cleanup_policy),
    Setting("file_delete_delay_ms", "file.delete.delay.ms", "log.segment.delete.delay.ms", integer_setting(0)),
)
TOPIC_SETTINGS = {s.topic_key: s for s in SETTINGS}
BROKER_SETTINGS = {s.broker_key: s for s in SETTINGS}
