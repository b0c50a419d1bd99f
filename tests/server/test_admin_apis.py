"""The admin APIs over raw sockets, against a real broker process: CreatePartitions, AlterConfigs,
IncrementalAlterConfigs, DeleteRecords, DescribeConfigs of a broker, Metadata v8's authorized
operations, and CreateTopics accepting every Kafka topic setting.

Each change is checked where it shows: Metadata, ListOffsets, Fetch, DescribeConfigs, the files on
disk, and a restart of the broker (changes are persisted); a refused change changes nothing.
"""

import os
import time
import uuid

import pytest

from broker.common.offsets import EARLIEST, LATEST
from broker.embedded import EmbeddedBroker
from broker.protocol.apis import UNREQUESTED_AUTHORIZED_OPERATIONS, ApiKey
from broker.protocol.errors import ErrorCode
from broker.records import batch
from broker.records.batch import Record
from tests.waiting import wait_for

from .wire import connect_to, create_topics_body, fetch_body, list_offsets_body, produce_body

TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
DYNAMIC_TOPIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT = 1, 2, 3, 4, 5
TEN_MINUTES_MS = 600_000
SETTINGS = {"log.retention.check.interval.ms": "200", "log.segment.bytes": "2000000", "num.partitions": "1"}


@pytest.fixture
def admin_broker(start_broker):
    return start_broker(SETTINGS)


@pytest.fixture
def client(admin_broker):
    with connect_to(admin_broker) as c:
        yield c


def new_topic(client, partitions: int = 1, configs=None) -> str:
    name = f"admin-{uuid.uuid4().hex[:8]}"
    result = client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body(name, partitions, configs=configs))
    assert result["topics"][0]["error_code"] == ErrorCode.NONE, result
    return name


def produce(client, topic: str, partition: int, count: int, timestamp: int | None = None, size: int = 10) -> int:
    """Records stamped now (kept by the default retention), or from ``timestamp`` on."""
    first = int(time.time() * 1000) if timestamp is None else timestamp
    records = batch.build([Record(i, first + i, None, b"v" * size) for i in range(count)])
    [answer] = client.call(ApiKey.PRODUCE, 8, produce_body(topic, partition, records))["responses"][0]["partitions"]
    assert answer["error_code"] == ErrorCode.NONE, answer
    return answer["base_offset"]


def offset(client, topic: str, partition: int, which: int) -> int:
    response = client.call(ApiKey.LIST_OFFSETS, 5, list_offsets_body(topic, partition, which))
    [answer] = response["topics"][0]["partitions"]
    assert answer["error_code"] == ErrorCode.NONE, answer
    return answer["offset"]


def fetch_error(client, topic: str, partition: int, at: int) -> int:
    response = client.call(ApiKey.FETCH, 11, fetch_body([(topic, partition, at)]))
    return response["responses"][0]["partitions"][0]["error_code"]


def partition_count(client, topic: str) -> int:
    [described] = client.call(
        ApiKey.METADATA,
        8,
        {
            "topics": [{"name": topic}],
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        },
    )["topics"]
    return len(described["partitions"])


def describe(client, resource_type: int, name: str, keys=None) -> dict:
    [result] = client.call(
        ApiKey.DESCRIBE_CONFIGS,
        3,
        {
            "resources": [{"resource_type": resource_type, "resource_name": name, "configuration_keys": keys}],
            "include_synonyms": True,
            "include_documentation": False,
        },
    )["results"]
    assert result["error_code"] == ErrorCode.NONE, result
    return {c["name"]: c for c in result["configs"]}


def alter(client, resource_type: int, name: str, configs: dict, validate_only: bool = False) -> dict:
    [answer] = client.call(
        ApiKey.ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": resource_type,
                    "resource_name": name,
                    "configs": [{"name": k, "value": v} for k, v in configs.items()],
                }
            ],
            "validate_only": validate_only,
        },
    )["responses"]
    return answer


def incremental(client, resource_type: int, name: str, operations: list) -> dict:
    [answer] = client.call(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        0,
        {
            "resources": [
                {
                    "resource_type": resource_type,
                    "resource_name": name,
                    "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in operations],
                }
            ],
            "validate_only": False,
        },
    )["responses"]
    return answer


