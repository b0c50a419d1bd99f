"""``kafkalog groups`` as a real process against librdkafka's mock cluster (a real group coordinator,
without ListGroups/DescribeGroups/DeleteGroups) with real confluent-kafka consumers: describe shows
committed offsets, log end offsets and lag; reset-offsets computes, dry-runs, executes, and is
refused while a subscribed member is active; and against this project's broker, whose coordinator
has every verb's API: list, describe with lag, delete-offsets, reset-offsets and delete."""

import argparse
import json
import subprocess
import time

import confluent_kafka
import pytest

from broker.cli.groups import new_offsets
from broker.client import CommittedOffset, GroupClient, KafkaClient

from .support import committed, kafkalog, one_line_error, produce_records, topic_for

WAIT_SECONDS = 20
PARTITIONS = 4  # the mock cluster's default for an auto-created topic
RECORDS_PER_PARTITION = 5


@pytest.fixture
def topic(mock, request):
    """A topic of the mock cluster with RECORDS_PER_PARTITION records in each partition, timestamped
    1000 ms apart from 1_000_000 (record i of each partition at 1_000_000 + 1000 * i)."""
    name = topic_for(request)
    produce_records(
        mock[0],
        name,
        [(p, None, b"v%d" % i, 1_000_000 + 1000 * i) for i in range(RECORDS_PER_PARTITION) for p in range(PARTITIONS)],
    )
    return name


def commit_from_outside(bootstrap: str, group: str, topic: str, offsets: dict) -> None:
    """Commit as an assign() user does (no membership): the group has offsets and no members."""
    with KafkaClient(bootstrap, timeout=10) as client:
        GroupClient(client).commit(group, {(topic, p): o for p, o in offsets.items()})


def groups(mock, *args):
    return kafkalog("groups", *args, "--bootstrap-server", mock[0])


