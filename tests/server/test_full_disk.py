"""A full disk, for real: a 16 MiB tmpfs as the broker's log directory, filled to the last byte.

Every metadata change on a full disk is all or nothing and answered with KAFKA_STORAGE_ERROR, never
a closed connection (an offset commit NOT_COORDINATOR, as in Kafka); deleting a topic works on a
full disk and frees it; after any failed write, Metadata, ListOffsets, Fetch and a restart agree
that every acknowledged record is there once and nothing unacknowledged is. Mounting the tmpfs needs
root (CI runs as root); without it these tests skip.
"""

import os
import subprocess

import pytest
from confluent_kafka import Producer

from broker.client import (
    BROKER_RESOURCE,
    TOPIC_RESOURCE,
    KafkaClient,
    KafkaError,
    NewTopic,
    UnknownTopicOrPartitionError,
)
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.records import record_set

from ..log.full_disk import fill, free_bytes, small_tmpfs
from .test_group_coordinator import commit, fetched, find_coordinator
from .wire import connect_to

SETTINGS = {"num.partitions": "1", "auto.create.topics.enable": "false"}
RECORD = 16 * 1024
PAGE = 4096  # tmpfs allocates whole pages


@pytest.fixture
def small_disk(tmp_path):
    """A fresh 16 MiB tmpfs. A broker using it as its log directory keeps its stderr beside it."""
    with small_tmpfs(tmp_path / "disk") as mount:
        yield mount


def temporary_files(log_dir) -> list[str]:
    return sorted(name for name in os.listdir(log_dir) if name.endswith(".tmp"))


def client_of(broker) -> KafkaClient:
    """A project client that reports a storage error at once instead of retrying it."""
    return KafkaClient(broker.bootstrap, timeout=15, retries=0)


def produce_until_full(client, topic: str) -> list[int]:
    """Produce numbered records of RECORD bytes, one batch each, until the broker reports a storage
    error; return the numbers acknowledged."""
    acknowledged = []
    for number in range(10 * 1024):  # 160 MiB: far more than the disk holds
        try:
            client.produce(topic, 0, [(None, str(number).encode().ljust(RECORD, b"."))])
        except KafkaError as exc:
            assert exc.code == ErrorCode.KAFKA_STORAGE_ERROR, exc
            return acknowledged
        acknowledged.append(number)
    pytest.fail(f"{topic} took {len(acknowledged)} records of {RECORD} bytes on a 16 MiB disk")


def read_values(client, topic: str, partition: int = 0) -> list[tuple[int, bytes]]:
    """``(offset, value)`` of every record of a partition, fetched from ListOffsets' earliest to latest."""
    start = client.list_offsets({(topic, partition): -2})[(topic, partition)][0]
    end = client.list_offsets({(topic, partition): -1})[(topic, partition)][0]
    found, offset = [], start
    while offset < end:
        result = client.fetch(topic, partition, offset, 1 << 20)
        for batch in record_set.iter_batches(bytes(result.records)):
            found += [(r.offset, r.value) for r in batch.records if r.offset >= offset]
        offset = found[-1][0] + 1
    return found


def numbers(values) -> list[int]:
    return [int(value.rstrip(b".")) for _, value in values]


def test_deleting_a_topic_on_a_full_disk_deletes_it_whole_and_frees_the_disk(small_disk, start_broker):
    broker = start_broker(SETTINGS, log_dir=small_disk)
    with client_of(broker) as client:
        assert client.create_topics([NewTopic("keep", 1), NewTopic("bulk", 1)]) == {"keep": None, "bulk": None}
        for number in range(20):
            client.produce("keep", 0, [(None, str(number).encode())])
        produce_until_full(client, "bulk")
        fill(small_disk)

        assert client.delete_topics(["bulk"]) == {"bulk": None}
        assert client.topics() == ["keep"]
        with pytest.raises(UnknownTopicOrPartitionError):
            client.produce("bulk", 0, [(None, b"after the delete")])
        assert client.delete_topics(["bulk"])["bulk"].code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert free_bytes(small_disk) > 8 << 20, "the deleted topic's data still fills the disk"
        assert temporary_files(small_disk) == []
    assert broker.stop() == 0

    broker = start_broker(SETTINGS, log_dir=small_disk)
    with client_of(broker) as client:
        assert client.topics() == ["keep"]
        assert numbers(read_values(client, "keep")) == list(range(20))
    assert not any(name.startswith("bulk-") for name in os.listdir(small_disk))


