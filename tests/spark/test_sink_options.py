"""The sink's options parsed without Spark: Kafka's producer defaults (acks all, idempotent), idempotence
off with weaker acks unless asked for (then an error), codecs, batch size, client settings, and the
options Spark hands a streaming sink accepted."""

import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from broker.client import ACKS_ALL
from broker.records.compression import Codec
from spark_kafka_source.options import OptionError
from spark_kafka_source.sink_options import SINK_EXAMPLES, parse_sink
from spark_kafka_source.writing import SinkError, check_columns

from .test_options import DOCS, documented_options

BOOTSTRAP = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def test_defaults_are_kafkas_producer_defaults_but_for_the_batch_size():
    parsed = parse_sink({**BOOTSTRAP, "topic": "events"})
    assert (parsed.topic, parsed.acks, parsed.idempotent, parsed.codec, parsed.batch_bytes) == (
        "events",
        ACKS_ALL,
        True,
        Codec.NONE,
        512 * 1024,
    )


@pytest.mark.parametrize("acks, expected", [("all", ACKS_ALL), ("-1", ACKS_ALL), ("1", 1), ("0", 0)])
def test_idempotence_follows_acks_unless_set(acks, expected):
    parsed = parse_sink({**BOOTSTRAP, "kafka.acks": acks})
    assert (parsed.acks, parsed.idempotent) == (expected, expected == ACKS_ALL)
    assert not parse_sink({**BOOTSTRAP, "kafka.acks": acks, "kafka.enable.idempotence": "false"}).idempotent


def test_producer_settings_reach_the_client():
    parsed = parse_sink(
        {
            **BOOTSTRAP,
            "kafka.compression.type": "ZSTD",
            "kafka.batch.size": "65536",
            "kafka.client.id": "export",
            "kafka.request.timeout.ms": "5000",
            "kafka.retries": "7",
            "kafka.retry.backoff.ms": "50",
            "kafka.linger.ms": "5",
            "kafka.max.block.ms": "100",
        }
    )
    assert (parsed.codec, parsed.batch_bytes) == (Codec.ZSTD, 65536)
    assert (
        parsed.client.client_id,
        parsed.client.timeout_s,
        parsed.client.retries,
        parsed.client.retry_backoff_ms,
    ) == ("export", 5.0, 7, 50)


def test_tls_and_sasl_as_the_source_takes_them():
    parsed = parse_sink(
        {
            **BOOTSTRAP,
            "kafka.security.protocol": "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": "SCRAM-SHA-256",
            "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
            'username="etl" password="hidden-pw";',
        }
    )
    assert (parsed.client.security.mechanism, parsed.client.security.username) == ("SCRAM-SHA-256", "etl")
    assert "hidden-pw" not in repr(parsed)


def test_include_timestamp_needs_a_timestamp_column():
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType, TimestampType

    from spark_kafka_source.writing import SinkError, check_columns

    parsed = parse_sink({**BOOTSTRAP, "topic": "events", "includeTimestamp": "TRUE"})
    assert parsed.include_timestamp and not parse_sink({**BOOTSTRAP, "topic": "events"}).include_timestamp
    value = StructField("value", BinaryType())
    check_columns(StructType([value, StructField("timestamp", TimestampType())]), parsed)
    for columns, found in [([value], "is missing"), ([value, StructField("timestamp", LongType())], "is bigint")]:
        with pytest.raises(SinkError, match=f"column timestamp {found}; with includeTimestamp"):
            check_columns(StructType(columns), parsed)


def test_the_topic_option_is_trimmed_as_spark_does():
    assert parse_sink({**BOOTSTRAP, "topic": " events "}).topic == "events"
    assert parse_sink(BOOTSTRAP).topic is None


def test_the_topic_option_makes_the_sink_ignore_the_topic_column_whatever_its_type():
    schema = StructType([StructField("value", StringType()), StructField("topic", LongType())])
    check_columns(schema, parse_sink({**BOOTSTRAP, "topic": "events"}))  # as Spark: the option wins
    with pytest.raises(SinkError, match="column topic is bigint; it must be a string"):
        check_columns(schema, parse_sink(BOOTSTRAP))


def test_what_spark_hands_a_streaming_sink_is_accepted():
    assert parse_sink({**BOOTSTRAP, "checkpointLocation": "/tmp/c", "path": "/tmp/p", "includeHeaders": "true"})


@pytest.mark.parametrize(
    "options, expected",
    [
        ({}, "option kafka.bootstrap.servers: is required"),
        ({**BOOTSTRAP, "topic": " "}, "option topic: is empty"),
        ({**BOOTSTRAP, "kafka.batch.size": "0"}, "option kafka.batch.size: 0 must be at least 1"),
        ({**BOOTSTRAP, "kafka.enable.idempotence": "maybe"}, "option kafka.enable.idempotence: 'maybe' is not true"),
        ({**BOOTSTRAP, "includeTimestamp": "yes"}, "option includeTimestamp: 'yes' is not true or false"),
        ({**BOOTSTRAP, "subscribe": "events"}, "option subscribe: unknown option of the kafkalog sink"),
        (
            {**BOOTSTRAP, "acks": "all"},
            "option acks: unknown option of the kafkalog sink; Kafka producer settings take the prefix kafka. "
            '(did you mean kafka.acks?); for example .option("kafka.acks", "all")',
        ),
        ({**BOOTSTRAP, "buffer.memory": "1"}, "(did you mean kafka.buffer.memory?); for example df.write"),
        (
            {**BOOTSTRAP, "kafka.value.serializer": "x"},
            "option kafka.value.serializer: Kafka option 'value.serializer'",
        ),
        ({**BOOTSTRAP, "kafka.key.serializer": "x"}, "option kafka.key.serializer: Kafka option 'key.serializer'"),
        ({**BOOTSTRAP, "kafka.partitioner.class": "P"}, "give each row's partition in a partition column"),
        ({**BOOTSTRAP, "kafka.transactional.id": "t"}, "option kafka.transactional.id: Kafka option"),
        (
            {**BOOTSTRAP, "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "PLAIN"},
            "option kafka.sasl.jaas.config: SASL_SSL needs a user name and password",
        ),
        (
            {**BOOTSTRAP, "kafka.ssl.cipher.suites": "x"},
            "option kafka.ssl.cipher.suites: Kafka option 'ssl.cipher.suites' is",
        ),
    ],
)
def test_bad_options_are_named_with_an_example(options, expected):
    with pytest.raises(OptionError) as raised:
        parse_sink(options)
    assert expected in str(raised.value) and "for example" in str(raised.value)


def test_the_docs_list_sparks_sink_options_first_in_sparks_order():
    documented = documented_options("sink.md", "| Option | Status here | Notes |")
    assert documented[:3] == ["kafka.bootstrap.servers", "topic", "includeHeaders"]
    page = (DOCS / "sink.md").read_text()
    assert [name for name in SINK_EXAMPLES if name and f"`{name}`" not in page] == []
