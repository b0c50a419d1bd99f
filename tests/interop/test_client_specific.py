"""What only one client has: librdkafka's consumer isolation levels (read_committed by default),
its ApiVersions feature negotiation, metadata, admin ``list_offsets`` and describe_configs errors,
and its reading of batches kafka-python wrote with every codec; kafka-python's
``describe_log_dirs``. The rest of the matrix runs against every client."""

import logging.handlers

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import ConfigResource, OffsetSpec, ResourceType

from broker.protocol.errors import ErrorCode

from .client_api import EARLIEST, BrokerError
from .client_kafka_python import KafkaPythonClient
from .clients import clients
from .common import (
    CODECS,
    PARTITIONS,
    assert_same_records,
    compressible_records,
    make_records,
    now_ms,
    stored_batches,
    with_offsets,
)

only_confluent = clients(where=lambda kind: kind.name == "confluent")


@only_confluent
@pytest.mark.parametrize("isolation", [None, "read_committed", "read_uncommitted"])
def test_consumer_isolation_levels_including_the_read_committed_default(client, topic, isolation):
    records = with_offsets(make_records(16))
    client.produce(topic, records)
    native = {} if isolation is None else {"isolation.level": isolation}
    assert_same_records(client.consume_all(topic, len(records), **native), records)


@only_confluent
def test_api_version_request_negotiates_the_features_it_needs(broker, client, topic):
    """``api.version.request=true`` is librdkafka's default: ApiVersions must succeed and enable
    MsgVer2 (headers), idempotence and zstd; the records then round-trip."""
    captured = logging.handlers.BufferingHandler(capacity=1_000_000)
    logger = logging.getLogger(f"interop.{topic}")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(captured)
    records = with_offsets(compressible_records(200, partition=1, base_timestamp=now_ms() - 60_000))
    try:
        client.produce(
            topic,
            records,
            compression="zstd",
            idempotence=True,
            linger_ms=50,
            **{"api.version.request": True, "debug": "feature", "logger": logger},
        )
    finally:
        logger.removeHandler(captured)
    log = "\n".join(record.getMessage() for record in captured.buffer)
    for feature in ("ApiVersion", "MsgVer2", "ZSTD", "IdempotentProducer"):
        assert f"Enabling feature {feature}" in log, f"librdkafka did not enable {feature}"
    assert {(b["magic"], b["compression"]) for b in stored_batches(broker.log_dir, topic, 1)} == {(2, "zstd")}
    assert_same_records(client.consume_all(topic, len(records), partitions=(1,)), records)


@only_confluent
def test_producer_fetches_metadata_for_an_auto_created_topic(broker, client, topic):
    with client.producer() as producer:
        metadata = producer.native.list_topics(topic, timeout=10)
    assert metadata.controller_id == 0 and list(metadata.brokers) == [0]
    assert metadata.brokers[0].host == "127.0.0.1" and f":{metadata.brokers[0].port}" in broker.bootstrap
    assert metadata.cluster_id and metadata.topics[topic].error is None
    partitions = metadata.topics[topic].partitions
    assert sorted(partitions) == list(range(PARTITIONS))
    assert all(p.leader == 0 and p.replicas == [0] and p.isrs == [0] for p in partitions.values())


@only_confluent
def test_admin_list_offsets_earliest_latest_and_for_timestamp(client, topic):
    base = now_ms() - 3_600_000
    client.produce(
        topic,
        with_offsets(
            [r._replace(timestamp=base + i * 10_000) for i, r in enumerate(make_records(10, partitions=(0,)))]
        ),
    )
    tp = TopicPartition(topic, 0)
    specs = {
        "earliest": (OffsetSpec.earliest(), 0),
        "latest": (OffsetSpec.latest(), 10),
        "at record 3": (OffsetSpec.for_timestamp(base + 30_000), 3),
        "before record 4": (OffsetSpec.for_timestamp(base + 35_000), 4),
        "after the last": (OffsetSpec.for_timestamp(base + 100_000), -1),
    }
    with client.admin() as admin:
        for name, (spec, expected) in specs.items():
            info = admin.native.list_offsets({tp: spec}, request_timeout=15)[tp].result(timeout=20)
            assert info.offset == expected, (name, info)
            if name.startswith(("at", "before")):
                assert info.timestamp == base + expected * 10_000, (name, info)


@clients(where=lambda kind: kind.describes_configs and kind.describe_configs_reports_errors)
def test_admin_describe_configs_errors(client, topic):
    with client.admin() as admin:
        with pytest.raises(BrokerError) as raised:
            admin.topic_configs(topic + "-missing")
        assert raised.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        with pytest.raises(BrokerError) as raised:
            admin.configs(ConfigResource(ResourceType.GROUP, "some-group"))  # group configs: not served
        assert raised.value.code == ErrorCode.INVALID_REQUEST


@only_confluent
@pytest.mark.parametrize("codec", CODECS)
def test_consumes_batches_that_kafka_python_wrote_with_each_codec(broker, client, topic, codec):
    """librdkafka must read what another client wrote with every codec (its own lz4 is in test_records)."""
    records = with_offsets(compressible_records(200, partition=3, base_timestamp=now_ms() - 60_000))
    writer = KafkaPythonClient(broker.bootstrap)
    deliveries = writer.produce(topic, records, compression=codec, linger_ms=50, batch_bytes=64 * 1024)
    assert [d.offset for d in deliveries] == [r.offset for r in records]
    assert {b["compression"] for b in stored_batches(broker.log_dir, topic, 3)} == {codec}
    assert_same_records(client.consume(topic, {3: EARLIEST}, len(records)), records)


@clients(where=lambda kind: kind.name == "kafka-python")
def test_admin_describe_log_dirs_gives_partition_sizes(broker, client, topic):
    with client.admin() as admin:
        admin.create_topic(topic, 2)
        client.produce(topic, make_records(20, partitions=(1,)))
        [answer] = admin.native.describe_log_dirs({topic: [0, 1]})
    [log_dir] = answer["log_dirs"]
    [described_topic] = log_dir["topics"]
    sizes = {p["partition_index"]: p["partition_size"] for p in described_topic["partitions"]}
    stored = sum(b["size"] for b in stored_batches(broker.log_dir, topic, 1))
    assert sizes == {0: 0, 1: stored} and stored > 20 * 16