def test_an_offset_commit_on_a_full_disk_is_answered_not_coordinator_as_in_kafka(small_disk, start_broker):
    """Kafka answers a storage error on ``__consumer_offsets`` NOT_COORDINATOR: the client looks for
    the coordinator again and retries; the last commit stored stays the group's."""
    broker = start_broker(SETTINGS, log_dir=small_disk)
    with client_of(broker) as client:
        assert client.create_topics([NewTopic("read", 1)]) == {"read": None}
    with connect_to(broker) as wire:
        find_coordinator(wire, "readers")
        assert commit(wire, "readers", {("read", 0): 1}) == [ErrorCode.NONE]
        filler = fill(small_disk)
        acknowledged = 1
        for offset in range(2, 2 * PAGE):  # the page the log's last write began still takes a few
            [error] = commit(wire, "readers", {("read", 0): offset})
            if error != ErrorCode.NONE:
                break
            acknowledged = offset
        assert error == ErrorCode.NOT_COORDINATOR
        assert fetched(wire, "readers") == {("read", 0): (acknowledged, "m", 0)}
        os.unlink(filler)
        assert commit(wire, "readers", {("read", 0): offset}) == [ErrorCode.NONE]
        assert fetched(wire, "readers") == {("read", 0): (offset, "m", 0)}


def test_creating_a_topic_on_a_full_disk_changes_nothing(small_disk, start_broker):
    broker = start_broker(SETTINGS, log_dir=small_disk)
    with client_of(broker) as client:
        client.create_topics([NewTopic("bulk", 1)])
        produce_until_full(client, "bulk")
        fill(small_disk)

        error = client.create_topics([NewTopic("late", 2, {"retention.ms": "3600000"})])["late"]
        assert error.code == ErrorCode.KAFKA_STORAGE_ERROR and "late" in str(error)
        assert client.topics() == ["bulk"]
        assert not any(name.startswith("late-") for name in os.listdir(small_disk))
        assert temporary_files(small_disk) == []
        assert client.delete_topics(["bulk"]) == {"bulk": None}  # room for the shutdown's checkpoints
    assert broker.stop() == 0

    broker = start_broker(SETTINGS, log_dir=small_disk)
    with client_of(broker) as client:
        assert client.topics() == []
        assert client.create_topics([NewTopic("late", 2)]) == {"late": None}


def settings_of(client, name: str, resource_type: int = TOPIC_RESOURCE) -> dict[str, str]:
    return {entry.name: entry.value for entry in client.describe_configs(name, resource_type)}


def test_changing_settings_or_partitions_on_a_full_disk_changes_nothing(small_disk, start_broker):
    broker = start_broker(SETTINGS, log_dir=small_disk)
    with client_of(broker) as client:
        client.create_topics([NewTopic("kept", 1, {"retention.ms": "3600000"}), NewTopic("bulk", 1)])
        broker_retention = settings_of(client, "0", BROKER_RESOURCE)["log.retention.ms"]
        produce_until_full(client, "bulk")
        fill(small_disk)

        for change in (
            lambda: client.alter_configs("kept", {"retention.ms": "7200000"}),
            lambda: client.alter_configs("0", {"log.retention.ms": "7200000"}, BROKER_RESOURCE),
            lambda: client.create_partitions("kept", 3),
        ):
            with pytest.raises(KafkaError) as refused:
                change()
            assert refused.value.code == ErrorCode.KAFKA_STORAGE_ERROR
        assert settings_of(client, "kept")["retention.ms"] == "3600000"
        assert settings_of(client, "0", BROKER_RESOURCE)["log.retention.ms"] == broker_retention
        assert client.partitions_of("kept") == [0]
        assert temporary_files(small_disk) == []
        assert client.delete_topics(["bulk"]) == {"bulk": None}  # room for the shutdown's checkpoints
    assert broker.stop() == 0

    broker = start_broker(SETTINGS, log_dir=small_disk)
    with client_of(broker) as client:
        assert settings_of(client, "kept")["retention.ms"] == "3600000"
        assert settings_of(client, "0", BROKER_RESOURCE)["log.retention.ms"] == broker_retention
        assert client.partitions_of("kept") == [0]
    assert not {"kept-1", "kept-2"} & set(os.listdir(small_disk))


