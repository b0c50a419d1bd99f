"""``kafkalog consume --group`` as real processes against librdkafka's mock cluster (a real group
coordinator): two members split the partitions and each record is printed by exactly one; one
member stopped with SIGTERM leaves and the other takes every partition over, as it does after the
session timeout of a member killed with SIGKILL (nothing committed printed twice); the committed offsets
show in ``kafkalog groups describe``; a member shares its group with a confluent-kafka subscriber;
a second run of the same group starts from the committed offsets; and the usage errors. Against
this project's broker (its own coordinator) a member prints and commits, and the next run resumes."""

import json
import queue
import signal
import subprocess
import sys
import threading

import confluent_kafka
import pytest

from broker.client import GroupClient, KafkaClient
from tests.waiting import wait_for

from .support import WAIT_SECONDS, committed, kafkalog, one_line_error, produce_records, topic_for

pytestmark = pytest.mark.timeout(400)

PARTITIONS = 4  # the mock cluster's default for an auto-created topic
SESSION_MS = "6000"  # the shortest Kafka accepts by default; the mock's rebalances last about this long
REBALANCE_SECONDS = 90  # the mock rebalances when the members next heartbeat; a loaded CI machine took over 40 s once


class Member:
    """``kafkalog consume TOPIC --group G --follow --format json`` running, its output read as it comes."""

    def __init__(self, bootstrap: str, topic: str, group: str):
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "broker.cli",
                "consume",
                topic,
                "--group",
                group,
                "--follow",
                "--format",
                "json",
                "--session-timeout-ms",
                SESSION_MS,
                "--bootstrap-server",
                bootstrap,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines, self.notes = queue.Queue(), queue.Queue()
        self.records, self.stderr = [], []
        for stream, into in ((self.process.stdout, self.lines), (self.process.stderr, self.notes)):
            threading.Thread(target=lambda s=stream, q=into: [q.put(line) for line in s], daemon=True).start()

    def drain(self) -> None:
        while not self.lines.empty():
            record = json.loads(self.lines.get())
            self.records.append((record["partition"], record["offset"], record["value"]))
        while not self.notes.empty():
            self.stderr.append(self.notes.get().rstrip("\n"))

    def assigned(self) -> list[int] | None:
        """The partitions of the latest assignment this member announced (None before any)."""
        self.drain()
        announced = [line for line in self.stderr if "assigned" in line]
        if not announced:
            return None
        last = announced[-1].split("assigned ", 1)[1]
        return [] if last.startswith("no partition") else [int(p) for p in last.split(" of ")[0][11:].split(", ")]

    def stop(self) -> int:
        """SIGTERM, as a service manager stops it; its exit status."""
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(WAIT_SECONDS)
        self.drain()
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(WAIT_SECONDS)


@pytest.fixture
def members():
    started = []
    yield lambda *args: started.append(Member(*args)) or started[-1]
    for member in started:
        member.kill()


@pytest.fixture
def topic(mock, request):
    name = topic_for(request)
    produce_records(mock[0], name, [(p, None, f"before-{p}".encode(), 0) for p in range(PARTITIONS)])
    return name


def produce(bootstrap: str, topic: str, tag: str, per_partition: int = 2) -> set:
    values = [(p, f"{tag}-{p}-{i}") for i in range(per_partition) for p in range(PARTITIONS)]
    produce_records(bootstrap, topic, [(p, None, v.encode(), 0) for p, v in values])
    return {v for _, v in values}


def values(*of) -> list[str]:
    for member in of:
        member.drain()
    return sorted(v for member in of for _, _, v in member.records)


def committed_by_describe(bootstrap: str, group: str) -> dict:
    done = kafkalog("groups", "describe", group, "--format", "json", "--bootstrap-server", bootstrap)
    assert done.returncode == 0, done.stderr
    return {
        r["partition"]: (r["currentOffset"], r["logEndOffset"], r["lag"]) for r in json.loads(done.stdout)["partitions"]
    }


