"""What a SASL listener accepts, from Kafka's settings (each also per listener,
``listener.name.<l>.<key>``; the JAAS entry also per mechanism, ``listener.name.<l>.plain.sasl.jaas.config``):

* ``sasl.enabled.mechanisms``: ``SCRAM-SHA-256,SCRAM-SHA-512`` by default; PLAIN only when listed,
  and then its users come from PlainLoginModule's ``user_<name>="<password>"`` options;
* ``sasl.server.max.receive.size``: the largest frame read before authentication (Kafka's 524288);
* ``connection.failed.authentication.delay.ms``: how long a failed attempt waits for its answer
  (Kafka's 100), which bounds how fast one connection can guess.
"""

from typing import NamedTuple

from broker.common.settings import ConfigError

from . import jaas
from .sasl import MECHANISMS, PLAIN
from .settings import ListenerSettings

DEFAULT_MECHANISMS = "SCRAM-SHA-256,SCRAM-SHA-512"
DEFAULT_MAX_RECEIVE_SIZE = 524288
DEFAULT_FAILED_AUTHENTICATION_DELAY_MS = 100


class ListenerSasl(NamedTuple):
    mechanisms: tuple[str, ...]
    plain_users: dict  # username -> password, from the JAAS entry
    max_receive_size: int
    failed_authentication_delay_ms: int


def listener_sasl(settings: ListenerSettings) -> ListenerSasl:
    """The SASL settings of one listener (``settings``: a ``ListenerSettings``), checked."""
    key = settings.key_of("sasl.enabled.mechanisms") or "sasl.enabled.mechanisms"
    text = settings.get("sasl.enabled.mechanisms", DEFAULT_MECHANISMS)
    mechanisms = tuple(dict.fromkeys(m.strip().upper() for m in text.split(",") if m.strip()))
    unknown = [m for m in mechanisms if m not in MECHANISMS]
    if unknown or not mechanisms:
        raise ConfigError(
            f"{key}: {text!r} must list mechanisms among {', '.join(MECHANISMS)} (for example {DEFAULT_MECHANISMS})"
        )
    plain_users = {}
    if PLAIN in mechanisms:
        jaas_key = settings.key_of("sasl.jaas.config", mechanism=PLAIN)
        if jaas_key is None:
            raise ConfigError(
                f"listener.name.{settings.listener_name.lower()}.plain.sasl.jaas.config: PLAIN is "
                f"enabled on listener {settings.listener_name} but no PlainLoginModule entry lists its "
                f'users (user_<name>="<password>")'
            )
        try:
            config = jaas.parse(jaas_key, settings.get("sasl.jaas.config", "", mechanism=PLAIN))
        except jaas.JaasError as exc:
            raise ConfigError(str(exc)) from None
        if config.family != PLAIN or not config.users():
            raise ConfigError(f'{jaas_key}: PLAIN needs a PlainLoginModule entry with user_<name>="<password>" options')
        plain_users = config.users()
    return ListenerSasl(
        mechanisms,
        plain_users,
        settings.integer("sasl.server.max.receive.size", DEFAULT_MAX_RECEIVE_SIZE, minimum=64),
        settings.integer("connection.failed.authentication.delay.ms", DEFAULT_FAILED_AUTHENTICATION_DELAY_MS),
    )
