"""Helpers for tests of transactional data: Kafka's read_committed filter, applied to fetched
batches and a Fetch response's aborted transactions, and a transaction written by raw requests."""

import heapq
import struct
from collections.abc import Iterable

from broker.records import record_set
from broker.records.batch import ControlType, DecodedBatch


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
