"""Records inside produced batches, checked by the real broker process over raw sockets: a CRC-valid
batch with a malformed record gets INVALID_RECORD (87) with Produce v8's ``record_errors`` naming the
record, and stores nothing, while the other partition of the same request is appended; a batch whose
maxTimestamp is wrong is stored and fetched with the corrected one and a valid CRC; a record stamped
too far ahead of the broker's clock gets INVALID_TIMESTAMP."""

import time

import confluent_kafka
import pytest

from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.records import batch
from broker.records.batch import Record

from ..records.test_batch import _batch_with_body
from ..records.test_record_check import framed, record, records
from .test_wire_pitfalls import (
    BASE_TIME,
    decoded_batches,
    fetch_one,
    high_watermark,
    key_values,
    list_offset,
    make_batch,
    new_topic,
    produce,
)
from .wire import connect_to

MALFORMED_RECORD_3 = {
    # (records section, index the broker names: either record walker names the record)
    "offset-delta-4-at-3": (records(3) + record(4) + record(4), 3),
    "key-overruns-record-3": (records(3) + framed(b"\x00\x00\x06" + b"\x28k\x02v\x00") + record(4), 3),
}


def produce_two_partitions(client, topic: str, first: bytes, second: bytes) -> list:
    """One Produce v8 request for partitions 0 and 1; their results, in that order."""
    partitions = [{"index": 0, "records": first}, {"index": 1, "records": second}]
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 5000,
        "topics": [{"name": topic, "partitions": partitions}],
    }
    [topic_result] = client.call(ApiKey.PRODUCE, 8, body)["responses"]
    assert topic_result["name"] == topic
    assert [p["index"] for p in topic_result["partitions"]] == [0, 1]
    return topic_result["partitions"]


@pytest.mark.parametrize("case", sorted(MALFORMED_RECORD_3))
def test_a_malformed_record_fails_only_its_partition_and_is_named(broker, case):
    body, index = MALFORMED_RECORD_3[case]
    with connect_to(broker) as client:
        topic = new_topic(client, "records", partitions=2)
        assert produce(client, topic, 0, make_batch([b"before"]))["error_code"] == ErrorCode.NONE
        bad = _batch_with_body(body, 5, base_timestamp=BASE_TIME)
        batch.validate(bad)  # the CRC is right: only the records are wrong
        first, second = produce_two_partitions(client, topic, bad, make_batch([b"a", b"b"]))
        assert first["error_code"] == ErrorCode.INVALID_RECORD == 87, first
        assert first["base_offset"] == -1 and first["error_message"]
        if index >= 0:
            [error] = first["record_errors"]
            assert error["batch_index"] == 3
            assert "record 3" in error["batch_index_error_message"]
        else:
            assert first["record_errors"] == []
        assert (second["error_code"], second["base_offset"], second["record_errors"]) == (ErrorCode.NONE, 0, [])
        assert high_watermark(client, topic, 0) == 1
        assert key_values(fetch_one(client, topic, 0, 0)["records"]) == [(0, b"k0", b"before")]
        assert high_watermark(client, topic, 1) == 2
        assert key_values(fetch_one(client, topic, 1, 0)["records"]) == [(0, b"k0", b"a"), (1, b"k1", b"b")]
        # older versions have no record_errors but get the same error code
        assert produce(client, topic, 0, bad, version=3)["error_code"] == ErrorCode.INVALID_RECORD
        # the broker keeps serving, on this connection and on a new one
        assert produce(client, topic, 0, make_batch([b"after"]))["base_offset"] == 1
    with connect_to(broker) as client:
        assert key_values(fetch_one(client, topic, 0, 1)["records"]) == [(1, b"k0", b"after")]


def test_a_wrong_max_timestamp_is_corrected_on_the_way_in(broker):
    stamps = [BASE_TIME + 5, BASE_TIME + 700, BASE_TIME + 9]
    sent = batch.build([Record(i, t, b"k%d" % i, b"v") for i, t in enumerate(stamps)], max_timestamp=BASE_TIME)
    with connect_to(broker) as client:
        topic = new_topic(client, "stamps")
        result = produce(client, topic, 0, sent, version=8)
        assert (result["error_code"], result["base_offset"], result["log_append_time_ms"]) == (ErrorCode.NONE, 0, -1)
        raw = bytes(fetch_one(client, topic, 0, 0)["records"])
        [stored] = decoded_batches(raw)
        header = batch.validate(raw)
        assert header.max_timestamp == BASE_TIME + 700
        # the same bytes but baseOffset, partitionLeaderEpoch, crc and maxTimestamp
        assert [raw[8:12], raw[16], raw[21:35], raw[43:]] == [sent[8:12], sent[16], sent[21:35], sent[43:]]
        assert [r.timestamp for r in stored.records] == stamps
        found = list_offset(client, topic, 0, BASE_TIME + 100)
        assert (found["error_code"], found["offset"], found["timestamp"]) == (ErrorCode.NONE, 1, BASE_TIME + 700)
        assert produce(client, topic, 0, make_batch([b"next"]))["base_offset"] == 3


def test_a_record_timestamped_hours_ahead_is_refused_to_an_unmodified_client(broker):
    """confluent-kafka sends what the application stamped; the broker answers INVALID_TIMESTAMP (32)
    for a record past ``message.timestamp.after.max.ms`` (one hour, Kafka 4's default), and only it."""
    topic = "timestamps-ahead"
    with connect_to(broker) as client:
        new_topic(client, topic, partitions=1)
    outcomes = {}
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    now = int(time.time() * 1000)
    for name, timestamp in [
        ("ten minutes ahead", now + 600_000),
        ("two hours ahead", now + 7_200_000),
        ("a day behind", now - 86_400_000),
    ]:
        producer.produce(
            topic,
            value=name.encode(),
            partition=0,
            timestamp=timestamp,
            on_delivery=lambda err, msg, name=name: outcomes.__setitem__(name, err),
        )
        producer.flush(30)
    assert set(outcomes) == {"ten minutes ahead", "two hours ahead", "a day behind"}
    assert outcomes["ten minutes ahead"] is None and outcomes["a day behind"] is None
    assert outcomes["two hours ahead"].code() == confluent_kafka.KafkaError.INVALID_TIMESTAMP
    with connect_to(broker) as client:
        assert high_watermark(client, topic, 0) == 2