def test_a_producer_id_block_not_saved_is_answered_with_a_storage_error_and_not_used(small_disk, start_broker):
    broker = start_broker(SETTINGS, log_dir=small_disk)
    fill(small_disk)
    with connect_to(broker) as wire:
        # the first producer id reserves a block of ids in a file: it cannot on a full disk
        answer = wire.call(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None, "transaction_timeout_ms": 60_000})
        assert answer["error_code"] == ErrorCode.KAFKA_STORAGE_ERROR
        os.unlink(small_disk / "filler")
        answer = wire.call(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None, "transaction_timeout_ms": 60_000})
        assert (answer["error_code"], answer["producer_id"]) == (ErrorCode.NONE, 0)
    assert temporary_files(small_disk) == []
    broker.kill()

    broker = start_broker(SETTINGS, log_dir=small_disk)  # id 0 was given out: it is never given again
    with connect_to(broker) as wire:
        answer = wire.call(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None, "transaction_timeout_ms": 60_000})
        assert answer["error_code"] == ErrorCode.NONE and answer["producer_id"] > 0


@pytest.mark.parametrize("doomed", ["doomed", "d" * 249])  # a long name is cut in the renamed directory's
def test_a_deletion_interrupted_after_its_first_rename_is_finished_at_start(small_disk, start_broker, doomed):
    broker = start_broker(SETTINGS, log_dir=small_disk)
    with client_of(broker) as client:
        client.create_topics([NewTopic("keep", 1), NewTopic(doomed, 3)])
        client.produce(doomed, 1, [(None, b"gone")])
        client.produce("keep", 0, [(None, b"0")])
    assert broker.stop() == 0
    # what a crash right after the first of the deletion's renames leaves (named as the log
    # manager names it); a SIGKILL cannot be timed between two renames
    os.rename(small_disk / f"{doomed}-0", small_disk / (f"{doomed}-0"[:215] + f".{'0' * 32}-delete"))

    broker = start_broker(SETTINGS, log_dir=small_disk)
    with client_of(broker) as client:
        assert client.topics() == ["keep"]
        assert numbers(read_values(client, "keep")) == [0]
    assert not {f"{doomed}-{p}" for p in range(3)} & set(os.listdir(small_disk))  # the rest renamed aside too


class DeliveryLog:
    """What an idempotent confluent-kafka producer was told about each numbered record."""

    def __init__(self):
        self.acknowledged: dict[int, int] = {}  # number -> offset
        self.failed: dict[int, str] = {}

    def __call__(self, error, message) -> None:
        number = int(message.value().rstrip(b"."))
        if error is None:
            self.acknowledged[number] = message.offset()
        else:
            self.failed[number] = error.str()


def produce_idempotently(broker, topic: str, numbers_to_send, deliveries: DeliveryLog) -> None:
    """Send every number with a fresh idempotent acks=all producer; wait for every delivery report."""
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": 3000,
            "retry.backoff.ms": 50,
            "batch.num.messages": 1,
        }
    )
    for number in numbers_to_send:
        producer.produce(topic, str(number).encode().ljust(1000, b"."), partition=0, on_delivery=deliveries)
        producer.poll(0)
    assert producer.flush(60) == 0, "delivery reports still missing after 60 s"


def assert_stored_exactly(client, idempotent: dict[int, int], plain: list[int]) -> None:
    """Metadata, ListOffsets and Fetch show every acknowledged record once, at its offset, and no other."""
    assert client.topics() == ["idempotent", "plain"]
    stored = read_values(client, "idempotent")
    assert sorted(numbers(stored)) == sorted(idempotent)
    assert dict(zip(numbers(stored), [offset for offset, _ in stored], strict=True)) == idempotent
    assert numbers(read_values(client, "plain")) == plain


