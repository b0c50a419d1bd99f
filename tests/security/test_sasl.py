"""SASL listeners: the three third-party clients and kcat (librdkafka 2.0, whose SCRAM repeats its
client nonce) with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 over SASL_PLAINTEXT and SASL_SSL; users
added and deleted with ``kafkalog users`` while the broker runs; wrong passwords, unknown users and
bad input before and during the exchange: each a clear error (Kafka's SASL_AUTHENTICATION_FAILED)
and one broker log line, never a hang."""

import socket
import struct

import pytest

from broker.protocol import frames
from broker.protocol.apis import APIS, ApiKey
from broker.protocol.errors import ErrorCode
from broker.protocol.types import Reader
from broker.security.sasl import client_exchange

from .conftest import PLAINTEXT, SASL_PLAINTEXT, SASL_SSL, SCRAM_PASSWORD, SCRAM_USER, kafkalog_users
from .test_tls import _wait_for_log
from .third_party import CLIENTS, KCAT, Security, kcat, unique_topic


def security(listener: int, mechanism: str, certificates, password: str | None = None, username=None) -> Security:
    protocol = {SASL_PLAINTEXT: "SASL_PLAINTEXT", SASL_SSL: "SASL_SSL"}[listener]
    if mechanism == "PLAIN":
        return Security(
            protocol,
            certificates.ca_pem if listener == SASL_SSL else None,
            mechanism,
            username or "plainuser",
            password or "plain-secret-1",
        )
    return Security(
        protocol,
        certificates.ca_pem if listener == SASL_SSL else None,
        mechanism,
        username or SCRAM_USER,
        password or SCRAM_PASSWORD,
    )


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.parametrize(
    "listener, mechanism",
    [
        (SASL_PLAINTEXT, "PLAIN"),
        (SASL_PLAINTEXT, "SCRAM-SHA-256"),
        (SASL_PLAINTEXT, "SCRAM-SHA-512"),
        (SASL_SSL, "SCRAM-SHA-512"),
        (SASL_SSL, "PLAIN"),
    ],
)
def test_third_party_clients_authenticate(sasl_broker, certificates, client, listener, mechanism):
    topic = unique_topic("sasl")
    values = CLIENTS[client](sasl_broker.bootstrap_of(listener), topic, security(listener, mechanism, certificates))
    assert values and values[0].startswith(b"value-")


@pytest.mark.parametrize("client", list(CLIENTS))
@pytest.mark.parametrize(
    "mechanism, username, password",
    [("SCRAM-SHA-512", SCRAM_USER, "wrong"), ("SCRAM-SHA-256", "nobody", "whatever"), ("PLAIN", "plainuser", "wrong")],
)
def test_wrong_password_or_unknown_user_fails_clearly(sasl_broker, certificates, client, mechanism, username, password):
    with pytest.raises(Exception) as failure:
        CLIENTS[client](
            sasl_broker.bootstrap_of(SASL_PLAINTEXT),
            unique_topic("refused"),
            security(SASL_PLAINTEXT, mechanism, certificates, password, username),
            wait=2,
        )
    if client == "confluent":  # the others report "unable to bootstrap" and log the broker's message
        assert "Authentication failed" in str(failure.value)
    _wait_for_log(sasl_broker, f"with {mechanism} failed: Authentication failed: Invalid username or password")
    assert password not in sasl_broker.stderr_tail(400) or password == "wrong"


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed (.ci/run installs it: apt-get install kcat)")
@pytest.mark.parametrize(
    "listener, mechanism",
    [
        (SASL_PLAINTEXT, "PLAIN"),
        (SASL_PLAINTEXT, "SCRAM-SHA-256"),
        (SASL_PLAINTEXT, "SCRAM-SHA-512"),
        (SASL_SSL, "SCRAM-SHA-256"),
    ],
)
def test_kcat_authenticates(sasl_broker, certificates, listener, mechanism):
    """kcat links the system librdkafka (2.0 on Debian), whose SCRAM client-final repeats the client nonce."""
    values = kcat(sasl_broker.bootstrap_of(listener), unique_topic("kcat"), security(listener, mechanism, certificates))
    assert values == [b"value-kcat"]


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed (.ci/run installs it: apt-get install kcat)")
def test_kcat_wrong_scram_password_is_refused(sasl_broker, certificates):
    with pytest.raises(RuntimeError, match="Invalid username or password"):
        kcat(
            sasl_broker.bootstrap_of(SASL_PLAINTEXT),
            unique_topic("kcat"),
            security(SASL_PLAINTEXT, "SCRAM-SHA-512", certificates, "wrong"),
            wait=3,
        )


