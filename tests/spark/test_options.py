"""Options of the kafkalog source: Spark's names, defaults and precedence; every invalid option named."""

import pathlib
import re

import pytest

from broker.client import READ_COMMITTED, READ_UNCOMMITTED
from spark_kafka_source.options import _CANONICAL, EXAMPLES, OptionError, parse

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "events"}


def with_options(**changes):
    options = dict(BASE)
    for key, value in changes.items():
        key = key.replace("__", ".")
        if value is None:
            options.pop(key, None)
        else:
            options[key] = value
    return options


def test_defaults_are_sparks():
    parsed = parse(BASE)
    assert parsed.subscribe == ("events",) and parsed.assign is None and parsed.subscribe_pattern is None
    assert parsed.starting.kind == "earliest" and parsed.ending.kind == "latest"
    assert parsed.fail_on_data_loss is True and parsed.include_headers is False
    assert parsed.min_partitions is None and parsed.max_records_per_partition is None
    assert parsed.on_no_matching_start == "error"


def test_names_are_case_insensitive():
    parsed = parse(
        {
            "KAFKA.BOOTSTRAP.SERVERS": "h:1",
            "SubScribe": "a, b",
            "STARTINGOFFSETS": "earliest",
            "failondataloss": "FALSE",
            "IncludeHeaders": "True",
        }
    )
    assert parsed.subscribe == ("a", "b") and parsed.fail_on_data_loss is False and parsed.include_headers is True


def test_assign_and_offset_json():
    parsed = parse(
        with_options(
            subscribe=None,
            assign='{"t":[1,0,1],"u":[3]}',
            startingOffsets='{"t":{"0":23,"1":-2},"u":{"3":5}}',
            endingOffsets='{"t":{"0":50,"1":-1},"u":{"3":9}}',
        )
    )
    assert parsed.assign == {"t": [0, 1], "u": [3]}
    assert parsed.starting.offsets == {("t", 0): 23, ("t", 1): -2, ("u", 3): 5}
    assert parsed.ending.offsets == {("t", 0): 50, ("t", 1): -1, ("u", 3): 9}


def test_precedence_timestamp_over_by_timestamp_over_offsets():
    parsed = parse(
        with_options(
            startingTimestamp="1000",
            startingOffsetsByTimestamp='{"events":{"0":5}}',
            startingOffsets='{"events":{"0":1}}',
            endingOffsetsByTimestamp='{"events":{"0":9}}',
            endingOffsets="latest",
        )
    )
    assert parsed.starting.kind == "timestamp" and parsed.starting.timestamp == 1000
    assert parsed.ending.kind == "timestamps" and parsed.ending.timestamps == {("events", 0): 9}
    parsed = parse(with_options(startingOffsetsByTimestamp='{"events":{"0":5}}', startingOffsets='{"events":{"0":1}}'))
    assert parsed.starting.kind == "timestamps"


def test_client_settings_from_kafka_options():
    parsed = parse(
        with_options(
            **{
                "kafka.client.id": "me",
                "kafka.request.timeout.ms": "5000",
                "kafka.max.partition.fetch.bytes": "1048576",
                "kafka.fetch.max.bytes": "2097152",
                "fetchOffset.numRetries": "7",
                "fetchOffset.retryIntervalMs": "10",
                "kafka.group.id": "ignored",
                "kafka.session.timeout.ms": "1",
                "kafka.security.protocol": "plaintext",
            }
        )
    )
    client = parsed.client
    assert (client.client_id, client.timeout_s, client.partition_fetch_bytes, client.fetch_max_bytes) == (
        "me",
        5.0,
        1048576,
        2097152,
    )
    assert (client.retries, client.retry_backoff_ms) == (7, 10)
    assert client.check_crcs is True and parse(with_options(**{"kafka.check.crcs": "false"})).client.check_crcs is False


