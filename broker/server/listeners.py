"""Kafka's listener settings: ``listeners``, ``listener.security.protocol.map`` and
``advertised.listeners``, parsed and checked together.

    listeners=PLAINTEXT://127.0.0.1:9092,SECURE://0.0.0.0:9093
    listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL
    advertised.listeners=SECURE://broker1.example.com:9093

A listener's name picks its security protocol through the map (whose default maps each protocol's
own name to itself, so ``SASL_SSL://:9093`` needs no map). A listener bound to every interface
needs an advertised address; others advertise their own host and bound port.
"""

import dataclasses

from broker.common.settings import ConfigError

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_PROTOCOL_MAP = {name: name for name in SECURITY_PROTOCOLS}
WILDCARD_HOSTS = ("", "0.0.0.0", "::")  # bind to every interface; no address to give clients


def port_setting(key: str, text) -> int:
    """A TCP port, 0-65535 (0: any free port)."""
    value = str(text).strip()
    if not (value.isascii() and value.isdigit()) or int(value) > 65535:
        raise ConfigError(f"{key}: port {value!r} is not a number between 0 and 65535")
    return int(value)


@dataclasses.dataclass(frozen=True)
class Listener:
    name: str
    host: str  # "" or a wildcard binds every interface
    port: int
    security_protocol: str = "PLAINTEXT"

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


DEFAULT_LISTENERS = (Listener("PLAINTEXT", "127.0.0.1", 9092),)


def _endpoints(key: str, text: str) -> list[tuple[str, str, int]]:
    """``NAME://host:port,...`` as (name, host, port), names unique."""
    endpoints: list[tuple[str, str, int]] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, separator, address = item.partition("://")
        host, colon, port = address.rpartition(":")
        bracketed = host.startswith("[") == host.endswith("]")
        if (
            not separator
            or not name.replace("_", "").replace("-", "").isalnum()
            or not colon
            or not bracketed
            or any(c in address for c in "/?#@")
        ):
            raise ConfigError(f"{key}: {item!r} is not NAME://host:port (for example PLAINTEXT://127.0.0.1:9092)")
        name = name.upper()
        if any(name == seen for seen, _, _ in endpoints):
            raise ConfigError(f"{key}: listener name {name} appears twice")
        endpoints.append((name, host.removeprefix("[").removesuffix("]"), port_setting(key, port)))
    if not endpoints:
        raise ConfigError(f"{key}: no listener given (for example PLAINTEXT://127.0.0.1:9092)")
    return endpoints


def protocol_map(key: str, text: str) -> dict[str, str]:
    """``NAME:PROTOCOL,...``"""
    mapping = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, colon, protocol = item.partition(":")
        protocol = protocol.strip().upper()
        if not colon or not name.strip() or protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(
                f"{key}: {item!r} is not NAME:PROTOCOL with PROTOCOL one of "
                f"{', '.join(SECURITY_PROTOCOLS)} (for example EXTERNAL:SASL_SSL)"
            )
        mapping[name.strip().upper()] = protocol
    return mapping


def parse(
    listeners: str | None,
    protocols: str | None,
    advertised: str | None,
    host: str | None = None,
    port: int | None = None,
) -> tuple[tuple[Listener, ...], dict[str, Listener]]:
    """The listeners to bind and the advertised address of each, checked against each other.

    ``host``/``port`` (the command line's ``--host``/``--port``) replace the first listener's."""
    mapping = (
        protocol_map("listener.security.protocol.map", protocols) if protocols is not None else DEFAULT_PROTOCOL_MAP
    )
    endpoints = (
        _endpoints("listeners", listeners)
        if listeners is not None
        else [(d.name, d.host, d.port) for d in DEFAULT_LISTENERS]
    )
    bound = []
    for name, bind_host, bind_port in endpoints:
        if name not in mapping:
            raise ConfigError(
                f"listeners: listener {name} has no security protocol in listener.security.protocol.map "
                f"(for example {name}:SASL_SSL)"
            )
        bound.append(Listener(name, bind_host, bind_port, mapping[name]))
    if host is not None or port is not None:
        first = bound[0]
        bound[0] = dataclasses.replace(
            first, host=first.host if host is None else host, port=first.port if port is None else port
        )
    ports = [listener.port for listener in bound if listener.port]
    if len(set(ports)) != len(ports):
        raise ConfigError(f"listeners: two listeners on one port ({', '.join(listener.url for listener in bound)})")
    names = [listener.name for listener in bound]
    advertised_listeners = {}
    for name, advertised_host, advertised_port in (
        _endpoints("advertised.listeners", advertised) if advertised is not None else []
    ):
        text = f"{name}://{advertised_host}:{advertised_port}"
        if name not in names:
            raise ConfigError(
                f"advertised.listeners: {text!r} names no listener (the listeners are {', '.join(names)})"
            )
        if advertised_host in WILDCARD_HOSTS:
            raise ConfigError(
                f"advertised.listeners: {text!r} has no host clients can connect to (for example {name}://myhost:9092)"
            )
        if advertised_port == 0:
            raise ConfigError(f"advertised.listeners: {text!r} has port 0, which clients cannot connect to")
        advertised_listeners[name] = Listener(name, advertised_host, advertised_port, mapping[name])
    for listener in bound:
        if listener.host in WILDCARD_HOSTS and listener.name not in advertised_listeners:
            raise ConfigError(
                f"advertised.listeners: required for listener {listener.name}, which binds to all "
                f"interfaces (for example --set advertised.listeners={listener.name}://myhost:9092)"
            )
    return tuple(bound), advertised_listeners
