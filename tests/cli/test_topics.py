"""``kafkalog topics create|list|describe|delete`` as a real process against a real broker: the round
trip with partitions and configs (checked with confluent-kafka's AdminClient too), what describe
shows after records arrive, and each error with its exit code and one-line message."""

import json

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType

from .support import kafkalog, latest_offsets, one_line_error, produce_records, topic_for


def described(broker, *topics) -> list[dict]:
    done = kafkalog("topics", "describe", *topics, "--format", "json", "--bootstrap-server", broker.bootstrap)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def listed(broker) -> list[str]:
    done = kafkalog("topics", "list", "--bootstrap-server", broker.bootstrap)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.splitlines()


def test_create_list_describe_delete_round_trip(broker, request):
    topic = topic_for(request)
    done = kafkalog(
        "topics",
        "create",
        topic,
        "--partitions",
        "3",
        "--config",
        "retention.ms=1000",
        "--config",
        "segment.bytes=1048576",
        "--bootstrap-server",
        broker.bootstrap,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"created topic {topic}\n", "")
    assert topic in listed(broker) and listed(broker) == sorted(listed(broker))

    [description] = described(broker, topic)
    assert (description["topic"], description["controller"]) == (topic, 0)
    assert description["partitions"] == [
        {
            "partition": p,
            "leader": 0,
            "replicas": [0],
            "isr": [0],
            "earliestOffset": 0,
            "latestOffset": 0,
            "sizeBytes": 0,
        }
        for p in range(3)
    ]
    configs = description["configs"]
    assert configs["retention.ms"] == {
        "value": "1000",
        "source": "DYNAMIC_TOPIC_CONFIG",
        "readOnly": False,
        "sensitive": False,
    }
    assert (configs["segment.bytes"]["value"], configs["segment.bytes"]["source"]) == (
        "1048576",
        "DYNAMIC_TOPIC_CONFIG",
    )
    assert (configs["max.message.bytes"]["value"], configs["max.message.bytes"]["source"]) == (
        "1048588",
        "DEFAULT_CONFIG",
    )
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # a third-party view of the same topic
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entry = admin.describe_configs([resource], request_timeout=15)[resource].result(timeout=20)["retention.ms"]
    assert (entry.value, entry.source) == ("1000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert sorted(admin.list_topics(topic, timeout=10).topics[topic].partitions) == [0, 1, 2]

    done = kafkalog("topics", "delete", topic, "--bootstrap-server", broker.bootstrap)
    assert (done.returncode, done.stdout) == (0, f"deleted topic {topic}\n")
    assert topic not in listed(broker)
    one_line_error(
        kafkalog("topics", "describe", topic, "--bootstrap-server", broker.bootstrap),
        1,
        f"kafkalog topics describe: topic {topic!r} does not exist on {broker.bootstrap}",
    )


def test_describe_shows_offsets_and_sizes_once_records_arrive(broker, request):
    topic = topic_for(request)
    done = kafkalog("topics", "create", topic, "--partitions", "2", "--bootstrap-server", broker.bootstrap)
    assert done.returncode == 0
    produce_records(broker.bootstrap, topic, [(1, b"k%d" % i, b"v" * 100, 1_700_000_000_000 + i) for i in range(7)])
    [description] = described(broker, topic)
    first, second = description["partitions"]
    assert (
        (first["latestOffset"], second["latestOffset"])
        == (0, 7)
        == tuple(latest_offsets(broker.bootstrap, topic, [0, 1]).values())
    )
    assert first["sizeBytes"] == 0 and second["sizeBytes"] > 700

    plain = kafkalog("topics", "describe", topic, "--bootstrap-server", broker.bootstrap)
    assert plain.returncode == 0
    lines = plain.stdout.splitlines()
    assert lines[:3] == [f"topic: {topic}", "partitions: 2", "controller: 0"]
    assert lines[3].split() == ["partition", "leader", "replicas", "isr", "earliest", "latest", "size"]
    assert lines[5].split() == ["1", "0", "0", "0", "0", "7", str(second["sizeBytes"])]
    assert lines[6].split() == ["config", "value", "source"]
    assert ["retention.ms", "604800000", "DEFAULT_CONFIG"] in [line.split() for line in lines]


def test_several_topics_at_once_and_partial_failures(broker, request):
    first, second = topic_for(request, "a"), topic_for(request, "b")
    done = kafkalog("topics", "create", first, second, "--partitions", "1", "--bootstrap-server", broker.bootstrap)
    assert done.stdout.splitlines() == [f"created topic {first}", f"created topic {second}"]
    assert [d["topic"] for d in described(broker, first, second)] == [first, second]
    missing = topic_for(request, "missing")
    done = kafkalog("topics", "delete", first, missing, "--bootstrap-server", broker.bootstrap)
    assert done.stdout == f"deleted topic {first}\n"
    one_line_error(done, 1, f"kafkalog topics delete: topic {missing!r} does not exist")
    done = kafkalog("topics", "describe", missing, second, "--bootstrap-server", broker.bootstrap)
    assert done.stdout.startswith(f"topic: {second}\n")
    one_line_error(done, 1, f"kafkalog topics describe: topic {missing!r} does not exist on {broker.bootstrap}")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--partitions", "2"], "already exists (TOPIC_ALREADY_EXISTS)"),
        (["--config", "no.such.setting=1"], "no.such.setting: unknown topic log setting (INVALID_CONFIG)"),
        (["--config", "retention.ms=soon"], "retention.ms: 'soon' is not an integer"),
        (["--replication-factor", "3"], "INVALID_REPLICATION_FACTOR"),
    ],
)
def test_create_errors_exit_1_with_the_brokers_reason(broker, request, args, message):
    topic = topic_for(request)
    if "--partitions" in args:
        assert kafkalog("topics", "create", topic, "--bootstrap-server", broker.bootstrap).returncode == 0
    done = kafkalog("topics", "create", topic, *args, "--bootstrap-server", broker.bootstrap)
    assert message in one_line_error(done, 1, "kafkalog topics create: ")
    assert done.stdout == ""


