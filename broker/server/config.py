"""Broker configuration: Kafka's key names and meanings, from a properties file and ``--set`` pairs.

Precedence, lowest first: Kafka's defaults, the ``--config`` file, ``--set key=value`` pairs, then
the explicit command-line flags (``--log-dir``, ``--host``, ``--port``, ``--broker-id``). Every
key and flag is checked when the broker starts: an unknown key or a bad value is an error that
names the key (a Kafka key this broker does not implement is refused rather than silently
ignored). The listener keys are checked together (``broker.server.listeners``).
"""

import dataclasses
import difflib
from collections.abc import Mapping
from typing import Any

from broker.cluster.placement import PlacementError, check_replication_factor
from broker.cluster.zookeeper_data import ZooKeeperConnect
from broker.common.settings import ConfigError, boolean_setting, integer_setting
from broker.coordinator import config as group_config
from broker.coordinator.config import GroupConfig, TransactionConfig
from broker.log.config import BROKER_SETTINGS, LogConfig
from broker.security import settings as security_settings
from broker.security.acls import AuthorizerSettings
from broker.security.sasl_settings import listener_sasl
from broker.security.tls import listener_tls

from . import listeners as listener_settings
from .listeners import DEFAULT_LISTENERS, Listener, port_setting

HOUR_MS = 3600 * 1000


@dataclasses.dataclass(frozen=True)
class BrokerConfig:
    log_dir: str
    broker_id: int = 0
    listeners: tuple[Listener, ...] = DEFAULT_LISTENERS
    advertised: Mapping[str, Listener] = dataclasses.field(default_factory=dict)  # by listener name
    num_partitions: int = 1
    default_replication_factor: int = 1
    replica_lag_time_max_ms: int = 30_000
    auto_create_topics: bool = True
    delete_topic_enable: bool = True
    socket_request_max_bytes: int = 100 * 1024 * 1024
    connections_max_idle_ms: int = 10 * 60 * 1000
    num_io_threads: int = 8
    num_recovery_threads_per_data_dir: int = 1  # Kafka's default
    fetch_max_bytes: int = 55 * 1024 * 1024
    queued_max_request_bytes: int = 256 * 1024 * 1024  # Kafka's default is -1, unbounded
    socket_send_buffer_bytes: int = -1  # the OS's (autotuned); Kafka's default is 100 KiB
    checkpoint_interval_ms: int = 60_000
    retention_check_interval_ms: int = 300_000
    cleaner_enable: bool = True
    cleaner_threads: int = 1
    cleaner_dedupe_buffer_size: int = 128 * 1024 * 1024
    cleaner_backoff_ms: int = 15_000
    zookeeper_connect: str = ""  # empty: a broker alone (a one-node cluster)
    zookeeper_session_timeout_ms: int = 18_000
    zookeeper_connection_timeout_ms: int = 18_000
    log: LogConfig = LogConfig()
    security: Mapping[str, str] = dataclasses.field(default_factory=dict)  # ssl.*, sasl.*, listener.name.*
    tls: Mapping = dataclasses.field(default_factory=dict)  # listener name -> broker.security.tls.ListenerTls
    # listener name -> broker.security.sasl_settings.ListenerSasl
    sasl: Mapping = dataclasses.field(default_factory=dict)
    group: GroupConfig = GroupConfig()
    transaction: TransactionConfig = TransactionConfig()
    authorizer: AuthorizerSettings = AuthorizerSettings()  # authorizer.class.name, super.users, ...
    log_settings_given: frozenset = frozenset()  # broker-level log keys set explicitly (the rest are Kafka's defaults)

    def listener_settings(self, listener_name: str) -> security_settings.ListenerSettings:
        return security_settings.ListenerSettings(self.security, listener_name)

    @property
    def host(self) -> str:
        """The first listener's host (the command line's ``--host``)."""
        return self.listeners[0].host

    @property
    def port(self) -> int:
        return self.listeners[0].port

    def advertised_address(self, listener: Listener, bound_port: int) -> tuple[str, int]:
        """What Metadata tells a client that came in on ``listener`` (bound to ``bound_port``)."""
        advertised = self.advertised.get(listener.name)
        return (advertised.host, advertised.port) if advertised else (listener.host, bound_port)