def test_two_members_split_the_partitions_then_one_leaves_and_the_other_takes_over(mock, topic, members, request):
    bootstrap, group = mock[0], topic_for(request, "group")
    first = members(bootstrap, topic, group)
    wait_for(lambda: first.assigned() == list(range(PARTITIONS)), REBALANCE_SECONDS, what="the first member's join")
    wait_for(lambda: len(values(first)) == PARTITIONS, WAIT_SECONDS, what="the records produced before")
    second = members(bootstrap, topic, group)
    wait_for(
        lambda: (
            second.assigned()
            and first.assigned()
            and sorted(first.assigned() + second.assigned()) == list(range(PARTITIONS))
        ),
        REBALANCE_SECONDS,
        what="the split between two members",
    )
    split = (first.assigned(), second.assigned())
    assert split == ([0, 1], [2, 3]) or split == ([2, 3], [0, 1])  # range: two consecutive partitions each

    during = produce(bootstrap, topic, "split")
    wait_for(lambda: len(values(first, second)) == PARTITIONS + len(during), WAIT_SECONDS, what="the new records")
    for member in (first, second):
        assert {p for p, _, v in member.records if v.startswith("split")} == set(member.assigned())

    assert second.stop() == 0
    assert "left group" in second.stderr[-1]
    wait_for(lambda: first.assigned() == list(range(PARTITIONS)), REBALANCE_SECONDS, what="the take-over")
    after = produce(bootstrap, topic, "after")
    wait_for(
        lambda: len(values(first, second)) == PARTITIONS + len(during) + len(after),
        WAIT_SECONDS,
        what="the records after the take-over",
    )
    assert values(first, second) == sorted({f"before-{p}" for p in range(PARTITIONS)} | during | after)
    assert first.stop() == 0

    # every printed record committed: nothing left to consume
    assert committed_by_describe(bootstrap, group) == {p: (5, 5, 0) for p in range(PARTITIONS)}


def test_a_killed_member_is_dropped_after_its_session_and_its_committed_records_are_not_printed_again(
    mock, topic, members, request
):
    bootstrap, group = mock[0], topic_for(request, "group")
    first = members(bootstrap, topic, group)
    wait_for(lambda: first.assigned() == list(range(PARTITIONS)), REBALANCE_SECONDS, what="the first member's join")
    second = members(bootstrap, topic, group)
    wait_for(
        lambda: (
            second.assigned()
            and first.assigned()
            and sorted(first.assigned() + second.assigned()) == list(range(PARTITIONS))
        ),
        REBALANCE_SECONDS,
        what="the split between two members",
    )
    during = produce(bootstrap, topic, "split")
    wait_for(lambda: len(values(first, second)) == PARTITIONS + len(during), WAIT_SECONDS, what="the new records")
    wait_for(
        lambda: committed(bootstrap, group, topic, PARTITIONS) == {p: 3 for p in range(PARTITIONS)},
        WAIT_SECONDS,
        what="the commits of what was printed",
    )  # (a kill between printing and committing prints again)
    second.process.kill()  # no leave: the coordinator waits for the session timeout
    second.process.wait(WAIT_SECONDS)
    wait_for(lambda: first.assigned() == list(range(PARTITIONS)), REBALANCE_SECONDS, what="the take-over")
    after = produce(bootstrap, topic, "after")
    wait_for(
        lambda: len(values(first, second)) == PARTITIONS + len(during) + len(after),
        WAIT_SECONDS,
        what="the records after the take-over",
    )
    # the killed member had committed what it printed: the new owner starts after it, nothing twice
    assert values(first, second) == sorted({f"before-{p}" for p in range(PARTITIONS)} | during | after)
    assert first.stop() == 0