def test_a_bad_name_is_refused_and_nothing_is_created(broker):
    done = kafkalog("topics", "create", "bad name!", "--bootstrap-server", broker.bootstrap)
    assert "may only contain letters, digits" in one_line_error(done, 1, "kafkalog topics create: ")
    assert "bad name!" not in listed(broker)


def test_if_not_exists_if_exists_and_validate_only_make_scripts_idempotent(broker, request):
    topic = topic_for(request)
    dry = kafkalog("topics", "create", topic, "--validate-only", "--bootstrap-server", broker.bootstrap)
    assert (dry.returncode, dry.stdout) == (0, f"validated (not created) topic {topic}\n")
    assert topic not in listed(broker)
    for _ in range(2):
        done = kafkalog("topics", "create", topic, "--if-not-exists", "--bootstrap-server", broker.bootstrap)
        assert done.returncode == 0 and done.stderr == ""
    assert "already exists" in done.stdout
    for _ in range(2):
        done = kafkalog("topics", "delete", topic, "--if-exists", "--bootstrap-server", broker.bootstrap)
        assert done.returncode == 0 and done.stderr == ""
    assert "does not exist: nothing to do" in done.stdout
    one_line_error(
        kafkalog("topics", "delete", topic, "--bootstrap-server", broker.bootstrap),
        1,
        f"kafkalog topics delete: topic {topic!r} does not exist",
    )


def test_kafka_topics_and_configs_spellings(broker, request):
    """kafka-topics.sh's and kafka-configs.sh's action options, anywhere on the line, and a bootstrap
    address with its listener name, as Kafka's tools take them."""
    topic = topic_for(request)
    bootstrap = ["--bootstrap-server", f"PLAINTEXT://{broker.bootstrap}"]

    def ok(*args) -> str:
        done = kafkalog(*args, *bootstrap)
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        return done.stdout

    assert ok("topics", "--create", "--topic", topic, "--partitions", "2") == f"created topic {topic}\n"
    assert topic in ok("topics", "--list").split()
    assert "partitions: 2\n" in ok("topics", "--describe", "--topic", topic)
    every = [json.loads(line) for line in ok("topics", "--describe", "--format", "json").splitlines()]
    assert [d["topic"] for d in every] == listed(broker)  # no topic named: every topic, as kafka-topics
    assert ok("topics", "--topic", topic, "--alter", "--partitions", "3") == f"altered topic {topic}: 3 partitions\n"
    assert (
        ok("configs", "--entity-type", "topics", "--entity-name", topic, "--alter", "--add-config", "retention.ms=1000")
        == f"changed topic {topic}: retention.ms=1000\n"
    )
    described = json.loads(
        ok("configs", "--describe", "--entity-type", "topics", "--entity-name", topic, "--format", "json")
    )
    assert [(c["name"], c["value"]) for c in described["configs"]] == [("retention.ms", "1000")]
    assert ok("topics", "--delete", "--topic", topic) == f"deleted topic {topic}\n"
    two = kafkalog("topics", "--describe", "--delete", "--topic", topic, *bootstrap)  # which one: a usage error
    one_line_error(
        two, 2, "kafkalog topics: --describe and --delete are two actions: give one (see 'kafkalog topics --help')"
    )


def test_list_as_json(broker, request):
    topic = topic_for(request)
    produce_records(broker.bootstrap, topic, [(0, None, b"v", 0)])
    done = kafkalog("topics", "list", "--format", "json", "--bootstrap-server", broker.bootstrap)
    assert done.returncode == 0, done.stderr
    entries = [json.loads(line) for line in done.stdout.splitlines()]
    assert {"topic": topic, "internal": False} in entries
    assert [entry["topic"] for entry in entries] == listed(broker)
    assert all(entry["internal"] == (entry["topic"] == "__consumer_offsets") for entry in entries)
    done = kafkalog("topics", "--list", "--exclude-internal", "--bootstrap-server", broker.bootstrap)
    assert done.stdout.splitlines() == [entry["topic"] for entry in entries if not entry["internal"]]
