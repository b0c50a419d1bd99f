"""The resources DescribeConfigs, AlterConfigs and IncrementalAlterConfigs name: a topic, this
broker (its id) or the cluster-wide broker default (the empty name), with every setting's value,
where it comes from and whether it may be changed while the broker runs.

A topic's settings are Kafka's topic settings (``broker.log.config``). A broker resource lists
the broker-level log settings, which are dynamic as in Kafka (changed with AlterConfigs,
persisted, applied to the running logs), and the broker's other settings, which are read-only
(``kafkalog broker --set`` at start-up). The cluster default resource lists only what was set
on it dynamically, as Kafka does. Reading a resource's settings needs DescribeConfigs and changing
them AlterConfigs, on the topic or (for a broker resource) on the cluster, checked before anything
else as in Kafka.
"""

import enum

from broker.cluster.topic_rules import DEFAULT_BROKER_RESOURCE, TopicError, validate_name
from broker.log.config import SETTINGS, LogConfig, format_value
from broker.protocol.errors import ErrorCode
from broker.security import acls

from .config import BrokerConfig


class ResourceType(enum.IntEnum):
    TOPIC = 2
    BROKER = 4


class ConfigSource(enum.IntEnum):
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


CONFIG_TYPES = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7}
_KAFKA_DEFAULTS = LogConfig()
# the broker's settings that are not log settings: key -> (type, value from the BrokerConfig)
_STATIC_BROKER_SETTINGS = {
    "broker.id": ("INT", lambda c: c.broker_id),
    "log.dirs": ("STRING", lambda c: c.log_dir),
    "listeners": ("STRING", lambda c: ",".join(listener.url for listener in c.listeners)),
    "listener.security.protocol.map": (
        "STRING",
        lambda c: ",".join(f"{listener.name}:{listener.security_protocol}" for listener in c.listeners),
    ),
    "advertised.listeners": ("STRING", lambda c: ",".join(listener.url for listener in c.advertised.values()) or None),
    "num.partitions": ("INT", lambda c: c.num_partitions),
    "auto.create.topics.enable": ("BOOLEAN", lambda c: c.auto_create_topics),
    "delete.topic.enable": ("BOOLEAN", lambda c: c.delete_topic_enable),
    "socket.request.max.bytes": ("INT", lambda c: c.socket_request_max_bytes),
    "connections.max.idle.ms": ("LONG", lambda c: c.connections_max_idle_ms),
    "num.io.threads": ("INT", lambda c: c.num_io_threads),
    "num.recovery.threads.per.data.dir": ("INT", lambda c: c.num_recovery_threads_per_data_dir),
    "fetch.max.bytes": ("INT", lambda c: c.fetch_max_bytes),
    "queued.max.request.bytes": ("LONG", lambda c: c.queued_max_request_bytes),
    "log.flush.offset.checkpoint.interval.ms": ("INT", lambda c: c.checkpoint_interval_ms),
    "log.flush.start.offset.checkpoint.interval.ms": ("INT", lambda c: c.checkpoint_interval_ms),
    "log.retention.check.interval.ms": ("LONG", lambda c: c.retention_check_interval_ms),
    "default.replication.factor": ("INT", lambda c: c.default_replication_factor),
    "replica.lag.time.max.ms": ("LONG", lambda c: c.replica_lag_time_max_ms),
    "zookeeper.connect": ("STRING", lambda c: c.zookeeper_connect or None),
    "zookeeper.session.timeout.ms": ("INT", lambda c: c.zookeeper_session_timeout_ms),
    "zookeeper.connection.timeout.ms": ("INT", lambda c: c.zookeeper_connection_timeout_ms),
}
STATIC_BROKER_KEYS = frozenset(_STATIC_BROKER_SETTINGS)


def authorize_resource(ctx, resource_type: int, name: str, operation: acls.Operation) -> None:
    """TopicError (TOPIC_ or CLUSTER_AUTHORIZATION_FAILED) unless the session may do ``operation``
    on the resource: on the topic, or on the cluster for a broker resource."""
    if resource_type == ResourceType.TOPIC and not ctx.allows(operation, acls.ResourceType.TOPIC, name):
        raise TopicError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, f"not authorized to {operation.name} topic {name!r}")
    if resource_type == ResourceType.BROKER and not ctx.allows(operation, acls.ResourceType.CLUSTER, acls.CLUSTER_NAME):
        raise TopicError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, f"not authorized to {operation.name} the cluster")