def test_users_added_and_deleted_while_running(sasl_broker, certificates):
    log_dir = sasl_broker.log_dir
    assert (
        kafkalog_users(
            "add", "late", "--mechanism", "SCRAM-SHA-256", "--password", "late-secret", "--log-dir", log_dir
        ).returncode
        == 0
    )
    late = Security("SASL_PLAINTEXT", None, "SCRAM-SHA-256", "late", "late-secret")
    assert CLIENTS["kafka-python"](sasl_broker.bootstrap_of(SASL_PLAINTEXT), unique_topic("late"), late)
    listed = kafkalog_users("list", "--log-dir", log_dir).stdout
    assert "late\tSCRAM-SHA-256" in listed and f"{SCRAM_USER}\tSCRAM-SHA-256,SCRAM-SHA-512" in listed
    assert "late-secret" not in open(f"{log_dir}/scram-credentials.json").read()
    assert kafkalog_users("delete", "late", "--log-dir", log_dir).returncode == 0
    with pytest.raises(Exception, match="Authentication failed"):
        CLIENTS["confluent"](sasl_broker.bootstrap_of(SASL_PLAINTEXT), unique_topic("late"), late, wait=4)


# -- the exchange on the wire ------------------------------------------------------------------------


def request(sock, api_key: ApiKey, version: int, body: dict, correlation_id: int = 1) -> dict | None:
    sock.sendall(frames.encode_request(api_key, version, correlation_id, "wire", body))
    payload = read_frame(sock)
    if payload is None:
        return None
    return APIS[api_key].response.decode(Reader(payload, 4), version)


def read_frame(sock) -> bytes | None:
    size = _read(sock, 4)
    return None if size is None else _read(sock, struct.unpack(">i", size)[0])


