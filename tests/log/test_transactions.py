"""Transactional data in the log: open transactions, markers, the first unstable offset, the
``.txnindex``, and the read_committed view through roll, restart and recovery."""

import os
import random

import pytest

from broker.log.config import LogConfig
from broker.log.errors import (
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    TransactionCoordinatorFencedError,
)
from broker.log.partition_log import PartitionLog
from broker.log.transaction_index import AbortedTxn, parse_entries
from broker.records import batch

from ..clock import FakeClock
from ..transactions import committed_records, decode_batches
from .cleaning import clean_to_the_end
from .util import BASE_TIME, files_in, make_records, read_all


def txn_batch(values, producer_id, sequence, epoch=0, transactional=True, timestamp=BASE_TIME):
    records = [batch.Record(i, timestamp, None, v) for i, v in enumerate(values)]
    return batch.build(
        records,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        is_transactional=transactional,
    )


def plain_batch(values, timestamp=BASE_TIME):
    return batch.build([batch.Record(i, timestamp, None, v) for i, v in enumerate(values)])


def open_log(directory, clock, **config):
    return PartitionLog.open(str(directory / "t-0"), LogConfig(**config), clock=clock)


def read_committed(log, start=None):
    """Values a read_committed consumer gets, fetching up to the last stable offset with the
    aborted transactions the log reports for each fetched range."""
    offset = log.log_start_offset if start is None else start
    lso = log.first_unstable_offset()
    lso = log.log_end_offset if lso is None else lso
    values = []
    while offset < lso:
        found = log.read(offset, 300, max_offset=lso)
        assert found is not None
        batches = decode_batches(found.read())
        upper = batches[-1].last_offset + 1
        aborted = [(t.producer_id, t.first_offset) for t in log.collect_aborted_txns(offset, upper)]
        values += [r.value for r in committed_records(batches, aborted) if r.offset >= offset]
        offset = upper
    return values


def test_a_transaction_is_unstable_until_its_marker_and_an_abort_is_indexed(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path, clock)
    log.append(plain_batch([b"a"]))
    log.append(txn_batch([b"t1", b"t2"], producer_id=5, sequence=0))
    log.append(plain_batch([b"b"]))
    assert log.first_unstable_offset() == 1
    assert read_committed(log) == [b"a"]  # the plain record after the open transaction waits too
    marker = log.append_txn_marker(5, 0, coordinator_epoch=3, commit=False)
    assert marker == 4 and log.first_unstable_offset() is None
    assert read_committed(log) == [b"a", b"b"]
    assert log.active_segment.txn_index.entries == [AbortedTxn(5, 1, 4, 5)]
    log.append(txn_batch([b"t3"], producer_id=5, sequence=2))
    log.append_txn_marker(5, 0, coordinator_epoch=3, commit=True)
    assert read_committed(log) == [b"a", b"b", b"t3"]
    assert len(log.active_segment.txn_index.entries) == 1  # commits are not indexed


def test_the_index_entry_records_the_open_transaction_of_another_producer(tmp_path):
    log = open_log(tmp_path, FakeClock())
    log.append(txn_batch([b"x"], producer_id=1, sequence=0))
    log.append(txn_batch([b"y"], producer_id=2, sequence=0))
    log.append_txn_marker(2, 0, 0, commit=False)
    assert log.active_segment.txn_index.entries == [AbortedTxn(2, 1, 2, 0)]
    assert log.first_unstable_offset() == 0


def test_producer_rules_for_transactions(tmp_path):
    log = open_log(tmp_path, FakeClock())
    with pytest.raises(InvalidRecordError, match="without a producer id"):
        log.append(txn_batch([b"x"], producer_id=-1, sequence=-1, epoch=-1))
    log.append(txn_batch([b"x"], producer_id=1, sequence=0, epoch=2))
    with pytest.raises(InvalidTxnStateError):
        log.append(txn_batch([b"y"], producer_id=1, sequence=1, epoch=2, transactional=False))
    with pytest.raises(InvalidProducerEpochError):
        log.append_txn_marker(1, 1, 0, commit=True)
    log.append_txn_marker(1, 2, coordinator_epoch=4, commit=True)
    with pytest.raises(TransactionCoordinatorFencedError):
        log.append_txn_marker(1, 2, coordinator_epoch=3, commit=True)
    with pytest.raises(InvalidRecordError, match="control"):
        log.append(batch.build(make_records(1), producer_id=1, producer_epoch=2, base_sequence=1, is_control=True))
    assert log.log_end_offset == 2


