"""``__consumer_offsets`` holds every group's live state, so no client may delete it, delete its
records, change its partition count (which moves every group to another partition) or give it a
``cleanup.policy`` other than ``compact`` (retention would delete commits): each is refused with one
clear error line by the real ``kafkalog`` commands, and by a third-party admin client (confluent-kafka)
on the wire; no client creates an internal topic (nor auto-creates ``__transaction_state``); a restart
of the real broker process then finds every group and commit as before, also when the offsets topic
was adopted from a log directory without its settings."""

import json

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from tests.conftest import FAST_GROUPS
from tests.server.wire import connect_to
from tests.waiting import wait_for

from .support import WAIT_SECONDS, kafkalog, one_line_error, topic_for

OFFSETS = "__consumer_offsets"
GROUPS = 12


def commit_groups(bootstrap: str, topic: str) -> dict:
    """Each group commits an offset of its own (confluent-kafka); ``{group: offset}``."""
    committed = {}
    for n in range(GROUPS):
        consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": f"kept-{n}"})
        try:
            consumer.commit(offsets=[confluent_kafka.TopicPartition(topic, n % 2, 10 + n)], asynchronous=False)
        finally:
            consumer.close()
        committed[f"kept-{n}"] = 10 + n
    return committed


def groups_and_offsets(bootstrap: str, topic: str) -> dict:
    """``{group: committed offset}`` of the groups ``kafkalog groups list`` shows, read by confluent-kafka."""
    listed = kafkalog("groups", "list", "--bootstrap-server", bootstrap)
    assert listed.returncode == 0, listed.stderr
    found = {}
    for group in listed.stdout.split():
        consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group})
        try:
            [position] = [
                tp
                for tp in consumer.committed(
                    [confluent_kafka.TopicPartition(topic, p) for p in (0, 1)], timeout=WAIT_SECONDS
                )
                if tp.offset >= 0
            ]
        finally:
            consumer.close()
        found[group] = position.offset
    return found


def admin_error(future) -> confluent_kafka.KafkaError:
    with pytest.raises(confluent_kafka.KafkaException) as refused:
        future.result(timeout=WAIT_SECONDS)
    return refused.value.args[0]


