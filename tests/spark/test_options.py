"""Options of the kafkalog source: Spark's names, defaults and precedence; every invalid option named."""

import pytest

from spark_kafka_source.options import OptionError, parse

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
    parsed = parse({"KAFKA.BOOTSTRAP.SERVERS": "h:1", "SubScribe": "a, b", "STARTINGOFFSETS": "earliest",
                    "failondataloss": "FALSE", "IncludeHeaders": "True"})
    assert parsed.subscribe == ("a", "b") and parsed.fail_on_data_loss is False and parsed.include_headers is True


def test_assign_and_offset_json():
    parsed = parse(with_options(subscribe=None, assign='{"t":[1,0,1],"u":[3]}',
                                startingOffsets='{"t":{"0":23,"1":-2},"u":{"3":5}}',
                                endingOffsets='{"t":{"0":50,"1":-1},"u":{"3":9}}'))
    assert parsed.assign == {"t": [0, 1], "u": [3]}
    assert parsed.starting.offsets == {("t", 0): 23, ("t", 1): -2, ("u", 3): 5}
    assert parsed.ending.offsets == {("t", 0): 50, ("t", 1): -1, ("u", 3): 9}


def test_precedence_timestamp_over_by_timestamp_over_offsets():
    parsed = parse(with_options(startingTimestamp="1000", startingOffsetsByTimestamp='{"events":{"0":5}}',
                                startingOffsets='{"events":{"0":1}}', endingOffsetsByTimestamp='{"events":{"0":9}}',
                                endingOffsets="latest"))
    assert parsed.starting.kind == "timestamp" and parsed.starting.timestamp == 1000
    assert parsed.ending.kind == "timestamps" and parsed.ending.timestamps == {("events", 0): 9}
    parsed = parse(with_options(startingOffsetsByTimestamp='{"events":{"0":5}}', startingOffsets='{"events":{"0":1}}'))
    assert parsed.starting.kind == "timestamps"


def test_client_settings_from_kafka_options():
    parsed = parse(with_options(**{"kafka.client.id": "me", "kafka.request.timeout.ms": "5000",
                                   "kafka.max.partition.fetch.bytes": "1048576", "kafka.fetch.max.bytes": "2097152",
                                   "fetchOffset.numRetries": "7", "fetchOffset.retryIntervalMs": "10",
                                   "kafka.group.id": "ignored", "kafka.session.timeout.ms": "1",
                                   "kafka.security.protocol": "plaintext"}))
    client = parsed.client
    assert (client.client_id, client.timeout_s, client.partition_fetch_bytes, client.fetch_max_bytes) == \
        ("me", 5.0, 1048576, 2097152)
    assert (client.retries, client.retry_backoff_ms) == (7, 10)
    assert client.check_crcs is True and parse(with_options(**{"kafka.check.crcs": "false"})).client.check_crcs is False


def test_streaming_only_options_are_ignored_with_a_warning(caplog):
    parse(with_options(maxOffsetsPerTrigger="100"))
    assert "maxOffsetsPerTrigger only applies to streaming queries" in caplog.text