def test_a_marker_with_a_newer_epoch_aborts_a_fenced_producers_transaction(tmp_path):
    log = open_log(tmp_path, FakeClock())
    log.append(txn_batch([b"zombie"], producer_id=1, sequence=0, epoch=0))
    log.append_txn_marker(1, 1, 0, commit=False)  # the coordinator bumped the epoch when fencing it
    assert log.first_unstable_offset() is None
    with pytest.raises(InvalidProducerEpochError):
        log.append(txn_batch([b"late"], producer_id=1, sequence=1, epoch=0))
    log.append(txn_batch([b"new"], producer_id=1, sequence=0, epoch=1))
    log.append_txn_marker(1, 1, 0, commit=True)
    assert read_committed(log) == [b"new"]


def test_a_marker_without_data_here_completes_nothing(tmp_path):
    log = open_log(tmp_path, FakeClock())
    log.append_txn_marker(9, 0, 0, commit=False)
    assert log.active_segment.txn_index.entries == [] and read_committed(log) == []
    assert not files_in(log.directory, ".txnindex")


def _random_history(log, rng, steps):
    """Random interleavings of three transactional producers and plain writes; the committed values."""
    sequences = {1: 0, 2: 0, 3: 0}
    open_txns: dict[int, list[bytes]] = {}
    committed = []
    for step in range(steps):
        choice = rng.random()
        producer_id = rng.choice(list(sequences))
        if choice < 0.2:
            value = f"plain-{step}".encode()
            log.append(plain_batch([value]))
            committed.append(value)
        elif choice < 0.65:
            values = [f"p{producer_id}-{step}-{i}".encode() for i in range(rng.randint(1, 3))]
            log.append(txn_batch(values, producer_id, sequences[producer_id]))
            sequences[producer_id] += len(values)
            open_txns.setdefault(producer_id, []).extend(values)
        else:
            commit = rng.random() < 0.5
            log.append_txn_marker(producer_id, 0, 0, commit=commit)
            values = open_txns.pop(producer_id, [])
            if commit:
                committed.extend(values)
        if rng.random() < 0.08:
            log.roll()
    for producer_id in list(open_txns):
        commit = rng.random() < 0.5
        log.append_txn_marker(producer_id, 0, 0, commit=commit)
        if commit:
            committed.extend(open_txns.pop(producer_id))
    return committed


@pytest.mark.parametrize("seed", range(4))
def test_the_read_committed_view_is_the_committed_records_across_roll_and_reopen(tmp_path, seed):
    rng = random.Random(seed)
    clock = FakeClock()
    log = open_log(tmp_path, clock, segment_bytes=2000)
    committed = _random_history(log, rng, 150)
    assert len(log.segments) > 2
    assert sorted(read_committed(log)) == sorted(committed)
    # from any start offset the view is the committed records from there
    start = rng.randrange(log.log_end_offset)
    assert set(read_committed(log, start)) <= set(committed)
    entries = [e for s in log.segments for e in s.txn_index.entries]
    log.close()
    reopened = PartitionLog.open(log.directory, log.config, had_clean_shutdown=True, clock=clock)
    assert [e for s in reopened.segments for e in s.txn_index.entries] == entries
    assert sorted(read_committed(reopened)) == sorted(committed)
    reopened.close()


def test_an_open_transaction_survives_restart_through_the_snapshot_and_replay(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path, clock, segment_bytes=300)
    log.append(txn_batch([b"open"], producer_id=4, sequence=0))
    for i in range(10):
        log.append(plain_batch([f"p{i}".encode() * 20]))
    assert len(log.segments) > 2 and log.first_unstable_offset() == 0
    log.close()
    for clean in (True, False):
        reopened = PartitionLog.open(log.directory, log.config, had_clean_shutdown=clean, clock=clock)
        assert reopened.first_unstable_offset() == 0
        reopened.close()
    # without any snapshot the state is rebuilt from the whole log
    for name in files_in(log.directory, ".snapshot"):
        os.unlink(os.path.join(log.directory, name))
    reopened = PartitionLog.open(log.directory, log.config, clock=clock)
    assert reopened.first_unstable_offset() == 0
    reopened.append_txn_marker(4, 0, 0, commit=False)
    assert reopened.first_unstable_offset() is None and read_committed(reopened)[0] == b"p0" * 20


