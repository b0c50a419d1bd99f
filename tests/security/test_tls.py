"""TLS listeners: the three third-party clients over SSL with PEM and PKCS12 key stores; client
certificates (``ssl.client.auth``); and the failures: an untrusted or expired certificate, plaintext to a TLS
port, TLS to a plaintext port, a handshake that stalls. Each is a clear client error and one broker
log line, never a hang; other clients are unaffected."""

import datetime
import re
import socket
import ssl
import subprocess
import sys

import pytest

from broker.client import BrokerConnection, BrokerConnectionError, from_settings
from broker.protocol.apis import ApiKey
from broker.security.tls import principal_of

from ..client.fake_servers import FakeBroker, TlsAlertListener
from ..waiting import wait_for
from .conftest import KEYSTORE_PASSWORD
from .third_party import CLIENTS, Security, unique_topic

TLS_LISTENERS = {"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "ssl.handshake.timeout.ms": "2000"}


@pytest.fixture(scope="module")
def pem_broker(tmp_path_factory, certificates):
    from broker.embedded import EmbeddedBroker

    broker = EmbeddedBroker(
        tmp_path_factory.mktemp("tls") / "log", {**TLS_LISTENERS, "ssl.keystore.location": certificates.server_pem}
    ).start()
    yield broker
    broker.kill()


@pytest.mark.parametrize("client", list(CLIENTS))
def test_third_party_clients_over_tls(pem_broker, certificates, client):
    topic = unique_topic("tls")
    values = CLIENTS[client](pem_broker.bootstrap_of(1), topic, Security("SSL", certificates.ca_pem))
    assert values and values[0].startswith(b"value-")


def test_a_pkcs12_key_store_and_required_client_certificates(start_broker, certificates):
    broker = start_broker(
        {
            **TLS_LISTENERS,
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": certificates.server_p12,
            "ssl.keystore.password": KEYSTORE_PASSWORD,
            "ssl.client.auth": "required",
            "ssl.truststore.location": certificates.ca_p12,
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.password": KEYSTORE_PASSWORD,
        }
    )
    assert _served(broker.ports[1], _client_context(certificates, certificates.client_pem)) in ("TLSv1.2", "TLSv1.3")
    _assert_refused(broker.ports[1], _client_context(certificates))
    _wait_for_log(broker, "on TLS listener SSL: TLS handshake failed")


def test_the_principal_of_a_client_certificate(certificates):
    with open(certificates.client_cert, "rb") as f:
        der = ssl.PEM_cert_to_DER_cert(
            f.read().decode().split("-----END CERTIFICATE-----")[0] + "-----END CERTIFICATE-----\n"
        )
    assert principal_of(der) == "User:CN=alice,OU=loads,O=data"
    assert principal_of(None) is None


@pytest.mark.parametrize("client", list(CLIENTS))
def test_an_untrusted_broker_certificate_is_a_client_error(pem_broker, certificates, client):
    with pytest.raises(Exception) as failure:  # kafka-python and aiokafka: "no metadata"/"unable to bootstrap"
        CLIENTS[client](
            pem_broker.bootstrap_of(1), unique_topic("untrusted"), Security("SSL", certificates.other_ca_pem), wait=4
        )
    if client == "confluent":
        assert "certificate verify failed" in str(failure.value) or "CERTIFICATE_VERIFY_FAILED" in str(failure.value)
    _wait_for_log(pem_broker, "on TLS listener SSL: TLS handshake failed")


def test_plaintext_to_a_tls_port_and_tls_to_a_plaintext_port(pem_broker, certificates):
    with socket.create_connection(("127.0.0.1", pem_broker.ports[1]), timeout=10) as plain:
        plain.sendall(_api_versions_request())
        assert _closed_or_tls_alert(plain)
    _wait_for_log(pem_broker, "not a TLS client")
    context = ssl.create_default_context(cafile=certificates.ca_pem)
    with socket.create_connection(("127.0.0.1", pem_broker.ports[0]), timeout=10) as raw:
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            context.wrap_socket(raw, server_hostname="127.0.0.1")
    _wait_for_log(pem_broker, "a TLS handshake on listener PLAINTEXT, which is PLAINTEXT")


def test_a_client_with_the_wrong_security_protocol_is_told_which_one_the_listener_may_need(pem_broker, certificates):
    """On a TLS port our broker closes (and logs), a Java broker answers with a TLS alert: both end
    in the hint; a TLS client on a plaintext port is told the reverse."""
    with pytest.raises(BrokerConnectionError, match="If not, the client needs security.protocol=PLAINTEXT"):
        BrokerConnection(
            "127.0.0.1",
            pem_broker.ports[0],
            timeout=10,
            security=from_settings({"security.protocol": "SSL", "ssl.ca.location": certificates.ca_pem}),
        )
    hint = "is it a TLS listener? Then the client needs security.protocol=SSL (or SASL_SSL)"
    with pytest.raises(BrokerConnectionError, match=re.escape(f"closed by the broker; {hint}")):
        BrokerConnection("127.0.0.1", pem_broker.ports[1], timeout=10)
    with TlsAlertListener() as alerting:
        with pytest.raises(BrokerConnectionError, match=re.escape(f"answered with a TLS record; {hint}")):
            BrokerConnection("127.0.0.1", alerting.port, timeout=10)
    done = subprocess.run(
        [sys.executable, "-m", "broker.cli", "topics", "list", "--bootstrap-server", pem_broker.bootstrap_of(1)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and hint in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    _wait_for_log(pem_broker, "not a TLS client (WRONG_VERSION_NUMBER): is it using security.protocol PLAINTEXT")
    with FakeBroker("t", [], close_on=[ApiKey.METADATA]) as closing:  # a later request's close is no TLS sign
        connection = BrokerConnection("127.0.0.1", closing.port, timeout=10)
        with pytest.raises(BrokerConnectionError) as failure:
            connection.request(ApiKey.METADATA, {"topics": None})
        assert "closed by the broker" in str(failure.value) and "TLS" not in str(failure.value)


def test_a_stalled_handshake_times_out_and_others_are_served(pem_broker, certificates):
    with socket.create_connection(("127.0.0.1", pem_broker.ports[1]), timeout=10) as stalled:
        stalled.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # the start of a ClientHello, no more
        values = CLIENTS["kafka-python"](
            pem_broker.bootstrap_of(1), unique_topic("beside-stalled"), Security("SSL", certificates.ca_pem)
        )
        assert values == [b"value-kafka-python"]
        stalled.settimeout(15)
        assert stalled.recv(100) == b""  # closed by the broker after ssl.handshake.timeout.ms
    _wait_for_log(pem_broker, "did not finish the TLS handshake in time")


def test_bad_tls_settings_are_one_line(tmp_path, certificates):
    from broker.common.settings import ConfigError
    from broker.server.config import build

    for settings, message in [
        ({}, "ssl.keystore.location: listener SSL uses TLS and needs a key store"),
        ({"ssl.keystore.location": str(tmp_path / "nope.pem")}, "nope.pem: No such file or directory"),
        ({"ssl.keystore.location": certificates.ca_pem}, "does not hold a private key and its certificate"),
        (
            {
                "ssl.keystore.location": certificates.server_p12,
                "ssl.keystore.type": "PKCS12",
                "ssl.keystore.password": "wrong",
            },
            "is not a PKCS12 store, or its password is wrong",
        ),
        (
            {"ssl.keystore.location": certificates.server_pem, "ssl.keystore.type": "JKS"},
            "JKS key stores are not supported",
        ),
        (
            {"ssl.keystore.location": certificates.server_pem, "ssl.client.auth": "required"},
            "ssl.client.auth=required on listener SSL needs the CA certificates",
        ),
        (
            {"ssl.keystore.location": certificates.server_pem, "ssl.enabled.protocols": "TLSv1"},
            "ssl.enabled.protocols: 'TLSv1' must list protocols among TLSv1.2, TLSv1.3",
        ),
    ]:
        with pytest.raises(ConfigError) as failure:
            build({**TLS_LISTENERS, **settings}, log_dir=str(tmp_path))
        assert message in str(failure.value), settings
        assert "\n" not in str(failure.value)


def _client_context(certificates, client_pem: str | None = None) -> ssl.SSLContext:
    """A client trusting the tests' CA, presenting ``client_pem`` (key and chain) if given."""
    context = ssl.create_default_context(cafile=certificates.ca_pem)
    if client_pem is not None:
        context.load_cert_chain(client_pem)
    return context


def _served(port: int, context: ssl.SSLContext) -> str:
    """Connect with ``context``, check an ApiVersions request is answered; the TLS version."""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        tls.sendall(_api_versions_request())
        assert len(tls.recv(4)) == 4  # served
        return tls.version()


def _assert_refused(port: int, context: ssl.SSLContext) -> None:
    """The broker refuses the handshake of ``context`` (its client certificate)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with pytest.raises((ssl.SSLError, ConnectionError)):
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                tls.sendall(_api_versions_request())
                if not tls.recv(4):  # TLS 1.3: the refusal arrives after the client's handshake is done
                    raise ConnectionError("closed")


def _api_versions_request() -> bytes:
    from broker.protocol import frames
    from broker.protocol.apis import ApiKey

    return frames.encode_request(ApiKey.API_VERSIONS, 0, 1, "t", {})


def _closed_or_tls_alert(sock) -> bool:
    data = sock.recv(100)
    return data == b"" or data[:1] == b"\x15"  # closed, or a TLS alert record


def _wait_for_log(broker, text: str, timeout: float = 15) -> None:
    try:
        wait_for(lambda: text in broker.stderr_tail(200), timeout, what=f"{text!r} in the broker's log")
    except AssertionError as exc:
        raise AssertionError(f"{exc}:\n{broker.stderr_tail()}") from None


def test_expired_certificates_are_refused_on_both_sides(start_broker, certificates, tmp_path):
    """A broker whose certificate has expired is refused by the client; a client certificate that
    has expired is refused by a broker requiring client certificates (one log line, others served)."""
    lapsed = {"not_before": datetime.datetime(2020, 1, 1), "not_after": datetime.datetime(2021, 1, 1)}
    expired_server = tmp_path / "expired-server.pem"
    expired_server.write_bytes(certificates.ca.issue_cert("127.0.0.1", **lapsed).private_key_and_cert_chain_pem.bytes())
    stale = start_broker({**TLS_LISTENERS, "ssl.keystore.location": str(expired_server)})
    with pytest.raises(Exception) as failure:
        CLIENTS["confluent"](
            stale.bootstrap_of(1), unique_topic("expired"), Security("SSL", certificates.ca_pem), wait=4
        )
    assert "certificate verify failed" in str(failure.value) or "expired" in str(failure.value)
    _wait_for_log(stale, "on TLS listener SSL: TLS handshake failed")

    requiring = start_broker(
        {
            **TLS_LISTENERS,
            "ssl.keystore.location": certificates.server_pem,
            "ssl.client.auth": "required",
            "ssl.truststore.location": certificates.ca_pem,
        }
    )
    expired_client = tmp_path / "expired-client.pem"
    expired_client.write_bytes(
        certificates.ca.issue_cert(
            "alice.example", common_name="alice", **lapsed
        ).private_key_and_cert_chain_pem.bytes()
    )
    _assert_refused(requiring.ports[1], _client_context(certificates, str(expired_client)))
    _wait_for_log(requiring, "on TLS listener SSL: TLS handshake failed")
    _served(requiring.ports[1], _client_context(certificates, certificates.client_pem))  # a valid one still is
