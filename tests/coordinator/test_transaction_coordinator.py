"""The transaction coordinator's state machine, on the pure objects: a clock the test moves, and a
store that keeps the appended records and markers (and can fail or hold them back)."""

import itertools

import pytest

from broker.coordinator.config import TransactionConfig
from broker.coordinator.offset_manager import StoreError
from broker.coordinator.transaction_coordinator import TransactionCoordinator, replay
from broker.coordinator.transaction_log import decode_key, decode_value
from broker.coordinator.transaction_metadata import (
    VALID_PREVIOUS,
    IllegalTransition,
    TransactionMetadata,
    TxnState,
    partition_for,
)
from broker.protocol.errors import ErrorCode

from ..clock import FakeClock

TIMEOUT = 60_000
E = ErrorCode


class Store:
    """``__transaction_state`` and the markers in memory; ``fail_append``/``fail_markers`` make the
    next ones fail, ``hold_markers`` keeps their ``done`` for later."""

    def __init__(self):
        self.records: list = []
        self.markers: list = []
        self.fail_append = None
        self.hold_appends = False
        self.held_appends: list = []
        self.fail_markers = None
        self.hold_markers = False
        self.held: list = []

    def append(self, partition, records, done):
        if self.fail_append is not None:
            done(self.fail_append)
            return
        if self.hold_appends:
            self.held_appends.append((records, done))
            return
        self.records.extend(records)
        done(None)

    def write_markers(self, markers, done):
        if self.hold_markers:
            self.held.append((markers, done))
            return
        if self.fail_markers is not None:
            done(self.fail_markers)
            return
        self.markers.append(markers)
        done(None)

    def states(self, transactional_id="t"):
        return [
            None if value is None else decode_value(transactional_id, value).state
            for key, value in self.records
            if decode_key(key) == transactional_id
        ]


class Answer:
    def __init__(self):
        self.values = []

    def __call__(self, *value):
        self.values.append(value[0] if len(value) == 1 else value)

    @property
    def one(self):
        assert len(self.values) == 1, self.values
        return self.values[0]


IDS = itertools.count(1000)


def make(**settings):
    global IDS
    IDS = itertools.count(1000)
    clock, store = FakeClock(), Store()
    config = TransactionConfig(state_log_partitions=3, **settings)
    coordinator = TransactionCoordinator(config, store, clock)
    for partition in range(3):
        coordinator.install(partition, 5, {})
    return coordinator, clock, store


def init(coordinator, transactional_id="t", timeout=TIMEOUT):
    answer = Answer()
    coordinator.init_producer_id(transactional_id, timeout, next(IDS), answer)
    return answer.one


def add(coordinator, pid, epoch, partitions=(("topic", 0),), transactional_id="t"):
    answer = Answer()
    coordinator.add_partitions(transactional_id, pid, epoch, partitions, answer)
    return answer.one


def end(coordinator, pid, epoch, commit=True, transactional_id="t"):
    answer = Answer()
    coordinator.end_txn(transactional_id, pid, epoch, commit, answer)
    return answer.one


def state(coordinator, transactional_id="t"):
    return coordinator.transactions[transactional_id].state


# -- the state machine ---------------------------------------------------------------------


@pytest.mark.parametrize("target", list(TxnState))
@pytest.mark.parametrize("current", list(TxnState))
def test_every_transition_is_kafkas(current, target):
    metadata = TransactionMetadata("t", 1, 0, TIMEOUT, current)
    if current in VALID_PREVIOUS[target]:
        metadata.transition(target, 7)
        assert metadata.state is target and metadata.last_update_ms == 7
    else:
        with pytest.raises(IllegalTransition, match=f"{current.display_name} -> {target.display_name}"):
            metadata.transition(target, 7)


def test_state_names_are_kafkas():
    assert [s.display_name for s in TxnState] == [
        "Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
        "PrepareEpochFence",
    ]  # fmt: skip
    assert TxnState.from_name("PrepareEpochFence") is TxnState.PREPARE_EPOCH_FENCE
    assert TxnState.from_name("Nope") is None