def test_a_torn_txnindex_is_rebuilt_from_the_log(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path, clock, segment_bytes=400)
    rng = random.Random(7)
    committed = _random_history(log, rng, 80)
    with_entries = [s for s in log.segments if s.txn_index.entries]
    assert with_entries
    entries = [e for s in log.segments for e in s.txn_index.entries]
    log.close()
    path = with_entries[0].txn_index.path
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 5)
    reopened = PartitionLog.open(log.directory, log.config, had_clean_shutdown=True, clock=clock)
    assert [e for s in reopened.segments for e in s.txn_index.entries] == entries
    with open(path, "rb") as f:
        assert [txn for _, txn in parse_entries(f.read())] == reopened.segments[
            [s.base_offset for s in reopened.segments].index(with_entries[0].base_offset)
        ].txn_index.entries
    assert sorted(read_committed(reopened)) == sorted(committed)


def test_the_txnindex_goes_with_its_segment_on_retention_and_delete_records(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path, clock, segment_bytes=300)
    log.append(txn_batch([b"x" * 50], producer_id=1, sequence=0))
    log.append_txn_marker(1, 0, 0, commit=False)
    log.roll()
    log.append(plain_batch([b"y"]))
    assert files_in(log.directory, ".txnindex") == [f"{0:020d}.txnindex"]
    log.delete_records_before(log.log_end_offset - 1)
    log.delete_retained_segments()
    assert files_in(log.directory, ".txnindex") == []
    assert log.collect_aborted_txns(log.log_start_offset, log.log_end_offset) == []


# -- the cleaner -------------------------------------------------------------------------------


def keyed_batch(pairs, producer_id=-1, sequence=-1, transactional=False, timestamp=BASE_TIME):
    records = [batch.Record(i, timestamp, k, v) for i, (k, v) in enumerate(pairs)]
    return batch.build(
        records,
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=sequence,
        is_transactional=transactional,
    )


def committed_by_key(log):
    """The latest value of each key a read_committed reader sees, from the log start to the last
    stable offset."""
    lso = log.first_unstable_offset()
    lso = log.log_end_offset if lso is None else lso
    offset, latest = log.log_start_offset, {}
    while offset < lso:
        found = log.read(offset, 1 << 20, max_offset=lso)
        if found is None:
            break
        batches = decode_batches(found.read())
        upper = batches[-1].last_offset + 1
        aborted = [(t.producer_id, t.first_offset) for t in log.collect_aborted_txns(offset, upper)]
        for record in committed_records(batches, aborted):
            latest[record.key] = record.value
        offset = upper
    return latest


def test_the_cleaner_drops_aborted_transactions_and_stops_at_an_open_one(tmp_path):
    clock = FakeClock(BASE_TIME)
    log = open_log(tmp_path, clock, cleanup_policy="compact", min_cleanable_dirty_ratio=0.01, segment_bytes=400)
    log.append(keyed_batch([(b"k0", b"plain-0"), (b"k1", b"plain-1")]))
    log.append(keyed_batch([(b"k0", b"committed")], producer_id=1, sequence=0, transactional=True))
    log.append_txn_marker(1, 0, 0, commit=True)
    log.roll()
    log.append(keyed_batch([(b"k0", b"aborted"), (b"k1", b"aborted")], producer_id=2, sequence=0, transactional=True))
    log.append(keyed_batch([(b"k2", b"plain-2")]))
    log.append_txn_marker(2, 0, 0, commit=False)
    log.roll()
    log.append(keyed_batch([(b"k1", b"open")], producer_id=3, sequence=0, transactional=True))
    log.append(keyed_batch([(b"k2", b"after-open")]))
    log.roll()
    log.append(keyed_batch([(b"k3", b"active")]))
    view = committed_by_key(log)
    assert view == {b"k0": b"committed", b"k1": b"plain-1", b"k2": b"plain-2"}
    clean_to_the_end(log, tmp_path)
    stored = [r.value for r in read_all(log)]
    assert b"aborted" not in stored and b"plain-0" not in stored
    assert b"open" in stored and b"after-open" in stored  # at or past the open transaction: not cleaned
    assert committed_by_key(log) == view
    assert [e.producer_id for s in log.segments for e in s.txn_index.entries] == [2]  # kept with the cleaned segment
    log.append_txn_marker(3, 0, 0, commit=False)
    clean_to_the_end(log, tmp_path)
    assert b"open" not in [r.value for r in read_all(log)]
    after = committed_by_key(log)
    assert after == {b"k0": b"committed", b"k1": b"plain-1", b"k2": b"after-open", b"k3": b"active"}
    log.close()
    reopened = PartitionLog.open(log.directory, log.config, had_clean_shutdown=True, clock=clock)
    assert committed_by_key(reopened) == after
