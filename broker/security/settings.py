"""The broker's security settings by Kafka's names, and their per-listener overrides.

Kafka lets every security setting be given for one listener, ``listener.name.<name>.<key>`` (the
listener's name in lower case) winning over the plain ``<key>``; SASL's login settings also exist
per mechanism: ``listener.name.<name>.<mechanism>.sasl.jaas.config``.
"""

import re
from collections.abc import Mapping
from typing import overload

from broker.common.settings import ConfigError

TLS_KEYS = (
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.truststore.password",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.cipher.suites",
    "ssl.handshake.timeout.ms",
)
SASL_KEYS = (
    "sasl.enabled.mechanisms",
    "sasl.jaas.config",
    "sasl.server.max.receive.size",
    "connection.failed.authentication.delay.ms",
)
KEYS = TLS_KEYS + SASL_KEYS
_LISTENER_KEY = re.compile(r"listener\.name\.([a-z0-9_-]+)\.(?:(plain|scram-sha-256|scram-sha-512)\.)?(.+)")
SECRET_KEYS = ("ssl.keystore.password", "ssl.key.password", "ssl.truststore.password", "sasl.jaas.config")


def is_security_key(key: str) -> bool:
    """A security key, plain or for one listener (and mechanism)."""
    match = _LISTENER_KEY.fullmatch(key)
    if match:
        mechanism, rest = match.group(2), match.group(3)
        return rest == "sasl.jaas.config" if mechanism else rest in KEYS
    return key in KEYS


def is_secret(key: str) -> bool:
    return any(key.endswith(secret) for secret in SECRET_KEYS)


class ListenerSettings:
    """The security settings one listener sees."""

    def __init__(self, properties: Mapping[str, str], listener_name: str):
        self.listener_name = listener_name
        self._properties = properties
        self._prefix = f"listener.name.{listener_name.lower()}."

    def key_of(self, key: str, mechanism: str | None = None) -> str | None:
        """The key that gives ``key`` for this listener (and mechanism), or None if none does."""
        candidates = [self._prefix + key]
        if mechanism:
            candidates.insert(0, f"{self._prefix}{mechanism.lower()}.{key}")
        for candidate in candidates + [key]:
            if candidate in self._properties:
                return candidate
        return None

    @overload
    def get(self, key: str, default: str, mechanism: str | None = None) -> str: ...
    @overload
    def get(self, key: str, default: None = None, mechanism: str | None = None) -> str | None: ...

    def get(self, key: str, default: str | None = None, mechanism: str | None = None) -> str | None:
        found = self.key_of(key, mechanism)
        return self._properties[found].strip() if found else default

    def integer(self, key: str, default: int, minimum: int = 0) -> int:
        text = self.get(key)
        if text is None:
            return default
        if not text.lstrip("-").isdigit() or int(text) < minimum:
            raise ConfigError(f"{self.key_of(key)}: {text!r} is not an integer of at least {minimum}")
        return int(text)
