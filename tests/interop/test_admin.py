"""Admin clients against the broker, for every client: create (partitions and a config), list,
describe, delete and re-create a topic; the errors for an existing topic, replication factor 3,
invalid names, zero partitions and unknown or invalid config; ``validate_only``; deleting an
unknown topic; a topic's configs with their sources and synonyms; Kafka topic settings the broker
stores without acting on them; adding partitions, changing a topic's and the broker's settings,
and deleting records, with their errors."""

import pytest

from broker.protocol.errors import ErrorCode

from .client_api import EARLIEST, BrokerError, PartitionInfo
from .clients import clients
from .common import assert_same_records, make_records, topic_configs, with_offsets


def test_admin_creates_lists_describes_and_deletes_a_topic_with_config(broker, client, topic):
    records = with_offsets(make_records(9, partitions=(0, 1, 2)))
    with client.admin() as admin:
        admin.create_topic(topic, 3, configs={"retention.ms": "3600000"})
        assert topic in admin.topic_names()
        described = admin.describe_topic(topic)
        assert (described.name, described.internal) == (topic, False)
        assert described.partitions == [PartitionInfo(p, 0, [0], [0]) for p in (0, 1, 2)]
        assert topic_configs(broker.log_dir, topic) == {"retention.ms": "3600000"}
        client.produce(topic, records)
        assert_same_records(client.consume_all(topic, 9, partitions=(0, 1, 2)), records)

        admin.delete_topic(topic)
        assert topic not in admin.topic_names()
        assert topic_configs(broker.log_dir, topic) is None

        # the same name again: a new, empty topic with its own partition count
        admin.create_topic(topic, 2)
        assert [p.id for p in admin.describe_topic(topic).partitions] == [0, 1]
    with client.consumer() as consumer:
        assert consumer.watermarks(topic, (0, 1)) == {0: (0, 0), 1: (0, 0)}


def test_admin_validate_only_does_not_create(client, topic):
    with client.admin() as admin:
        admin.create_topic(topic, 2, validate_only=True)
        assert topic not in admin.topic_names()


