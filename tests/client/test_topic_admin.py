"""The client's topic admin calls against this project's broker (librdkafka's mock cluster serves
none of them): create with partitions and configs, validate only, per-topic errors, delete, the
effective configs with their sources, partition sizes on disk, and adding partitions, changing
settings and deleting records."""

import os

import pytest

from broker.client import (
    BROKER_RESOURCE,
    DEFAULT_CONFIG,
    EARLIEST,
    ConfigEntry,
    KafkaClient,
    KafkaError,
    NewTopic,
    UnknownTopicOrPartitionError,
)
from broker.log.config import TOPIC_SETTINGS
from broker.protocol.errors import ErrorCode

from .support import topic_for

DYNAMIC_TOPIC_CONFIG = 1


@pytest.fixture
def client(broker):
    with KafkaClient(broker.bootstrap, timeout=10) as c:
        yield c


def test_create_with_partitions_and_configs_then_delete(client, request):
    topic, defaulted = topic_for(request, "a"), topic_for(request, "b")
    assert client.create_topics([NewTopic(topic, 3, {"retention.ms": "1000"}), NewTopic(defaulted)]) == {
        topic: None,
        defaulted: None,
    }
    assert client.partitions_of(topic) == [0, 1, 2]
    assert client.partitions_of(defaulted) == [0, 1, 2, 3]  # the broker's num.partitions
    assert client.delete_topics([topic, defaulted]) == {topic: None, defaulted: None}
    assert topic not in client.topics() and defaulted not in client.topics()


def test_validate_only_creates_nothing(client, request):
    topic = topic_for(request)
    assert client.create_topics([NewTopic(topic, 2)], validate_only=True) == {topic: None}
    assert topic not in client.topics()


def test_errors_are_per_topic_with_kafkas_codes_and_the_brokers_reasons(client, request):
    existing, fine, bad_config = topic_for(request, "existing"), topic_for(request, "fine"), topic_for(request, "cfg")
    client.create_topics([NewTopic(existing, 1)])
    errors = client.create_topics(
        [
            NewTopic(existing, 1),
            NewTopic("bad name", 1),
            NewTopic(fine, 1),
            NewTopic(bad_config, 1, {"retention.ms": "soon"}),
        ]
    )
    codes = {name: error.code if error else None for name, error in errors.items()}
    assert codes == {
        existing: ErrorCode.TOPIC_ALREADY_EXISTS,
        "bad name": ErrorCode.INVALID_TOPIC_EXCEPTION,
        fine: None,
        bad_config: ErrorCode.INVALID_CONFIG,
    }
    assert str(errors[existing]) == f"topic {existing!r} already exists (TOPIC_ALREADY_EXISTS)"
    assert "retention.ms: 'soon' is not an integer" in str(errors[bad_config])
    missing = topic_for(request, "missing")
    [error] = client.delete_topics([missing]).values()
    assert isinstance(error, UnknownTopicOrPartitionError) and str(error) == f"topic {missing!r} does not exist"


def test_describe_configs_gives_every_setting_and_its_source(client, request):
    topic = topic_for(request)
    client.create_topics([NewTopic(topic, 1, {"retention.ms": "1000"})])
    configs = {c.name: c for c in client.describe_configs(topic)}
    assert configs["retention.ms"] == ConfigEntry("retention.ms", "1000", DYNAMIC_TOPIC_CONFIG, False, False)
    assert configs["segment.bytes"] == ConfigEntry("segment.bytes", "1073741824", DEFAULT_CONFIG, False, False)
    assert configs["segment.bytes"].is_default and not configs["retention.ms"].is_default
    assert list(configs) == list(TOPIC_SETTINGS)
    with pytest.raises(UnknownTopicOrPartitionError, match="does not exist"):
        client.describe_configs(topic_for(request, "missing"))


def test_partition_sizes_are_the_bytes_on_disk(client, broker, request):
    topic = topic_for(request)
    client.create_topics([NewTopic(topic, 3)])
    client.produce(topic, 1, [(None, b"x" * 1000)])
    client.produce(topic, 1, [(b"k", b"y" * 10)])
    sizes = client.partition_sizes(topic, [0, 1, 2])
    on_disk = os.path.getsize(os.path.join(broker.log_dir, f"{topic}-1", "00000000000000000000.log"))
    assert sizes == {0: 0, 1: on_disk, 2: 0} and on_disk > 1000
    assert client.partition_sizes(topic, [1]) == {1: on_disk}


def test_partitions_settings_and_records_are_changed_through_the_admin_calls(client, request):
    topic = topic_for(request)
    client.create_topics([NewTopic(topic, 1, {"retention.ms": "1000"})])
    client.create_partitions(topic, 3)
    assert client.partitions_of(topic) == [0, 1, 2]
    with pytest.raises(KafkaError, match="INVALID_PARTITIONS"):
        client.create_partitions(topic, 2)
    client.alter_configs(topic, {"segment.bytes": "1000000", "retention.ms": None})
    configs = {c.name: c for c in client.describe_configs(topic)}
    assert (configs["segment.bytes"].value, configs["retention.ms"].source) == ("1000000", DEFAULT_CONFIG)
    with pytest.raises(KafkaError, match="INVALID_CONFIG"):
        client.alter_configs(topic, {"retention.ms": "soon"})
    client.produce(topic, 2, [(None, b"a"), (None, b"b"), (None, b"c")])
    assert client.delete_records({(topic, 2): 2, (topic, 0): -1}) == {(topic, 2): 2, (topic, 0): 0}
    assert client.list_offsets({(topic, 2): EARLIEST})[(topic, 2)][0] == 2
    with pytest.raises(KafkaError, match="OFFSET_OUT_OF_RANGE"):
        client.delete_records({(topic, 2): 9})
    broker_configs = {c.name: c for c in client.describe_configs("0", BROKER_RESOURCE)}
    assert broker_configs["num.partitions"].read_only and not broker_configs["log.retention.ms"].read_only