@pytest.mark.parametrize(
    "transactional_id, partitions, expected",
    [("hello", 50, 99162322 % 50), ("", 50, 0), ("a", 7, 97 % 7), ("polygenelubricants", 50, 0)],
)
def test_partition_is_kafkas_hash(transactional_id, partitions, expected):
    # "hello".hashCode() is 99162322; "polygenelubricants".hashCode() is Integer.MIN_VALUE (Utils.abs: 0)
    assert partition_for(transactional_id, partitions) == expected


# -- InitProducerId -------------------------------------------------------------------------


def test_init_allocates_then_bumps_the_epoch():
    coordinator, _, store = make()
    assert init(coordinator) == (E.NONE, 1000, 0)
    assert init(coordinator) == (E.NONE, 1000, 1)
    assert store.states() == [TxnState.EMPTY, TxnState.EMPTY]


@pytest.mark.parametrize("timeout", [0, -1, 900_001])
def test_init_refuses_a_timeout_out_of_bounds(timeout):
    coordinator, _, store = make()
    assert init(coordinator, timeout=timeout) == (E.INVALID_TRANSACTION_TIMEOUT, -1, -1)
    assert store.records == []


def test_init_refuses_an_empty_id():
    coordinator, _, _ = make()
    assert init(coordinator, "") == (E.INVALID_REQUEST, -1, -1)


def test_init_on_an_exhausted_epoch_moves_to_a_new_producer_id():
    coordinator, _, _ = make()
    init(coordinator)
    coordinator.transactions["t"].producer_epoch = 32_766
    assert init(coordinator) == (E.NONE, 1001, 0)


def test_init_with_an_open_transaction_fences_and_aborts_it():
    coordinator, _, store = make()
    _, pid, epoch = init(coordinator)
    assert add(coordinator, pid, epoch, [("topic", 0), ("topic", 1)]) == E.NONE
    assert init(coordinator) == (E.CONCURRENT_TRANSACTIONS, -1, -1)
    (markers,) = store.markers
    assert (markers.producer_id, markers.producer_epoch, markers.commit) == (pid, epoch + 1, False)
    assert markers.partitions == {("topic", 0), ("topic", 1)} and markers.coordinator_epoch == 5
    assert store.states()[-2:] == [TxnState.PREPARE_ABORT, TxnState.COMPLETE_ABORT]
    assert add(coordinator, pid, epoch) == E.PRODUCER_FENCED  # the old producer
    assert init(coordinator) == (E.NONE, pid, epoch + 2)  # the retry


def test_init_while_markers_are_written_is_concurrent():
    coordinator, _, store = make()
    _, pid, epoch = init(coordinator)
    add(coordinator, pid, epoch)
    store.hold_markers = True
    assert end(coordinator, pid, epoch) == E.NONE
    assert init(coordinator) == (E.CONCURRENT_TRANSACTIONS, -1, -1)
    markers, done = store.held.pop()
    done(None)
    assert state(coordinator) is TxnState.COMPLETE_COMMIT
    assert init(coordinator) == (E.NONE, pid, epoch + 1)


def test_a_failed_append_changes_nothing():
    coordinator, _, store = make()
    _, pid, epoch = init(coordinator)
    store.fail_append = StoreError(E.NOT_LEADER_OR_FOLLOWER, "moved")
    assert init(coordinator) == (E.NOT_COORDINATOR, -1, -1)
    store.fail_append = StoreError(E.KAFKA_STORAGE_ERROR, "disk")
    assert add(coordinator, pid, epoch) == E.COORDINATOR_NOT_AVAILABLE
    assert coordinator.transactions["t"].producer_epoch == epoch and state(coordinator) is TxnState.EMPTY


# -- AddPartitionsToTxn ---------------------------------------------------------------------


def test_add_partitions_begins_then_extends_a_transaction():
    coordinator, clock, store = make()
    _, pid, epoch = init(coordinator)
    clock.advance(10)
    assert add(coordinator, pid, epoch) == E.NONE
    metadata = coordinator.transactions["t"]
    assert metadata.state is TxnState.ONGOING and metadata.start_ms == clock.now
    clock.advance(10)
    assert add(coordinator, pid, epoch) == E.NONE  # already in: nothing written
    assert add(coordinator, pid, epoch, [("other", 3)]) == E.NONE
    metadata = coordinator.transactions["t"]
    assert metadata.partitions == {("topic", 0), ("other", 3)} and metadata.start_ms == clock.now - 10
    assert store.states() == [TxnState.EMPTY, TxnState.ONGOING, TxnState.ONGOING]


