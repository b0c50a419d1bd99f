"""A group's committed offset that no longer points into its topic's log, on a real broker process
with the real ``kafkalog`` commands and confluent-kafka: deleting a topic deletes every group's
offsets of it (tombstones: a restart does not bring them back), so a topic created again under the
same name is read from ``--auto-offset-reset``; a committed offset below the log start (after
delete-records) or above its end (a negative lag in ``groups describe``, as Kafka's tool shows it)
makes ``kafkalog consume --group`` start where ``--auto-offset-reset`` says, with a note, as Kafka's
consumer resets, also mid-run under ``--follow``; ``none`` fails in one line, and the failed member
has left its group at once."""

import json
import queue
import re
import signal
import subprocess
import sys
import threading

import confluent_kafka
import pytest

from tests.conftest import FAST_GROUPS
from tests.waiting import wait_for

from .support import WAIT_SECONDS, kafkalog, produce_records, topic_for

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def durable(start_broker):
    return start_broker({"log.flush.interval.messages": "1", "offsets.topic.num.partitions": "3", **FAST_GROUPS})


def run(broker, *args, input=None) -> subprocess.CompletedProcess:
    return kafkalog(*args, "--bootstrap-server", broker.bootstrap, input=input)


def consumed_offsets(done: subprocess.CompletedProcess) -> list[int]:
    """The offsets ``kafkalog consume`` printed (plain format: partition, offset, ...)."""
    assert done.returncode == 0, done.stderr
    return [int(line.split("\t")[1]) for line in done.stdout.splitlines()]


