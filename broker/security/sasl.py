"""SASL mechanisms as sans-I/O exchanges of tokens: PLAIN (RFC 4616) and SCRAM-SHA-256/512
(RFC 5802/7677, through ``scramp``), for the broker (``server_exchange``) and the client
(``client_exchange``).

A server exchange takes each token the client sends and returns the token to send back; it raises
``AuthenticationFailed`` (with Kafka's message, the same for an unknown user and a wrong password)
and, once ``complete``, names the authenticated ``principal``. A client exchange gives the first
token and answers each challenge.
"""

import hmac
from collections.abc import Callable

# scramp is imported where it is used: every kafkalog command imports this module, few use SCRAM

PLAIN = "PLAIN"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
MECHANISMS = (PLAIN, *SCRAM_MECHANISMS)
SCRAM_ITERATIONS = 4096  # Kafka's default for kafka-configs --add-config SCRAM-SHA-256=[password=...]

ScramCredential = tuple[bytes, bytes, bytes, int]  # (salt, stored_key, server_key, iterations)
PasswordOf = Callable[[str], "str | None"]  # username -> password, or None for an unknown user
CredentialOf = Callable[[str, str], "ScramCredential | None"]  # (username, mechanism) -> credential or None


class AuthenticationFailed(Exception):
    """The client's credentials were refused; the message is safe to send to the client and to log."""


def _failure(mechanism: str) -> AuthenticationFailed:
    return AuthenticationFailed(f"Authentication failed: Invalid username or password (mechanism {mechanism})")


class PlainServer:
    """One PLAIN exchange: a single token ``authzid NUL username NUL password``."""

    mechanism = PLAIN

    def __init__(self, password_of: PasswordOf):
        self._password_of = password_of
        self.complete = False
        self.principal: str | None = None

    def respond(self, token: bytes) -> bytes:
        if self.complete:
            raise AuthenticationFailed("PLAIN takes a single token")
        parts = bytes(token).split(b"\0")
        if len(parts) != 3 or not parts[1]:
            raise AuthenticationFailed("Authentication failed: a PLAIN token is authzid NUL username NUL password")
        authzid, username, password = (part.decode("utf-8", "replace") for part in parts)
        expected = self._password_of(username)
        if (
            expected is None
            or not hmac.compare_digest(password.encode(), expected.encode())
            or authzid not in ("", username)
        ):
            raise _failure(PLAIN)
        self.complete, self.principal = True, f"User:{username}"
        return b""


class ScramServer:
    """One SCRAM exchange: client-first -> server-first, client-final -> server-final."""

    def __init__(self, mechanism: str, credential_of: CredentialOf):
        self.mechanism = mechanism
        self._credential_of = credential_of
        from scramp import ScramMechanism

        self._username: str | None = None
        self._server = ScramMechanism(mechanism).make_server(self._auth_info)
        self._step = 0
        self.complete = False
        self.principal: str | None = None

    def _auth_info(self, username: str) -> ScramCredential:
        credential = self._credential_of(username, self.mechanism)
        if credential is None:
            raise _failure(self.mechanism)
        self._username = username
        return credential

    def _accept_repeated_client_nonce(self, client_final: str) -> None:
        """Accept, as Kafka does, a client-final nonce that ends with the exchange's nonce: librdkafka
        before 2.6.1 (Debian's kcat, for one) sends ``r=<client nonce><client nonce><server nonce>``
        and signs that, so the proof still decides."""
        from scramp.core import Nonce

        sent = next((part[2:] for part in client_final.split(",") if part.startswith("r=")), "")
        expected = str(self._server.nonce)
        if len(sent) > len(expected) and sent.endswith(expected):
            self._server.nonce = Nonce(sent)

    def respond(self, token: bytes) -> bytes:
        from scramp import ScramException

        try:
            text = bytes(token).decode("utf-8")
            if self._step == 0:
                self._server.set_client_first(text)
                reply = self._server.get_server_first()
            elif self._step == 1:
                self._accept_repeated_client_nonce(text)
                self._server.set_client_final(text)
                reply = self._server.get_server_final()
                self.complete, self.principal = True, f"User:{self._username}"
            else:
                raise AuthenticationFailed(f"{self.mechanism} takes two tokens")
        except (ScramException, UnicodeDecodeError):
            raise _failure(self.mechanism) from None
        self._step += 1
        return reply.encode()


def server_exchange(
    mechanism: str, plain_password_of: PasswordOf, scram_credential_of: CredentialOf
) -> PlainServer | ScramServer:
    if mechanism == PLAIN:
        return PlainServer(plain_password_of)
    return ScramServer(mechanism, scram_credential_of)


class PlainClient:
    def __init__(self, username: str, password: str):
        self._token = b"\0" + username.encode() + b"\0" + password.encode()

    def first(self) -> bytes:
        return self._token

    def respond(self, challenge: bytes) -> bytes | None:
        return None  # nothing follows the server's empty answer


class ScramClientExchange:
    def __init__(self, mechanism: str, username: str, password: str):
        from scramp import ScramClient

        self._client = ScramClient([mechanism], username, password)

    def first(self) -> bytes:
        return self._client.get_client_first().encode()

    def respond(self, challenge: bytes) -> bytes | None:
        """The client-final message for the server-first one; None once the server-final checked out."""
        from scramp import ScramException

        text = bytes(challenge).decode("utf-8", "replace")
        try:
            if text.startswith("v=") or text.startswith("e="):
                self._client.set_server_final(text)
                return None
            self._client.set_server_first(text)
            return self._client.get_client_final().encode()
        except ScramException as exc:
            raise AuthenticationFailed(f"the broker's SCRAM answer does not check out ({exc})") from None


def client_exchange(mechanism: str, username: str, password: str) -> PlainClient | ScramClientExchange:
    if mechanism == PLAIN:
        return PlainClient(username, password)
    if mechanism in SCRAM_MECHANISMS:
        return ScramClientExchange(mechanism, username, password)
    raise ValueError(f"SASL mechanism {mechanism!r} is not one of {', '.join(MECHANISMS)}")


def scram_credential(mechanism: str, password: str, iterations: int = SCRAM_ITERATIONS) -> ScramCredential:
    """(salt, stored_key, server_key, iterations) for a password: what the broker stores, never the password."""
    from scramp import ScramMechanism

    return ScramMechanism(mechanism).make_auth_info(password, iteration_count=iterations)
