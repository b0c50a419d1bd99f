"""A scheduled load over SASL_SSL, as a user of a secured cluster runs it: ``kafkalog load`` with
Kafka's ``--command-config`` file reads every record once into the output, and the password is in
none of the checkpoint's files, the output or what the job printed."""

import os

from broker.client import KafkaClient, NewTopic, from_settings

from ..jobs.loads import load_args, ok, output_rows, run_load
from .conftest import SASL_SSL, SCRAM_PASSWORD
from .test_client import SCRAM_JAAS


def test_a_load_over_sasl_ssl_from_a_command_config(spark, sasl_broker, certificates, tmp_path):
    settings = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": SCRAM_JAAS,
        "ssl.truststore.location": certificates.ca_pem,
    }
    config = tmp_path / "client.properties"
    config.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    bootstrap = sasl_broker.bootstrap_of(SASL_SSL)
    with KafkaClient(bootstrap, timeout=10, security=from_settings(settings)) as client:
        client.create_topics([NewTopic("secured-loads", 2)])
        for partition in (0, 1):
            client.produce("secured-loads", partition, [(b"k", f"v{partition}-{i}".encode()) for i in range(40)])
    output = tmp_path / "out"
    result = ok(
        run_load(
            load_args(
                bootstrap,
                "secured-loads",
                output,
                "--command-config",
                str(config),
            ),
            tmp_path,
        )
    )
    rows = output_rows(output)
    assert sorted((r.partition, r.offset, r.value) for r in rows) == sorted(
        (p, i, f"v{p}-{i}".encode()) for p in (0, 1) for i in range(40)
    )
    assert SCRAM_PASSWORD not in result.stdout + result.stderr
    for directory, _, files in os.walk(output):
        for name in files:
            with open(os.path.join(directory, name), "rb") as f:
                assert SCRAM_PASSWORD.encode() not in f.read(), os.path.join(directory, name)
