"""Who is on the other end of one connection: the listener it came in on, its security protocol,
the client's address and, once known, the authenticated principal (Kafka's ``Session``).

Handlers read it as ``ctx.session``: each connection hands them a ``RequestContext``, the broker's
shared context plus this connection's session, so no handler's signature changes. Handlers ask
``ctx.allows(operation, resource_type, name)`` before they act on a resource, as Kafka's KafkaApis
asks its authorizer: the session's principal and client address against the broker's ACLs.
"""

import dataclasses

ANONYMOUS = "User:ANONYMOUS"  # Kafka's principal of a connection that did not authenticate


@dataclasses.dataclass
class Session:
    listener: str  # the listener's name, e.g. PLAINTEXT or EXTERNAL
    security_protocol: str  # PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
    client_address: tuple  # (host, port) of the client
    principal: str = ANONYMOUS  # "User:<name>", set by SASL or by a TLS client certificate
    authenticated: bool = False  # set at once on a listener without SASL
    sasl_exchange: object = None  # the SASL mechanism's exchange, from SaslHandshake on
    raw_sasl_tokens: bool = False  # after SaslHandshake v0 the client sends bare tokens, not requests
    close_after_response: bool = False  # a failed authentication: answer, then close

    def __post_init__(self):
        self.authenticated = not self.uses_sasl

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")


class RequestContext:
    """The broker's context as one connection's handlers see it: every shared attribute, and
    ``session``."""

    def __init__(self, shared, session: Session):
        self._shared = shared
        self.session = session

    def __getattr__(self, name):
        return getattr(self._shared, name)

    def allows(self, operation, resource_type, name: str, log_denied: bool = True) -> bool:
        """Whether this session may do ``operation`` on the resource (``broker.security.acls``); a
        denial is logged unless another check follows it."""
        return self._shared.authorizer.authorize(
            self.session.principal, self.session.client_address[0], operation, resource_type, name, log_denied
        )

    def allows_any(self, operation, resource_type) -> bool:
        """Whether this session may do ``operation`` on some resource of the type."""
        return self._shared.authorizer.authorize_any(
            self.session.principal, self.session.client_address[0], operation, resource_type
        )

    def allowed_operations(self, resource_type, name: str) -> set:
        """The operations this session may do on the resource (Metadata's authorized operations)."""
        return self._shared.authorizer.authorized_operations(
            self.session.principal, self.session.client_address[0], resource_type, name
        )
