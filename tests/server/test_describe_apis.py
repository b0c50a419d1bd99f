"""DescribeConfigs (v0-3) and DescribeLogDirs (v0-1) over raw sockets, field by field.

* DescribeConfigs: every topic setting under Kafka's topic-level name with its effective value,
  where the value comes from (the topic's override, the broker's configuration, Kafka's default:
  ``config_source`` from v1, ``is_default`` in v0), synonyms only when asked (v1+), config types
  (v3), every setting alterable, and documentation (v3) only for the settings stored without
  effect; a key filter; errors per resource, in request order.
* DescribeLogDirs: the broker's log directory, each partition's size equal to its ``.log`` files,
  a null topic list meaning every partition, unknown partitions left out.
"""

import os
import uuid

import pytest

from broker.embedded import EmbeddedBroker
from broker.log.config import TOPIC_SETTINGS
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.records import batch
from broker.records.batch import Record

from .wire import connect_to, create_topics_body, produce_body

DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
INT, LONG, STRING, LIST = 3, 5, 2, 7
BROKER_SETTINGS = {"log.retention.ms": "7200000", "log.segment.bytes": "2000000"}


@pytest.fixture(scope="module")
def configured_broker(tmp_path_factory):
    """A broker with two broker-level log settings, so all three config sources occur."""
    process = EmbeddedBroker(tmp_path_factory.mktemp("describe") / "log", BROKER_SETTINGS).start()
    yield process
    process.kill()


@pytest.fixture
def client(configured_broker):
    with connect_to(configured_broker) as c:
        yield c


def create_topic(client, partitions: int = 1, configs=None) -> str:
    name = f"described-{uuid.uuid4().hex[:8]}"
    result = client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body(name, partitions, configs=configs))
    assert result["topics"][0]["error_code"] == ErrorCode.NONE, result
    return name


def describe(client, version: int, resources, include_synonyms: bool = False) -> list[dict]:
    body = {
        "resources": [
            {"resource_type": kind, "resource_name": name, "configuration_keys": keys} for kind, name, keys in resources
        ],
        "include_synonyms": include_synonyms,
        "include_documentation": True,
    }
    result = client.call(ApiKey.DESCRIBE_CONFIGS, version, body)
    assert result["throttle_time_ms"] == 0
    return result["results"]


def configs_of(client, version: int, topic: str, include_synonyms: bool = False) -> dict:
    [result] = describe(client, version, [(TOPIC, topic, None)], include_synonyms)
    assert (result["error_code"], result["error_message"]) == (ErrorCode.NONE, None)
    assert (result["resource_type"], result["resource_name"]) == (TOPIC, topic)
    return {c["name"]: c for c in result["configs"]}


# -- DescribeConfigs ----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(0, 4))
def test_every_topic_setting_with_its_value_and_source(client, version):
    topic = create_topic(client, configs={"retention.ms": "1000", "cleanup.policy": "delete"})
    configs = configs_of(client, version, topic)
    assert list(configs) == list(TOPIC_SETTINGS)
    expected = {  # name: (value, source)
        "retention.ms": ("1000", DYNAMIC_TOPIC_CONFIG),
        "cleanup.policy": ("delete", DYNAMIC_TOPIC_CONFIG),
        "segment.bytes": ("2000000", STATIC_BROKER_CONFIG),
        "segment.ms": ("604800000", DEFAULT_CONFIG),
        "max.message.bytes": ("1048588", DEFAULT_CONFIG),
        "message.timestamp.type": ("CreateTime", DEFAULT_CONFIG),
        "flush.messages": (str(2**63 - 1), DEFAULT_CONFIG),
        "retention.bytes": ("-1", DEFAULT_CONFIG),
    }
    for name, (value, source) in expected.items():
        config = configs[name]
        assert config["value"] == value, name
        assert config["config_source"] == (source if version >= 1 else -1), name
        assert config["is_default"] is (version == 0 and source == DEFAULT_CONFIG), name
    assert all(not c["read_only"] and not c["is_sensitive"] and c["synonyms"] == [] for c in configs.values())
    documented = {name for name, c in configs.items() if c["documentation"] is not None}
    no_effect = {s.topic_key for s in TOPIC_SETTINGS.values() if s.no_effect}
    assert documented == (no_effect if version >= 3 else set())
    if version >= 3:
        assert configs["leader.replication.throttled.replicas"]["documentation"].startswith(
            "Accepted and stored, no effect"
        )
        assert configs["min.insync.replicas"]["documentation"] is None  # acks=all follows it
    types = {name: c["config_type"] for name, c in configs.items()}
    if version >= 3:
        assert (
            types["segment.bytes"],
            types["retention.ms"],
            types["message.timestamp.type"],
            types["cleanup.policy"],
        ) == (INT, LONG, STRING, LIST)
    else:
        assert set(types.values()) == {0}


@pytest.mark.parametrize("version", range(1, 4))
def test_synonyms_list_the_sources_from_the_one_in_force_down(client, version):
    topic = create_topic(client, configs={"segment.bytes": "1000000"})
    configs = configs_of(client, version, topic, include_synonyms=True)
    assert configs["segment.bytes"]["synonyms"] == [
        {"name": "segment.bytes", "value": "1000000", "source": DYNAMIC_TOPIC_CONFIG},
        {"name": "log.segment.bytes", "value": "2000000", "source": STATIC_BROKER_CONFIG},
        {"name": "log.segment.bytes", "value": "1073741824", "source": DEFAULT_CONFIG},
    ]
    assert configs["retention.ms"]["synonyms"] == [
        {"name": "log.retention.ms", "value": "7200000", "source": STATIC_BROKER_CONFIG},
        {"name": "log.retention.ms", "value": "604800000", "source": DEFAULT_CONFIG},
    ]
    assert configs["max.message.bytes"]["synonyms"] == [
        {"name": "message.max.bytes", "value": "1048588", "source": DEFAULT_CONFIG}
    ]