def create_partitions(client, topics: list, validate_only: bool = False) -> list:
    return client.call(
        ApiKey.CREATE_PARTITIONS,
        1,
        {
            "topics": [
                {"name": name, "count": count, "assignments": assignments} for name, count, assignments in topics
            ],
            "timeout_ms": 5000,
            "validate_only": validate_only,
        },
    )["results"]


def delete_records(client, topic: str, offsets: dict) -> dict:
    [answer] = client.call(
        ApiKey.DELETE_RECORDS,
        1,
        {
            "topics": [
                {"name": topic, "partitions": [{"partition_index": p, "offset": o} for p, o in offsets.items()]}
            ],
            "timeout_ms": 5000,
        },
    )["topics"]
    return {p["partition_index"]: (p["error_code"], p["low_watermark"]) for p in answer["partitions"]}


def segment_files(broker, topic: str, partition: int) -> list[str]:
    directory = os.path.join(broker.log_dir, f"{topic}-{partition}")
    return sorted(f for f in os.listdir(directory) if f.endswith(".log"))


def restarted(broker: EmbeddedBroker, start_broker) -> EmbeddedBroker:
    assert broker.stop() == 0
    return start_broker(SETTINGS, log_dir=broker.log_dir)


# -- CreatePartitions --------------------------------------------------------------------------------


def test_create_partitions_grows_a_topic_that_keeps_its_records_and_survives_a_restart(
    client, admin_broker, start_broker
):
    topic = new_topic(client, 2)
    produce(client, topic, 1, 3)
    [validated] = create_partitions(client, [(topic, 5, None)], validate_only=True)
    assert validated["error_code"] == ErrorCode.NONE and partition_count(client, topic) == 2
    [grown] = create_partitions(client, [(topic, 5, [{"broker_ids": [0]}] * 3)])
    assert (grown["name"], grown["error_code"], grown["error_message"]) == (topic, ErrorCode.NONE, None)
    assert partition_count(client, topic) == 5
    assert produce(client, topic, 4, 2) == 0
    with connect_to(restarted(admin_broker, start_broker)) as again:
        assert partition_count(again, topic) == 5
        assert offset(again, topic, 1, LATEST) == 3 and offset(again, topic, 4, LATEST) == 2


def test_create_partitions_refusals_change_nothing(client):
    topic, missing = new_topic(client, 3), f"missing-{uuid.uuid4().hex[:8]}"
    results = create_partitions(client, [(topic, 3, None), (missing, 4, None)])
    results += create_partitions(client, [(topic, 2, None)])
    results += create_partitions(client, [(topic, 5, [{"broker_ids": [1]}, {"broker_ids": [0]}])])
    results += create_partitions(client, [(topic, 5, [{"broker_ids": [0]}])])
    results += create_partitions(client, [(topic, 6, None), (topic, 7, None)])
    assert [r["error_code"] for r in results] == [
        ErrorCode.INVALID_PARTITIONS,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.INVALID_PARTITIONS,
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_REQUEST,
    ]
    assert "has 3 partitions" in results[0]["error_message"]
    assert partition_count(client, topic) == 3


# -- AlterConfigs and IncrementalAlterConfigs ----------------------------------------------------------


def test_alter_configs_replaces_a_topics_overrides_and_a_refused_change_keeps_them(client):
    topic = new_topic(client, configs={"retention.ms": "3600000", "max.message.bytes": "500000"})
    assert alter(client, TOPIC, topic, {"segment.bytes": "1000000"})["error_code"] == ErrorCode.NONE
    configs = describe(client, TOPIC, topic)
    assert configs["segment.bytes"]["value"] == "1000000" and configs["segment.bytes"]["config_source"] == DYNAMIC_TOPIC
    assert configs["retention.ms"]["config_source"] == DEFAULT  # left out: back to its default
    refused = [
        alter(client, TOPIC, topic, change)
        for change in (
            {"segment.bytes": "2000000", "retention.ms": "soon"},
            {"no.such.setting": "1"},
            {"retention.ms": None},
            {"cleanup.policy": "compact,shred"},
        )
    ]
    assert [r["error_code"] for r in refused] == [
        ErrorCode.INVALID_CONFIG,
        ErrorCode.INVALID_CONFIG,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_CONFIG,
    ]
    assert refused[0]["error_message"].startswith("retention.ms: 'soon' is not an integer")
    assert describe(client, TOPIC, topic)["segment.bytes"]["value"] == "1000000"
    assert alter(client, TOPIC, topic, {"segment.bytes": "3000000"}, validate_only=True)["error_code"] == 0
    assert describe(client, TOPIC, topic)["segment.bytes"]["value"] == "1000000"


