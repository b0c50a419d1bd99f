"""A request held inside a slow disk operation stalls nobody else (disk work runs on the I/O pool).

The broker runs in this process with ``flush.messages=1`` (every produce fsyncs before its ack),
and the first segment fsync is held on an event until the test lets it go: a deterministic slow
disk. While one connection's produce is held there, another connection's Metadata, ListOffsets,
Fetch and a produce to another partition are answered; a second produce to the held partition
waits its turn (one writer per partition) and gets the next offsets once the first is done, and
so do the deletion of its topic (it would otherwise close the log under the append) and
DeleteRecords on it.
"""

import threading

import pytest

from broker.log.segment import LogSegment
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.records import batch
from broker.records.batch import Record

from .in_process import broker_in_this_process
from .wire import connect, create_topics_body, fetch_body, list_offsets_body, produce_body

TIMEOUT = 30
DELETE_PATIENCE = 3  # how long the delete is given to (wrongly) overtake the held append
TOPIC = "slow-disk"


@pytest.fixture
def held_fsync(monkeypatch):
    """``(entered, release)`` events: the first segment fsync sets ``entered`` and waits for ``release``."""
    entered, release = threading.Event(), threading.Event()
    real_flush = LogSegment.flush

    def flush(segment):
        if not entered.is_set():
            entered.set()
            release.wait(TIMEOUT)
        real_flush(segment)

    monkeypatch.setattr(LogSegment, "flush", flush)
    yield entered, release
    release.set()


def records(count: int) -> bytes:
    return batch.build([Record(i, 1_700_000_000_000 + i, None, b"v%d" % i) for i in range(count)])


def produced(client, correlation_id: int) -> dict:
    return client.recv_response(ApiKey.PRODUCE, 8, correlation_id)["responses"][0]["partitions"][0]


@pytest.mark.timeout(120)
def test_other_requests_are_answered_while_a_produce_is_held_in_its_fsync(tmp_path, held_fsync):
    entered, release = held_fsync
    settings = {"log.flush.interval.messages": "1"}
    with (
        broker_in_this_process(tmp_path / "log", settings) as port,
        connect("127.0.0.1", port, TIMEOUT) as held,
        connect("127.0.0.1", port, TIMEOUT) as queued,
        connect("127.0.0.1", port, TIMEOUT) as other,
    ):
        assert (
            other.call(ApiKey.CREATE_TOPICS, 4, create_topics_body(TOPIC, partitions=2))["topics"][0]["error_code"] == 0
        )
        held_id = held.send_request(ApiKey.PRODUCE, 8, produce_body(TOPIC, 0, records(3)))
        assert entered.wait(TIMEOUT), "the produce never reached its fsync"
        queued_id = queued.send_request(ApiKey.PRODUCE, 8, produce_body(TOPIC, 0, records(2)))

        metadata = other.call(
            ApiKey.METADATA,
            8,
            {
                "topics": [{"name": TOPIC}],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            },
        )
        assert metadata["topics"][0]["error_code"] == ErrorCode.NONE
        offsets = other.call(ApiKey.LIST_OFFSETS, 5, list_offsets_body(TOPIC, 0, -1))
        assert offsets["topics"][0]["partitions"][0]["offset"] == 3  # appended, not yet fsynced nor acknowledged
        fetched = other.call(ApiKey.FETCH, 11, fetch_body([(TOPIC, 1, 0)]))
        assert fetched["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
        elsewhere = other.call(ApiKey.PRODUCE, 8, produce_body(TOPIC, 1, records(4)))["responses"][0]["partitions"][0]
        assert (elsewhere["error_code"], elsewhere["base_offset"]) == (ErrorCode.NONE, 0)

        assert not held.pending_bytes() and not queued.pending_bytes()  # both still wait for the held fsync
        release.set()
        first, second = produced(held, held_id), produced(queued, queued_id)
        assert (first["error_code"], first["base_offset"]) == (ErrorCode.NONE, 0)
        assert (second["error_code"], second["base_offset"]) == (ErrorCode.NONE, 3)


def deleted_topic(answer, log_dir) -> None:
    assert answer["responses"][0]["error_code"] == ErrorCode.NONE
    assert not (log_dir / f"{TOPIC}-0").exists()


def deleted_records(answer, log_dir) -> None:
    [partition] = answer["topics"][0]["partitions"]
    assert (partition["error_code"], partition["low_watermark"]) == (ErrorCode.NONE, 3)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "api_key, version, body, check",
    [
        (ApiKey.DELETE_TOPICS, 3, {"topic_names": [TOPIC], "timeout_ms": 5000}, deleted_topic),
        (
            ApiKey.DELETE_RECORDS,
            1,
            {"topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "offset": -1}]}], "timeout_ms": 5000},
            deleted_records,
        ),
    ],
    ids=["DeleteTopics", "DeleteRecords"],
)
def test_a_deletion_waits_for_the_append_in_flight_to_its_partition(
    tmp_path, held_fsync, api_key, version, body, check
):
    entered, release = held_fsync
    with (
        broker_in_this_process(tmp_path / "log", {"log.flush.interval.messages": "1"}) as port,
        connect("127.0.0.1", port, TIMEOUT) as producer,
        connect("127.0.0.1", port, TIMEOUT) as admin,
    ):
        assert admin.call(ApiKey.CREATE_TOPICS, 4, create_topics_body(TOPIC))["topics"][0]["error_code"] == 0
        produce_id = producer.send_request(ApiKey.PRODUCE, 8, produce_body(TOPIC, 0, records(3)))
        assert entered.wait(TIMEOUT), "the produce never reached its fsync"
        delete_id = admin.send_request(api_key, version, body)
        with pytest.raises(TimeoutError):  # before: it closed the log, or moved its start, under the held append
            admin.recv_frame(timeout=DELETE_PATIENCE)
        release.set()
        acked = produced(producer, produce_id)
        assert (acked["error_code"], acked["base_offset"]) == (ErrorCode.NONE, 0)
        check(admin.recv_response(api_key, version, delete_id), tmp_path / "log")