def check_resource(ctx, resource_type: int, name: str) -> None:
    """TopicError unless the resource exists here: a known topic, this broker's id, or ""."""
    if resource_type == ResourceType.TOPIC:
        validate_name(name)
        if not ctx.metadata.contains_topic(name):
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
    elif resource_type == ResourceType.BROKER:
        if name not in (DEFAULT_BROKER_RESOURCE, str(ctx.node_id)):
            raise TopicError(
                ErrorCode.INVALID_REQUEST,
                f"broker {name!r} is not this broker: name {ctx.node_id}, or '' for the cluster default",
            )
    else:
        raise TopicError(
            ErrorCode.INVALID_REQUEST,
            f"resource type {resource_type} is not supported; only topics "
            f"({ResourceType.TOPIC}) and brokers ({ResourceType.BROKER}) are",
        )


def _entry(name: str, synonyms: list[dict], config_type: str, read_only: bool, documentation=None) -> dict:
    source = synonyms[0]["source"]
    return {
        "name": name,
        "value": synonyms[0]["value"],
        "read_only": read_only,
        "config_source": source,
        "is_default": source == ConfigSource.DEFAULT_CONFIG,
        "is_sensitive": False,
        "synonyms": synonyms,
        "config_type": CONFIG_TYPES[config_type],
        "documentation": documentation,
    }


def _documentation(setting) -> str | None:
    return setting.no_effect and f"Accepted and stored, no effect on this broker: {setting.no_effect}."


def _broker_level_synonyms(ctx, setting) -> list[dict]:
    """The broker-level sources of a log setting, highest precedence first; Kafka's default last."""
    key = setting.broker_key or setting.topic_key
    found = []
    for resource, source in (
        (str(ctx.node_id), ConfigSource.DYNAMIC_BROKER_CONFIG),
        (DEFAULT_BROKER_RESOURCE, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
    ):
        given = ctx.topics.broker_overrides(resource)
        if key in given:
            found.append({"name": key, "value": format_value(setting.parse(key, given[key])), "source": source})
    if key in ctx.config.log_settings_given:
        found.append(
            {
                "name": key,
                "value": format_value(getattr(ctx.topics.static_defaults, setting.field)),
                "source": ConfigSource.STATIC_BROKER_CONFIG,
            }
        )
    found.append(
        {
            "name": key,
            "value": format_value(getattr(_KAFKA_DEFAULTS, setting.field)),
            "source": ConfigSource.DEFAULT_CONFIG,
        }
    )
    return found


def topic_configs(ctx, topic: str) -> list[dict]:
    """Every setting of a topic with its sources (synonyms), highest precedence first."""
    overrides = ctx.topics.overrides(topic)
    effective = ctx.topics.config_for(topic)
    configs = []
    for setting in SETTINGS:
        synonyms = _broker_level_synonyms(ctx, setting)
        if setting.topic_key in overrides:
            synonyms.insert(
                0,
                {
                    "name": setting.topic_key,
                    "value": format_value(getattr(effective, setting.field)),
                    "source": ConfigSource.DYNAMIC_TOPIC_CONFIG,
                },
            )
        configs.append(_entry(setting.topic_key, synonyms, setting.config_type, False, _documentation(setting)))
    return configs


def broker_configs(ctx, resource_name: str) -> list[dict]:
    """The settings of this broker (every one), or of the cluster default (those set dynamically)."""
    if resource_name == DEFAULT_BROKER_RESOURCE:
        given = ctx.topics.broker_overrides(DEFAULT_BROKER_RESOURCE)
        return [
            _entry(
                key,
                [{"name": key, "value": value, "source": ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG}],
                setting.config_type,
                False,
                _documentation(setting),
            )
            for setting in SETTINGS
            for key, value in given.items()
            if key == setting.broker_key
        ]
    configs = [
        _entry(
            setting.broker_key,
            _broker_level_synonyms(ctx, setting),
            setting.config_type,
            False,
            _documentation(setting),
        )
        for setting in SETTINGS
        if setting.broker_key
    ]
    defaults = BrokerConfig(log_dir="")
    for key, (config_type, value_of) in _STATIC_BROKER_SETTINGS.items():
        value = value_of(ctx.config)
        source = ConfigSource.STATIC_BROKER_CONFIG if value != value_of(defaults) else ConfigSource.DEFAULT_CONFIG
        text = None if value is None else format_value(value)
        configs.append(_entry(key, [{"name": key, "value": text, "source": source}], config_type, True))
    return configs
