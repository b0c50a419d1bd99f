"""One client connection: read a frame, handle it, write the response, in strict order.

Requests are handled one at a time per connection, like Kafka's muted channels: pipelined
requests wait in the socket buffer, and responses leave in request order. No new request is read
while a response is unsent: responses are streamed part by part (record data of fetch responses
straight from the segment files: ``sendfile`` for slices of ``SENDFILE_MIN_BYTES`` and more, one
copy for smaller ones; under TLS, where the kernel cannot encrypt, every slice is read and written
in pieces of ``TLS_PIECE_BYTES``; encoded bytes in pieces of ``WRITE_PIECE_BYTES``), so a client
that does not read holds its one response and at most the write buffer's high-water mark and one
piece on top of it. Before reading a frame's body the connection reserves its size in
the broker-wide request memory (``queued.max.request.bytes``) and waits while none is free; the
response's bytes are held there until the client takes them, and a client that takes nothing for
``connections.max.idle.ms`` is closed. ``socket.send.buffer.bytes`` bounds what the kernel takes.
A frame whose size is negative or above ``socket.request.max.bytes`` (before SASL authentication,
``sasl.server.max.receive.size``) closes the connection before any of it is read; so does any request that cannot
be parsed, an API or version not advertised
(except ApiVersions, answered with Kafka's v0 UNSUPPORTED_VERSION reply), a request other than
ApiVersions/SaslHandshake/SaslAuthenticate before authentication (``authentication``), or a failed
acks=0 produce; a failed authentication is answered, then closed.
A handler failing with an ``OSError`` or a ``LogStorageError`` (a full disk) is answered
KAFKA_STORAGE_ERROR in every error field of its API; failing with anything else (a bug), or with a
response that cannot be encoded, UNKNOWN_SERVER_ERROR, as Kafka does: one traceback in the log,
the connection kept.

At shutdown (``stop``) a connection waiting for a request, for memory or for its client to read is
closed at once; one inside a handler finishes it, writes its response as far as the socket takes
it without waiting, and closes. ``abandoned`` tells whether a response was left unsent.
"""

import asyncio
import errno
import logging
import socket

from broker.log.errors import LogStorageError
from broker.protocol import frames
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.protocol.types import ProtocolError

from . import authentication
from .context import CloseConnection, client_host, error_text
from .error_responses import error_response
from .handlers import HANDLERS, SERVED
from .session import RequestContext, Session

log = logging.getLogger(__name__)

# Smaller slices are copied (pread + write). Measured on this 2-core machine with
# benchmarks/sendfile_threshold.py: loop.sendfile costs about 30 us more CPU per slice than a copy
# (it waits for an empty write buffer, pauses reading, finishes through a future), as much as
# copying ~400 KiB; at 64-256 KiB a copy took half the time, from 512 KiB on sendfile was faster.
SENDFILE_MIN_BYTES = 512 * 1024
TLS_PIECE_BYTES = 256 * 1024
# Bytes are written in pieces, each once the transport's buffer drained: the buffer holds at most
# its high-water mark and one piece, not a copy of the unsent rest of a large response.
WRITE_PIECE_BYTES = 256 * 1024
TLS_HANDSHAKE_START = (b"\x16\x03",)  # a TLS handshake record (type 22, version 3.x): as a size, 369 MB
_CLOSE = object()