@pytest.mark.parametrize(
    ("value", "level"),
    [(None, READ_UNCOMMITTED), ("read_uncommitted", READ_UNCOMMITTED), (" Read_Committed ", READ_COMMITTED)],
)
def test_isolation_level_defaults_to_read_uncommitted_as_spark(value, level):
    changes = {} if value is None else {"kafka.isolation.level": value}
    settings = parse(with_options(**changes)).client
    assert settings.isolation_level == level
    assert settings.client("127.0.0.1:9").isolation_level == level


def test_streaming_only_options_are_ignored_with_a_warning(caplog):
    parse(with_options(maxOffsetsPerTrigger="100"))
    assert "maxOffsetsPerTrigger only applies to streaming queries" in caplog.text


def test_group_id_prefix_is_ignored_with_a_warning_when_the_group_id_is_set(caplog):
    parse(with_options(groupIdPrefix="etl"))
    assert "groupIdPrefix" not in caplog.text
    parse(with_options(groupIdPrefix="etl", **{"kafka.group.id": "etl-readers"}))
    assert "option groupIdPrefix is ignored: kafka.group.id is set" in caplog.text


@pytest.mark.parametrize(
    "text, ms",
    [
        ("15m", 900_000),
        ("500", 500),
        ("500ms", 500),
        ("30s", 30_000),
        ("2min", 120_000),
        (" 1H ", 3_600_000),
        ("1d", 86_400_000),
        ("1500us", 1),
    ],
)
def test_max_trigger_delay_reads_sparks_time_units(text, ms):
    assert parse(with_options(maxTriggerDelay=text), "stream").limits.max_delay_ms == ms


@pytest.mark.parametrize("text", ["soon", "30 s", "30sec", "1.5s", "", "-1s"])
def test_a_duration_spark_cannot_read_or_a_negative_one_is_refused(text):
    with pytest.raises(OptionError, match=f"option maxTriggerDelay: {re.escape(repr(text))} is not a duration"):
        parse(with_options(maxTriggerDelay=text), "stream")


@pytest.mark.parametrize(
    "name, example",
    [
        ("group.id", '.option("kafka.group.id", '),
        ("auto.offset.reset", '.option("startingOffsets", "earliest")'),  # the Spark way, as kafka.auto.offset.reset
        ("check.crcs", '.option("kafka.check.crcs", '),
        ("session.timeout.ms", 'spark.read.format("kafkalog")'),
    ],
)
def test_a_kafka_setting_without_its_prefix_is_refused_naming_the_prefixed_one(name, example):
    with pytest.raises(OptionError) as raised:
        parse(with_options(**{name.replace(".", "__"): "x"}))
    assert str(raised.value).startswith(
        f"option {name}: unknown option of the kafkalog source; Kafka client settings take the "
        f"prefix kafka. (did you mean kafka.{name}?); for example {example}"
    )


