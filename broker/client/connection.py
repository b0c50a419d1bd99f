"""One blocking connection to one Kafka-protocol broker, with version negotiation.

On connect it does the TLS handshake (``security.protocol`` SSL and SASL_SSL), asks ApiVersions
(v2, non-flexible, which every broker since 0.10 answers; a broker that only knows lower versions
replies with its supported range and we retry), authenticates with SASL (SaslHandshake v1, then
the mechanism's tokens in SaslAuthenticate) and then uses, for each API, the highest version both
sides implement. A refused certificate or password raises ``AuthenticationError`` (not retried).
Every request has a deadline; a broken connection raises ``BrokerConnectionError`` and the
connection must be reopened. A plaintext
connection closed during its first request, or answered with a TLS record, is most likely talking to
a TLS listener: the error says so (as librdkafka's does).
"""

import socket
import ssl
import struct
import time
from typing import Any

from broker.protocol import frames
from broker.protocol.apis import APIS, ApiKey
from broker.protocol.errors import ErrorCode
from broker.protocol.types import ProtocolError, Reader
from broker.security.sasl import AuthenticationFailed, client_exchange

from .security import PLAINTEXT, ClientSecurity

Body = dict[str, Any]  # a request or response body, as broker.protocol encodes and decodes it
_CORRELATION = struct.Struct(">i")
API_VERSIONS_VERSION = 2
_TLS_HINT = "; is it a TLS listener? Then the client needs security.protocol=SSL (or SASL_SSL)"


class _ClosedByBroker(ConnectionError):
    """The broker closed the connection before the whole response arrived."""


class _TlsRecord(ConnectionError):
    """A TLS record (an alert or a handshake) where a plaintext response's size should be."""


def _looks_like_tls(prefix: bytes | bytearray) -> bool:
    """A TLS record header: content type alert (21) or handshake (22), protocol version 3.x."""
    return prefix[0] in (21, 22) and prefix[1] == 3 and prefix[2] <= 4


class BrokerConnectionError(ConnectionError):
    """The broker could not be reached, closed the connection, or sent something unreadable."""


class AuthenticationError(Exception):
    """The broker refused this client's credentials, or its certificate was not trusted: retrying
    does not help. The message never holds a password."""


class UnsupportedVersionError(Exception):
    """The broker implements none of the versions of an API that this client speaks."""