def refused_on_the_wire(bootstrap: str) -> None:
    """A third-party admin client's AlterConfigs, DeleteTopics and CreateTopics of internal topics."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    # AlterConfigs replaces every override: leaving cleanup.policy out would drop "compact"
    [replaced] = admin.alter_configs([ConfigResource("topic", OFFSETS, set_config={"retention.ms": "1"})]).values()
    assert admin_error(replaced).code() == confluent_kafka.KafkaError.INVALID_CONFIG
    [deleted] = admin.delete_topics([OFFSETS], operation_timeout=10).values()
    assert admin_error(deleted).code() == confluent_kafka.KafkaError.TOPIC_EXCEPTION
    [created] = admin.create_topics([NewTopic("__transaction_state", 1)]).values()
    assert admin_error(created).code() == confluent_kafka.KafkaError.INVALID_REQUEST


def not_auto_created(broker) -> None:
    """Metadata that may create topics leaves the transaction log to its coordinator (there is none yet)."""
    with connect_to(broker) as client:
        answer = client.call(
            ApiKey.METADATA, 4, {"topics": [{"name": "__transaction_state"}], "allow_auto_topic_creation": True}
        )
    assert answer["topics"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")  # its whole replacement is the point
def test_the_offsets_topic_refuses_every_change_that_would_lose_or_move_the_groups(start_broker, request):
    broker = start_broker({"log.flush.interval.messages": "1", "offsets.topic.num.partitions": "3", **FAST_GROUPS})
    bootstrap = broker.bootstrap
    topic = topic_for(request)
    assert kafkalog("topics", "create", topic, "--partitions", "2", "--bootstrap-server", bootstrap).returncode == 0
    committed = commit_groups(bootstrap, topic)
    assert groups_and_offsets(bootstrap, topic) == committed

    refusals = [
        (
            ("topics", "delete", OFFSETS),
            "kafkalog topics delete: topic '__consumer_offsets': it is an internal topic "
            "and cannot be deleted (INVALID_TOPIC_EXCEPTION)",
        ),
        (
            ("delete-records", OFFSETS, "--before", "0:end", "--before", "1:end", "--before", "2:end"),
            "kafkalog delete-records: __consumer_offsets-0: it is an internal topic and its records cannot be deleted "
            "(INVALID_TOPIC_EXCEPTION)",
        ),
        (
            ("topics", "alter", OFFSETS, "--partitions", "51"),
            "kafkalog topics alter: topic '__consumer_offsets' is an internal topic and its partition count cannot "
            "be changed (INVALID_TOPIC_EXCEPTION)",
        ),
        (
            ("configs", "alter", "--topic", OFFSETS, "--add-config", "cleanup.policy=[compact,delete]"),
            "kafkalog configs alter: cleanup.policy: topic '__consumer_offsets' is an internal topic and must stay "
            "compact (it would be 'compact,delete') (INVALID_CONFIG)",
        ),
        (
            (
                "configs",
                "alter",
                "--topic",
                OFFSETS,
                "--delete-config",
                "cleanup.policy",
            ),  # back to the broker's delete
            "kafkalog configs alter: cleanup.policy: topic '__consumer_offsets' is an internal topic and must stay "
            "compact (it would be 'delete') (INVALID_CONFIG)",
        ),
    ]
    for args, message in refusals:
        assert one_line_error(kafkalog(*args, "--bootstrap-server", bootstrap), 1, message.split(":")[0]) == message

    refused_on_the_wire(bootstrap)
    not_auto_created(broker)
    described = kafkalog("configs", "describe", "--topic", OFFSETS, "--bootstrap-server", bootstrap)
    assert described.returncode == 0 and "cleanup.policy" in described.stdout and "compact" in described.stdout
    assert "retention.ms" not in described.stdout
    assert broker.stop() == 0
    broker.start()
    assert groups_and_offsets(bootstrap, topic) == committed


def test_an_offsets_topic_found_on_disk_without_its_settings_is_adopted_compacted(start_broker, tmp_path, request):
    """A log directory without ``topics.json`` (a copied one): the broker's defaults, here a retention
    of 1 ms, must not delete the commits of the ``__consumer_offsets`` it adopts."""
    small = {
        "log.segment.bytes": "1024",
        "offsets.topic.segment.bytes": "1024",
        "offsets.topic.num.partitions": "1",
        "log.flush.interval.messages": "1",
        **FAST_GROUPS,
    }
    broker = start_broker(small, log_dir=tmp_path / "copied")
    topic = topic_for(request)
    created = kafkalog("topics", "create", topic, "--partitions", "2", "--bootstrap-server", broker.bootstrap)
    assert created.returncode == 0
    committed = commit_groups(broker.bootstrap, topic)  # several segments of 1 KiB
    assert broker.stop() == 0
    (tmp_path / "copied" / "topics.json").unlink()
    broker.settings.update({"log.retention.ms": "1", "log.retention.check.interval.ms": "100"})
    broker.start()
    witness = topic_for(request, "witness")
    assert kafkalog("topics", "create", witness, "--bootstrap-server", broker.bootstrap).returncode == 0
    assert (
        kafkalog(
            "produce",
            witness,
            "--bootstrap-server",
            broker.bootstrap,
            input="".join(f"{'x' * 100}-{i}\n" for i in range(50)),
        ).returncode
        == 0
    )

    def witness_start() -> int:
        listed = kafkalog("topics", "describe", witness, "--format", "json", "--bootstrap-server", broker.bootstrap)
        return json.loads(listed.stdout)["partitions"][0]["earliestOffset"]

    wait_for(lambda: witness_start() > 0, timeout=WAIT_SECONDS, what="retention to delete old segments")
    assert broker.stop() == 0  # the groups come back from what the log kept
    broker.start()
    assert groups_and_offsets(broker.bootstrap, topic) == committed
