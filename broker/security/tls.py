"""TLS contexts from Kafka's ``ssl.*`` settings, for the broker's listeners and for the client.

Key stores: ``PEM`` (one file holding the private key and the certificate chain; an encrypted key
takes ``ssl.key.password``) or ``PKCS12`` (``ssl.keystore.password``); a JKS key store is refused
with the command that converts it. Trust stores: ``PEM`` (one or more CA certificates), ``PKCS12``
or ``JKS`` (Java's default, which Spark users' settings name; read with ``pyjks``). The
protocols default to TLSv1.2 and TLSv1.3 (``ssl.enabled.protocols``), the ciphers to OpenSSL's
secure defaults (``ssl.cipher.suites`` narrows the TLSv1.2 ones). ``ssl.client.auth`` is
``none``, ``requested`` or ``required``; a client certificate's subject becomes the principal,
``User:CN=alice,OU=data,O=example`` (RFC 4514, as Kafka's default principal builder).
"""

import os
import secrets
import ssl
import struct
import tempfile
from typing import TYPE_CHECKING, NamedTuple

from broker.common.settings import ConfigError

from .settings import ListenerSettings

if TYPE_CHECKING:  # cryptography is imported where it is used: few runs need it
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

STORE_TYPES = ("PEM", "PKCS12")
CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
DEFAULT_HANDSHAKE_TIMEOUT_MS = 10_000


def _store_type(key: str, text: str | None, allowed: tuple[str, ...] = STORE_TYPES) -> str:
    value = (text or "PEM").strip().upper()
    if value == "JKS" and value not in allowed:
        raise ConfigError(
            f"{key}: JKS key stores are not supported; convert the store to PKCS12 with "
            f"keytool -importkeystore -srcstoretype JKS -deststoretype PKCS12 ..."
        )
    if value not in allowed:
        raise ConfigError(f"{key}: {text!r} is not one of {', '.join(allowed)}")
    return value


def _read(key: str, path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise ConfigError(f"{key}: {path}: {exc.strerror or exc}") from None


def _pkcs12(
    key: str, path: str, password: str | None
) -> "tuple[PrivateKeyTypes | None, x509.Certificate | None, list[x509.Certificate]]":
    from cryptography.hazmat.primitives.serialization import pkcs12  # imported here: few runs need it

    try:
        return pkcs12.load_key_and_certificates(_read(key, path), password.encode() if password else None)
    except ValueError:
        raise ConfigError(f"{key}: {path} is not a PKCS12 store, or its password is wrong") from None


def _jks_certificates(key: str, path: str, password: str | None) -> str:
    """The trusted certificates of a JKS trust store, as PEM (pyjks checks the store's integrity
    with the password when one is given, as Java's keytool does)."""
    import jks  # imported here: few runs need it

    try:
        store = jks.KeyStore.loads(_read(key, path), password or None, try_decrypt_keys=False)
    except jks.util.KeystoreSignatureException:
        raise ConfigError(f"{key}: {path}: the trust store's password is wrong") from None
    except (jks.util.KeystoreException, ValueError, struct.error):
        raise ConfigError(f"{key}: {path} is not a JKS store") from None
    pems = [ssl.DER_cert_to_PEM_cert(entry.cert) for entry in store.certs.values()]
    if not pems:
        raise ConfigError(f"{key}: {path} holds no trusted certificate")
    return "".join(pems)


def load_truststore(context: ssl.SSLContext, key: str, path: str, store_type: str | None, password: str | None) -> None:
    """Trust the CA certificates of a PEM, PKCS12 or JKS store."""
    kind = _store_type(key.replace("location", "type"), store_type, (*STORE_TYPES, "JKS"))
    if kind == "JKS":
        context.load_verify_locations(cadata=_jks_certificates(key, path, password))
        return
    if kind == "PKCS12":
        _, certificate, more = _pkcs12(key, path, password)
        certificates = ([certificate] if certificate else []) + list(more or [])
        if not certificates:
            raise ConfigError(f"{key}: {path} holds no certificate")
        from cryptography.hazmat.primitives import serialization

        cadata = "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certificates)
        context.load_verify_locations(cadata=cadata)
        return
    _read(key, path)  # a clear error for a missing file
    try:
        context.load_verify_locations(cafile=path)
    except ssl.SSLError as exc:
        raise ConfigError(f"{key}: {path} holds no PEM certificate ({exc.reason or exc})") from None


def load_keystore(
    context: ssl.SSLContext,
    key: str,
    path: str,
    store_type: str | None,
    store_password: str | None,
    key_password: str | None,
) -> None:
    """Load the private key and certificate chain of a PEM or PKCS12 store."""
    if _store_type(key.replace("location", "type"), store_type) == "PEM":
        _read(key, path)
        try:
            context.load_cert_chain(path, password=key_password or None)
        except ssl.SSLError as exc:
            raise ConfigError(
                f"{key}: {path} does not hold a private key and its certificate, or ssl.key.password "
                f"is wrong ({exc.reason or exc})"
            ) from None
        return
    private_key, certificate, chain = _pkcs12(key, path, store_password)
    if private_key is None or certificate is None:
        raise ConfigError(f"{key}: {path} holds no private key with its certificate")
    # ssl loads keys only from files: a private temporary file, the key encrypted with a one-off password
    from cryptography.hazmat.primitives import serialization

    one_off = secrets.token_hex(16)
    pem = private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(one_off.encode()),
    )
    pem += b"".join(c.public_bytes(serialization.Encoding.PEM) for c in [certificate, *(chain or [])])
    with tempfile.NamedTemporaryFile(prefix="kafkalog-keystore-", suffix=".pem") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(pem)
        f.flush()
        context.load_cert_chain(f.name, password=one_off)