class Connection:
    def __init__(self, ctx, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, session: Session):
        self.ctx = RequestContext(ctx, session)  # what the handlers get: the broker's context and this session
        self.reader = reader
        self.writer = writer
        self.peer = session.client_address
        self.tls = writer.get_extra_info("ssl_object") is not None
        if ctx.config.socket_send_buffer_bytes > 0:  # what the kernel holds of responses not yet read
            writer.get_extra_info("socket").setsockopt(
                socket.SOL_SOCKET, socket.SO_SNDBUF, ctx.config.socket_send_buffer_bytes
            )
        self.handling = False  # inside a handler: shutdown lets the request finish
        self.sending = False  # writing a response, waiting for the client to take it
        self.abandoned = False  # closed with part of a response unsent

    async def serve(self) -> None:
        client_host.set(f"/{self.peer[0]}" if self.peer else "")
        try:
            while not self.ctx.stopping:
                size = await self._read_size()
                if size is None or not await self._serve_one(size) or self.ctx.session.close_after_response:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError):
            pass
        except (OSError, ValueError) as exc:  # from _send: a segment closed under the response, or an I/O error
            self.abandoned = True
            if isinstance(exc, ValueError) or exc.errno == errno.EBADF:  # closed by DeleteTopics: expected
                log.info("closing %s: cannot send the rest of a response: its topic was deleted", self.peer)
            else:
                log.warning("closing %s: cannot send the rest of a response (%s)", self.peer, exc)
        finally:
            self._close()

    async def _serve_one(self, size: int) -> bool:
        """Read, handle and answer one request of ``size`` bytes; False if the connection must close.

        The request memory holds the frame while it is read and handled, then the response's bytes
        until the client has taken them; nothing of either is kept once this returns."""
        memory = self.ctx.request_memory
        reserved = await memory.reserve(size)
        try:
            response = await self._read_and_handle(size)
        finally:
            memory.release(reserved)
        if response is _CLOSE:
            return False
        if response is not None:
            held = memory.hold(sum(len(part) for part in response if isinstance(part, bytes)))
            self.sending = True
            try:
                await self._send(response)
            finally:
                memory.release(held)
            self.sending = False
        return True

    def stop(self) -> None:
        """Shutdown: close now unless a handler runs (that request then finishes, see ``_send``)."""
        if not self.handling:
            self.abandoned = self.sending
            self.writer.transport.abort()

    def _close(self) -> None:
        transport = self.writer.transport
        if transport.get_write_buffer_size():
            self.abandoned = True
            transport.abort()
        else:
            self.writer.close()

    async def _read_size(self) -> int | None:
        """The next frame's size, or None (after logging why) if the connection must close."""
        idle = self.ctx.config.connections_max_idle_ms / 1000
        prefix = await asyncio.wait_for(self.reader.readexactly(4), idle)
        size = frames.SIZE.unpack(prefix)[0]
        limit = authentication.frame_limit(self.ctx)
        if prefix.startswith(TLS_HANDSHAKE_START) and not self.tls:
            log.warning(
                "closing %s: a TLS handshake on listener %s, which is %s: is the client using security.protocol SSL?",
                self.peer,
                self.ctx.session.listener,
                self.ctx.session.security_protocol,
            )
            return None
        if size < 0 or size > limit:
            setting = "socket.request.max.bytes" if self.ctx.session.authenticated else "sasl.server.max.receive.size"
            log.warning("closing %s: request size %d is outside [0, %s=%d]", self.peer, size, setting, limit)
            return None
        return size

    async def _read_and_handle(self, size: int):
        """Read a request's body and handle it; the frame lives only here, so once this returns its
        memory is really free (a response may then wait long for a client that does not read)."""
        if self.ctx.stopping:  # woken from waiting for memory by the shutdown
            raise ConnectionAbortedError("the broker is stopping")
        frame = await asyncio.wait_for(self.reader.readexactly(size), self.ctx.config.connections_max_idle_ms / 1000)
        self.handling = True
        try:
            return await self._respond(frame)
        finally:
            self.handling = False

    async def _respond(self, frame):
        """The response parts for one request, None for no response (acks=0), or _CLOSE."""
        if self.ctx.session.raw_sasl_tokens:
            reply = await authentication.bare_token(self.ctx, frame)
            return _CLOSE if reply is None else [reply]
        try:
            header, body_reader = frames.parse_request(frame)
        except ProtocolError as exc:
            log.warning("closing %s: unreadable request header (%s)", self.peer, exc)
            return _CLOSE
        api = SERVED.get(header.api_key)
        if api is None:
            log.warning("closing %s: API key %d is not supported", self.peer, header.api_key)
            return _CLOSE
        if not api.min_version <= header.api_version <= api.max_version:
            if api.key == ApiKey.API_VERSIONS:
                return [frames.unsupported_api_versions_reply(header.correlation_id)]
            log.warning(
                "closing %s: %s v%d is not supported (%d-%d)",
                self.peer,
                api.key.name,
                header.api_version,
                api.min_version,
                api.max_version,
            )
            return _CLOSE
        if not authentication.allowed(self.ctx.session, api.key):
            log.warning(
                "closing %s: %s before SASL authentication on listener %s",
                self.peer,
                api.key.name,
                self.ctx.session.listener,
            )
            return _CLOSE
        async with self.ctx.request_memory.one_large_decoded(api.key, len(frame)):
            return await self._answer(header, body_reader, api)

    async def _answer(self, header, body_reader, api):
        """Decode, handle and encode one request whose header passed the checks."""
        try:
            request = frames.decode_request_body(header, body_reader)
        except ProtocolError as exc:
            log.warning("closing %s: malformed %s v%d request (%s)", self.peer, api.key.name, header.api_version, exc)
            return _CLOSE
        try:
            response = await HANDLERS[api.key](self.ctx, header, request)
        except CloseConnection as exc:
            log.info("closing %s: %s", self.peer, exc)
            return _CLOSE
        except (OSError, LogStorageError) as exc:
            log.error("%s v%d request from %s failed: %s", api.key.name, header.api_version, self.peer, exc)
            response = error_response(api.key, request, ErrorCode.KAFKA_STORAGE_ERROR, error_text(exc))
        except Exception:
            log.exception(
                "%s v%d request from %s failed; answered UNKNOWN_SERVER_ERROR",
                api.key.name,
                header.api_version,
                self.peer,
            )
            response = _unknown_server_error(api.key, request)
        if api.key == ApiKey.PRODUCE and request["acks"] == 0 and response is not None:
            return _CLOSE  # a failed acks=0 produce: the client expects no answer, as in Kafka the connection closes
        if response is None:
            return None
        try:
            parts, _ = frames.encode_response(header.correlation_id, api.key, header.api_version, response)
        except ValueError:
            log.exception(
                "cannot encode the %s v%d response to %s; answered UNKNOWN_SERVER_ERROR",
                api.key.name,
                header.api_version,
                self.peer,
            )
            try:
                parts, _ = frames.encode_response(
                    header.correlation_id, api.key, header.api_version, _unknown_server_error(api.key, request)
                )
            except ValueError:
                return _CLOSE
        return parts

    async def _send(self, parts) -> None:
        """Write one response, waiting for the client to take each part before the next one.

        While the broker stops, nothing waits: the parts are written as far as the socket takes them."""
        if self.ctx.stopping:
            for part in parts:
                self.writer.write(part if isinstance(part, bytes) else part.read())
            return
        loop = asyncio.get_running_loop()
        for part in parts:
            if isinstance(part, bytes):
                view = memoryview(part)
                for start in range(0, len(view), WRITE_PIECE_BYTES):
                    self.writer.write(view[start : start + WRITE_PIECE_BYTES])
                    await self._drained()
            elif self.tls:
                for piece in part.pieces(TLS_PIECE_BYTES):
                    self.writer.write(piece.read())
                    await self._drained()
            elif part.size < SENDFILE_MIN_BYTES:
                self.writer.write(part.read())
            else:
                await self._drained()
                await loop.sendfile(self.writer.transport, part.file, part.position, part.size)
            await self._drained()

    async def _drained(self) -> None:
        """Wait until the client takes enough of what is written; a client that takes nothing for
        ``connections.max.idle.ms`` is closed, as Kafka expires a channel with no activity."""
        transport = self.writer.transport
        if transport.get_write_buffer_size() <= transport.get_write_buffer_limits()[0]:
            await self.writer.drain()  # at most the low-water mark: writing is not paused, no wait (no timer)
            return
        idle_ms = self.ctx.config.connections_max_idle_ms
        try:
            await asyncio.wait_for(self.writer.drain(), idle_ms / 1000)
        except asyncio.TimeoutError:
            log.info(
                "closing %s: it took nothing more of its response for connections.max.idle.ms=%d", self.peer, idle_ms
            )
            raise ConnectionAbortedError("the client does not read") from None


def _unknown_server_error(api_key: ApiKey, request: dict) -> dict:
    """Kafka's answer to a request whose handler failed unexpectedly: UNKNOWN_SERVER_ERROR in each error field."""
    return error_response(api_key, request, ErrorCode.UNKNOWN_SERVER_ERROR, "unexpected server error")