class BrokerConnection:
    def __init__(
        self,
        host: str,
        port: int,
        timeout: float = 30.0,
        client_id: str = "kafkalog",
        security: ClientSecurity = PLAINTEXT,
    ):
        self.host, self.port, self.timeout, self.client_id = host, port, timeout, client_id
        self._correlation_id = 0
        try:
            self._sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise BrokerConnectionError(f"cannot connect to {host}:{port}: {exc.strerror or exc}") from None
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._plaintext_hello = not security.uses_tls  # until the first response: a close hints at TLS
        try:
            if security.uses_tls:
                self._start_tls(security)
            self.versions = self._negotiate()
            if security.uses_sasl:
                self._authenticate(security)
        except BaseException:
            self.close()
            raise

    def _start_tls(self, security: ClientSecurity) -> None:
        try:
            self._sock = security.tls_context().wrap_socket(self._sock, server_hostname=self.host)
        except ssl.SSLCertVerificationError as exc:
            raise AuthenticationError(
                f"TLS handshake with {self.address} failed: the broker's certificate is not "
                f"trusted ({exc.verify_message}; see ssl.truststore.location)"
            ) from None
        except (TimeoutError, OSError) as exc:
            raise BrokerConnectionError(
                f"TLS handshake with {self.address} failed ({exc}): is it a TLS listener? "
                f"If not, the client needs security.protocol=PLAINTEXT (or SASL_PLAINTEXT)"
            ) from None

    def _authenticate(self, security: ClientSecurity) -> None:
        """SASL: SaslHandshake v1 picks the mechanism, SaslAuthenticate carries its tokens."""
        handshake = self._call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": security.mechanism})
        if handshake["error_code"] == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
            raise AuthenticationError(
                f"{self.address} does not accept SASL mechanism {security.mechanism} "
                f"(it accepts {', '.join(handshake['mechanisms'])})"
            )
        if handshake["error_code"] != ErrorCode.NONE:
            raise AuthenticationError(
                f"{self.address} refused the SASL handshake (error {handshake['error_code']}): "
                f"is it a SASL listener (security.protocol SASL_PLAINTEXT or SASL_SSL)?"
            )
        # from_settings gives a SASL protocol a mechanism, a user name and a password
        assert security.mechanism and security.username is not None and security.password is not None
        exchange = client_exchange(security.mechanism, security.username, security.password)
        token: bytes | None = exchange.first()
        while token is not None:
            answer = self._call(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": token})
            if answer["error_code"] != ErrorCode.NONE:
                raise AuthenticationError(
                    f"{self.address} refused user {security.username!r} with "
                    f"{security.mechanism}: {answer['error_message'] or answer['error_code']}"
                )
            try:
                token = exchange.respond(answer["auth_bytes"])
            except AuthenticationFailed as exc:
                raise AuthenticationError(f"{self.address}: {exc}") from None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def _negotiate(self) -> dict[int, tuple[int, int]]:
        version = API_VERSIONS_VERSION
        for _ in range(2):
            response = self._call(ApiKey.API_VERSIONS, version, {})
            ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in response["api_keys"]}
            if response["error_code"] == ErrorCode.NONE:
                return ranges
            if response["error_code"] == ErrorCode.UNSUPPORTED_VERSION and ApiKey.API_VERSIONS in ranges:
                version = min(version, ranges[ApiKey.API_VERSIONS][1])
                continue
            break
        raise BrokerConnectionError(f"{self.address} refused ApiVersions (error {response['error_code']})")

    def version_for(self, api_key: ApiKey) -> int:
        """The highest version of ``api_key`` that both this client and the broker implement."""
        ours = APIS[api_key]
        theirs = self.versions.get(api_key)
        if theirs is not None:
            low, high = max(ours.min_version, theirs[0]), min(ours.max_version, theirs[1])
            if low <= high:
                return high
        if theirs is None:
            raise UnsupportedVersionError(
                f"the broker at {self.address} does not implement {api_key.name} (API key {int(api_key)})"
            )
        raise UnsupportedVersionError(
            f"{self.address} supports {api_key.name} versions {theirs[0]}-{theirs[1]}, "
            f"this client {ours.min_version}-{ours.max_version}"
        )

    def request(self, api_key: ApiKey, body: Body, extra_wait: float = 0.0, max_version: int | None = None) -> Body:
        """Send a request at the negotiated version (at most ``max_version`` if given, for a caller
        that needs nothing newer) and return the decoded response body.

        ``extra_wait`` (seconds) extends the deadline for requests the broker may hold on purpose
        (a long-polling fetch's ``max_wait_ms``).
        """
        version = self.version_for(api_key)
        if max_version is not None:
            version = max(min(version, max_version), self.versions[api_key][0])
        return self._call(api_key, version, body, extra_wait)

    def send(self, api_key: ApiKey, body: Body) -> None:
        """Send a request the broker does not answer (a Produce with acks=0)."""
        version = self.version_for(api_key)
        try:
            self._send_request(api_key, version, body, time.monotonic() + self.timeout)
        except (TimeoutError, OSError) as exc:
            self.close()
            raise BrokerConnectionError(f"{api_key.name} to {self.address} failed: {exc}") from None

    def _send_request(self, api_key: ApiKey, version: int, body: Body, deadline: float) -> None:
        self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        self._send(frames.encode_request(api_key, version, self._correlation_id, self.client_id, body), deadline)

    def _call(self, api_key: ApiKey, version: int, body: Body, extra_wait: float = 0.0) -> Body:
        deadline = time.monotonic() + self.timeout + extra_wait
        try:
            self._send_request(api_key, version, body, deadline)
            prefix = self._receive(4, deadline)
            if self._plaintext_hello and _looks_like_tls(prefix):
                raise _TlsRecord("the broker answered with a TLS record")
            response = self._receive(frames.SIZE.unpack(prefix)[0], deadline)
        except (TimeoutError, OSError) as exc:
            self.close()
            hint = (
                _TLS_HINT
                if self._plaintext_hello and isinstance(exc, (_ClosedByBroker, _TlsRecord, ConnectionResetError))
                else ""
            )
            raise BrokerConnectionError(f"{api_key.name} to {self.address} failed: {exc}{hint}") from None
        self._plaintext_hello = False
        (correlation_id,) = _CORRELATION.unpack_from(response)
        if correlation_id != self._correlation_id:
            self.close()
            raise BrokerConnectionError(
                f"{self.address} answered correlation id {correlation_id}, expected {self._correlation_id}"
            )
        reader = Reader(response)
        frames.read_response_header(reader, api_key, version)
        if api_key == ApiKey.API_VERSIONS and len(response) >= 6 and struct.unpack_from(">h", response, 4)[0]:
            version = 0  # Kafka answers any ApiVersions error with a v0 body
        try:
            return APIS[api_key].response.decode(reader, version)
        except ProtocolError as exc:
            self.close()
            raise BrokerConnectionError(
                f"unreadable {api_key.name} v{version} response from {self.address}: {exc}"
            ) from None

    def _send(self, data: bytes, deadline: float) -> None:
        self._sock.settimeout(max(deadline - time.monotonic(), 0.001))
        self._sock.sendall(data)

    def _receive(self, size: int, deadline: float) -> bytearray:
        out = bytearray(size)
        view = memoryview(out)
        got = 0
        while got < size:
            self._sock.settimeout(max(deadline - time.monotonic(), 0.001))
            n = self._sock.recv_into(view[got:])
            if n == 0:
                raise _ClosedByBroker("connection closed by the broker")
            got += n
        return out

    def close(self) -> None:
        try:
            self._sock.close()
        except OSError:
            pass