def _protocols(context: ssl.SSLContext, key: str, text: str | None) -> None:
    names = [p.strip() for p in (text or "TLSv1.2,TLSv1.3").split(",") if p.strip()]
    unknown = [n for n in names if n not in PROTOCOLS]
    if unknown or not names:
        raise ConfigError(f"{key}: {text!r} must list protocols among {', '.join(PROTOCOLS)} (older ones are unsafe)")
    versions = sorted(PROTOCOLS[n] for n in names)
    context.minimum_version, context.maximum_version = versions[0], versions[-1]


class ListenerTls(NamedTuple):
    context: ssl.SSLContext
    handshake_timeout_ms: int


def listener_tls(settings: ListenerSettings) -> ListenerTls:
    """The TLS of one listener (``settings``: a ``ListenerSettings``): context and handshake timeout."""
    return ListenerTls(
        server_context(settings), settings.integer("ssl.handshake.timeout.ms", DEFAULT_HANDSHAKE_TIMEOUT_MS, minimum=1)
    )


def server_context(settings: ListenerSettings) -> ssl.SSLContext:
    """The TLS context of one listener (``settings``: a ``ListenerSettings``)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _protocols(
        context,
        settings.key_of("ssl.enabled.protocols") or "ssl.enabled.protocols",
        settings.get("ssl.enabled.protocols"),
    )
    ciphers = settings.get("ssl.cipher.suites")
    if ciphers:
        try:
            context.set_ciphers(":".join(c.strip() for c in ciphers.split(",")))
        except ssl.SSLError:
            raise ConfigError(
                f"{settings.key_of('ssl.cipher.suites')}: no cipher of {ciphers!r} is available"
            ) from None
    location = settings.get("ssl.keystore.location")
    if not location:
        raise ConfigError(
            f"ssl.keystore.location: listener {settings.listener_name} uses TLS and needs a key store "
            f"(for example --set ssl.keystore.location=/etc/kafkalog/broker.pem)"
        )
    load_keystore(
        context,
        settings.key_of("ssl.keystore.location") or "ssl.keystore.location",
        location,
        settings.get("ssl.keystore.type"),
        settings.get("ssl.keystore.password"),
        settings.get("ssl.key.password"),
    )
    client_auth = (settings.get("ssl.client.auth") or "none").lower()
    if client_auth not in CLIENT_AUTH:
        raise ConfigError(
            f"{settings.key_of('ssl.client.auth')}: {client_auth!r} is not one of {', '.join(CLIENT_AUTH)}"
        )
    truststore = settings.get("ssl.truststore.location")
    if truststore:
        load_truststore(
            context,
            settings.key_of("ssl.truststore.location") or "ssl.truststore.location",
            truststore,
            settings.get("ssl.truststore.type"),
            settings.get("ssl.truststore.password"),
        )
    elif client_auth != "none":
        raise ConfigError(
            f"ssl.truststore.location: ssl.client.auth={client_auth} on listener "
            f"{settings.listener_name} needs the CA certificates that sign client certificates"
        )
    context.verify_mode = CLIENT_AUTH[client_auth]
    return context


def client_context(
    ca_location: str | None,
    ca_type: str | None = None,
    ca_password: str | None = None,
    check_hostname: bool = True,
    keystore: tuple | None = None,
    key_names: tuple = ("ssl.truststore.location", "ssl.keystore.location"),
) -> ssl.SSLContext:
    """A client's TLS context: the system's CAs or the given trust store, the host name checked
    unless told otherwise, and optionally a client certificate (``keystore``: location, type,
    store password, key password)."""
    context = ssl.create_default_context()
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if ca_location:
        load_truststore(context, key_names[0], ca_location, ca_type, ca_password)
    context.check_hostname = check_hostname
    if keystore:
        load_keystore(context, key_names[1], *keystore)
    return context


def principal_of(der_certificate: bytes | None) -> str | None:
    """``User:<subject in RFC 4514>`` of a peer certificate, or None without one."""
    if not der_certificate:
        return None
    from cryptography import x509

    return "User:" + x509.load_der_x509_certificate(der_certificate).subject.rfc4514_string()


def handshake_failure(exc: BaseException) -> str:
    """Why a server-side TLS handshake failed, in words an operator can act on."""
    if isinstance(exc, TimeoutError) or "taking longer" in str(exc):  # asyncio's handshake timeout
        return "the client did not finish the TLS handshake in time"
    reason = getattr(exc, "reason", None) or str(exc) or type(exc).__name__
    if reason in (
        "WRONG_VERSION_NUMBER",
        "HTTP_REQUEST",
        "UNKNOWN_PROTOCOL",
        "RECORD_LAYER_FAILURE",
        "UNEXPECTED_RECORD",
        "PACKET_LENGTH_TOO_LONG",
    ):
        return f"not a TLS client ({reason}): is it using security.protocol PLAINTEXT or SASL_PLAINTEXT?"
    return f"TLS handshake failed ({reason})"
