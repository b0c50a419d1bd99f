"""One Spark read (and a write through the sink) over SASL_SSL with the options a Spark user copies
from a Spark Kafka job, and the password in none of: the query plan, the task checkpoint files, the
errors."""

import os

from broker.client import KafkaClient, NewTopic, from_settings

from .conftest import SASL_SSL, SCRAM_PASSWORD
from .test_client import SCRAM_JAAS


def test_a_spark_read_over_sasl_ssl(spark, sasl_broker, certificates, tmp_path):
    options = {
        "kafka.bootstrap.servers": sasl_broker.bootstrap_of(SASL_SSL),
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": SCRAM_JAAS,
        "kafka.ssl.truststore.location": certificates.ca_pem,
        "kafka.ssl.truststore.type": "PEM",
    }
    client_settings = {
        key[len("kafka.") :]: value for key, value in options.items() if key != "kafka.bootstrap.servers"
    }
    with KafkaClient(options["kafka.bootstrap.servers"], timeout=10, security=from_settings(client_settings)) as client:
        client.create_topics([NewTopic("secured-events", 2)])
        for partition in (0, 1):
            client.produce("secured-events", partition, [(b"k", f"v{partition}-{i}".encode()) for i in range(50)])
    df = (
        spark.read.format("kafkalog")
        .options(**options)
        .option("subscribe", "secured-events")
        .option("taskCheckpointLocation", str(tmp_path / "tasks"))
        .load()
    )
    rows = df.selectExpr("CAST(value AS STRING) AS v").collect()
    assert sorted(r.v for r in rows) == sorted(f"v{p}-{i}" for p in (0, 1) for i in range(50))
    assert SCRAM_PASSWORD not in df._jdf.queryExecution().toString()
    for directory, _, files in os.walk(tmp_path / "tasks"):
        for name in files:
            with open(os.path.join(directory, name), errors="replace") as f:
                assert SCRAM_PASSWORD not in f.read()
    written = spark.createDataFrame([(f"w{i}",) for i in range(20)], "value string")
    written.write.format("kafkalog").mode("append").options(**options).option("topic", "secured-written").save()
    back = spark.read.format("kafkalog").options(**options).option("subscribe", "secured-written").load()
    assert sorted(r.v for r in back.selectExpr("CAST(value AS STRING) AS v").collect()) == sorted(
        f"w{i}" for i in range(20)
    )
    wrong = {**options, "kafka.sasl.jaas.config": SCRAM_JAAS.replace(SCRAM_PASSWORD, "wrong-pw-123")}
    try:
        spark.read.format("kafkalog").options(**wrong).option("subscribe", "secured-events").load().count()
        raise AssertionError("a wrong password was accepted")
    except Exception as exc:  # Spark's AnalysisException, naming the refusal
        assert "Authentication failed" in str(exc) and "wrong-pw-123" not in str(exc)
