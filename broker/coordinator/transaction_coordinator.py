"""The transaction coordinator, sans I/O: InitProducerId with a transactional id, AddPartitionsToTxn
(and AddOffsetsToTxn through it), EndTxn, the abort of timed-out transactions and the expiry of
idle transactional ids, as Kafka's coordinator does them (the "transactions v0" protocol of the
non-flexible request versions: the epoch moves only at InitProducerId and on fencing).

Every change of an id's state is a ``__transaction_state`` record (``transaction_log``) appended to
the id's partition through the ``TransactionStore``; the change takes effect, and the client is
answered, only once the store says the record was appended. Until then the id is ``pending``: an
AddPartitionsToTxn or EndTxn for it waits for that append (a producer's requests overlap), an
InitProducerId is answered CONCURRENT_TRANSACTIONS. EndTxn is answered as soon as its
PrepareCommit/PrepareAbort record is appended; the markers are then written through the store to
every partition of the transaction (retried after ``marker_retry_backoff_ms`` until they are), and
the CompleteCommit/CompleteAbort record ends it. InitProducerId on an id with an open transaction,
and the timer on a transaction open longer than its timeout, fence its producer: the epoch is
bumped (PrepareEpochFence), the transaction aborted with the new epoch, and the old producer's
requests are refused with PRODUCER_FENCED from then on (handlers translate it for old versions).

The coordinator serves the ids of the partitions it owns (``install``ed after ``begin_loading``:
COORDINATOR_LOAD_IN_PROGRESS meanwhile; NOT_COORDINATOR for the others). Installing a partition
completes every transaction it left in PrepareCommit/PrepareAbort. Time is the ``clock`` passed in;
``tick`` runs what is due, ``next_deadline`` says when that is.
"""

import dataclasses
import logging
from collections.abc import Callable, Collection, Hashable, Iterable
from typing import Protocol

from broker.protocol.errors import ErrorCode

from .config import TransactionConfig
from .offset_manager import StoreError
from .timers import Deadlines
from .transaction_log import TransactionLogError, decode_key, decode_value, encode_key, encode_value
from .transaction_metadata import (
    COMPLETED,
    MAX_PRODUCER_EPOCH,
    PREPARED,
    TopicPartition,
    TransactionMetadata,
    TxnState,
    partition_for,
)

log = logging.getLogger(__name__)

TRANSACTION_STATE_TOPIC = "__transaction_state"

Record = tuple[bytes, "bytes | None"]
Done = Callable[["StoreError | None"], None]
InitAnswer = Callable[[ErrorCode, int, int], None]  # error, producer id, epoch
Answer = Callable[[ErrorCode], None]

MAX_MARKER_RETRY_BACKOFF_MS = 10_000
_ABORT_TIMED_OUT = "abort timed-out transactions"
_REMOVE_EXPIRED = "remove expired transactional ids"


@dataclasses.dataclass(frozen=True)
class Markers:
    """The markers ending one transaction: one control batch per partition."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool
    partitions: frozenset[TopicPartition]


class TransactionStore(Protocol):
    """Where the coordinator's effects go: ``__transaction_state`` and the data partitions."""

    def append(self, partition: int, records: list[Record], done: Done) -> None:
        """Append ``records`` to ``partition`` of ``__transaction_state``, then call ``done`` once."""
        ...

    def write_markers(self, markers: Markers, done: Done) -> None:
        """Write the markers to every partition, then call ``done`` once (an error if any failed)."""
        ...


def replay(records: Iterable[tuple[bytes | None, bytes | None]]) -> dict[str, TransactionMetadata]:
    """The latest state of each transactional id in a partition's records (a tombstone deletes it);
    a malformed record is logged and skipped."""
    found: dict[str, TransactionMetadata] = {}
    for key, value in records:
        try:
            transactional_id = decode_key(key)
            metadata = decode_value(transactional_id, value)
        except TransactionLogError as exc:
            log.warning("skipping a malformed %s record: %s", TRANSACTION_STATE_TOPIC, exc)
            continue
        if metadata is None:
            found.pop(transactional_id, None)
        else:
            found[transactional_id] = metadata
    return found


def _append_error(error: StoreError) -> ErrorCode:
    """What a client is told when the state record could not be appended (Kafka's mapping)."""
    if error.code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
        return ErrorCode.NOT_COORDINATOR
    return ErrorCode.COORDINATOR_NOT_AVAILABLE


