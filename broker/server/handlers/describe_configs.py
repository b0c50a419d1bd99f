"""DescribeConfigs (v0-3): the effective settings of a topic, under Kafka's topic-level names.

Each setting says where its value comes from, as Kafka does: the topic's own override
(DYNAMIC_TOPIC_CONFIG), the broker's configuration (STATIC_BROKER_CONFIG, the broker-level key
such as ``log.retention.ms``), or Kafka's default (DEFAULT_CONFIG; v0 reports ``is_default``).
With ``include_synonyms`` (v1+) each setting lists those sources from the highest precedence
down. Every setting is read-only: topic settings are fixed when the topic is created (this broker
has no AlterConfigs). Only topic resources are described; documentation is not served.
"""

import enum

from broker.log.config import SETTINGS, LogConfig
from broker.protocol.errors import ErrorCode

from ..context import error_text
from ..topics import TopicError, validate_name

TOPIC_RESOURCE = 2
_KAFKA_DEFAULTS = LogConfig().to_topic_properties()


class ConfigSource(enum.IntEnum):
    DYNAMIC_TOPIC_CONFIG = 1
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


class ConfigType(enum.IntEnum):
    STRING = 2
    INT = 3
    LONG = 5
    LIST = 7


CONFIG_TYPES = {
    "segment.bytes": ConfigType.INT, "segment.ms": ConfigType.LONG, "segment.jitter.ms": ConfigType.LONG,
    "segment.index.bytes": ConfigType.INT, "index.interval.bytes": ConfigType.INT,
    "retention.ms": ConfigType.LONG, "retention.bytes": ConfigType.LONG, "flush.messages": ConfigType.LONG,
    "flush.ms": ConfigType.LONG, "max.message.bytes": ConfigType.INT,
    "message.timestamp.type": ConfigType.STRING, "cleanup.policy": ConfigType.LIST,
    "file.delete.delay.ms": ConfigType.LONG,
}


def _synonyms(ctx, setting, overrides: dict, effective: dict, broker_values: dict) -> list[dict]:
    """The sources of one setting's value, highest precedence first (the first one is in force)."""
    found = []
    if setting.topic_key in overrides:
        found.append({"name": setting.topic_key, "value": effective[setting.topic_key],
                      "source": ConfigSource.DYNAMIC_TOPIC_CONFIG})
    if setting.broker_key in ctx.config.log_settings_given:
        found.append({"name": setting.broker_key, "value": broker_values[setting.topic_key],
                      "source": ConfigSource.STATIC_BROKER_CONFIG})
    found.append({"name": setting.broker_key, "value": _KAFKA_DEFAULTS[setting.topic_key],
                  "source": ConfigSource.DEFAULT_CONFIG})
    return found


def _topic_configs(ctx, topic: str, keys, include_synonyms: bool) -> list[dict]:
    effective = ctx.topics.config_for(topic).to_topic_properties()
    overrides = ctx.topics.overrides(topic)
    broker_values = ctx.topics.defaults.to_topic_properties()
    configs = []
    for setting in SETTINGS:
        if keys is not None and setting.topic_key not in keys:
            continue
        synonyms = _synonyms(ctx, setting, overrides, effective, broker_values)
        source = synonyms[0]["source"]
        configs.append({
            "name": setting.topic_key, "value": effective[setting.topic_key], "read_only": True,
            "config_source": source, "is_default": source == ConfigSource.DEFAULT_CONFIG, "is_sensitive": False,
            "synonyms": synonyms if include_synonyms else [], "config_type": CONFIG_TYPES[setting.topic_key],
            "documentation": None,
        })
    return configs


def _describe(ctx, resource: dict, include_synonyms: bool) -> dict:
    result = {"error_code": ErrorCode.NONE, "error_message": None, "resource_type": resource["resource_type"],
              "resource_name": resource["resource_name"], "configs": []}
    name = resource["resource_name"]
    try:
        if resource["resource_type"] != TOPIC_RESOURCE:
            raise TopicError(ErrorCode.INVALID_REQUEST, f"resource type {resource['resource_type']} is not supported; "
                                                        f"only topics (type {TOPIC_RESOURCE}) are described")
        validate_name(name)
        if ctx.topics.partitions(name) is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        result["configs"] = _topic_configs(ctx, name, resource["configuration_keys"], include_synonyms)
    except TopicError as exc:
        result.update(error_code=exc.code, error_message=error_text(exc))
    return result


async def handle(ctx, header, request) -> dict:
    return {"throttle_time_ms": 0,
            "results": [_describe(ctx, resource, request["include_synonyms"]) for resource in request["resources"]]}
