"""Certificates made for the run (trustme: a CA, the broker's certificate for 127.0.0.1 and
localhost, a client certificate), written as PEM and PKCS12 files; nothing is checked in."""

import pytest
import trustme
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography import x509

from .test_sasl import sasl_broker  # noqa: F401  (the SASL broker, for every module here; one per module)

KEYSTORE_PASSWORD = "store-secret-1"


class Certificates:
    def __init__(self, directory):
        self.directory = directory
        self.ca = trustme.CA(organization_name="kafkalog tests")
        self.ca_pem = self._write("ca.pem", self.ca.cert_pem.bytes())
        server = self.ca.issue_cert("127.0.0.1", "localhost", common_name="broker")
        self.server_pem = self._write("server.pem", server.private_key_and_cert_chain_pem.bytes())
        self.server_p12 = self._write("server.p12", _pkcs12(server, KEYSTORE_PASSWORD))
        self.ca_p12 = self._write("ca.p12", pkcs12.serialize_java_truststore(
            [pkcs12.PKCS12Certificate(x509.load_pem_x509_certificate(self.ca.cert_pem.bytes()), b"ca")],
            serialization.BestAvailableEncryption(KEYSTORE_PASSWORD.encode())))
        self.ca_jks = self._write("ca.jks", _jks_truststore(self.ca.cert_pem.bytes(), KEYSTORE_PASSWORD))
        client = self.ca.issue_cert("alice.example", common_name="alice", organization_name="data",
                                    organization_unit_name="loads")
        self.client_pem = self._write("client.pem", client.private_key_and_cert_chain_pem.bytes())
        self.client_key = self._write("client.key", client.private_key_pem.bytes())
        self.client_cert = self._write("client.crt", b"".join(p.bytes() for p in client.cert_chain_pems))
        other_ca = trustme.CA()
        self.untrusted_pem = self._write("untrusted.pem", other_ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.bytes())
        self.other_ca_pem = self._write("other-ca.pem", other_ca.cert_pem.bytes())

    def _write(self, name: str, data: bytes) -> str:
        path = self.directory / name
        path.write_bytes(data)
        return str(path)


def _pkcs12(leaf, password: str) -> bytes:
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), None)
    certificates = [x509.load_pem_x509_certificate(p.bytes()) for p in leaf.cert_chain_pems]
    return pkcs12.serialize_key_and_certificates(b"broker", key, certificates[0], certificates[1:],
                                                 serialization.BestAvailableEncryption(password.encode()))


def _jks_truststore(ca_pem: bytes, password: str) -> bytes:
    import ssl
    import jks
    entry = jks.TrustedCertEntry.new("ca", ssl.PEM_cert_to_DER_cert(ca_pem.decode()))
    return jks.KeyStore.new("jks", [entry]).saves(password)


@pytest.fixture(scope="session")
def certificates(tmp_path_factory):
    return Certificates(tmp_path_factory.mktemp("certificates"))