def test_a_setting_named_twice_in_alter_configs_is_refused_as_kafka_since_3_2_does(client):
    """Kafka 3.2+ refuses it in both APIs (before, AlterConfigs let the last mention win); librdkafka's
    test suite leaves its duplicate out when told the broker is 3.2 or later (TEST_KAFKA_VERSION)."""
    topic = new_topic(client, configs={"retention.ms": "3600000"})
    [answer] = client.call(
        ApiKey.ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": TOPIC,
                    "resource_name": topic,
                    "configs": [{"name": "retention.ms", "value": "1000"}, {"name": "retention.ms", "value": "2000"}],
                }
            ],
            "validate_only": False,
        },
    )["responses"]
    assert answer["error_code"] == ErrorCode.INVALID_REQUEST and "named twice" in answer["error_message"]
    assert describe(client, TOPIC, topic)["retention.ms"]["value"] == "3600000"


def test_incremental_alter_sets_deletes_appends_and_subtracts(client):
    topic = new_topic(client, configs={"retention.ms": "3600000", "flush.ms": "1000"})
    answer = incremental(
        client,
        TOPIC,
        topic,
        [
            ("retention.ms", SET, "7200000"),
            ("flush.ms", DELETE, None),
            ("leader.replication.throttled.replicas", APPEND, "0:0,1:0"),
        ],
    )
    assert answer["error_code"] == ErrorCode.NONE, answer
    configs = describe(client, TOPIC, topic)
    assert (configs["retention.ms"]["value"], configs["flush.ms"]["config_source"]) == ("7200000", DEFAULT)
    assert configs["leader.replication.throttled.replicas"]["value"] == "0:0,1:0"
    assert (
        incremental(client, TOPIC, topic, [("leader.replication.throttled.replicas", SUBTRACT, "0:0")])["error_code"]
        == ErrorCode.NONE
    )
    assert describe(client, TOPIC, topic)["leader.replication.throttled.replicas"]["value"] == "1:0"
    refused = [
        incremental(client, TOPIC, topic, ops)
        for ops in (
            [("retention.ms", APPEND, "5")],
            [("retention.ms", 9, "5")],
            [("retention.ms", SET, "1"), ("retention.ms", DELETE, None)],
        )
    ]
    assert [r["error_code"] for r in refused] == [
        ErrorCode.INVALID_CONFIG,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_REQUEST,
    ]
    assert describe(client, TOPIC, topic)["retention.ms"]["value"] == "7200000"


def test_a_lower_segment_size_applies_to_the_running_log(client, admin_broker):
    topic = new_topic(client)
    produce(client, topic, 0, 5, size=1000)
    assert len(segment_files(admin_broker, topic, 0)) == 1
    assert incremental(client, TOPIC, topic, [("segment.bytes", SET, "3000")])["error_code"] == ErrorCode.NONE
    for _ in range(4):
        produce(client, topic, 0, 2, size=1000)
    assert len(segment_files(admin_broker, topic, 0)) >= 3