def commit(broker, group: str, topic: str, offset: int) -> None:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        consumer.commit(offsets=[confluent_kafka.TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        consumer.close()


def subscribed_values(broker, group: str, topic: str, count: int) -> list[bytes]:
    """What a confluent-kafka member of ``group`` (auto.offset.reset earliest) reads of ``topic``."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    got = []
    try:
        consumer.subscribe([topic])
        wait_for(
            lambda: got.extend(m.value() for m in consumer.consume(count, 0.5) if not m.error()) or len(got) >= count,
            timeout=60,
            interval=0,
            what=f"{count} records in group {group!r}",
        )
    finally:
        consumer.close()
    return got


def describe(broker, group: str) -> subprocess.CompletedProcess:
    return run(broker, "groups", "describe", group)


def test_deleting_a_topic_deletes_the_groups_offsets_of_it_and_a_restart_keeps_them_deleted(durable, request):
    broker, topic, other = durable, topic_for(request), topic_for(request, "other")
    for name in topic, other:
        assert run(broker, "topics", "create", name, "--partitions", "1").returncode == 0
    assert run(broker, "produce", topic, input="".join(f"old-{i}\n" for i in range(100))).returncode == 0
    assert consumed_offsets(run(broker, "consume", topic, "--group", "G")) == list(range(100))
    commit(broker, "C", topic, 100)
    commit(broker, "C", other, 7)  # another topic's offset of the same group stays
    assert "100" in describe(broker, "G").stdout

    assert run(broker, "topics", "delete", topic).returncode == 0
    wait_for(
        lambda: "consumer group 'G' does not exist" in describe(broker, "G").stderr,
        timeout=WAIT_SECONDS,
        what="group G, whose only offsets were of the deleted topic, to be gone",
    )
    assert broker.stop() == 0
    broker.start()
    assert "consumer group 'G' does not exist" in describe(broker, "G").stderr
    described = describe(broker, "C")
    assert described.returncode == 0 and topic not in described.stdout and other in described.stdout

    assert run(broker, "topics", "create", topic, "--partitions", "1").returncode == 0
    assert run(broker, "produce", topic, input="".join(f"new-{i}\n" for i in range(10))).returncode == 0
    again = run(broker, "consume", topic, "--group", "G", "--auto-offset-reset", "earliest")
    assert consumed_offsets(again) == list(range(10)) and "outside the log" not in again.stderr
    assert subscribed_values(broker, "C", topic, 10) == [f"new-{i}".encode() for i in range(10)]


def test_a_committed_offset_outside_the_log_starts_at_the_reset_offset_and_none_fails_and_leaves(durable, request):
    broker, topic = durable, topic_for(request)
    assert run(broker, "topics", "create", topic, "--partitions", "1").returncode == 0
    assert run(broker, "produce", topic, input="".join(f"v{i}\n" for i in range(10))).returncode == 0
    commit(broker, "G", topic, 3)
    assert run(broker, "delete-records", topic, "--before", "0:8").returncode == 0

    failed = run(
        broker, "consume", topic, "--group", "G", "--auto-offset-reset", "none", "--session-timeout-ms", "60000"
    )
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert failed.stderr.splitlines()[-1] == (
        f"kafkalog consume: {topic}-0: offset 3 is outside the log, which holds offsets 8 to 10 and "
        f"--auto-offset-reset is none (give earliest or latest to start there)"
    )
    # left at once: no member waits out its 60 s session
    assert "is Empty, with 0 active members" in describe(broker, "G").stdout

    below = run(broker, "consume", topic, "--group", "G")
    assert consumed_offsets(below) == [8, 9]
    assert (
        f"{topic}-0: offset 3 is outside the log, which holds offsets 8 to 10; starting at the earliest "
        f"offset 8 (--auto-offset-reset)" in below.stderr
    )

    commit(broker, "G", topic, 50)
    described = json.loads(run(broker, "groups", "describe", "G", "--format", "json").stdout)
    assert [(p["currentOffset"], p["logEndOffset"], p["lag"]) for p in described["partitions"]] == [(50, 10, -40)]
    above = run(broker, "consume", topic, "--group", "G", "--auto-offset-reset", "latest")
    assert consumed_offsets(above) == []
    assert "offset 50 is outside the log, which holds offsets 8 to 10; starting at the latest offset 10" in above.stderr


def test_a_following_member_whose_position_was_deleted_meanwhile_goes_on_from_the_reset_offset(durable, request):
    """The member is held mid-batch by its full stdout pipe while the records below the end are deleted:
    its next fetch is OFFSET_OUT_OF_RANGE, and it goes on from the new log start."""
    broker, topic = durable, topic_for(request)
    assert run(broker, "topics", "create", topic, "--partitions", "1").returncode == 0
    produce_records(broker.bootstrap, topic, [(0, None, b"x" * 1000, 0)] * 4000)  # 4 fetches of 1 MiB
    member = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "broker.cli",
            "consume",
            topic,
            "--group",
            "F",
            "--follow",
            "--session-timeout-ms",
            "120000",  # held longer than 10 s, it would be dropped
            "--bootstrap-server",
            broker.bootstrap,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    notes, lines = queue.Queue(), queue.Queue()
    try:
        threading.Thread(target=lambda: [notes.put(line) for line in member.stderr], daemon=True).start()
        first = member.stdout.readline()  # its starting position is set; it blocks on the unread pipe soon
        assert first.startswith("0\t0\t")
        assert run(broker, "delete-records", topic, "--before", "0:end").returncode == 0
        threading.Thread(target=lambda: [lines.put(line) for line in member.stdout], daemon=True).start()
        produce_records(broker.bootstrap, topic, [(0, None, f"after-{i}".encode(), 0) for i in range(3)])
        printed = [0]

        def read_all_new() -> bool:
            while not lines.empty():
                printed.append(int(lines.get().split("\t")[1]))
            return printed[-3:] == [4000, 4001, 4002]

        wait_for(read_all_new, timeout=60, what="the records produced after the deletion")
        member.send_signal(signal.SIGTERM)
        assert member.wait(WAIT_SECONDS) == 0
    finally:
        if member.poll() is None:
            member.kill()
            member.wait(WAIT_SECONDS)
    held = printed[:-3]  # the fetches made before the deletion, printed whole; nothing of the deleted after
    assert held == list(range(len(held))) and len(held) < 4000
    stderr = "".join(notes.queue)  # the new records may have been appended before the reset
    assert re.search(
        f"{topic}-0: offset {len(held)} is outside the log, which holds offsets 4000 to 400[0-3]; "
        f"starting at the earliest offset 4000 \\(--auto-offset-reset\\)",
        stderr,
    ), stderr
