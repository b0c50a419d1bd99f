"""The TLS handshake of a connection to an SSL or SASL_SSL listener, before any request is read.

The handshake is bounded by ``ssl.handshake.timeout.ms`` (10 s by default), so a client that stalls
in it holds nothing for long; every failure (a plaintext client, an untrusted or missing client
certificate, a timeout) is one log line naming the client and the listener, and a closed connection.
A client certificate's subject becomes the session's principal.
"""

import asyncio
import logging
import ssl

from broker.security.tls import ListenerTls, handshake_failure, principal_of

from .session import Session

log = logging.getLogger(__name__)


async def start_tls(writer: asyncio.StreamWriter, tls: ListenerTls, session: Session) -> bool:
    """Upgrade the connection to TLS; False (after logging why, with the connection aborted) if that failed.

    Called first thing in the connection's task, with nothing awaited before: no byte of the
    client's handshake can reach the plaintext reader first."""
    try:
        await writer.start_tls(tls.context, ssl_handshake_timeout=tls.handshake_timeout_ms / 1000)
    except (OSError, asyncio.TimeoutError, ssl.SSLError) as exc:
        log.warning(
            "closing %s on TLS listener %s: %s", session.client_address, session.listener, handshake_failure(exc)
        )
        writer.transport.abort()
        return False
    principal = principal_of(writer.get_extra_info("ssl_object").getpeercert(binary_form=True))
    if principal:
        session.principal = principal
    return True