# (changes, the option the message must name, what it must say, the example it must show)
INVALID = [
    ({"kafka.bootstrap.servers": None}, "kafka.bootstrap.servers", "is required", '"127.0.0.1:9092"'),
    (
        {"kafka.bootstrap.servers": "localhost"},
        "kafka.bootstrap.servers",
        "'localhost' is not a list of host:port",
        '"127.0.0.1:9092"',
    ),
    (
        {"subscribe": None},
        "subscribe",
        "exactly one of the options assign, subscribe, subscribePattern must be given, got none",
        '.option("subscribe"',
    ),
    ({"assign": '{"t":[0]}'}, "assign", "got assign and subscribe", '.option("subscribe"'),
    ({"subscribe": " , "}, "subscribe", "no topics to subscribe to", '.option("subscribe", "events,clicks")'),
    (
        {"subscribe": None, "subscribePattern": "("},
        "subscribePattern",
        "'(' is not a valid regular expression",
        '.option("subscribePattern", "events-.*")',
    ),
    ({"subscribe": None, "subscribePattern": " "}, "subscribePattern", "the pattern is empty", '"events-.*"'),
    (
        {"subscribe": None, "assign": "[0,1]"},
        "assign",
        "must be a JSON object of topics to lists of partitions",
        """.option("assign", '{"events":[0,1]}')""",
    ),
    ({"subscribe": None, "assign": '{"t":[-1]}'}, "assign", "must be a JSON object", '{"events":[0,1]}'),
    ({"subscribe": None, "assign": "{oops"}, "assign", "'{oops' is not valid JSON", '{"events":[0,1]}'),
    ({"startingOffsets": "latest"}, "startingOffsets", "a batch query cannot start at latest", '"earliest"'),
    (
        {"startingOffsets": '{"events":{"0":-1}}'},
        "startingOffsets",
        "events-0 cannot start at latest (-1) in a batch query",
        '"1":-2',
    ),
    ({"endingOffsets": "earliest"}, "endingOffsets", "a batch query cannot end at earliest", '"latest"'),
    (
        {"endingOffsets": '{"events":{"0":-2}}'},
        "endingOffsets",
        "events-0 cannot end at earliest (-2) in a batch query",
        '"1":-1',
    ),
    (
        {"startingOffsets": '{"events":{"x":1}}'},
        "startingOffsets",
        "'x' of topic 'events' is not a partition",
        '.option("startingOffsets"',
    ),
    (
        {"startingOffsets": '{"events":{"0":-3}}'},
        "startingOffsets",
        "events-0: -3 is not an integer >= -2",
        '.option("startingOffsets"',
    ),
    (
        {"startingOffsets": '{"events":{"0":5}}', "endingOffsets": '{"events":{"0":3}}'},
        "endingOffsets",
        "events-0 ends at 3, before its start 5",
        '.option("endingOffsets"',
    ),
    (
        {"startingOffsets": '{"events":{"0":5}}', "endingOffsets": '{"events":{"1":9}}'},
        "endingOffsets",
        "must name the same topic partitions",
        '.option("endingOffsets"',
    ),
    (
        {"startingTimestamp": "yesterday"},
        "startingTimestamp",
        "'yesterday' is not an integer",
        '.option("startingTimestamp", "1700000000000")',
    ),
    ({"startingTimestamp": "-5"}, "startingTimestamp", "-5 must be at least 0", '"1700000000000"'),
    (
        {"startingTimestamp": "2000", "endingTimestamp": "1000"},
        "endingTimestamp",
        "1000 is before",
        '.option("endingTimestamp"',
    ),
    (
        {"startingOffsetsByTimestamp": '{"events":{"0":-1}}'},
        "startingOffsetsByTimestamp",
        "events-0: -1",
        '{"events":{"0":1700000000000}}',
    ),
    (
        {"startingOffsetsByTimestampStrategy": "earliest"},
        "startingOffsetsByTimestampStrategy",
        "'earliest' is not one of error, latest",
        '.option("startingOffsetsByTimestampStrategy", "latest")',
    ),
    ({"failOnDataLoss": "maybe"}, "failOnDataLoss", "'maybe' is not true or false", '"false"'),
    ({"includeHeaders": "1"}, "includeHeaders", "'1' is not true or false", '"true"'),
    ({"minPartitions": "0"}, "minPartitions", "0 must be at least 1", '.option("minPartitions", "8")'),
    ({"maxRecordsPerPartition": "many"}, "maxRecordsPerPartition", "'many' is not an integer", '"1000000"'),
    ({"kafkaConsumer.pollTimeoutMs": "0"}, "kafkaConsumer.pollTimeoutMs", "0 must be at least 1", '"120000"'),
    ({"fetchOffset.numRetries": "-1"}, "fetchOffset.numRetries", "-1 must be at least 0", '"3"'),
    ({"fetchOffset.retryIntervalMs": "soon"}, "fetchOffset.retryIntervalMs", "'soon' is not an integer", '"1000"'),
    ({"taskCheckpointLocation": " "}, "taskCheckpointLocation", "the location is empty", "file:///"),
    ({"startingOffsetsFromCheckpoint": ""}, "startingOffsetsFromCheckpoint", "the location is empty", "hdfs://"),
    (
        {"startingOffsetsFromCheckpoint": "/c", "startingTimestamp": "5"},
        "startingOffsetsFromCheckpoint",
        "cannot be combined with startingTimestamp",
        "hdfs://",
    ),
    # unknown names: the closest known one, with its example; a path; anything else: a whole read
    # (named with the capitals of the option they resemble: Spark hands the names over lower-cased)
    (
        {"startingOffset": "earliest"},
        "startingOffset",
        "unknown option of the kafkalog source (did you mean startingOffsets?)",
        '.option("startingOffsets", ',
    ),
    (
        {"MaxRecordPerPartition": "5"},
        "maxRecordPerPartition",
        "did you mean maxRecordsPerPartition?",
        '.option("maxRecordsPerPartition", "1000000")',
    ),
    (
        {"maxoffsetpertrigger": "5"},
        "maxOffsetPerTrigger",
        "did you mean maxOffsetsPerTrigger?",
        '.option("maxOffsetsPerTrigger", "100000")',
    ),
    ({"path": "/data"}, "path", "the kafkalog source reads topics, not a path", '.option("subscribe", '),
    (
        {"colour": "blue"},
        "colour",
        "unknown option of the kafkalog source",
        'spark.read.format("kafkalog").option("kafka.bootstrap.servers", ',
    ),
    # kafka.* settings Spark refuses: the Spark way as the example
    (
        {"kafka.auto.offset.reset": "earliest"},
        "kafka.auto.offset.reset",
        "Kafka option 'auto.offset.reset' is not supported: set the source option 'startingOffsets'",
        '.option("startingOffsets", "earliest")',
    ),
    (
        {"kafka.key.deserializer": "x"},
        "kafka.key.deserializer",
        "Kafka option 'key.deserializer' is not supported",
        "CAST(key AS STRING)",
    ),
    (
        {"kafka.value.deserializer": "x"},
        "kafka.value.deserializer",
        "Kafka option 'value.deserializer' is not supported",
        'from_json(col("value")',
    ),
    (
        {"kafka.enable.auto.commit": "true"},
        "kafka.enable.auto.commit",
        "Kafka option 'enable.auto.commit' is not supported",
        '.option("startingOffsetsFromCheckpoint", ',
    ),
    (
        {"kafka.interceptor.classes": "x"},
        "kafka.interceptor.classes",
        "Kafka option 'interceptor.classes' is not supported",
        "df.withColumn(",
    ),
    (
        {"kafka.security.protocol": "SASL_SSL"},
        "kafka.sasl.mechanism",
        "'GSSAPI' is not supported; use one of PLAIN",
        '.option("kafka.sasl.mechanism", "SCRAM-SHA-512")',
    ),
    (
        {"kafka.security.protocol": "TLS"},
        "kafka.security.protocol",
        "'TLS' is not one of PLAINTEXT, SSL",
        '.option("kafka.security.protocol", "SSL")',
    ),
    (
        {"kafka.security.protocol": "SSL", "kafka.ssl.truststore.location": "/x"},
        "kafka.ssl.truststore.location",
        "/x: No such file or directory",
        '.option("kafka.ssl.truststore.location", "/etc/kafka/ca.pem")',
    ),
    (
        {"kafka.ssl.cipher.suites": "x"},
        "kafka.ssl.cipher.suites",
        "not supported by the kafkalog source",
        '.option("kafka.ssl.truststore.location", "/etc/kafka/ca.pem")',
    ),
    (
        {
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.jaas.config": "nonsense hidden-pw",
        },
        "kafka.sasl.jaas.config",
        "not a JAAS login entry",
        "ScramLoginModule required",
    ),
    (
        {"kafka.isolation.level": "dirty"},
        "kafka.isolation.level",
        "'dirty' is not one of read_uncommitted, read_committed",
        '.option("kafka.isolation.level", "read_committed")',
    ),
    (
        {"kafka.check.crcs": "no"},
        "kafka.check.crcs",
        "'no' is not true or false",
        '.option("kafka.check.crcs", "false")',
    ),
    (
        {"kafka.request.timeout.ms": "0"},
        "kafka.request.timeout.ms",
        "0 must be at least 1",
        '.option("kafka.request.timeout.ms", "30000")',
    ),
    (
        {"kafka.fetch.max.bytes": "big"},
        "kafka.fetch.max.bytes",
        "'big' is not an integer",
        '.option("kafka.fetch.max.bytes", ',
    ),
    (
        {"kafka.max.partition.fetch.bytes": "0"},
        "kafka.max.partition.fetch.bytes",
        "0 must be at least 1",
        '.option("kafka.max.partition.fetch.bytes", ',
    ),
]


