"""SASL authentication of a connection, as Kafka's SaslServerAuthenticator does it.

On a SASL listener nothing but ApiVersions, SaslHandshake and SaslAuthenticate is served until the
client authenticated (anything else closes the connection with one log line), and no frame larger
than ``sasl.server.max.receive.size`` is read, so an unauthenticated client holds little memory.
SaslHandshake picks the mechanism; the tokens then travel in SaslAuthenticate requests (v1), or
bare, size-prefixed, after a v0 handshake. One handshake per connection: a failed attempt is
answered SASL_AUTHENTICATION_FAILED after ``connection.failed.authentication.delay.ms`` and the
connection closes, so a client guessing passwords gets one guess per connection and delay.
"""

import asyncio
import logging

from broker.protocol import frames
from broker.protocol.apis import ApiKey
from broker.security.credentials import CredentialsError
from broker.security.sasl import AuthenticationFailed

log = logging.getLogger(__name__)

BEFORE_AUTHENTICATION = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


def frame_limit(ctx) -> int:
    """The largest frame this connection may send now."""
    limit = ctx.config.socket_request_max_bytes
    if not ctx.session.authenticated:
        limit = min(limit, ctx.config.sasl[ctx.session.listener].max_receive_size)
    return limit


def allowed(session, api_key: int) -> bool:
    return session.authenticated or api_key in BEFORE_AUTHENTICATION


async def exchange(ctx, token: bytes) -> bytes:
    """One step of the session's SASL exchange: the token to send back. A failure (logged, and
    ``AuthenticationFailed`` raised after the listener's delay) also marks the session to close."""
    session = ctx.session
    try:
        try:
            reply = await ctx.io.run(session.sasl_exchange.respond, token)  # reads the credentials file
        except CredentialsError as exc:
            log.error("cannot check the credentials of %s: %s", session.client_address, exc)
            raise AuthenticationFailed("Authentication failed: the broker cannot read its credentials") from None
    except AuthenticationFailed as exc:
        session.close_after_response = True
        log.warning(
            "authentication of %s on listener %s with %s failed: %s",
            session.client_address,
            session.listener,
            session.sasl_exchange.mechanism,
            exc,
        )
        await asyncio.sleep(ctx.config.sasl[session.listener].failed_authentication_delay_ms / 1000)
        raise
    if session.sasl_exchange.complete:
        session.authenticated, session.principal = True, session.sasl_exchange.principal
    return reply


async def bare_token(ctx, frame) -> bytes | None:
    """After a v0 SaslHandshake: answer a bare token with a bare token, or None to close."""
    try:
        reply = await exchange(ctx, bytes(frame))
    except AuthenticationFailed:
        return None
    if ctx.session.authenticated:
        ctx.session.raw_sasl_tokens = False
    return frames.SIZE.pack(len(reply)) + reply