def test_v0_ignores_the_synonyms_flag_it_cannot_carry(client):
    topic = create_topic(client)
    assert all(c["synonyms"] == [] for c in configs_of(client, 0, topic, include_synonyms=True).values())


@pytest.mark.parametrize("version", [0, 3])
def test_configuration_keys_select_settings_and_unknown_keys_are_left_out(client, version):
    topic = create_topic(client)
    [some, none] = describe(
        client, version, [(TOPIC, topic, ["retention.ms", "no.such.key", "segment.ms"]), (TOPIC, topic, [])]
    )
    assert [c["name"] for c in some["configs"]] == ["segment.ms", "retention.ms"]
    assert none["error_code"] == ErrorCode.NONE and none["configs"] == []


@pytest.mark.parametrize("version", range(0, 4))
def test_errors_are_per_resource_in_request_order(client, version):
    topic = create_topic(client)
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    results = describe(
        client,
        version,
        [
            (TOPIC, missing, None),
            (TOPIC, "bad/name", None),
            (BROKER, "7", None),
            (BROKER_LOGGER, "0", None),
            (TOPIC, topic, ["retention.ms"]),
        ],
    )
    assert [(r["resource_type"], r["resource_name"], r["error_code"]) for r in results] == [
        (TOPIC, missing, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        (TOPIC, "bad/name", ErrorCode.INVALID_TOPIC_EXCEPTION),
        (BROKER, "7", ErrorCode.INVALID_REQUEST),
        (BROKER_LOGGER, "0", ErrorCode.INVALID_REQUEST),
        (TOPIC, topic, ErrorCode.NONE),
    ]
    assert results[0]["error_message"] == f"topic {missing!r} does not exist"
    assert "broker '7' is not this broker" in results[2]["error_message"]
    assert "resource type 8 is not supported" in results[3]["error_message"]
    assert all(r["configs"] == [] for r in results[:4])


def test_a_describe_never_creates_the_topic(client):
    missing = f"never-{uuid.uuid4().hex[:8]}"
    describe(client, 3, [(TOPIC, missing, None)])
    metadata = client.call(ApiKey.METADATA, 1, {"topics": None})
    assert missing not in {t["name"] for t in metadata["topics"]}


# -- DescribeLogDirs -----------------------------------------------------------------------------------


def produce_values(client, topic: str, partition: int, values) -> None:
    records = batch.build([Record(i, 1_700_000_000_000 + i, None, v) for i, v in enumerate(values)])
    result = client.call(ApiKey.PRODUCE, 8, produce_body(topic, partition, records))
    assert result["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NONE


def log_file_bytes(broker, topic: str, partition: int) -> int:
    directory = os.path.join(broker.log_dir, f"{topic}-{partition}")
    return sum(os.path.getsize(os.path.join(directory, f)) for f in os.listdir(directory) if f.endswith(".log"))


@pytest.mark.parametrize("version", [0, 1])
def test_partition_sizes_are_the_bytes_of_their_log_files(client, configured_broker, version):
    topic = create_topic(client, partitions=3)
    produce_values(client, topic, 0, [b"a" * 100] * 3)
    produce_values(client, topic, 0, [b"b" * 10])
    produce_values(client, topic, 2, [b"c" * 1000])
    result = client.call(ApiKey.DESCRIBE_LOG_DIRS, version, {"topics": [{"topic": topic, "partitions": [2, 0, 1]}]})
    assert result["throttle_time_ms"] == 0
    [log_dir] = result["results"]
    assert (log_dir["error_code"], log_dir["log_dir"]) == (ErrorCode.NONE, os.path.abspath(configured_broker.log_dir))
    [described] = log_dir["topics"]
    assert described["name"] == topic
    sizes = {p["partition_index"]: p["partition_size"] for p in described["partitions"]}
    assert sizes == {p: log_file_bytes(configured_broker, topic, p) for p in range(3)}
    assert sizes[1] == 0 and sizes[0] > 300 and sizes[2] > 1000
    assert all(p["offset_lag"] == 0 and p["is_future_key"] is False for p in described["partitions"])


def test_null_topics_means_every_partition_and_unknown_ones_are_left_out(client):
    first, second = create_topic(client, partitions=2), create_topic(client, partitions=1)
    everything = client.call(ApiKey.DESCRIBE_LOG_DIRS, 1, {"topics": None})["results"][0]["topics"]
    described = {t["name"]: sorted(p["partition_index"] for p in t["partitions"]) for t in everything}
    assert described[first] == [0, 1] and described[second] == [0]
    some = client.call(
        ApiKey.DESCRIBE_LOG_DIRS,
        1,
        {"topics": [{"topic": first, "partitions": [1, 7]}, {"topic": "no-such-topic", "partitions": [0]}]},
    )
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in some["results"][0]["topics"]] == [
        (first, [1])
    ]
    none = client.call(ApiKey.DESCRIBE_LOG_DIRS, 0, {"topics": []})
    assert none["results"][0]["topics"] == []