class TransactionCoordinator:
    def __init__(
        self,
        config: TransactionConfig,
        store: TransactionStore,
        clock: Callable[[], int],
    ):
        self.config = config
        self.store = store
        self.clock = clock
        self.transactions: dict[str, TransactionMetadata] = {}
        self.owned: dict[int, int] = {}  # partition of __transaction_state -> coordinator epoch
        self.loading: set[int] = set()
        self.deadlines: Deadlines[Hashable] = Deadlines()
        self._waiting: dict[str, list[Callable[[], None]]] = {}
        self._marker_failures: dict[
            str, int
        ] = {}  # failed marker writes in a row, by id  # calls for an id whose record is being appended
        now = clock()
        self.deadlines.set(_ABORT_TIMED_OUT, now + config.abort_timed_out_interval_ms)
        self.deadlines.set(_REMOVE_EXPIRED, now + config.remove_expired_interval_ms)

    # -- partitions ----------------------------------------------------------------------------

    def partition_of(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.config.state_log_partitions)

    def begin_loading(self, partition: int) -> None:
        self.loading.add(partition)

    def install(self, partition: int, coordinator_epoch: int, transactions: dict[str, TransactionMetadata]) -> None:
        """Serve the ids of ``partition`` as replayed; complete the transactions it left prepared."""
        self.loading.discard(partition)
        self.owned[partition] = coordinator_epoch
        for transactional_id, metadata in transactions.items():
            metadata.pending = False
            self.transactions[transactional_id] = metadata
            if metadata.state in PREPARED:
                log.info("completing transaction of %r left in %s", transactional_id, metadata.state.display_name)
                self._send_markers(metadata)

    def unload(self, partition: int) -> None:
        self.loading.discard(partition)
        self.owned.pop(partition, None)
        for transactional_id in [t for t in self.transactions if self.partition_of(t) == partition]:
            del self.transactions[transactional_id]
            self.deadlines.cancel(("retry", transactional_id))
            self._marker_failures.pop(transactional_id, None)

    def _not_here(self, transactional_id: str) -> ErrorCode | None:
        partition = self.partition_of(transactional_id)
        if partition in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self.owned:
            return ErrorCode.NOT_COORDINATOR
        return None

    # -- requests ------------------------------------------------------------------------------

    def init_producer_id(
        self, transactional_id: str, timeout_ms: int, fresh_producer_id: int, respond: InitAnswer
    ) -> None:
        """InitProducerId with a transactional id; ``fresh_producer_id`` (never used before) is taken
        when the id is new or its epochs are exhausted (the caller allocates it off the event loop)."""
        if not transactional_id:
            respond(ErrorCode.INVALID_REQUEST, -1, -1)
            return
        if timeout_ms <= 0 or timeout_ms > self.config.max_timeout_ms:
            respond(ErrorCode.INVALID_TRANSACTION_TIMEOUT, -1, -1)
            return
        refused = self._not_here(transactional_id)
        if refused is not None:
            respond(refused, -1, -1)
            return
        metadata = self.transactions.get(transactional_id)
        if metadata is None or metadata.state is TxnState.DEAD and not metadata.pending:
            metadata = TransactionMetadata(transactional_id, fresh_producer_id, -1, timeout_ms)
            self.transactions[transactional_id] = metadata
        if metadata.pending or metadata.state in PREPARED or metadata.state is TxnState.DEAD:
            respond(ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1)
            return
        if metadata.state is TxnState.ONGOING:
            self._fence_and_abort(metadata)  # the client retries: its retry bumps the epoch again
            respond(ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1)
            return
        target = self._copy(metadata)
        if metadata.producer_epoch >= MAX_PRODUCER_EPOCH - 1:
            target.producer_id, target.producer_epoch = fresh_producer_id, 0
        else:
            target.producer_epoch += 1
        target.timeout_ms = timeout_ms
        target.transition(TxnState.EMPTY, self.clock())

        def appended(error: StoreError | None) -> None:
            if error is None:
                respond(ErrorCode.NONE, target.producer_id, target.producer_epoch)
            else:
                respond(_append_error(error), -1, -1)

        self._persist(metadata, target, appended)

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Collection[TopicPartition],
        respond: Answer,
    ) -> None:
        """AddPartitionsToTxn: the partitions join the id's transaction (which begins if none is open)."""
        metadata, refused = self._producer_check(transactional_id, producer_id, producer_epoch)
        if refused is not None:
            respond(refused)
            return
        assert metadata is not None
        if metadata.pending:
            self._after_pending(
                metadata,
                lambda: self.add_partitions(transactional_id, producer_id, producer_epoch, partitions, respond),
            )
            return
        if metadata.state in PREPARED or metadata.state is TxnState.PREPARE_EPOCH_FENCE:
            respond(ErrorCode.CONCURRENT_TRANSACTIONS)
            return
        if metadata.state is TxnState.ONGOING and metadata.partitions.issuperset(partitions):
            respond(ErrorCode.NONE)
            return
        target = self._copy(metadata)
        target.transition(TxnState.ONGOING, self.clock())
        target.partitions |= set(partitions)
        self._persist(
            metadata, target, lambda error: respond(ErrorCode.NONE if error is None else _append_error(error))
        )

    def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool, respond: Answer
    ) -> None:
        """EndTxn: answered once the Prepare record is appended; the markers follow."""
        metadata, refused = self._producer_check(transactional_id, producer_id, producer_epoch)
        if refused is not None:
            respond(refused)
            return
        assert metadata is not None
        if metadata.pending:
            self._after_pending(
                metadata, lambda: self.end_txn(transactional_id, producer_id, producer_epoch, commit, respond)
            )
            return
        if metadata.state is TxnState.PREPARE_EPOCH_FENCE:
            respond(ErrorCode.CONCURRENT_TRANSACTIONS)
            return
        state = metadata.state
        if state is TxnState.ONGOING:
            target = self._copy(metadata)
            target.transition(TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT, self.clock())

            def appended(error: StoreError | None) -> None:
                if error is not None:
                    respond(_append_error(error))
                    return
                respond(ErrorCode.NONE)
                self._send_markers(self.transactions[transactional_id])

            self._persist(metadata, target, appended)
        elif state is (TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT):
            respond(ErrorCode.NONE)  # a retry of the EndTxn that completed it
        elif state is (TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT):
            respond(ErrorCode.CONCURRENT_TRANSACTIONS)  # a retry while its markers are written
        else:  # Empty (nothing was added), or the other outcome
            respond(ErrorCode.INVALID_TXN_STATE)

    def _producer_check(
        self, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> tuple[TransactionMetadata | None, ErrorCode | None]:
        if not transactional_id:
            return None, ErrorCode.INVALID_REQUEST
        refused = self._not_here(transactional_id)
        if refused is not None:
            return None, refused
        metadata = self.transactions.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id or metadata.state is TxnState.DEAD:
            return None, ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != producer_epoch:
            return None, ErrorCode.PRODUCER_FENCED
        return metadata, None

    # -- for the admin APIs ------------------------------------------------------------------

    def describe(self, transactional_id: str) -> tuple[ErrorCode, TransactionMetadata | None]:
        refused = self._not_here(transactional_id)
        if refused is not None:
            return refused, None
        metadata = self.transactions.get(transactional_id)
        if metadata is None or metadata.state is TxnState.DEAD:
            return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None
        return ErrorCode.NONE, metadata

    def list_transactions(
        self, states: Collection[TxnState] = (), producer_ids: Collection[int] = ()
    ) -> list[TransactionMetadata]:
        """The ids coordinated here, filtered by state and producer id (an empty filter: all); never Dead."""
        return [
            m
            for m in self.transactions.values()
            if m.state is not TxnState.DEAD
            and (not states or m.state in states)
            and (not producer_ids or m.producer_id in producer_ids)
        ]

    # -- the state changes ---------------------------------------------------------------------

    @staticmethod
    def _copy(metadata: TransactionMetadata) -> TransactionMetadata:
        return dataclasses.replace(metadata, partitions=set(metadata.partitions), pending=False)

    def _after_pending(self, metadata: TransactionMetadata, call: Callable[[], None]) -> None:
        """Run ``call`` again once the id's pending record is appended (the producer's requests
        overlap: an AddOffsetsToTxn while its AddPartitionsToTxn is written)."""
        self._waiting.setdefault(metadata.transactional_id, []).append(call)

    def _persist(self, metadata: TransactionMetadata, target: TransactionMetadata, done: Done) -> None:
        """Append ``target`` as the id's record; on success it replaces ``metadata``; then ``done``."""
        transactional_id = metadata.transactional_id
        metadata.pending = True
        partition = self.partition_of(transactional_id)

        def appended(error: StoreError | None) -> None:
            metadata.pending = False
            if self.transactions.get(transactional_id) is not metadata:  # unloaded meanwhile
                done(error or StoreError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "no longer the coordinator"))
                for call in self._waiting.pop(transactional_id, ()):
                    call()
                return
            if error is None:
                if target.state is TxnState.DEAD:
                    del self.transactions[transactional_id]
                else:
                    self.transactions[transactional_id] = target
            else:
                log.warning("cannot record %r in %s: %s", transactional_id, target.state.display_name, error)
            done(error)
            for call in self._waiting.pop(transactional_id, ()):
                call()

        value = None if target.state is TxnState.DEAD else encode_value(target)  # a tombstone for an expired id
        self.store.append(partition, [(encode_key(transactional_id), value)], appended)

    def _fence_and_abort(self, metadata: TransactionMetadata) -> None:
        """Bump the epoch of an Ongoing transaction (fencing its producer) and abort it."""
        fenced = self._copy(metadata)
        now = self.clock()
        fenced.transition(TxnState.PREPARE_EPOCH_FENCE, now)
        fenced.producer_epoch = min(fenced.producer_epoch + 1, MAX_PRODUCER_EPOCH)
        fenced.transition(TxnState.PREPARE_ABORT, now)

        def appended(error: StoreError | None) -> None:
            if error is None:
                self._send_markers(self.transactions[metadata.transactional_id])

        self._persist(metadata, fenced, appended)

    def _send_markers(self, metadata: TransactionMetadata) -> None:
        """Write the markers of a prepared transaction, then record it complete (retried until done)."""
        transactional_id = metadata.transactional_id
        commit = metadata.state is TxnState.PREPARE_COMMIT
        coordinator_epoch = self.owned.get(self.partition_of(transactional_id))
        if coordinator_epoch is None:
            return  # no longer coordinated here: the next coordinator completes it
        markers = Markers(
            transactional_id,
            metadata.producer_id,
            metadata.producer_epoch,
            coordinator_epoch,
            commit,
            frozenset(metadata.partitions),
        )

        def written(error: StoreError | None) -> None:
            if self.transactions.get(transactional_id) is not metadata:
                return
            if error is not None:
                failures = self._marker_failures[transactional_id] = self._marker_failures.get(transactional_id, 0) + 1
                log.log(
                    logging.WARNING if failures == 1 else logging.DEBUG,
                    "writing the markers of %r failed (%s); trying again",
                    transactional_id,
                    error,
                )
                self._retry_later(transactional_id)
                return
            self._marker_failures.pop(transactional_id, None)
            complete = self._copy(metadata)
            complete.transition(TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT, self.clock())
            complete.partitions = set()

            def appended(error: StoreError | None) -> None:
                if error is not None:
                    self._retry_later(transactional_id)

            self._persist(metadata, complete, appended)

        if markers.partitions:
            self.store.write_markers(markers, written)
        else:
            written(None)

    def _retry_later(self, transactional_id: str) -> None:
        """Try the id's markers (or its Complete record) again: after ``marker_retry_backoff_ms``,
        doubling with each failed attempt up to ``MAX_MARKER_RETRY_BACKOFF_MS``."""
        failures = self._marker_failures.get(transactional_id, 1)
        delay = min(self.config.marker_retry_backoff_ms << min(failures - 1, 20), MAX_MARKER_RETRY_BACKOFF_MS)
        self.deadlines.set(("retry", transactional_id), self.clock() + delay)

    # -- time ----------------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        return self.deadlines.next_deadline()

    def tick(self) -> None:
        """Run what is due: retries of markers, the abort of timed-out transactions, id expiry."""
        now = self.clock()
        while (key := self.deadlines.pop_due(now)) is not None:
            if key == _ABORT_TIMED_OUT:
                self.abort_timed_out(now)
                self.deadlines.set(key, now + self.config.abort_timed_out_interval_ms)
            elif key == _REMOVE_EXPIRED:
                self.remove_expired(now)
                self.deadlines.set(key, now + self.config.remove_expired_interval_ms)
            elif isinstance(key, tuple):
                metadata = self.transactions.get(key[1])
                if metadata is not None and metadata.state in PREPARED and not metadata.pending:
                    self._send_markers(metadata)

    def abort_timed_out(self, now: int) -> None:
        """Fence and abort every Ongoing transaction open longer than its timeout."""
        for metadata in list(self.transactions.values()):
            if (
                metadata.state is TxnState.ONGOING
                and not metadata.pending
                and metadata.start_ms + metadata.timeout_ms < now
            ):
                log.info(
                    "aborting the transaction of %r (producer %d epoch %d): open longer than its timeout of %d ms",
                    metadata.transactional_id,
                    metadata.producer_id,
                    metadata.producer_epoch,
                    metadata.timeout_ms,
                )
                self._fence_and_abort(metadata)

    def remove_expired(self, now: int) -> None:
        """Tombstone every id idle (no transaction open) for ``transactional.id.expiration.ms``."""
        for metadata in list(self.transactions.values()):
            if (
                metadata.state in COMPLETED
                and not metadata.pending
                and metadata.last_update_ms + self.config.id_expiration_ms <= now
            ):
                dead = self._copy(metadata)
                dead.transition(TxnState.DEAD, now)
                self._persist(metadata, dead, lambda error: None)