@pytest.mark.parametrize(
    "case, expected",
    [
        ("existing", ErrorCode.TOPIC_ALREADY_EXISTS),
        ("replication-3", ErrorCode.INVALID_REPLICATION_FACTOR),
        ("bad-name", ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("name-too-long", ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("zero-partitions", ErrorCode.INVALID_PARTITIONS),
        ("unknown-config", ErrorCode.INVALID_CONFIG),
        ("bad-config-value", ErrorCode.INVALID_CONFIG),
    ],
)
def test_admin_create_topic_errors(client, topic, case, expected):
    name = {"bad-name": "bad name with spaces!", "name-too-long": "x" * 250}.get(case, topic)
    partitions, replication = (0 if case == "zero-partitions" else 2), (3 if case == "replication-3" else 1)
    configs = {"unknown-config": {"no.such.config": "1"}, "bad-config-value": {"retention.ms": "soon"}}.get(case)
    with client.admin() as admin:
        if case == "existing":
            admin.create_topic(name, 2)
        with pytest.raises(BrokerError) as raised:
            admin.create_topic(name, partitions, replication, configs)
        assert raised.value.code == expected, raised.value
        if case != "existing":
            assert name not in admin.topic_names()


def test_admin_delete_unknown_topic_fails_with_unknown_topic(client, topic):
    with client.admin() as admin, pytest.raises(BrokerError) as raised:
        admin.delete_topic(topic)
    assert raised.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@clients(where=lambda kind: kind.describes_configs)
def test_admin_describes_topic_configs_with_sources_and_synonyms(client, topic):
    with client.admin() as admin:
        admin.create_topic(topic, 2, configs={"retention.ms": "3600000", "max.message.bytes": "500000"})
        configs = admin.topic_configs(topic)
    dynamic, default = "DYNAMIC_TOPIC_CONFIG", "DEFAULT_CONFIG"
    retention, max_bytes, segment = configs["retention.ms"], configs["max.message.bytes"], configs["segment.bytes"]
    assert (retention.value, retention.source, retention.is_default) == ("3600000", dynamic, False)
    assert retention.synonyms == [("retention.ms", "3600000", dynamic), ("log.retention.ms", "604800000", default)]
    assert (max_bytes.value, max_bytes.source, max_bytes.is_default) == ("500000", dynamic, False)
    assert max_bytes.synonyms == [("max.message.bytes", "500000", dynamic), ("message.max.bytes", "1048588", default)]
    assert (segment.value, segment.source, segment.is_default) == ("1073741824", default, True)
    assert all(not c.read_only and not c.sensitive for c in configs.values())
    if client.describes_config_types:
        assert configs["cleanup.policy"].type == "LIST"


def test_admin_creates_a_topic_with_settings_kafka_knows_but_this_broker_only_stores(broker, client, topic):
    settings = {"compression.type": "lz4", "delete.retention.ms": "1000", "min.insync.replicas": "1"}
    with client.admin() as admin:
        admin.create_topic(topic, 1, configs=settings)
        assert topic in admin.topic_names()
    assert topic_configs(broker.log_dir, topic) == settings


def test_admin_adds_partitions_changes_settings_and_deletes_records(broker, client, topic):
    records = with_offsets(make_records(6, partitions=(0,)))
    with client.admin() as admin:
        admin.create_topic(topic, 2)
        client.produce(topic, records)
        admin.add_partitions(topic, 5)
        assert [p.id for p in admin.describe_topic(topic).partitions] == [0, 1, 2, 3, 4]
        admin.set_configs(topic, {"retention.ms": "3600000"})
        assert topic_configs(broker.log_dir, topic) == {"retention.ms": "3600000"}
        if client.describes_configs:
            retention = admin.topic_configs(topic)["retention.ms"]
            assert (retention.value, retention.source) == ("3600000", "DYNAMIC_TOPIC_CONFIG")
        assert admin.delete_records(topic, {0: 4}) == {0: 4}
    with client.consumer() as consumer:
        assert consumer.watermarks(topic, (0, 4)) == {0: (4, 6), 4: (0, 0)}
    assert_same_records(client.consume(topic, {0: EARLIEST}, 2), records[4:])


@pytest.mark.parametrize(
    "case, expected",
    [
        ("fewer-partitions", ErrorCode.INVALID_PARTITIONS),
        ("bad-setting", ErrorCode.INVALID_CONFIG),
        ("delete-past-the-end", ErrorCode.OFFSET_OUT_OF_RANGE),
    ],
)
def test_admin_alter_errors(client, topic, case, expected):
    with client.admin() as admin:
        admin.create_topic(topic, 3)
        with pytest.raises(BrokerError) as raised:
            if case == "fewer-partitions":
                admin.add_partitions(topic, 2)
            elif case == "bad-setting":
                admin.set_configs(topic, {"retention.ms": "soon"})
            else:
                admin.delete_records(topic, {0: 5})
        assert raised.value.code == expected, raised.value
        assert len(admin.describe_topic(topic).partitions) == 3


@clients(where=lambda kind: kind.describes_configs)
def test_admin_changes_and_describes_the_brokers_dynamic_settings(client):
    value = str(86_400_000 + len(client.name))  # each client its own value: the module's broker is shared
    with client.admin() as admin:
        admin.set_configs("0", {"log.cleaner.delete.retention.ms": value}, broker=True)
        configs = admin.broker_configs(0)
    setting = configs["log.cleaner.delete.retention.ms"]
    assert (setting.value, setting.source, setting.read_only) == (value, "DYNAMIC_BROKER_CONFIG", False)
    assert configs["num.partitions"].value == "4" and configs["num.partitions"].read_only
    assert configs["num.partitions"].source == "STATIC_BROKER_CONFIG"
