"""The client's security settings, by the Kafka clients' names (Java's and librdkafka's spellings):

    security.protocol                  PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL
    ssl.truststore.location / ssl.ca.location    CA certificates, PEM (or PKCS12 with ssl.truststore.type)
    ssl.truststore.type, ssl.truststore.password
    ssl.endpoint.identification.algorithm       https (default: the broker's host name is checked) or empty
    ssl.keystore.location, ssl.keystore.type, ssl.keystore.password, ssl.key.password   a client certificate
    sasl.mechanism / sasl.mechanisms   PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
    sasl.jaas.config                   Java's "...LoginModule required username=\"u\" password=\"p\";"
    sasl.username, sasl.password       librdkafka's spelling of the same

``ClientSecurity`` holds them as plain values (it travels to Spark's executors) and never shows a
password: not in its repr, not in an error. As in Kafka's clients, SASL settings are ignored unless
the protocol is SASL_*, and TLS settings unless it is SSL or SASL_SSL.
"""

import dataclasses
import ssl
from collections.abc import Mapping

from broker.common.settings import ConfigError
from broker.security import jaas
from broker.security.sasl import MECHANISMS
from broker.security.tls import client_context

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
KEYS = (
    "security.protocol",
    "ssl.truststore.location",
    "ssl.ca.location",
    "ssl.truststore.type",
    "ssl.truststore.password",
    "ssl.endpoint.identification.algorithm",
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.keystore.password",
    "ssl.key.password",
    "sasl.mechanism",
    "sasl.mechanisms",
    "sasl.jaas.config",
    "sasl.username",
    "sasl.password",
)
SECRET_KEYS = frozenset(
    {"ssl.truststore.password", "ssl.keystore.password", "ssl.key.password", "sasl.jaas.config", "sasl.password"}
)
HIDDEN = "[hidden]"  # what Kafka shows for a password setting


class SecuritySettingError(ValueError):
    """A security setting that cannot be used; the message names the setting, never a secret."""


@dataclasses.dataclass(frozen=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    truststore: str | None = None
    truststore_type: str | None = None
    truststore_password: str | None = dataclasses.field(default=None, repr=False)
    check_hostname: bool = True
    keystore: str | None = None
    keystore_type: str | None = None
    keystore_password: str | None = dataclasses.field(default=None, repr=False)
    key_password: str | None = dataclasses.field(default=None, repr=False)
    mechanism: str | None = None
    username: str | None = None
    password: str | None = dataclasses.field(default=None, repr=False)

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def principal(self) -> str:
        """Who the broker sees, as Kafka's default principal builder names it (a client certificate's
        subject is not read here)."""
        if self.uses_sasl and self.username:
            return f"User:{self.username}"
        if self.uses_tls and self.keystore:
            return "the client certificate's principal"
        return "User:ANONYMOUS"

    def tls_context(self, prefix: str = "") -> ssl.SSLContext:
        keystore = (
            (self.keystore, self.keystore_type, self.keystore_password, self.key_password) if self.keystore else None
        )
        try:
            return client_context(
                self.truststore,
                self.truststore_type,
                self.truststore_password,
                self.check_hostname,
                keystore,
                (prefix + "ssl.truststore.location", prefix + "ssl.keystore.location"),
            )
        except ConfigError as exc:
            raise SecuritySettingError(str(exc)) from None


PLAINTEXT = ClientSecurity()


def hidden_secrets(settings: Mapping[str, str], prefix: str = "") -> dict[str, str]:
    """``settings`` to write down or show: the value of every secret key (spelt with ``prefix``, as
    ``kafka.`` in Spark options) replaced by ``[hidden]``."""
    secret = {prefix + key for key in SECRET_KEYS}
    return {key: HIDDEN if key.lower() in secret else value for key, value in settings.items()}


def from_settings(settings: Mapping[str, str], prefix: str = "") -> ClientSecurity:
    """The security of Kafka client ``settings`` (other keys are ignored); ``prefix`` is how the keys
    are spelt to the user (``kafka.`` for Spark options), for the errors."""

    def name(key: str) -> str:
        return prefix + key

    values = {k: str(v).strip() for k, v in settings.items() if k in KEYS}
    protocol = values.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise SecuritySettingError(
            f"{name('security.protocol')}: {values['security.protocol']!r} is not one of {', '.join(PROTOCOLS)}"
        )
    truststore = values.get("ssl.truststore.location") or values.get("ssl.ca.location")
    algorithm = values.get("ssl.endpoint.identification.algorithm", "https").lower()
    if algorithm not in ("https", ""):
        raise SecuritySettingError(
            f"{name('ssl.endpoint.identification.algorithm')}: {algorithm!r} is not https or empty (no host name check)"
        )
    mechanism = (values.get("sasl.mechanism") or values.get("sasl.mechanisms") or "").upper() or None
    username, password = values.get("sasl.username"), values.get("sasl.password")
    if "sasl.jaas.config" in values:
        try:
            username, password = jaas.credentials(name("sasl.jaas.config"), values["sasl.jaas.config"])
        except jaas.JaasError as exc:
            raise SecuritySettingError(str(exc)) from None
    if protocol.startswith("SASL_"):
        if mechanism is None:
            mechanism = "GSSAPI"  # Kafka's default, which is not supported: say so below
        if mechanism not in MECHANISMS:
            raise SecuritySettingError(
                f"{name('sasl.mechanism')}: {mechanism!r} is not supported; use one of {', '.join(MECHANISMS)}"
            )
        if not username or password is None:
            raise SecuritySettingError(
                f"{name('sasl.jaas.config')}: {protocol} needs a user name and password, for "
                f"example {name('sasl.jaas.config')}=org.apache.kafka.common.security.scram."
                f'ScramLoginModule required username="alice" password="...";'
            )
    # otherwise SASL settings are ignored, as Kafka's clients do
    security = ClientSecurity(
        protocol,
        truststore,
        values.get("ssl.truststore.type"),
        values.get("ssl.truststore.password"),
        algorithm == "https",
        values.get("ssl.keystore.location"),
        values.get("ssl.keystore.type"),
        values.get("ssl.keystore.password"),
        values.get("ssl.key.password"),
        mechanism if protocol.startswith("SASL_") else None,
        username,
        password,
    )
    if security.uses_tls:
        security.tls_context(prefix)  # a missing or unreadable store is an error now, naming its setting
    return security