def test_requests_overlapping_an_append_wait_for_it():
    coordinator, _, store = make()
    _, pid, epoch = init(coordinator)
    store.hold_appends = True
    first, second, ended, again = Answer(), Answer(), Answer(), Answer()
    coordinator.add_partitions("t", pid, epoch, [("topic", 0)], first)
    coordinator.add_partitions("t", pid, epoch, [("__consumer_offsets", 0)], second)
    coordinator.end_txn("t", pid, epoch, True, ended)
    coordinator.init_producer_id("t", TIMEOUT, 5000, again)
    assert (first.values, second.values, ended.values) == ([], [], [])
    assert again.one == (E.CONCURRENT_TRANSACTIONS, -1, -1)
    store.hold_appends = False
    records, done = store.held_appends.pop()
    store.records.extend(records)
    done(None)
    assert first.one == second.one == ended.one == E.NONE
    assert store.markers[0].partitions == {("topic", 0), ("__consumer_offsets", 0)}
    assert state(coordinator) is TxnState.COMPLETE_COMMIT


def test_add_partitions_refusals():
    coordinator, _, _ = make()
    assert add(coordinator, 1000, 0) == E.INVALID_PRODUCER_ID_MAPPING  # unknown id
    _, pid, epoch = init(coordinator)
    assert add(coordinator, pid + 1, epoch) == E.INVALID_PRODUCER_ID_MAPPING
    assert add(coordinator, pid, epoch - 1) == E.PRODUCER_FENCED
    assert add(coordinator, pid, epoch, transactional_id="") == E.INVALID_REQUEST


# -- EndTxn --------------------------------------------------------------------------------


@pytest.mark.parametrize("commit", [True, False])
def test_end_writes_prepare_markers_then_complete(commit):
    coordinator, _, store = make()
    _, pid, epoch = init(coordinator)
    add(coordinator, pid, epoch)
    assert end(coordinator, pid, epoch, commit) == E.NONE
    prepare, complete = (
        (TxnState.PREPARE_COMMIT, TxnState.COMPLETE_COMMIT)
        if commit
        else (TxnState.PREPARE_ABORT, TxnState.COMPLETE_ABORT)
    )
    assert store.states()[-2:] == [prepare, complete]
    (markers,) = store.markers
    assert (markers.commit, markers.producer_epoch, markers.partitions) == (commit, epoch, {("topic", 0)})
    assert end(coordinator, pid, epoch, commit) == E.NONE  # a retry
    assert end(coordinator, pid, epoch, not commit) == E.INVALID_TXN_STATE
    assert add(coordinator, pid, epoch) == E.NONE  # the next transaction, same epoch


def test_end_of_an_empty_transaction_is_invalid():
    coordinator, _, _ = make()
    _, pid, epoch = init(coordinator)
    assert end(coordinator, pid, epoch) == E.INVALID_TXN_STATE


def test_end_while_prepared():
    coordinator, _, store = make()
    _, pid, epoch = init(coordinator)
    add(coordinator, pid, epoch)
    store.hold_markers = True
    end(coordinator, pid, epoch, True)
    assert end(coordinator, pid, epoch, True) == E.CONCURRENT_TRANSACTIONS
    assert end(coordinator, pid, epoch, False) == E.INVALID_TXN_STATE
    assert add(coordinator, pid, epoch) == E.CONCURRENT_TRANSACTIONS


def test_end_refusals():
    coordinator, _, _ = make()
    assert end(coordinator, 1000, 0) == E.INVALID_PRODUCER_ID_MAPPING
    _, pid, epoch = init(coordinator)
    assert end(coordinator, pid, epoch + 1) == E.PRODUCER_FENCED