INVALID = [
    ({"kafka.bootstrap.servers": None}, "option kafka.bootstrap.servers: is required; for example"),
    ({"kafka.bootstrap.servers": "localhost"}, "option kafka.bootstrap.servers: 'localhost' is not a list of host:port"),
    ({"subscribe": None}, "exactly one of the options assign, subscribe, subscribePattern must be given, got none"),
    ({"assign": '{"t":[0]}'}, "got assign and subscribe"),
    ({"subscribe": " , "}, "option subscribe: no topics to subscribe to"),
    ({"subscribe": None, "subscribePattern": "("}, "option subscribePattern: '(' is not a valid regular expression"),
    ({"subscribe": None, "subscribePattern": " "}, "option subscribePattern: the pattern is empty"),
    ({"subscribe": None, "assign": "[0,1]"}, "option assign: must be a JSON object of topics to lists of partitions"),
    ({"subscribe": None, "assign": '{"t":[-1]}'}, "option assign: must be a JSON object"),
    ({"subscribe": None, "assign": "{oops"}, "option assign: '{oops' is not valid JSON"),
    ({"startingOffsets": "latest"}, "option startingOffsets: a batch query cannot start at latest"),
    ({"startingOffsets": '{"events":{"0":-1}}'}, "events-0 cannot start at latest (-1) in a batch query"),
    ({"endingOffsets": "earliest"}, "option endingOffsets: a batch query cannot end at earliest"),
    ({"endingOffsets": '{"events":{"0":-2}}'}, "events-0 cannot end at earliest (-2) in a batch query"),
    ({"startingOffsets": '{"events":{"x":1}}'}, "option startingOffsets: 'x' of topic 'events' is not a partition"),
    ({"startingOffsets": '{"events":{"0":-3}}'}, "events-0: -3 is not an integer >= -2"),
    ({"startingOffsets": '{"events":{"0":5}}', "endingOffsets": '{"events":{"0":3}}'},
     "option endingOffsets: events-0 ends at 3, before its start 5"),
    ({"startingOffsets": '{"events":{"0":5}}', "endingOffsets": '{"events":{"1":9}}'},
     "must name the same topic partitions"),
    ({"startingTimestamp": "yesterday"}, "option startingTimestamp: 'yesterday' is not an integer"),
    ({"startingTimestamp": "-5"}, "option startingTimestamp: -5 must be at least 0"),
    ({"startingTimestamp": "2000", "endingTimestamp": "1000"}, "option endingTimestamp: 1000 is before"),
    ({"startingOffsetsByTimestamp": '{"events":{"0":-1}}'}, "option startingOffsetsByTimestamp: events-0: -1"),
    ({"startingOffsetsByTimestampStrategy": "earliest"}, "'earliest' is not one of error, latest"),
    ({"failOnDataLoss": "maybe"}, "option failOnDataLoss: 'maybe' is not true or false"),
    ({"includeHeaders": "1"}, "option includeHeaders: '1' is not true or false"),
    ({"minPartitions": "0"}, "option minPartitions: 0 must be at least 1"),
    ({"maxRecordsPerPartition": "many"}, "option maxRecordsPerPartition: 'many' is not an integer"),
    ({"startingOffset": "earliest"}, "option startingoffset: unknown option of the kafkalog source; did you mean "
                                     "startingOffsets?"),
    ({"path": "/data"}, "option path: unknown option of the kafkalog source"),
    ({"kafka.auto.offset.reset": "earliest"}, "option kafka.auto.offset.reset: Kafka option 'auto.offset.reset' is "
                                              "not supported: set the source option 'startingOffsets'"),
    ({"kafka.key.deserializer": "x"}, "Kafka option 'key.deserializer' is not supported"),
    ({"kafka.value.deserializer": "x"}, "Kafka option 'value.deserializer' is not supported"),
    ({"kafka.enable.auto.commit": "true"}, "Kafka option 'enable.auto.commit' is not supported"),
    ({"kafka.interceptor.classes": "x"}, "Kafka option 'interceptor.classes' is not supported"),
    ({"kafka.security.protocol": "SASL_SSL"}, "option kafka.security.protocol: TLS and SASL connections are not "
                                              "supported"),
    ({"kafka.ssl.truststore.location": "/x"}, "option kafka.ssl.truststore.location: TLS and SASL"),
    ({"kafka.isolation.level": "dirty"}, "option kafka.isolation.level: 'dirty' is not read_uncommitted"),
    ({"kafka.isolation.level": "read_committed"}, "read_committed is not supported yet (aborted transactions"),
    ({"kafka.check.crcs": "no"}, "option kafka.check.crcs: 'no' is not true or false"),
    ({"kafka.request.timeout.ms": "0"}, "option kafka.request.timeout.ms: 0 must be at least 1"),
]


@pytest.mark.parametrize("changes, message", INVALID, ids=[m[:40] for _, m in INVALID])
def test_each_invalid_option_is_refused_with_its_name(changes, message):
    with pytest.raises(OptionError) as raised:
        parse(with_options(**changes))
    assert message in str(raised.value)


def test_errors_show_a_valid_example():
    with pytest.raises(OptionError, match=r'for example \.option\("minPartitions", "8"\)'):
        parse(with_options(minPartitions="-1"))