@pytest.mark.parametrize("changes, option, problem, example", INVALID, ids=[f"{o}-{p[:30]}" for _, o, p, _ in INVALID])
def test_each_invalid_option_is_refused_naming_it_with_a_valid_example(changes, option, problem, example):
    with pytest.raises(OptionError) as raised:
        parse(with_options(**changes))
    message = str(raised.value)
    assert problem in message, message
    if message.startswith("exactly one of the options"):
        assert option in message, message
    else:
        assert message.startswith(f"option {option}: "), message
    assert "; for example " in message, message
    assert example in message.split("; for example ", 1)[1], message


def test_errors_show_a_valid_example():
    with pytest.raises(OptionError, match=r'for example \.option\("minPartitions", "8"\)'):
        parse(with_options(minPartitions="-1"))


def test_every_option_has_its_own_example():
    assert sorted(set(_CANONICAL.values()) - set(EXAMPLES)) == []


EXAMPLE_OPTION = re.compile(r"""^\.option\("([^"]+)", (?:'([^']*)'|"([^"]*)")\)""")


@pytest.mark.parametrize("option", sorted(k for k, v in EXAMPLES.items() if EXAMPLE_OPTION.match(v)))
def test_each_example_is_itself_a_valid_option(option):
    name, quoted_json, quoted = EXAMPLE_OPTION.match(EXAMPLES[option]).groups()
    value = quoted_json if quoted_json is not None else quoted
    changes = {name: value}
    if name in ("assign", "subscribePattern"):
        changes["subscribe"] = None  # exactly one of them
    parse(with_options(**changes))  # an OptionError here: the example shown to users is invalid


