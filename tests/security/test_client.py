"""The project's client over SSL, SASL_PLAINTEXT and SASL_SSL (PLAIN and SCRAM): produce, a large
fetch (copied in pieces under TLS), and the failures named clearly and not retried."""

import pytest

from broker.client import AuthenticationError, KafkaClient, NewTopic, SecuritySettingError, from_settings
from broker.records import record_set

from .conftest import PLAIN_JAAS, SASL_PLAINTEXT, SASL_SSL, SCRAM_PASSWORD, SCRAM_USER
from .third_party import unique_topic

SCRAM_JAAS = (
    f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{SCRAM_USER}" '
    f'password="{SCRAM_PASSWORD}";'
)


def client_for(broker, listener: int, settings: dict, **kwargs) -> KafkaClient:
    return KafkaClient(
        broker.bootstrap_of(listener),
        timeout=10,
        retries=1,
        retry_backoff_ms=10,
        security=from_settings(settings),
        **kwargs,
    )


@pytest.mark.parametrize(
    "listener, settings",
    [
        (
            SASL_PLAINTEXT,
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": SCRAM_JAAS},
        ),
        (
            SASL_PLAINTEXT,
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanisms": "PLAIN",
                "sasl.username": "plainuser",
                "sasl.password": "plain-secret-1",
            },
        ),
        (
            SASL_SSL,
            {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": SCRAM_JAAS},
        ),
    ],
)
def test_produce_and_a_large_fetch(sasl_broker, certificates, listener, settings):
    if listener == SASL_SSL:
        settings = {**settings, "ssl.truststore.location": certificates.ca_pem}
    topic = unique_topic("client")
    values = [bytes([i]) * 300_000 for i in range(4)]  # 1.2 MB: more than one 256 KiB TLS piece
    with client_for(sasl_broker, listener, settings) as client:
        client.create_topics([NewTopic(topic, 1)])
        for value in values:
            client.produce(topic, 0, [(None, value)])
        fetched = client.fetch(topic, 0, 0, max_bytes=4_000_000)
        assert [bytes(r.value) for _, r in record_set.iter_user_records(fetched.records)] == values


def test_a_wrong_password_is_an_authentication_error_naming_the_user(sasl_broker):
    settings = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": SCRAM_JAAS.replace(SCRAM_PASSWORD, "not-the-password"),
    }
    with pytest.raises(AuthenticationError) as failure, client_for(sasl_broker, SASL_PLAINTEXT, settings) as client:
        client.topics()
    assert f"refused user '{SCRAM_USER}' with SCRAM-SHA-512: Authentication failed" in str(failure.value)
    assert "not-the-password" not in str(failure.value)


def test_an_untrusted_certificate_and_host_names(sasl_broker, certificates):
    settings = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": SCRAM_JAAS,
        "ssl.ca.location": certificates.other_ca_pem,
    }
    with (
        pytest.raises(AuthenticationError, match="certificate is not trusted"),
        client_for(sasl_broker, SASL_SSL, settings) as client,
    ):
        client.topics()
    settings["ssl.ca.location"] = certificates.ca_pem
    wrong_host = KafkaClient(
        f"localhost:{sasl_broker.ports[SASL_SSL]}", timeout=10, retries=0, security=from_settings(settings)
    )
    assert wrong_host.topics() is not None  # localhost is in the certificate


@pytest.mark.parametrize(
    "settings, message",
    [
        (
            {"security.protocol": "TLS"},
            "security.protocol: 'TLS' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
        ),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}, "sasl.mechanism: 'GSSAPI' is not supported"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "needs a user name and password"),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": 'Plain required username="u" password="hidden-pw";',
            },
            "login module Plain is not supported",
        ),
        (
            {"security.protocol": "SSL", "ssl.truststore.location": "/nonexistent/ca.pem"},
            "ssl.truststore.location: /nonexistent/ca.pem: No such file or directory",
        ),
    ],
)
def test_bad_settings_name_the_setting_and_hide_secrets(settings, message):
    with pytest.raises(SecuritySettingError) as failure:
        from_settings(settings)
    assert message in str(failure.value) and "hidden-pw" not in str(failure.value)