def leave_free(disk, pages: int) -> None:
    """Fill the disk, then give back exactly ``pages`` pages of the filler."""
    filler = fill(disk)
    size = os.path.getsize(filler)
    os.truncate(filler, max(0, -(-size // PAGE) - pages) * PAGE)


@pytest.mark.timeout(240)
def test_after_failed_writes_every_acknowledged_record_is_there_once_and_nothing_else(small_disk, start_broker):
    # two 1 KB batches per segment and an index entry per batch: a segment's second append fits in
    # its .log's first page but needs a new page for the offset index, so when the disk fills up
    # there, the .log write succeeds and the index write fails (issue 12, item 1). The disk is
    # given back one page more each round, so it fills at every step of an append.
    settings = {**SETTINGS, "log.segment.bytes": "2200", "log.index.interval.bytes": "1"}
    broker = start_broker(settings, log_dir=small_disk)
    (small_disk / "filler").write_bytes(b"\0" * (1 << 20))  # to give back page by page later
    deliveries = DeliveryLog()
    with client_of(broker) as client:
        client.create_topics([NewTopic("idempotent", 1), NewTopic("plain", 1), NewTopic("scratch", 1)])
        for number in range(100):
            client.produce("scratch", 0, [(None, str(number).encode().ljust(RECORD, b"."))])
        plain = produce_until_full(client, "plain")
        fill(small_disk)
        error = client.create_topics([NewTopic("late", 1)])["late"]
        assert error.code == ErrorCode.KAFKA_STORAGE_ERROR

        sent = 0
        for spare_pages in range(1, 6):  # an append needs up to 4 pages: the disk fills at each of them
            leave_free(small_disk, spare_pages)
            produce_idempotently(broker, "idempotent", range(sent, sent + 4), deliveries)
            sent += 4
        assert deliveries.failed and deliveries.acknowledged, "the disk did not fill up under the producer"

        assert client.delete_topics(["scratch"]) == {"scratch": None}  # makes room on the full disk
        produce_idempotently(broker, "idempotent", range(sent, sent + 100), deliveries)
        fill(small_disk)
        plain += produce_until_full(client, "plain")
        assert_stored_exactly(client, deliveries.acknowledged, plain)

    assert broker.stop() in (0, 1)  # on a full disk the clean shutdown may not finish; it must still exit
    assert "Traceback" not in broker.stderr_tail(200)
    os.unlink(small_disk / "filler")

    broker = start_broker(settings, log_dir=small_disk)
    with client_of(broker) as client:
        assert_stored_exactly(client, deliveries.acknowledged, plain)
    assert temporary_files(small_disk) == []


def set_open_file_limit(broker, soft: int | None) -> None:
    """Set a running broker's soft limit of open files (None: back to its hard limit)."""
    if soft is None:
        hard = subprocess.run(
            ["prlimit", f"--pid={broker.pid()}", "--nofile", "--output=HARD", "--noheadings"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()
        soft = hard
    subprocess.run(["prlimit", f"--pid={broker.pid()}", f"--nofile={soft}:"], check=True, timeout=30)


def test_a_creation_whose_partitions_cannot_all_be_made_is_withdrawn(tmp_path, start_broker):
    broker = start_broker(SETTINGS, log_dir=tmp_path / "log")
    with client_of(broker) as client:
        assert client.create_topics([NewTopic("before", 1)]) == {"before": None}
        # room for about ten more files: the partitions (three files each) of "wide" run out of them
        set_open_file_limit(broker, len(os.listdir(f"/proc/{broker.pid()}/fd")) + 10)
        error = client.create_topics([NewTopic("wide", 40)])["wide"]
        assert error.code == ErrorCode.KAFKA_STORAGE_ERROR and "wide" in str(error)
        set_open_file_limit(broker, None)
        assert client.topics() == ["before"]
        assert not [name for name in os.listdir(broker.log_dir) if name.startswith("wide-") and "." not in name]
    broker.kill()

    broker = start_broker(SETTINGS, log_dir=tmp_path / "log")
    with client_of(broker) as client:
        assert client.topics() == ["before"]
        assert client.create_topics([NewTopic("wide", 40)]) == {"wide": None}


def test_a_shutdown_that_fails_on_a_full_disk_exits_1_with_one_line_and_the_next_start_recovers(
    small_disk, start_broker
):
    broker = start_broker(SETTINGS, log_dir=small_disk)
    with client_of(broker) as client:
        client.create_topics([NewTopic("events", 1)])
        acknowledged = produce_until_full(client, "events")
    fill(small_disk)
    # trimming preallocated indexes at shutdown may make room again; a checkpoint whose temporary
    # name is taken by a directory fails whatever room there is
    blocker = small_disk / "recovery-point-offset-checkpoint.tmp"
    blocker.mkdir()

    assert broker.stop() == 1
    stderr = broker.stderr_tail(50)
    assert "Traceback" not in stderr
    assert len([line for line in stderr.splitlines() if " ERROR " in line and "shutdown incomplete" in line]) == 1
    blocker.rmdir()
    os.unlink(small_disk / "filler")

    broker = start_broker(SETTINGS, log_dir=small_disk)
    with client_of(broker) as client:
        assert numbers(read_values(client, "events")) == acknowledged


def test_temporary_files_left_by_a_crash_are_removed_at_start(tmp_path, start_broker):
    log_dir = tmp_path / "log"
    broker = start_broker(SETTINGS, log_dir=log_dir)
    with client_of(broker) as client:
        client.create_topics([NewTopic("kept", 1)])
    broker.kill()
    for name in ("topics.json.tmp", "recovery-point-offset-checkpoint.tmp", "producer-id-block.tmp"):
        (log_dir / name).write_bytes(b"half")

    broker = start_broker(SETTINGS, log_dir=log_dir)
    assert temporary_files(log_dir) == []
    with client_of(broker) as client:
        assert client.topics() == ["kept"]