def _single_log_dir(key: str, text: str) -> str:
    value = text.strip()
    if "," in value:
        raise ConfigError(f"{key}: only one log directory is supported, got {value!r}")
    return value


def _replication_factor(key: str, text: str) -> int:
    value = integer_setting(1)(key, text)
    try:
        check_replication_factor(value)
    except PlacementError as exc:
        raise ConfigError(f"{key}: {exc}") from None
    return value


def _zookeeper_connect(key: str, text: str) -> str:
    try:
        return str(ZooKeeperConnect(text))
    except ValueError as exc:
        raise ConfigError(f"{key}: {exc}") from None


# broker key -> (BrokerConfig field, parser); log settings are handled through LogConfig
_BROKER_ID = integer_setting(0, 2**31 - 1)
_BROKER_KEYS = {
    "broker.id": ("broker_id", _BROKER_ID),
    "log.dir": ("log_dir", _single_log_dir),
    "log.dirs": ("log_dir", _single_log_dir),
    "listeners": (None, None),  # these three are parsed together, by broker.server.listeners
    "listener.security.protocol.map": (None, None),
    "advertised.listeners": (None, None),
    "num.partitions": ("num_partitions", integer_setting(1, 10_000)),
    "auto.create.topics.enable": ("auto_create_topics", boolean_setting),
    "delete.topic.enable": ("delete_topic_enable", boolean_setting),
    "socket.request.max.bytes": ("socket_request_max_bytes", integer_setting(1, 2**31 - 1)),
    "connections.max.idle.ms": ("connections_max_idle_ms", integer_setting(1)),
    "num.io.threads": ("num_io_threads", integer_setting(1, 256)),
    "num.recovery.threads.per.data.dir": ("num_recovery_threads_per_data_dir", integer_setting(1, 256)),
    "fetch.max.bytes": ("fetch_max_bytes", integer_setting(1024, 2**31 - 1)),
    "queued.max.request.bytes": ("queued_max_request_bytes", integer_setting(-1)),
    "socket.send.buffer.bytes": ("socket_send_buffer_bytes", integer_setting(-1, 2**31 - 1)),
    "log.flush.offset.checkpoint.interval.ms": ("checkpoint_interval_ms", integer_setting(1)),
    "log.flush.start.offset.checkpoint.interval.ms": ("checkpoint_interval_ms", integer_setting(1)),
    "log.retention.check.interval.ms": ("retention_check_interval_ms", integer_setting(1)),
    "default.replication.factor": ("default_replication_factor", _replication_factor),
    "transaction.state.log.replication.factor": (None, _replication_factor),  # checked; the topic has one replica
    "replica.lag.time.max.ms": ("replica_lag_time_max_ms", integer_setting(1)),
    "log.cleaner.enable": ("cleaner_enable", boolean_setting),
    "log.cleaner.threads": ("cleaner_threads", integer_setting(1, 64)),
    "log.cleaner.dedupe.buffer.size": ("cleaner_dedupe_buffer_size", integer_setting(1024 * 1024)),
    "log.cleaner.backoff.ms": ("cleaner_backoff_ms", integer_setting(0)),
    "zookeeper.connect": ("zookeeper_connect", _zookeeper_connect),
    "zookeeper.session.timeout.ms": ("zookeeper_session_timeout_ms", integer_setting(1, 2**31 - 1)),
    "zookeeper.connection.timeout.ms": ("zookeeper_connection_timeout_ms", integer_setting(1, 2**31 - 1)),
}
# command-line flag -> (its spelling in messages, parser); the flags are checked like the keys
_FLAGS = {
    "broker_id": ("--broker-id", _BROKER_ID),
}
# Kafka's coarser spellings of two log settings; the finer one wins when both are given
_COARSE_TIME_KEYS = {
    "log.retention.hours": ("log.retention.ms", HOUR_MS),
    "log.retention.minutes": ("log.retention.ms", 60_000),
    "log.roll.hours": ("log.roll.ms", HOUR_MS),
}
KNOWN_KEYS = sorted(
    set(_BROKER_KEYS)
    | set(BROKER_SETTINGS)
    | set(_COARSE_TIME_KEYS)
    | set(security_settings.KEYS)
    | set(group_config.KEYS)
    | set(group_config.TRANSACTION_KEYS)
    | set(AuthorizerSettings.KEYS)
)