def test_the_settings_never_show_a_password():
    security = from_settings(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": PLAIN_JAAS.replace("user_plainuser", "username").replace(
                'user_other="other-secret"', 'password="hidden-pw"'
            ),
        }
    )
    assert security.password == "hidden-pw" and "hidden-pw" not in repr(security)


def test_every_command_takes_a_command_config(sasl_broker, certificates, tmp_path):
    import subprocess
    import sys

    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"
        f"sasl.jaas.config={SCRAM_JAAS}\nssl.truststore.location={certificates.ca_pem}\n"
    )
    bootstrap = sasl_broker.bootstrap_of(SASL_SSL)

    def kafkalog(*args, stdin=None):
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "broker.cli",
                *args,
                "--bootstrap-server",
                bootstrap,
                "--command-config",
                str(config),
                "--timeout",
                "10",
            ],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert kafkalog("topics", "create", "cli-secured", "--partitions", "1").returncode == 0
    assert kafkalog("produce", "cli-secured", stdin="one\ntwo\n").returncode == 0
    consumed = kafkalog("consume", "cli-secured", "--max-messages", "2")
    assert [line.split()[-1] for line in consumed.stdout.splitlines()] == ["one", "two"], consumed.stderr
    planned = subprocess.run(
        [
            sys.executable,
            "-m",
            "broker.cli",
            "load",
            "--topics",
            "cli-secured",
            "--output",
            str(tmp_path / "out"),
            "--dry-run",
            "--bootstrap-servers",
            bootstrap,
            "--command-config",
            str(config),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert planned.returncode == 0 and "cli-secured" in planned.stdout, planned.stderr  # planned over SASL_SSL
    config.write_text(config.read_text().replace(SCRAM_PASSWORD, "bad-pw-77"))
    refused = kafkalog("topics", "list")
    assert refused.returncode == 1 and "Authentication failed" in refused.stderr and "bad-pw-77" not in refused.stderr
    assert refused.stderr.count("\n") == 1


def test_a_jks_trust_store_as_spark_users_have_them(sasl_broker, certificates):
    from .conftest import KEYSTORE_PASSWORD

    settings = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": SCRAM_JAAS,
        "ssl.truststore.location": certificates.ca_jks,
        "ssl.truststore.type": "JKS",
        "ssl.truststore.password": KEYSTORE_PASSWORD,
    }
    with client_for(sasl_broker, SASL_SSL, settings) as client:
        assert client.metadata().brokers
    for password in (None, KEYSTORE_PASSWORD):  # Java skips the integrity check without a password, so do we
        settings["ssl.truststore.password"] = password
        assert from_settings({k: v for k, v in settings.items() if v is not None}).uses_tls
    settings["ssl.truststore.password"] = "hidden-wrong"
    with pytest.raises(SecuritySettingError, match="the trust store's password is wrong") as failure:
        from_settings(settings)
    assert "hidden-wrong" not in str(failure.value)
    settings.update({"ssl.truststore.location": certificates.ca_pem, "ssl.truststore.password": KEYSTORE_PASSWORD})
    with pytest.raises(SecuritySettingError, match="is not a JKS store"):
        from_settings(settings)


def test_the_brokers_host_name_is_checked_unless_turned_off(start_broker, certificates, tmp_path):
    other_name = tmp_path / "other-name.pem"
    certificates.ca.issue_cert("kafka.example.com").private_key_and_cert_chain_pem.write_to_path(str(other_name))
    broker = start_broker({"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(other_name)})
    settings = {"security.protocol": "SSL", "ssl.truststore.location": certificates.ca_pem}
    with (
        pytest.raises(AuthenticationError, match="IP address mismatch"),
        KafkaClient(broker.bootstrap, timeout=10, retries=0, security=from_settings(settings)) as client,
    ):
        client.topics()
    settings["ssl.endpoint.identification.algorithm"] = ""
    with KafkaClient(broker.bootstrap, timeout=10, retries=0, security=from_settings(settings)) as client:
        assert client.topics() == []
