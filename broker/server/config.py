"""Broker configuration: Kafka's key names and meanings, from a properties file and ``--set`` pairs.

Precedence, lowest first: Kafka's defaults, the ``--config`` file, ``--set key=value`` pairs, then
the explicit command-line flags (``--log-dir``, ``--host``, ``--port``, ``--broker-id``). Every
key and flag is checked when the broker starts: an unknown key or a bad value is an error that
names the key (a Kafka key this broker does not implement is refused rather than silently
ignored). Ports are 0-65535; an advertised listener needs a real host and a port other than 0.
"""

import dataclasses
import difflib
from typing import Mapping
from urllib.parse import urlsplit

from broker.cluster.placement import PlacementError, check_replication_factor
from broker.cluster.zookeeper_data import ZooKeeperConnect
from broker.log.config import BROKER_SETTINGS, ConfigError, LogConfig, integer_setting

HOUR_MS = 3600 * 1000
_WILDCARD_HOSTS = ("", "0.0.0.0", "::")  # bind to every interface; no address to give clients


def port_setting(key: str, text) -> int:
    """A TCP port, 0-65535 (0: any free port)."""
    value = str(text).strip()
    if not (value.isascii() and value.isdigit()) or int(value) > 65535:
        raise ConfigError(f"{key}: port {value!r} is not a number between 0 and 65535")
    return int(value)


@dataclasses.dataclass(frozen=True)
class Listener:
    host: str
    port: int

    @classmethod
    def parse(cls, key: str, text: str) -> "Listener":
        """``PLAINTEXT://host:port`` (the only security protocol served); the host may be empty."""
        value = text.strip()
        if "," in value:
            raise ConfigError(f"{key}: only one listener is supported, got {value!r}")
        try:
            parts = urlsplit(value)
        except ValueError:  # unbalanced IPv6 brackets
            parts = None
        host, colon, port = parts.netloc.rpartition(":") if parts else ("", "", "")
        if not parts or parts.scheme.upper() != "PLAINTEXT" or not colon or "@" in host or \
                parts.path or parts.query or parts.fragment:
            raise ConfigError(f"{key}: {value!r} is not PLAINTEXT://host:port (for example PLAINTEXT://127.0.0.1:9092)")
        return cls(host.removeprefix("[").removesuffix("]"), port_setting(key, port))

    @classmethod
    def parse_advertised(cls, key: str, text: str) -> "Listener":
        """An address clients can connect to: a host (not empty, not a wildcard) and a port other than 0."""
        listener = cls.parse(key, text)
        if listener.host in _WILDCARD_HOSTS:
            raise ConfigError(f"{key}: {text.strip()!r} has no host clients can connect to "
                              f"(for example PLAINTEXT://myhost:9092)")
        if listener.port == 0:
            raise ConfigError(f"{key}: {text.strip()!r} has port 0, which clients cannot connect to")
        return listener


@dataclasses.dataclass(frozen=True)
class BrokerConfig:
    log_dir: str
    broker_id: int = 0
    host: str = "127.0.0.1"
    port: int = 9092
    advertised: Listener | None = None
    num_partitions: int = 1
    auto_create_topics: bool = True
    delete_topic_enable: bool = True
    socket_request_max_bytes: int = 100 * 1024 * 1024
    connections_max_idle_ms: int = 10 * 60 * 1000
    num_io_threads: int = 8
    num_recovery_threads_per_data_dir: int = 1  # Kafka's default
    fetch_max_bytes: int = 55 * 1024 * 1024
    queued_max_request_bytes: int = 256 * 1024 * 1024  # Kafka's default is -1, unbounded
    checkpoint_interval_ms: int = 60_000
    retention_check_interval_ms: int = 300_000
    zookeeper_connect: str = ""  # empty: a broker alone (a one-node cluster)
    zookeeper_session_timeout_ms: int = 18_000
    zookeeper_connection_timeout_ms: int = 18_000
    log: LogConfig = LogConfig()
    log_settings_given: frozenset = frozenset()  # broker-level log keys set explicitly (the rest are Kafka's defaults)

    @property
    def advertised_host(self) -> str:
        return self.advertised.host if self.advertised else self.host

    def advertised_port(self, bound_port: int) -> int:
        return self.advertised.port if self.advertised else bound_port