def test_retention_set_dynamically_on_the_broker_deletes_old_records_of_running_logs(client, admin_broker):
    topic = new_topic(client, configs={"segment.bytes": "2000"})
    witness = new_topic(client, configs={"retention.ms": "60000"})  # the same records, a shorter retention
    ten_minutes_ago = int(time.time() * 1000) - TEN_MINUTES_MS  # kept by the default 7 days
    for _ in range(5):
        produce(client, topic, 0, 2, timestamp=ten_minutes_ago, size=500)  # a segment per batch
    produce(client, witness, 0, 2, timestamp=ten_minutes_ago, size=500)
    wait_for(lambda: offset(client, witness, 0, EARLIEST) == 2, 10, what="a retention check after the produce")
    assert offset(client, topic, 0, EARLIEST) == 0  # that check kept everything of the default 7 days
    answer = incremental(client, BROKER, "", [("log.retention.ms", SET, "60000")])
    assert answer["error_code"] == ErrorCode.NONE, answer
    wait_for(lambda: offset(client, topic, 0, EARLIEST) >= 8, 10, what="retention to delete the old segments")
    assert fetch_error(client, topic, 0, 0) == ErrorCode.OFFSET_OUT_OF_RANGE


def test_broker_settings_are_dynamic_with_their_sources_and_persisted(client, admin_broker, start_broker):
    topic = new_topic(client)
    assert incremental(client, BROKER, "", [("log.retention.ms", SET, "7200000")])["error_code"] == 0
    assert (
        incremental(
            client, BROKER, "0", [("log.retention.ms", SET, "3600000"), ("log.flush.interval.messages", SET, "1")]
        )["error_code"]
        == 0
    )
    refused = [
        incremental(client, BROKER, "0", [("num.partitions", SET, "3")]),
        incremental(client, BROKER, "5", [("log.retention.ms", SET, "1")]),
        incremental(client, BROKER, "0", [("log.retention.ms", SET, "-5")]),
    ]
    assert [r["error_code"] for r in refused] == [
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_CONFIG,
    ]
    assert "num.partitions: cannot be updated while the broker runs" in refused[0]["error_message"]

    def check(connection):
        broker_configs = describe(connection, BROKER, "0")
        retention = broker_configs["log.retention.ms"]
        assert (retention["value"], retention["config_source"], retention["read_only"]) == (
            "3600000",
            DYNAMIC_BROKER,
            False,
        )
        assert [(s["value"], s["source"]) for s in retention["synonyms"]] == [
            ("3600000", DYNAMIC_BROKER),
            ("7200000", DYNAMIC_DEFAULT),
            ("604800000", DEFAULT),
        ]
        assert broker_configs["log.segment.bytes"]["config_source"] == STATIC
        assert broker_configs["num.partitions"]["read_only"] and broker_configs["num.partitions"]["value"] == "1"
        assert [
            (broker_configs[key]["value"], broker_configs[key]["read_only"])
            for key in ("num.io.threads", "fetch.max.bytes", "queued.max.request.bytes")
        ] == [("8", True), (str(55 * 1024 * 1024), True), (str(256 * 1024 * 1024), True)]
        assert {name: c["value"] for name, c in describe(connection, BROKER, "").items()} == {
            "log.retention.ms": "7200000"
        }
        topic_retention = describe(connection, TOPIC, topic)["retention.ms"]
        assert (topic_retention["value"], topic_retention["config_source"]) == ("3600000", DYNAMIC_BROKER)
        assert topic_retention["synonyms"][0]["name"] == "log.retention.ms"

    check(client)
    with connect_to(restarted(admin_broker, start_broker)) as again:
        check(again)


# -- DeleteRecords -------------------------------------------------------------------------------------


def test_delete_records_moves_the_log_start_offset_deletes_whole_segments_and_survives_a_restart(
    client, admin_broker, start_broker
):
    topic = new_topic(client, 2, configs={"segment.bytes": "1500"})
    for _ in range(6):
        produce(client, topic, 0, 2, size=500)  # offsets 0-11, one segment per batch
    produce(client, topic, 1, 3)
    assert len(segment_files(admin_broker, topic, 0)) >= 6
    assert delete_records(client, topic, {0: 5, 1: -1}) == {0: (ErrorCode.NONE, 5), 1: (ErrorCode.NONE, 3)}
    assert offset(client, topic, 0, EARLIEST) == 5 and offset(client, topic, 1, EARLIEST) == 3
    assert fetch_error(client, topic, 0, 4) == ErrorCode.OFFSET_OUT_OF_RANGE
    assert fetch_error(client, topic, 0, 5) == ErrorCode.NONE
    assert segment_files(admin_broker, topic, 0)[0] == "00000000000000000004.log"  # batch 4-5 holds offset 5
    assert delete_records(client, topic, {0: 3}) == {0: (ErrorCode.NONE, 5)}  # never moves back
    with connect_to(restarted(admin_broker, start_broker)) as again:
        assert offset(again, topic, 0, EARLIEST) == 5 and offset(again, topic, 1, EARLIEST) == 3
        assert fetch_error(again, topic, 0, 4) == ErrorCode.OFFSET_OUT_OF_RANGE


