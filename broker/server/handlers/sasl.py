"""SaslHandshake and SaslAuthenticate: pick a mechanism, then carry its tokens
(the rules are in ``broker.server.authentication``)."""

import logging

from broker.protocol.errors import ErrorCode
from broker.security.sasl import AuthenticationFailed, server_exchange

from .. import authentication

log = logging.getLogger(__name__)


async def handle_handshake(ctx, header, request) -> dict:
    session = ctx.session
    sasl = ctx.config.sasl.get(session.listener)
    if sasl is None or session.sasl_exchange is not None or session.authenticated:
        session.close_after_response = True
        log.warning(
            "closing %s: SaslHandshake on listener %s %s",
            session.client_address,
            session.listener,
            "which does not use SASL" if sasl is None else "after the connection's one handshake",
        )
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": list(sasl.mechanisms) if sasl else []}
    mechanism = request["mechanism"]
    if mechanism not in sasl.mechanisms:
        session.close_after_response = True
        log.warning(
            "closing %s: SASL mechanism %r is not enabled on listener %s (%s)",
            session.client_address,
            mechanism[:100],
            session.listener,
            ", ".join(sasl.mechanisms),
        )
        return {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": list(sasl.mechanisms)}
    session.sasl_exchange = server_exchange(mechanism, sasl.plain_users.get, ctx.scram_credentials.lookup)
    session.raw_sasl_tokens = header.api_version == 0
    return {"error_code": ErrorCode.NONE, "mechanisms": list(sasl.mechanisms)}


async def handle_authenticate(ctx, header, request) -> dict:
    session = ctx.session
    if session.sasl_exchange is None or session.authenticated:
        session.close_after_response = True
        log.warning(
            "closing %s: SaslAuthenticate on listener %s %s",
            session.client_address,
            session.listener,
            "before SaslHandshake" if session.sasl_exchange is None else "after authentication",
        )
        return {
            "error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": "SaslHandshake must come first, once",
            "auth_bytes": b"",
        }
    try:
        reply = await authentication.exchange(ctx, request["auth_bytes"])
    except AuthenticationFailed as exc:
        return {"error_code": ErrorCode.SASL_AUTHENTICATION_FAILED, "error_message": str(exc), "auth_bytes": b""}
    return {"error_code": ErrorCode.NONE, "error_message": None, "auth_bytes": reply, "session_lifetime_ms": 0}