def _bool(key: str, text: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(f"{key}: {text!r} is not true or false")
    return value == "true"


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


def _listener_host_port(key: str, text: str) -> tuple:
    listener = Listener.parse(key, text)
    return listener.host or "0.0.0.0", listener.port


# broker key -> (BrokerConfig field, parser); log settings are handled through LogConfig
_BROKER_KEYS = {
    "broker.id": ("broker_id", integer_setting(0, 2**31 - 1)),
    "log.dir": ("log_dir", _single_log_dir),
    "log.dirs": ("log_dir", _single_log_dir),
    "listeners": ("listeners", _listener_host_port),
    "advertised.listeners": ("advertised", Listener.parse_advertised),
    "num.partitions": ("num_partitions", integer_setting(1, 10_000)),
    "auto.create.topics.enable": ("auto_create_topics", _bool),
    "delete.topic.enable": ("delete_topic_enable", _bool),
    "socket.request.max.bytes": ("socket_request_max_bytes", integer_setting(1, 2**31 - 1)),
    "connections.max.idle.ms": ("connections_max_idle_ms", integer_setting(1)),
    "num.io.threads": ("num_io_threads", integer_setting(1, 256)),
    "num.recovery.threads.per.data.dir": ("num_recovery_threads_per_data_dir", integer_setting(1, 256)),
    "fetch.max.bytes": ("fetch_max_bytes", integer_setting(1024, 2**31 - 1)),
    "queued.max.request.bytes": ("queued_max_request_bytes", integer_setting(-1)),
    "log.flush.offset.checkpoint.interval.ms": ("checkpoint_interval_ms", integer_setting(1)),
    "log.flush.start.offset.checkpoint.interval.ms": ("checkpoint_interval_ms", integer_setting(1)),
    "log.retention.check.interval.ms": ("retention_check_interval_ms", integer_setting(1)),
    "default.replication.factor": (None, _replication_factor),
    "zookeeper.connect": ("zookeeper_connect", _zookeeper_connect),
    "zookeeper.session.timeout.ms": ("zookeeper_session_timeout_ms", integer_setting(1, 2**31 - 1)),
    "zookeeper.connection.timeout.ms": ("zookeeper_connection_timeout_ms", integer_setting(1, 2**31 - 1)),
}
# command-line flag -> (its spelling in messages, parser); the flags are checked like the keys
_FLAGS = {
    "port": ("--port", port_setting),
    "broker_id": ("--broker-id", _BROKER_KEYS["broker.id"][1]),
}
# Kafka's coarser spellings of two log settings; the finer one wins when both are given
_COARSE_TIME_KEYS = {
    "log.retention.hours": ("log.retention.ms", HOUR_MS),
    "log.retention.minutes": ("log.retention.ms", 60_000),
    "log.roll.hours": ("log.roll.ms", HOUR_MS),
}
KNOWN_KEYS = sorted(set(_BROKER_KEYS) | set(BROKER_SETTINGS) | set(_COARSE_TIME_KEYS))


def read_properties(path: str) -> dict[str, str]:
    """A Java properties file: ``key=value``, ``key: value`` or ``key value``; ``#``/``!`` comments;
    a trailing backslash continues the line."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = f.read().splitlines()
    except OSError as exc:
        raise ConfigError(f"--config {path}: {exc.strerror or exc}") from None
    properties = {}
    logical = ""
    for line in raw:
        stripped = line.strip()
        if not logical and (not stripped or stripped[0] in "#!"):
            continue
        if stripped.endswith("\\") and not stripped.endswith("\\\\"):
            logical += stripped[:-1]
            continue
        logical += stripped
        separators = [i for i in (logical.find("="), logical.find(":"), logical.find(" ")) if i > 0]
        if not separators:
            raise ConfigError(f"--config {path}: line {logical!r} is not key=value")
        cut = min(separators)
        properties[logical[:cut].strip()] = logical[cut + 1:].strip()
        logical = ""
    return properties


def parse_set_option(pair: str) -> tuple[str, str]:
    key, sep, value = pair.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {pair!r}: expected key=value (for example --set num.partitions=4)")
    return key.strip(), value.strip()


def build(properties: Mapping[str, str], **flags) -> BrokerConfig:
    """A BrokerConfig from Kafka properties, then the explicit flags (those not None)."""
    unknown = [k for k in properties if k not in KNOWN_KEYS]
    if unknown:
        close = difflib.get_close_matches(unknown[0], KNOWN_KEYS, n=1, cutoff=0.75)
        hint = f"did you mean {close[0]}?" if close else "see `kafkalog broker --help` for the supported keys"
        raise ConfigError(f"{unknown[0]}: unknown or unsupported broker setting ({hint})")
    fields = {}
    log_properties = {k: v for k, v in properties.items() if k in BROKER_SETTINGS}
    for coarse, (fine, factor) in _COARSE_TIME_KEYS.items():
        if coarse in properties and fine not in properties:
            log_properties[fine] = str(integer_setting(1)(coarse, properties[coarse]) * factor)
    for key, text in properties.items():
        if key not in _BROKER_KEYS:
            continue
        field, parse = _BROKER_KEYS[key]
        value = parse(key, text)
        if field == "listeners":
            fields["host"], fields["port"] = value
        elif field is not None:
            fields[field] = value
    for name, value in flags.items():
        if value is not None:
            flag, parse = _FLAGS.get(name, (None, None))
            fields[name] = parse(flag, str(value)) if parse else value
    if not fields.get("log_dir"):
        raise ConfigError("log.dirs: no log directory given (use --log-dir DIR)")
    fields["log"] = LogConfig.from_properties(log_properties, broker_level=True)
    fields["log_settings_given"] = frozenset(log_properties)
    config = BrokerConfig(**fields)
    if config.advertised is None and config.host in ("0.0.0.0", "::", ""):
        raise ConfigError("advertised.listeners: required when binding to all interfaces "
                          "(for example --set advertised.listeners=PLAINTEXT://myhost:9092)")
    return config
