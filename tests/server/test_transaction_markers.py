"""Transactional data against a real broker, by raw requests: transactional produce, WriteTxnMarkers,
Fetch at both isolation levels, ListOffsets, and the state across a SIGKILL."""

import pytest

from broker.common.offsets import LATEST
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode

from ..transactions import RawTransaction, committed_records, decode_batches, write_transaction, write_txn_marker
from .test_wire_pitfalls import make_batch, new_topic, produce
from .wire import connect_to, fetch_body, list_offsets_body

READ_UNCOMMITTED, READ_COMMITTED = 0, 1


@pytest.fixture
def client(broker):
    with connect_to(broker) as c:
        yield c


def fetch(client, topic, offset, isolation_level, version=11, **kwargs):
    body = fetch_body([(topic, 0, offset)], **kwargs)
    body["isolation_level"] = isolation_level
    result = client.call(ApiKey.FETCH, version, body)
    return result["responses"][0]["partitions"][0]


def latest(client, topic, isolation_level, version=2):
    body = list_offsets_body(topic, 0, LATEST)
    body["isolation_level"] = isolation_level
    reply = client.call(ApiKey.LIST_OFFSETS, version, body)["topics"][0]["partitions"][0]
    assert reply["error_code"] == ErrorCode.NONE, reply
    return reply["offset"]


def visible_values(client, topic, isolation_level):
    """What a consumer at ``isolation_level`` gets from offset 0, filtering as Kafka's consumer;
    with the last (empty) fetch reply and the first offsets of the aborted transactions reported."""
    offset, values, aborted_seen = 0, [], set()
    while True:
        reply = fetch(client, topic, offset, isolation_level)
        assert reply["error_code"] == ErrorCode.NONE, reply
        batches = decode_batches(bytes(reply["records"]))
        if not batches:
            return values, reply, aborted_seen
        aborted = [(a["producer_id"], a["first_offset"]) for a in reply["aborted_transactions"] or []]
        aborted_seen.update(first for _, first in aborted)
        values += [r.value for r in committed_records(batches, aborted)]
        offset = batches[-1].last_offset + 1


def test_committed_and_aborted_transactions_at_both_isolation_levels(broker, client):
    topic = new_topic(client, "txn")
    bootstrap = f"127.0.0.1:{broker.port}"
    assert produce(client, topic, 0, make_batch([b"plain-1"]))["error_code"] == ErrorCode.NONE
    write_transaction(bootstrap, topic, 0, [b"c1", b"c2"], commit=True)
    aborted_first = write_transaction(bootstrap, topic, 0, [b"a1", b"a2"], commit=False)
    assert produce(client, topic, 0, make_batch([b"plain-2"]))["error_code"] == ErrorCode.NONE
    end = 1 + 3 + 3 + 1
    committed, reply, aborted = visible_values(client, topic, READ_COMMITTED)
    assert committed == [b"plain-1", b"c1", b"c2", b"plain-2"] and aborted == {aborted_first}
    assert reply["last_stable_offset"] == reply["high_watermark"] == end
    uncommitted, reply, aborted = visible_values(client, topic, READ_UNCOMMITTED)
    assert uncommitted == [b"plain-1", b"c1", b"c2", b"a1", b"a2", b"plain-2"]  # control records skipped
    assert aborted == set() and reply["last_stable_offset"] == end
    assert latest(client, topic, READ_COMMITTED) == latest(client, topic, READ_UNCOMMITTED) == end


def test_an_open_transaction_holds_read_committed_readers_at_its_first_offset(broker, client):
    topic = new_topic(client, "open-txn")
    produce(client, topic, 0, make_batch([b"before"]))
    with connect_to(broker) as producer:
        transaction = RawTransaction(producer, topic, 0)
        transaction.send([b"t1"])
        produce(client, topic, 0, make_batch([b"after"]))
        assert latest(client, topic, READ_COMMITTED) == 1
        assert latest(client, topic, READ_UNCOMMITTED) == 3
        assert latest(client, topic, READ_UNCOMMITTED, version=1) == 3  # v1 has no isolation level
        committed, reply, _ = visible_values(client, topic, READ_COMMITTED)
        assert committed == [b"before"] and (reply["last_stable_offset"], reply["high_watermark"]) == (1, 3)
        assert fetch(client, topic, 1, READ_COMMITTED)["records"] == b""
        # a read_committed fetch parked for data wakes when the marker moves the last stable offset
        body = fetch_body([(topic, 0, 1)], max_wait_ms=120_000, min_bytes=1)
        body["isolation_level"] = READ_COMMITTED
        correlation_id = client.send_request(ApiKey.FETCH, 11, body)
        assert transaction.end(commit=True) == ErrorCode.NONE
        parked = client.recv_response(ApiKey.FETCH, 11, correlation_id, timeout=60)
        woken = parked["responses"][0]["partitions"][0]
        assert [r.value for r in committed_records(decode_batches(bytes(woken["records"])), [])] == [b"t1", b"after"]
    assert latest(client, topic, READ_COMMITTED) == 4


def test_producer_and_marker_errors(broker, client):
    topic = new_topic(client, "txn-errors")
    transaction = RawTransaction(client, topic, 0, coordinator_epoch=5)
    transaction.send([b"x"])
    plain = make_batch(
        [b"y"],
        producer_id=transaction.producer_id,
        producer_epoch=transaction.producer_epoch,
        base_sequence=transaction.sequence,
    )
    assert produce(client, topic, 0, plain)["error_code"] == ErrorCode.INVALID_TXN_STATE
    no_producer = make_batch([b"z"], is_transactional=True)
    assert produce(client, topic, 0, no_producer)["error_code"] == ErrorCode.INVALID_RECORD
    pid, epoch = transaction.producer_id, transaction.producer_epoch
    assert write_txn_marker(client, topic, 0, pid, epoch - 1, True, 5) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert write_txn_marker(client, topic, 7, pid, epoch, True, 5) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert write_txn_marker(client, topic + "-missing", 0, pid, epoch, True, 5) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert transaction.end(commit=False) == ErrorCode.NONE
    assert write_txn_marker(client, topic, 0, pid, epoch, False, 4) == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert latest(client, topic, READ_COMMITTED) == 2
    assert visible_values(client, topic, READ_COMMITTED)[0] == []


def test_transactions_survive_a_sigkill(start_broker, tmp_path):
    first = start_broker({"log.flush.interval.messages": "1"}, log_dir=tmp_path / "log")
    with connect_to(first) as client:
        topic = new_topic(client, "txn-kill")
        write_transaction(f"127.0.0.1:{first.port}", topic, 0, [b"gone"], commit=False)
        transaction = RawTransaction(client, topic, 0)
        transaction.send([b"kept"])
        before = fetch(client, topic, 0, READ_COMMITTED)
    first.kill()
    second = start_broker(log_dir=tmp_path / "log")
    with connect_to(second) as client:
        after = fetch(client, topic, 0, READ_COMMITTED)
        assert after["last_stable_offset"] == before["last_stable_offset"] == 2
        assert after["aborted_transactions"] == before["aborted_transactions"]
        assert write_txn_marker(client, topic, 0, transaction.producer_id, transaction.producer_epoch, True) == 0
        assert visible_values(client, topic, READ_COMMITTED)[0] == [b"kept"]