# Spark 4's Kafka source options, in the order of its integration guide (maxRecordsPerPartition, in
# its code but not yet in its guide, after minPartitions)
SPARK_SOURCE_OPTIONS = [
    "assign",
    "subscribe",
    "subscribePattern",
    "kafka.bootstrap.servers",
    "startingTimestamp",
    "startingOffsetsByTimestamp",
    "startingOffsets",
    "endingTimestamp",
    "endingOffsetsByTimestamp",
    "endingOffsets",
    "failOnDataLoss",
    "kafkaConsumer.pollTimeoutMs",
    "fetchOffset.numRetries",
    "fetchOffset.retryIntervalMs",
    "maxOffsetsPerTrigger",
    "minOffsetsPerTrigger",
    "maxTriggerDelay",
    "minPartitions",
    "maxRecordsPerPartition",
    "groupIdPrefix",
    "kafka.group.id",
    "includeHeaders",
    "startingOffsetsByTimestampStrategy",
]
DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "spark"


def documented_options(page: str, header: str) -> list[str]:
    """The option named first in the first cell of each row of the table under ``header`` in a docs
    page (the cell itself when it names none)."""
    lines = (DOCS / page).read_text().splitlines()
    rows = []
    for line in lines[lines.index(header) + 2 :]:
        if not line.startswith("|"):
            break
        cell = line.split("|")[1].strip()
        named = re.match(r"(?:\*\*added\*\*: )?`([^`]+)`", cell)
        rows.append(named.group(1) if named else cell)
    return rows


def test_the_docs_list_every_spark_source_option_in_sparks_order():
    assert documented_options("batch.md", "| Spark option | Query | Status here | Notes |") == SPARK_SOURCE_OPTIONS


def test_every_spark_source_option_is_one_of_the_sources():
    assert {name.lower() for name in SPARK_SOURCE_OPTIONS if not name.startswith("kafka.")} <= set(_CANONICAL)


def test_every_option_of_the_source_is_documented():
    page = (DOCS / "batch.md").read_text()
    assert [name for name in _CANONICAL.values() if f"`{name}`" not in page] == []
