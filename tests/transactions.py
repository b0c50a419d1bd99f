"""Helpers for tests of transactional data: Kafka's read_committed filter, applied to fetched
batches and a Fetch response's aborted transactions, and transactions written by raw requests
(``write_transaction(bootstrap, topic, partition, values, commit)`` for a whole one,
``RawTransaction`` to hold one open)."""

import heapq
import struct
import time
from collections.abc import Iterable, Sequence

from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.records import batch, record_set
from broker.records.batch import ControlType, DecodedBatch, Record

from .server.wire import WireClient, connect, produce_body


def committed_records(batches: Iterable[DecodedBatch], aborted: Iterable[tuple[int, int]]) -> list:
    """The records a read_committed consumer returns from ``batches`` given the fetch's
    ``aborted`` ``(producer_id, first_offset)`` list, as Kafka's consumer filters them: a
    transactional batch of a producer whose aborted transaction has started is skipped until that
    producer's ABORT marker; control batches are never returned."""
    pending = sorted((first_offset, producer_id) for producer_id, first_offset in aborted)
    heapq.heapify(pending)
    aborting: set[int] = set()
    out = []
    for decoded in batches:
        producer_id = decoded.producer_id
        if producer_id >= 0:
            while pending and pending[0][0] <= decoded.last_offset:
                aborting.add(heapq.heappop(pending)[1])
        if decoded.is_control:
            key = decoded.records[0].key if decoded.records else None
            if key is not None and struct.unpack(">hh", key)[1] == ControlType.ABORT:
                aborting.discard(producer_id)
            continue
        if decoded.is_transactional and producer_id in aborting:
            continue
        out.extend(decoded.records)
    return out


def decode_batches(data: bytes) -> list[DecodedBatch]:
    return list(record_set.iter_batches(data))


class RawTransaction:
    """A transaction on one partition written by raw requests: a producer id from InitProducerId
    (without a transactional id, which is all the data path needs), transactional Produce
    requests, and a WriteTxnMarkers request as a coordinator would send it."""

    def __init__(self, client: WireClient, topic: str, partition: int, coordinator_epoch: int = 0):
        self.client = client
        self.topic = topic
        self.partition = partition
        self.coordinator_epoch = coordinator_epoch
        reply = client.call(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None, "transaction_timeout_ms": 60000})
        assert reply["error_code"] == ErrorCode.NONE, reply
        self.producer_id, self.producer_epoch = reply["producer_id"], reply["producer_epoch"]
        self.sequence = 0
        self.first_offset: int | None = None

    def send(self, values: Sequence[bytes]) -> int:
        """Produce ``values`` as one transactional batch; its base offset."""
        records = [Record(i, int(time.time() * 1000), None, value) for i, value in enumerate(values)]
        data = batch.build(
            records,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.sequence,
            is_transactional=True,
        )
        body = produce_body(self.topic, self.partition, data, acks=-1)
        reply = self.client.call(ApiKey.PRODUCE, 8, body)["responses"][0]["partitions"][0]
        assert reply["error_code"] == ErrorCode.NONE, reply
        self.sequence += len(values)
        if self.first_offset is None:
            self.first_offset = reply["base_offset"]
        return reply["base_offset"]

    def end(self, commit: bool) -> int:
        """Write the COMMIT or ABORT marker; the partition's error code."""
        return write_txn_marker(
            self.client,
            self.topic,
            self.partition,
            self.producer_id,
            self.producer_epoch,
            commit,
            self.coordinator_epoch,
        )


def write_txn_marker(
    client: WireClient,
    topic: str,
    partition: int,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int = 0,
) -> int:
    """Send one WriteTxnMarkers v0 request for one partition; its error code."""
    body = {
        "markers": [
            {
                "producer_id": producer_id,
                "producer_epoch": producer_epoch,
                "transaction_result": commit,
                "topics": [{"name": topic, "partition_indexes": [partition]}],
                "coordinator_epoch": coordinator_epoch,
            }
        ]
    }
    reply = client.call(ApiKey.WRITE_TXN_MARKERS, 0, body)
    return reply["markers"][0]["topics"][0]["partitions"][0]["error_code"]


def write_transaction(bootstrap: str, topic: str, partition: int, values: Sequence[bytes], commit: bool) -> int:
    """Write ``values`` to ``topic``-``partition`` in one transaction of a fresh producer and
    commit or abort it; the offset of its first record (the marker follows its last)."""
    host, _, port = bootstrap.rpartition(":")
    with connect(host, int(port)) as client:
        transaction = RawTransaction(client, topic, partition)
        first_offset = transaction.send(values)
        code = transaction.end(commit)
        assert code == ErrorCode.NONE, code
        return first_offset