def _read(sock, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        try:
            chunk = sock.recv(n - len(data))
        except ConnectionResetError:  # closed with our unread bytes in its buffer
            return None
        if not chunk:
            return None
        data += chunk
    return data


@pytest.fixture
def wire(sasl_broker):
    sock = socket.create_connection(("127.0.0.1", sasl_broker.ports[SASL_PLAINTEXT]), timeout=10)
    yield sock
    sock.close()


def test_nothing_but_the_handshake_before_authentication(sasl_broker, wire):
    assert request(wire, ApiKey.API_VERSIONS, 0, {})["error_code"] == ErrorCode.NONE
    assert request(wire, ApiKey.METADATA, 1, {"topics": None}) is None  # closed
    _wait_for_log(sasl_broker, "METADATA before SASL authentication on listener SASL_PLAINTEXT")


@pytest.mark.parametrize(
    "api_key, version, body",
    [
        (ApiKey.FIND_COORDINATOR, 1, {"key": "g", "key_type": 0}),
        (
            ApiKey.JOIN_GROUP,
            1,
            {
                "group_id": "g",
                "session_timeout_ms": 6000,
                "rebalance_timeout_ms": 6000,
                "member_id": "",
                "protocol_type": "consumer",
                "protocols": [],
            },
        ),
        (
            ApiKey.OFFSET_COMMIT,
            2,
            {"group_id": "g", "generation_id": -1, "member_id": "", "retention_time_ms": -1, "topics": []},
        ),
        (ApiKey.LIST_GROUPS, 0, {}),
    ],
)
def test_no_group_api_before_authentication(sasl_broker, wire, api_key, version, body):
    assert request(wire, api_key, version, body) is None  # closed, not answered
    _wait_for_log(sasl_broker, f"{api_key.name} before SASL authentication on listener SASL_PLAINTEXT")


def test_v1_handshake_then_tokens_in_sasl_authenticate(sasl_broker, wire):
    handshake = request(wire, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-512"})
    assert handshake == {"error_code": ErrorCode.NONE, "mechanisms": ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]}
    exchange = client_exchange("SCRAM-SHA-512", SCRAM_USER, SCRAM_PASSWORD)
    token = exchange.first()
    while token is not None:
        answer = request(wire, ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": token})
        assert answer["error_code"] == ErrorCode.NONE, answer
        token = exchange.respond(answer["auth_bytes"])
    assert request(wire, ApiKey.METADATA, 1, {"topics": None})["brokers"]  # served now
    assert request(wire, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})["error_code"] == ErrorCode.ILLEGAL_SASL_STATE


@pytest.mark.parametrize(
    "mechanism, username, password",
    [("PLAIN", "plainuser", "plain-secret-1"), ("SCRAM-SHA-256", SCRAM_USER, SCRAM_PASSWORD)],
)
def test_v0_handshake_then_bare_tokens(sasl_broker, wire, mechanism, username, password):
    assert request(wire, ApiKey.SASL_HANDSHAKE, 0, {"mechanism": mechanism})["error_code"] == ErrorCode.NONE
    exchange = client_exchange(mechanism, username, password)
    token = exchange.first()
    while token is not None:
        wire.sendall(struct.pack(">i", len(token)) + token)
        token = exchange.respond(read_frame(wire))  # PLAIN's answer is empty, SCRAM's two messages
    assert request(wire, ApiKey.METADATA, 1, {"topics": None})["brokers"]


@pytest.mark.parametrize(
    "password, nonce_prefix, accepted",
    [
        (SCRAM_PASSWORD, "client", True),  # librdkafka before 2.6.1: r=<client nonce><client nonce><server nonce>
        ("wrong", "client", False),  # the proof still decides
        (SCRAM_PASSWORD, "replaced", False),  # a nonce that does not end with the exchange's
    ],
)
def test_scram_client_final_nonce_must_end_with_the_servers(sasl_broker, wire, password, nonce_prefix, accepted):
    from scramp import ScramClient
    from scramp.core import Nonce

    request(wire, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"})
    client = ScramClient(["SCRAM-SHA-256"], SCRAM_USER, password)
    first = request(wire, ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": client.get_client_first().encode()})
    client.set_server_first(bytes(first["auth_bytes"]).decode())
    nonce = str(client.nonce)
    client.nonce = Nonce(str(client.c_nonce) + nonce if nonce_prefix == "client" else "x" + nonce[1:])
    final = request(wire, ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": client.get_client_final().encode()})
    assert (final["error_code"] == ErrorCode.NONE) == accepted, final
    if accepted:
        client.set_server_final(bytes(final["auth_bytes"]).decode())  # the broker signed what the client sent


def test_a_wrong_token_is_refused_with_kafkas_error_and_closed(sasl_broker, wire):
    request(wire, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-256"})
    answer = request(wire, ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": b"\xff garbage \x00"})
    assert (
        answer["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
        and "Authentication failed" in answer["error_message"]
    )
    assert read_frame(wire) is None  # closed


@pytest.mark.parametrize(
    "first",
    [
        b"GET / HTTP/1.1\r\n\r\n",  # garbage before the handshake
        struct.pack(">i", 10_000_000) + b"x" * 100,  # a frame above sasl.server.max.receive.size
    ],
)
def test_garbage_and_oversized_frames_before_authentication_close(sasl_broker, wire, first):
    wire.sendall(first)
    assert read_frame(wire) is None


def test_an_oversized_sasl_token_is_refused_unread(sasl_broker, wire):
    request(wire, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    wire.sendall(frames.encode_request(ApiKey.SASL_AUTHENTICATE, 1, 2, "wire", {"auth_bytes": b"x" * 600_000}))
    assert read_frame(wire) is None
    _wait_for_log(sasl_broker, "sasl.server.max.receive.size=524288")


def test_an_unknown_mechanism_and_sasl_on_a_plaintext_listener(sasl_broker, wire):
    answer = request(wire, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"})
    assert answer["error_code"] == ErrorCode.UNSUPPORTED_SASL_MECHANISM and "SCRAM-SHA-512" in answer["mechanisms"]
    assert read_frame(wire) is None
    with socket.create_connection(("127.0.0.1", sasl_broker.ports[PLAINTEXT]), timeout=10) as plain:
        answer = request(plain, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert answer["error_code"] == ErrorCode.ILLEGAL_SASL_STATE


def test_bad_sasl_settings_are_refused_without_showing_secrets(tmp_path):
    from broker.common.settings import ConfigError
    from broker.server.config import build

    listeners = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0"}
    for settings, message in [
        ({"sasl.enabled.mechanisms": "GSSAPI"}, "sasl.enabled.mechanisms: 'GSSAPI' must list mechanisms among"),
        ({"sasl.enabled.mechanisms": "PLAIN"}, "PLAIN is enabled on listener SASL_PLAINTEXT but no PlainLoginModule"),
        (
            {
                "sasl.enabled.mechanisms": "PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                    'PlainLoginModule required user_a="hidden-secret"'
                ),
            },
            "not a JAAS login entry",
        ),
        (
            {
                "sasl.enabled.mechanisms": "PLAIN",
                "sasl.jaas.config": (
                    'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="hidden-secret" broken;'
                ),
            },
            "cannot read the options of",
        ),
    ]:
        with pytest.raises(ConfigError) as failure:
            build({**listeners, **settings}, log_dir=str(tmp_path))
        assert message in str(failure.value) and "hidden-secret" not in str(failure.value)
