"""Certificates made for the run (trustme: a CA, the broker's certificate for 127.0.0.1 and
localhost, a client certificate), written as PEM and PKCS12 files; nothing is checked in. And
``sasl_broker``: a broker with PLAINTEXT, SASL_PLAINTEXT and SASL_SSL listeners (PLAIN and SCRAM
users), one per test module that asks for it."""

import subprocess
import sys

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

KEYSTORE_PASSWORD = "store-secret-1"
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'user_plainuser="plain-secret-1" user_other="other-secret";'
)
SCRAM_USER, SCRAM_PASSWORD = "scramuser", "scram-secret-1"
PLAINTEXT, SASL_PLAINTEXT, SASL_SSL = 0, 1, 2  # the listeners of sasl_broker, in order


class Certificates:
    def __init__(self, directory):
        self.directory = directory
        self.ca = trustme.CA(organization_name="kafkalog tests")
        self.ca_pem = self._write("ca.pem", self.ca.cert_pem.bytes())
        server = self.ca.issue_cert("127.0.0.1", "localhost", common_name="broker")
        self.server_pem = self._write("server.pem", server.private_key_and_cert_chain_pem.bytes())
        self.server_p12 = self._write("server.p12", _pkcs12(server, KEYSTORE_PASSWORD))
        self.ca_p12 = self._write(
            "ca.p12",
            pkcs12.serialize_java_truststore(
                [pkcs12.PKCS12Certificate(x509.load_pem_x509_certificate(self.ca.cert_pem.bytes()), b"ca")],
                serialization.BestAvailableEncryption(KEYSTORE_PASSWORD.encode()),
            ),
        )
        self.ca_jks = self._write("ca.jks", _jks_truststore(self.ca.cert_pem.bytes(), KEYSTORE_PASSWORD))
        client = self.ca.issue_cert(
            "alice.example", common_name="alice", organization_name="data", organization_unit_name="loads"
        )
        self.client_pem = self._write("client.pem", client.private_key_and_cert_chain_pem.bytes())
        self.client_key = self._write("client.key", client.private_key_pem.bytes())
        self.client_cert = self._write("client.crt", b"".join(p.bytes() for p in client.cert_chain_pems))
        other_ca = trustme.CA()
        self.untrusted_pem = self._write(
            "untrusted.pem", other_ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.bytes()
        )
        self.other_ca_pem = self._write("other-ca.pem", other_ca.cert_pem.bytes())

    def _write(self, name: str, data: bytes) -> str:
        path = self.directory / name
        path.write_bytes(data)
        return str(path)


def _pkcs12(leaf, password: str) -> bytes:
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), None)
    certificates = [x509.load_pem_x509_certificate(p.bytes()) for p in leaf.cert_chain_pems]
    return pkcs12.serialize_key_and_certificates(
        b"broker", key, certificates[0], certificates[1:], serialization.BestAvailableEncryption(password.encode())
    )


def _jks_truststore(ca_pem: bytes, password: str) -> bytes:
    import ssl

    import jks

    entry = jks.TrustedCertEntry.new("ca", ssl.PEM_cert_to_DER_cert(ca_pem.decode()))
    return jks.KeyStore.new("jks", [entry]).saves(password)


@pytest.fixture(scope="session")
def certificates(tmp_path_factory):
    return Certificates(tmp_path_factory.mktemp("certificates"))


def kafkalog_users(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "broker.cli", "users", *args], capture_output=True, text=True, timeout=60
    )


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory, certificates):
    from broker.embedded import EmbeddedBroker

    log_dir = tmp_path_factory.mktemp("sasl") / "log"
    added = kafkalog_users("add", SCRAM_USER, "--password", SCRAM_PASSWORD, "--log-dir", str(log_dir))
    assert added.returncode == 0, added.stderr
    broker = EmbeddedBroker(
        log_dir,
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "sasl.jaas.config": PLAIN_JAAS,
            "ssl.keystore.location": certificates.server_pem,
            "connection.failed.authentication.delay.ms": "50",
            "num.partitions": "1",
        },
    ).start()
    yield broker
    broker.kill()