def test_a_member_shares_its_group_with_a_confluent_kafka_subscriber(mock, topic, members, request):
    bootstrap, group = mock[0], topic_for(request, "group")
    ours = members(bootstrap, topic, group)
    wait_for(lambda: ours.assigned() == list(range(PARTITIONS)), REBALANCE_SECONDS, what="our member's join")
    theirs = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "log_level": 3,
            "session.timeout.ms": int(SESSION_MS),
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    got = []
    try:
        theirs.subscribe([topic])

        def both_assigned():
            message = theirs.poll(0.2)
            if message is not None and message.error() is None:
                got.append((message.partition(), message.value().decode()))
                theirs.commit(message, asynchronous=False)
            return len(ours.assigned() or []) == PARTITIONS // 2 and len(theirs.assignment()) == PARTITIONS // 2

        wait_for(both_assigned, REBALANCE_SECONDS, interval=0, what="the split with confluent-kafka")
        assert sorted(ours.assigned() + [tp.partition for tp in theirs.assignment()]) == list(range(PARTITIONS))

        during = produce(bootstrap, topic, "mixed")

        def all_consumed():
            message = theirs.poll(0.2)
            if message is not None and message.error() is None:
                got.append((message.partition(), message.value().decode()))
                theirs.commit(message, asynchronous=False)
            return len({v for _, v in got if v.startswith("mixed")} | set(values(ours))) >= len(during) + PARTITIONS

        wait_for(all_consumed, WAIT_SECONDS, interval=0, what="the records produced after the split")
        mine = [v for v in values(ours) if v.startswith("mixed")]
        theirs_values = [v for _, v in got if v.startswith("mixed")]
        assert sorted(mine + theirs_values) == sorted(during)  # each record consumed once, by one of them
        assert mine and theirs_values
    finally:
        theirs.close()
    assert ours.stop() == 0


def test_a_run_starts_where_the_group_committed_and_reset_latest_skips_the_past(mock, topic, request):
    bootstrap, group = mock[0], topic_for(request, "group")
    consume = ["consume", topic, "--group", group, "--session-timeout-ms", SESSION_MS, "--bootstrap-server", bootstrap]
    done = kafkalog(*consume, "--max-records", "3")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 3
    done = kafkalog(*consume)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == PARTITIONS - 3  # the rest, not the three already printed
    fresh = kafkalog(
        "consume",
        topic,
        "--group",
        topic_for(request, "fresh"),
        "--auto-offset-reset",
        "latest",
        "--session-timeout-ms",
        SESSION_MS,
        "--bootstrap-server",
        bootstrap,
    )
    assert (fresh.returncode, fresh.stdout) == (0, ""), fresh.stderr


def test_options_that_pick_partitions_or_offsets_are_refused_with_group():
    done = kafkalog("consume", "t", "--group", "g", "--partition", "0", "--offset", "3")
    assert "--partition cannot be used with --group" in one_line_error(done, 2, "kafkalog consume: --partition")
    done = kafkalog("consume", "t", "--group", "g", "--from-time", "1700000000000")
    assert "--from-time cannot be used with --group" in one_line_error(done, 2, "kafkalog consume: --from-time")
    done = kafkalog("consume", "t", "--group", "")
    assert "a consumer group id cannot be empty" in one_line_error(done, 2, "kafkalog consume: argument --group")


def test_against_this_broker_a_member_consumes_commits_and_the_next_run_resumes(broker, request):
    name = topic_for(request)
    produce_records(broker.bootstrap, name, [(p, None, f"v{p}-{i}".encode(), 0) for p in (0, 1) for i in range(3)])
    group = f"g-{name}"

    def run() -> list:
        done = kafkalog("consume", name, "--group", group, "--format", "json", "--bootstrap-server", broker.bootstrap)
        assert done.returncode == 0, done.stderr
        return sorted((r["partition"], r["offset"]) for r in map(json.loads, done.stdout.splitlines()))

    assert run() == [(p, o) for p in (0, 1) for o in range(3)]
    produce_records(broker.bootstrap, name, [(1, None, b"late", 0)])
    assert run() == [(1, 3)]  # from the committed offsets: only the new record
    with KafkaClient(broker.bootstrap, timeout=10) as client:
        found = GroupClient(client).committed(group, {name: [0, 1]})
    assert {p: c.offset for (_, p), c in found.items()} == {0: 3, 1: 4}