def parse_set_option(pair: str) -> tuple[str, str]:
    key, sep, value = pair.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {pair!r}: expected key=value (for example --set num.partitions=4)")
    return key.strip(), value.strip()


def _group_config(properties: Mapping[str, str]) -> GroupConfig:
    """The group coordinator's settings (``group.*``, ``offsets.*``), checked like the others."""
    values = {}
    for key, (field, minimum, unit) in group_config.KEYS.items():
        if key in properties:
            values[field] = integer_setting(minimum, 2**31 - 1)(key, properties[key]) * unit
    config = GroupConfig(**values)
    if config.min_session_timeout_ms > config.max_session_timeout_ms:
        raise ConfigError(
            f"group.min.session.timeout.ms: {config.min_session_timeout_ms} is more than "
            f"group.max.session.timeout.ms ({config.max_session_timeout_ms})"
        )
    return config


def _transaction_config(properties: Mapping[str, str]) -> TransactionConfig:
    """The transaction coordinator's settings (``transaction.*``, ``transactional.id.*``)."""
    values = {
        field: integer_setting(minimum, 2**31 - 1)(key, properties[key]) * unit
        for key, (field, minimum, unit) in group_config.TRANSACTION_KEYS.items()
        if key in properties
    }
    return TransactionConfig(**values)


def build(properties: Mapping[str, str], **flags) -> BrokerConfig:
    """A BrokerConfig from Kafka properties, then the explicit flags (those not None)."""
    unknown = [k for k in properties if k not in KNOWN_KEYS and not security_settings.is_security_key(k)]
    if unknown:
        close = difflib.get_close_matches(unknown[0], KNOWN_KEYS, n=1, cutoff=0.75)
        hint = f"did you mean {close[0]}?" if close else "see `kafkalog broker --help` for the supported keys"
        raise ConfigError(f"{unknown[0]}: unknown or unsupported broker setting ({hint})")
    fields: dict[str, Any] = {}  # BrokerConfig's fields, each of its own type
    log_properties = {k: v for k, v in properties.items() if k in BROKER_SETTINGS}
    for coarse, (fine, factor) in _COARSE_TIME_KEYS.items():
        if coarse in properties and fine not in properties:
            log_properties[fine] = str(integer_setting(1)(coarse, properties[coarse]) * factor)
    for key, text in properties.items():
        if key not in _BROKER_KEYS:
            continue
        field, parse = _BROKER_KEYS[key]
        if parse is None:
            continue
        value = parse(key, text)
        if field is not None:
            fields[field] = value
    host, port = flags.pop("host", None), flags.pop("port", None)
    fields["listeners"], fields["advertised"] = listener_settings.parse(
        properties.get("listeners"),
        properties.get("listener.security.protocol.map"),
        properties.get("advertised.listeners"),
        host,
        None if port is None else port_setting("--port", str(port)),
    )
    for name, value in flags.items():
        if value is not None:
            if name in _FLAGS:
                flag, parse = _FLAGS[name]
                fields[name] = parse(flag, str(value))
            else:
                fields[name] = value
    if not fields.get("log_dir"):
        raise ConfigError("log.dirs: no log directory given (use --log-dir DIR)")
    fields["log"] = LogConfig.from_properties(log_properties, broker_level=True)
    fields["group"] = _group_config(properties)
    fields["transaction"] = _transaction_config(properties)
    fields["authorizer"] = AuthorizerSettings.from_properties(properties)
    fields["log_settings_given"] = frozenset(log_properties)
    security = fields["security"] = {k: v for k, v in properties.items() if security_settings.is_security_key(k)}
    bound: tuple[Listener, ...] = fields["listeners"]
    fields["tls"] = {
        listener.name: listener_tls(security_settings.ListenerSettings(security, listener.name))
        for listener in bound
        if listener.security_protocol in ("SSL", "SASL_SSL")
    }
    fields["sasl"] = {
        listener.name: listener_sasl(security_settings.ListenerSettings(security, listener.name))
        for listener in bound
        if listener.security_protocol.startswith("SASL_")
    }
    return BrokerConfig(**fields)