def test_delete_records_refusals(client):
    topic = new_topic(client, 1)
    produce(client, topic, 0, 4)
    assert delete_records(client, topic, {0: 5, 3: 1}) == {
        0: (ErrorCode.OFFSET_OUT_OF_RANGE, -1),
        3: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
    }
    assert delete_records(client, topic, {0: -7}) == {0: (ErrorCode.OFFSET_OUT_OF_RANGE, -1)}
    answer = client.call(
        ApiKey.DELETE_RECORDS,
        0,
        {
            "topics": [
                {
                    "name": topic,
                    "partitions": [{"partition_index": 0, "offset": 1}, {"partition_index": 0, "offset": 2}],
                }
            ],
            "timeout_ms": 5000,
        },
    )
    assert [p["error_code"] for p in answer["topics"][0]["partitions"]] == [ErrorCode.INVALID_REQUEST] * 2
    assert offset(client, topic, 0, EARLIEST) == 0


# -- CreateTopics settings, Metadata v8 ---------------------------------------------------------------


def test_create_topics_accepts_every_kafka_setting_with_kafkas_validation(client):
    accepted = {
        "compression.type": "lz4",
        "delete.retention.ms": "1000",
        "min.insync.replicas": "2",
        "unclean.leader.election.enable": "true",
        "min.cleanable.dirty.ratio": "0.2",
        "message.timestamp.after.max.ms": "60000",
        "preallocate": "false",
    }
    topic = new_topic(client, configs=accepted)
    configs = describe(client, TOPIC, topic)
    assert {k: configs[k]["value"] for k in accepted} == accepted
    for bad in (
        {"compression.type": "brotli"},
        {"min.insync.replicas": "0"},
        {"min.cleanable.dirty.ratio": "1.5"},
        {"remote.storage.enable": "true"},
        {"compression.gzip.level": "12"},
        {"no.such.setting": "1"},
    ):
        name = f"refused-{uuid.uuid4().hex[:8]}"
        [answer] = client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body(name, configs=bad))["topics"]
        assert answer["error_code"] == ErrorCode.INVALID_CONFIG, (bad, answer)
        assert answer["error_message"].startswith(next(iter(bad))), answer


def test_metadata_v8_answers_authorized_operations_as_a_broker_without_authorizer(client):
    topic = new_topic(client)
    body = {
        "topics": [{"name": topic}],
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": True,
        "include_topic_authorized_operations": True,
    }
    asked = client.call(ApiKey.METADATA, 8, body)
    topic_ops = {3, 4, 5, 6, 7, 8, 10, 11}  # read write create delete alter describe describe/alter configs
    cluster_ops = {5, 7, 8, 9, 10, 11, 12}  # create alter describe cluster_action configs idempotent_write
    assert asked["topics"][0]["topic_authorized_operations"] == sum(1 << op for op in topic_ops)
    assert asked["cluster_authorized_operations"] == sum(1 << op for op in cluster_ops)
    unasked = client.call(
        ApiKey.METADATA,
        8,
        body | {"include_cluster_authorized_operations": False, "include_topic_authorized_operations": False},
    )
    assert unasked["topics"][0]["topic_authorized_operations"] == UNREQUESTED_AUTHORIZED_OPERATIONS
    assert unasked["cluster_authorized_operations"] == UNREQUESTED_AUTHORIZED_OPERATIONS