def test_describe_shows_offsets_and_lag_of_a_subscribed_group(mock, topic, request):
    group = topic_for(request, "group")
    member = confluent_kafka.Consumer(
        {
            "bootstrap.servers": mock[0],
            "group.id": group,
            "log_level": 3,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        member.subscribe([topic])
        consumed, deadline = 0, time.monotonic() + WAIT_SECONDS
        while consumed < PARTITIONS * RECORDS_PER_PARTITION and time.monotonic() < deadline:
            message = member.poll(0.2)
            consumed += message is not None and message.error() is None
        assert consumed == PARTITIONS * RECORDS_PER_PARTITION
        member.commit(
            offsets=[confluent_kafka.TopicPartition(topic, p, p + 1) for p in range(PARTITIONS - 1)], asynchronous=False
        )  # the last partition has no committed offset

        done = groups(mock, "describe", group, "--format", "json")
        assert done.returncode == 0, done.stderr
        assert "does not support describing consumer groups" in done.stderr  # the mock has no DescribeGroups
        shown = json.loads(done.stdout)
        assert [
            (r["topic"], r["partition"], r["currentOffset"], r["logEndOffset"], r["lag"]) for r in shown["partitions"]
        ] == [(topic, p, p + 1, RECORDS_PER_PARTITION, RECORDS_PER_PARTITION - p - 1) for p in range(PARTITIONS - 1)]
        table = groups(mock, "describe", group).stdout.splitlines()
        assert table[0].split() == [
            "GROUP",
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
        ]
        assert table[1].split() == [
            group,
            topic,
            "0",
            "1",
            str(RECORDS_PER_PARTITION),
            str(RECORDS_PER_PARTITION - 1),
            "-",
            "-",
            "-",
        ]

        done = groups(mock, "reset-offsets", group, "--topic", topic, "--to-earliest", "--execute")
        assert "has active members" in one_line_error(done, 1, "kafkalog groups reset-offsets: consumer group")
        assert committed(mock[0], group, topic, PARTITIONS) == {p: p + 1 for p in range(PARTITIONS - 1)}
    finally:
        member.close()


def test_reset_offsets_dry_run_changes_nothing(mock, topic, request):
    group = topic_for(request, "group")
    commit_from_outside(mock[0], group, topic, {0: 3, 1: 3})
    done = groups(mock, "reset-offsets", group, "--topic", f"{topic}:0,1", "--to-earliest")
    assert done.returncode == 0 and "dry run, nothing committed" in done.stderr, done.stderr
    assert [line.split() for line in done.stdout.splitlines()] == [
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
        [group, topic, "0", "0"],
        [group, topic, "1", "0"],
    ]
    assert committed(mock[0], group, topic, PARTITIONS) == {0: 3, 1: 3}


@pytest.mark.parametrize(
    "how, expected, moved",
    [
        (["--to-earliest"], {0: 0, 1: 0, 2: 0, 3: 0}, {}),
        (["--to-latest"], {p: RECORDS_PER_PARTITION for p in range(PARTITIONS)}, {}),
        (["--to-offset", "2"], {p: 2 for p in range(PARTITIONS)}, {}),
        # kept within the log, and said so (as kafka-consumer-groups.sh warns)
        (
            ["--to-offset", "99"],
            {p: RECORDS_PER_PARTITION for p in range(PARTITIONS)},
            {p: "offset 99 is higher than the latest offset" for p in range(PARTITIONS)},
        ),
        (["--shift-by", "-2"], {0: 0, 1: 1, 2: 1, 3: 2}, {0: "offset -1 is lower than the earliest offset"}),
        # no record at or after the time: the latest offset (the mock answers every time lookup so)
        (["--to-datetime", "2030-01-01T00:00:00Z"], {p: RECORDS_PER_PARTITION for p in range(PARTITIONS)}, {}),
    ],
)
def test_reset_offsets_execute(mock, topic, request, how, expected, moved):
    group = topic_for(request, "group")
    commit_from_outside(mock[0], group, topic, {0: 1, 1: 3, 2: 3, 3: 4})
    done = groups(mock, "reset-offsets", group, "--topic", topic, *how, "--execute")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"kafkalog groups reset-offsets: note: {what} of {topic}-{p}; it is set to {expected[p]}"
        for p, what in moved.items()
    ]
    assert committed(mock[0], group, topic, PARTITIONS) == expected


def test_reset_offsets_of_some_partitions_and_all_topics(mock, topic, request):
    group = topic_for(request, "group")
    commit_from_outside(mock[0], group, topic, {0: 1, 1: 1})
    done = groups(mock, "reset-offsets", group, "--topic", f"{topic}:1", "--to-latest", "--execute")
    assert done.returncode == 0, done.stderr
    assert committed(mock[0], group, topic, PARTITIONS) == {0: 1, 1: RECORDS_PER_PARTITION}
    done = groups(mock, "reset-offsets", group, "--all-topics", "--to-offset", "0", "--execute")
    assert done.returncode == 0, done.stderr
    assert committed(mock[0], group, topic, PARTITIONS) == {0: 0, 1: 0}  # only the partitions it had committed


def test_reset_offsets_bad_input(mock, topic, request):
    group = topic_for(request, "group")
    done = groups(mock, "reset-offsets", group, "--topic", f"{topic}:x", "--to-earliest")
    one_line_error(done, 2, "kafkalog groups reset-offsets: argument --topic: ")
    done = groups(mock, "reset-offsets", group, "--topic", topic)
    one_line_error(done, 2, "kafkalog groups reset-offsets: one of the arguments --to-earliest")
    done = groups(mock, "reset-offsets", group, "--topic", f"{topic}:9", "--to-earliest")
    assert "has no partition 9" in one_line_error(done, 1, "kafkalog groups reset-offsets: ")
    done = groups(mock, "reset-offsets", group, "--topic", topic, "--shift-by", "1")
    assert "needs a committed offset" in one_line_error(done, 1, "kafkalog groups reset-offsets: ")
    done = groups(mock, "reset-offsets", group, "--all-topics", "--to-latest")
    assert "has no committed offsets" in one_line_error(done, 1, "kafkalog groups reset-offsets: ")


def test_describe_a_group_without_offsets(mock, request):
    done = groups(mock, "describe", topic_for(request, "group"), "--format", "json")
    assert done.returncode == 0 and "has no committed offsets and no assigned partitions" in done.stderr
    assert json.loads(done.stdout)["partitions"] == []


def test_verbs_the_mock_lacks_fail_with_one_line(mock, topic):
    assert "does not support listing consumer groups" in one_line_error(
        groups(mock, "list"), 1, "kafkalog groups list: "
    )
    assert "does not support deleting consumer groups" in one_line_error(
        groups(mock, "delete", "g"), 1, "kafkalog groups delete: "
    )
    assert "does not support deleting a group's offsets (it offers no OffsetDelete API)" in one_line_error(
        groups(mock, "delete-offsets", "g", "--topic", f"{topic}:0"), 1, "kafkalog groups delete-offsets: "
    )
    assert one_line_error(groups(mock, "describe", "g", "--members"), 1, "kafkalog groups describe: ") == (
        "kafkalog groups describe: --members needs a broker that can describe groups (DescribeGroups)"
    )


def test_every_verb_against_our_broker(broker, request):
    topic, group = topic_for(request), topic_for(request, "group")
    kafkalog("topics", "create", topic, "--partitions", "2", "--bootstrap-server", broker.bootstrap)
    produce_records(broker.bootstrap, topic, [(p, None, b"v", 1_000_000 + 1000 * i) for i in range(3) for p in (0, 1)])
    commit_from_outside(broker.bootstrap, group, topic, {0: 1, 1: 3})

    def verb(*args):
        done = kafkalog("groups", *args, "--bootstrap-server", broker.bootstrap)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert group in verb("list").split()
    described = json.loads(verb("describe", group, "--format", "json"))
    assert {(p["partition"], p["currentOffset"], p["lag"]) for p in described["partitions"]} == {(0, 1, 2), (1, 3, 0)}
    assert "deleted the offset" in verb("delete-offsets", group, "--topic", f"{topic}:1")
    verb("reset-offsets", group, "--all-topics", "--to-earliest", "--execute")
    with KafkaClient(broker.bootstrap, timeout=10) as client:
        assert {p: c.offset for (_, p), c in GroupClient(client).committed(group).items()} == {0: 0}
    assert "deleted consumer group" in verb("delete", group)
    assert group not in verb("list").split()


def test_new_offsets_by_time_from_our_brokers_time_index(broker, request):
    """The mock cluster answers no time lookups; this broker's time index does: --to-datetime picks
    the first record at or after the time, the latest offset past every record; the other targets
    too, computed against real earliest/latest offsets."""
    topic = topic_for(request)
    kafkalog("topics", "create", topic, "--partitions", "2", "--bootstrap-server", broker.bootstrap)
    produce_records(broker.bootstrap, topic, [(p, None, b"v", 1_000_000 + 1000 * i) for i in range(5) for p in (0, 1)])
    targets = [(topic, 0), (topic, 1)]
    last_commit = {(topic, 0): CommittedOffset(4, -1, ""), (topic, 1): CommittedOffset(1, -1, "")}

    def offsets(**how):
        args = argparse.Namespace(
            group="g", to_earliest=False, to_latest=False, to_datetime=None, to_offset=None, shift_by=None
        )
        vars(args).update(how)
        with KafkaClient(broker.bootstrap, timeout=10) as client:
            return new_offsets(client, args, targets, last_commit)

    assert offsets(to_datetime=1_002_000) == {(topic, 0): 2, (topic, 1): 2}
    assert offsets(to_datetime=1_001_500) == {(topic, 0): 2, (topic, 1): 2}
    assert offsets(to_datetime=0) == {(topic, 0): 0, (topic, 1): 0}
    assert offsets(to_datetime=9_000_000) == {(topic, 0): 5, (topic, 1): 5}
    assert offsets(shift_by=3) == {(topic, 0): 5, (topic, 1): 4}
    assert offsets(to_offset=-7) == {(topic, 0): 0, (topic, 1): 0}


def test_kafka_consumer_groups_spellings_and_errors_in_words(broker, request):
    """kafka-consumer-groups.sh's --list, --describe --group G, --all-groups, --delete --group G; the
    errors of a group with an active member (NON_EMPTY_GROUP, GROUP_SUBSCRIBED_TO_TOPIC) and of a
    missing group (GROUP_ID_NOT_FOUND) said in words, with what to do."""
    topic, group, other = topic_for(request), topic_for(request, "group"), topic_for(request, "other")
    produce_records(broker.bootstrap, topic, [(0, None, b"v", 1_000_000)])
    commit_from_outside(broker.bootstrap, other, topic, {0: 1})

    def run(*args) -> subprocess.CompletedProcess:
        return kafkalog("groups", *args, "--bootstrap-server", f"PLAINTEXT://{broker.bootstrap}")

    member = confluent_kafka.Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "log_level": 3,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        member.subscribe([topic])
        deadline = time.monotonic() + WAIT_SECONDS
        while not member.assignment() and time.monotonic() < deadline:
            member.poll(0.2)
        assert member.assignment()
        member.commit(offsets=[confluent_kafka.TopicPartition(topic, 0, 1)], asynchronous=False)

        listed = run("--list", "--format", "json")
        assert listed.returncode == 0, listed.stderr
        entries = [json.loads(line) for line in listed.stdout.splitlines()]
        assert {"group": group, "protocolType": "consumer"} in entries
        assert {"group": other, "protocolType": ""} in entries  # offsets committed without membership
        described = run("--describe", "--group", group, "--format", "json")
        assert described.returncode == 0, described.stderr
        assert json.loads(described.stdout)["state"] == "Stable"
        state = run("--describe", "--group", group, "--state", "--format", "json")
        assert json.loads(state.stdout) == {
            "group": group,
            "assignmentStrategy": "range",
            "state": "Stable",
            "members": 1,
        }, state.stderr
        members = run("--describe", "--group", group, "--members")
        assert members.returncode == 0, members.stderr
        [header, row] = [line.split() for line in members.stdout.splitlines()]
        assert header == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
        assert (row[0], row[-1]) == (group, "4")  # every partition of the topic (the broker fixture's num.partitions)
        every = run("--describe", "--all-groups", "--format", "json")
        assert every.returncode == 0, every.stderr
        assert {group, other} <= {json.loads(line)["group"] for line in every.stdout.splitlines()}

        assert one_line_error(run("--delete", "--group", group), 1, "kafkalog groups delete: ") == (
            f"kafkalog groups delete: consumer group {group!r} has active members: stop its consumers, then try "
            f"again (NON_EMPTY_GROUP)"
        )
        assert one_line_error(run("delete-offsets", "--group", group, "--topic", topic), 1, "kafkalog groups ") == (
            f"kafkalog groups delete-offsets: consumer group {group!r} has active members subscribed to topic "
            f"{topic}: its offsets of the topic can be deleted only when no member reads it (stop its consumers "
            f"first) (GROUP_SUBSCRIBED_TO_TOPIC)"
        )  # one line for the topic's four partitions
    finally:
        member.close()
    missing = topic_for(request, "missing")
    assert one_line_error(run("delete", missing), 1, "kafkalog groups delete: ") == (
        f"kafkalog groups delete: consumer group {missing!r} does not exist (`kafkalog groups list` shows the "
        f"groups) (GROUP_ID_NOT_FOUND)"
    )
    deleted = run("--delete", "--group", other)
    assert (deleted.returncode, deleted.stdout) == (0, f"deleted consumer group {other}\n"), deleted.stderr
    deleted = run("--delete", "--all-groups")  # the member has left: every group of the module's broker
    assert deleted.returncode == 0 and f"deleted consumer group {group}\n" in deleted.stdout, deleted.stderr
    assert run("--list").stdout == ""
    assert one_line_error(run("--delete", "--all-groups"), 1, "kafkalog groups delete: ") == (
        "kafkalog groups delete: the cluster has no consumer groups"
    )
