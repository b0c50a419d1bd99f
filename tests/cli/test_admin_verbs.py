"""``kafkalog topics alter``, ``kafkalog configs describe|alter`` and ``kafkalog delete-records`` as
real processes against a real broker: each change checked through another client (confluent-kafka
or the project's), and each error with its exit code and one-line message."""

import json

from broker.client import BROKER_RESOURCE, EARLIEST, KafkaClient

from .support import kafkalog, one_line_error, produce_records, topic_for


def run_ok(broker, *args) -> str:
    done = kafkalog(*args, "--bootstrap-server", broker.bootstrap)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    return done.stdout


def created(broker, request, partitions: int = 2) -> str:
    topic = topic_for(request)
    run_ok(broker, "topics", "create", topic, "--partitions", str(partitions))
    return topic


def test_topics_alter_adds_partitions(broker, request):
    topic = created(broker, request)
    assert run_ok(broker, "topics", "alter", topic, "--partitions", "5") == f"altered topic {topic}: 5 partitions\n"
    with KafkaClient(broker.bootstrap) as client:
        assert client.partitions_of(topic) == [0, 1, 2, 3, 4]
    done = kafkalog("topics", "alter", topic, "--partitions", "3", "--bootstrap-server", broker.bootstrap)
    assert "has 5 partitions; the new count must be higher, got 3" in one_line_error(done, 1, "kafkalog topics alter: ")


def test_configs_alter_and_describe_a_topic(broker, request):
    topic = created(broker, request)
    out = run_ok(
        broker,
        "configs",
        "alter",
        "--topic",
        topic,
        "--add-config",
        "retention.ms=3600000,cleanup.policy=[delete]",
        "--add-config",
        "flush.messages=10",
    )
    assert out == f"changed topic {topic}: retention.ms=3600000, cleanup.policy=delete, flush.messages=10\n"
    run_ok(
        broker,
        "configs",
        "alter",
        "--entity-type",
        "topics",
        "--entity-name",
        topic,
        "--delete-config",
        "flush.messages",
    )
    shown = json.loads(run_ok(broker, "configs", "describe", "--topic", topic, "--format", "json"))
    assert {c["name"]: (c["value"], c["source"]) for c in shown["configs"]} == {
        "retention.ms": ("3600000", "DYNAMIC_TOPIC_CONFIG"),
        "cleanup.policy": ("delete", "DYNAMIC_TOPIC_CONFIG"),
    }
    every = json.loads(
        run_ok(broker, "configs", "describe", "--topic", topic, "--all", "--documentation", "--format", "json")
    )
    notes = {c["name"]: c["documentation"] for c in every["configs"]}
    assert len(notes) > 30 and notes["retention.ms"] is None and notes["delete.retention.ms"] is None  # compaction
    assert notes["leader.replication.throttled.replicas"] == (
        "Accepted and stored, no effect on this broker: replication is not throttled."
    )
    table = run_ok(broker, "configs", "describe", "--topic", topic, "--all", "--documentation")
    assert "preallocate" in table and "segment files grow as they are written" in table

    done = kafkalog(
        "configs",
        "alter",
        "--topic",
        topic,
        "--add-config",
        "retention.ms=soon",
        "--bootstrap-server",
        broker.bootstrap,
    )
    assert "retention.ms: 'soon' is not an integer" in one_line_error(done, 1, "kafkalog configs alter: ")
    done = kafkalog(
        "configs", "alter", "--topic", topic, "--add-config", "retention", "--bootstrap-server", broker.bootstrap
    )
    one_line_error(done, 2, "kafkalog configs alter: argument --add-config: 'retention' is not KEY=VALUE")
    done = kafkalog("configs", "describe", "--bootstrap-server", broker.bootstrap)
    one_line_error(done, 2, "kafkalog configs describe: name exactly one of --topic NAME, --broker ID")


def test_configs_alter_the_brokers_settings(broker):
    out = run_ok(broker, "configs", "alter", "--broker", "0", "--add-config", "log.cleaner.min.compaction.lag.ms=5")
    assert out == "changed broker 0: log.cleaner.min.compaction.lag.ms=5\n"
    with KafkaClient(broker.bootstrap) as client:
        entries = {e.name: e for e in client.describe_configs("0", BROKER_RESOURCE)}
    assert (
        entries["log.cleaner.min.compaction.lag.ms"].value,
        entries["log.cleaner.min.compaction.lag.ms"].source,
    ) == ("5", 2)
    table = run_ok(broker, "configs", "describe", "--entity-type", "brokers", "--entity-name", "0")
    assert "log.cleaner.min.compaction.lag.ms  5      DYNAMIC_BROKER_CONFIG" in table
    done = kafkalog(
        "configs", "alter", "--broker", "0", "--add-config", "num.partitions=9", "--bootstrap-server", broker.bootstrap
    )
    assert "num.partitions: cannot be updated while the broker runs" in one_line_error(
        done, 1, "kafkalog configs alter: "
    )
    assert (
        run_ok(broker, "configs", "describe", "--broker-defaults")
        == "the cluster-wide broker defaults: no dynamic settings (--all shows every setting)\n"
    )


def test_delete_records_moves_the_earliest_offset(broker, request):
    topic = created(broker, request)
    produce_records(broker.bootstrap, topic, [(0, None, b"v%d" % i, 0) for i in range(6)] + [(1, None, b"w", 0)])
    out = run_ok(broker, "delete-records", topic, "--before", "0:4", "--before", "1:end")
    assert out == (
        f"{topic}-0: records before offset 4 deleted (log start offset 4)\n"
        f"{topic}-1: records before offset 1 deleted (log start offset 1)\n"
    )
    with KafkaClient(broker.bootstrap) as client:
        earliest = client.list_offsets({(topic, 0): EARLIEST, (topic, 1): EARLIEST})
    assert {key: found[0] for key, found in earliest.items()} == {(topic, 0): 4, (topic, 1): 1}
    for before, code, message in (
        (
            "0:7",
            1,
            f"--before 0:7 (the latest offset of {topic}-0 is 6) is past the end: "
            f"records can be deleted up to the latest offset (PARTITION:end deletes "
            f"every record stored now) (OFFSET_OUT_OF_RANGE)",
        ),
        ("9:1", 1, "has no partition 9"),
        ("0:x", 2, "'0:x' is not PARTITION:OFFSET"),
    ):
        done = kafkalog("delete-records", topic, "--before", before, "--bootstrap-server", broker.bootstrap)
        assert message in one_line_error(done, code, "kafkalog delete-records: ")