def test_failed_markers_are_retried():
    coordinator, clock, store = make()
    _, pid, epoch = init(coordinator)
    add(coordinator, pid, epoch)
    store.fail_markers = StoreError(E.NOT_LEADER_OR_FOLLOWER, "elsewhere")
    assert end(coordinator, pid, epoch) == E.NONE
    assert state(coordinator) is TxnState.PREPARE_COMMIT
    assert coordinator.next_deadline() == clock.now + 100
    for delay in (100, 200, 400):  # backing off while it fails
        assert coordinator.next_deadline() == clock.now + delay
        clock.advance(delay)
        coordinator.tick()
    store.fail_markers = None
    clock.advance(800)
    coordinator.tick()
    assert state(coordinator) is TxnState.COMPLETE_COMMIT and len(store.markers) == 1


# -- time ------------------------------------------------------------------------------------


def test_a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced():
    coordinator, clock, store = make(abort_timed_out_interval_ms=1000)
    _, pid, epoch = init(coordinator, timeout=5000)
    add(coordinator, pid, epoch)
    clock.advance(5000)
    coordinator.tick()  # not yet past: start + timeout == now
    assert state(coordinator) is TxnState.ONGOING
    clock.advance(1000)
    assert coordinator.next_deadline() <= clock.now
    coordinator.tick()
    assert state(coordinator) is TxnState.COMPLETE_ABORT
    (markers,) = store.markers
    assert (markers.commit, markers.producer_epoch) == (False, epoch + 1)
    assert end(coordinator, pid, epoch) == E.PRODUCER_FENCED
    assert add(coordinator, pid, epoch) == E.PRODUCER_FENCED


def test_idle_ids_expire_with_a_tombstone():
    coordinator, clock, store = make(id_expiration_ms=10_000, remove_expired_interval_ms=1000)
    _, pid, epoch = init(coordinator)
    _, other_pid, other_epoch = init(coordinator, "busy")
    add(coordinator, other_pid, other_epoch, transactional_id="busy")
    clock.advance(10_000)
    coordinator.tick()
    assert "t" not in coordinator.transactions and store.states()[-1] is None
    assert "busy" in coordinator.transactions  # a transaction is open: never expired
    assert add(coordinator, pid, epoch) == E.INVALID_PRODUCER_ID_MAPPING
    assert init(coordinator) == (E.NONE, 1002, 0)  # a new producer id


# -- loading -----------------------------------------------------------------------------------


def test_ids_of_partitions_not_owned_or_loading():
    coordinator, _, _ = make()
    partition = coordinator.partition_of("t")
    coordinator.unload(partition)
    assert init(coordinator) == (E.NOT_COORDINATOR, -1, -1)
    coordinator.begin_loading(partition)
    assert init(coordinator) == (E.COORDINATOR_LOAD_IN_PROGRESS, -1, -1)
    assert coordinator.describe("t") == (E.COORDINATOR_LOAD_IN_PROGRESS, None)


@pytest.mark.parametrize("commit", [True, False])
def test_install_completes_prepared_transactions(commit):
    coordinator, _, store = make()
    _, pid, epoch = init(coordinator)
    add(coordinator, pid, epoch, [("topic", 0), ("topic", 2)])
    store.hold_markers = True
    end(coordinator, pid, epoch, commit)
    log = list(store.records)  # the coordinator dies here, before its markers

    successor, _, new_store = make()
    partition = successor.partition_of("t")
    successor.unload(partition)
    successor.begin_loading(partition)
    successor.install(partition, 6, replay(log))
    (markers,) = new_store.markers
    assert (markers.commit, markers.partitions, markers.coordinator_epoch) == (commit, {("topic", 0), ("topic", 2)}, 6)
    assert state(successor) is (TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT)


def test_describe_and_list():
    coordinator, _, _ = make()
    _, pid, epoch = init(coordinator)
    init(coordinator, "other")
    add(coordinator, pid, epoch)
    assert coordinator.describe("nope") == (E.TRANSACTIONAL_ID_NOT_FOUND, None)
    code, metadata = coordinator.describe("t")
    assert code == E.NONE and metadata.state is TxnState.ONGOING
    assert {m.transactional_id for m in coordinator.list_transactions()} == {"t", "other"}
    assert [m.transactional_id for m in coordinator.list_transactions([TxnState.ONGOING])] == ["t"]
    assert [m.transactional_id for m in coordinator.list_transactions(producer_ids=[pid])] == ["t"]
