"""One transactional id's state at its coordinator: producer id and epoch, timeout, the partitions of
its open transaction, and Kafka's transaction states with their legal transitions.

The states carry Kafka's status ids (the ``TransactionStatus`` byte of ``__transaction_state``
values) and names (as DescribeTransactions and ListTransactions show them). A transition to a state
whose legal previous states do not include the current one raises ``IllegalTransition``: the
coordinator checks requests before it moves, so this is a bug, never a client's error.
"""

import dataclasses
import enum

from .group_partition import java_string_hash, kafka_abs

TopicPartition = tuple[str, int]

MAX_PRODUCER_EPOCH = 32_767
"""An epoch this high is exhausted: the next bump moves the id to a fresh producer id (as Kafka does
from ``Short.MaxValue - 1`` on)."""


class TxnState(enum.Enum):
    """Kafka's transaction states, by their status id in ``__transaction_state``."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display_name(self) -> str:
        """The name Kafka's tools show: ``PrepareCommit``."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @classmethod
    def from_name(cls, name: str) -> "TxnState | None":
        """The state Kafka's tools call ``name``, or None."""
        return next((state for state in cls if state.display_name == name), None)


_S = TxnState
VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE}),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}
"""Kafka's state machine: each state with the states it may be entered from."""

PREPARED = frozenset({_S.PREPARE_COMMIT, _S.PREPARE_ABORT})
COMPLETED = frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT})
"""States with no transaction in flight: a new one may begin, the id may expire."""


class IllegalTransition(RuntimeError):
    """A move the state machine forbids."""


@dataclasses.dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = dataclasses.field(default_factory=set)
    start_ms: int = -1  # when the open transaction added its first partition; -1 when none is open
    last_update_ms: int = -1
    pending: bool = False  # a record of this id is being appended: other requests wait (CONCURRENT_TRANSACTIONS)

    def transition(self, state: TxnState, now: int) -> None:
        if self.state not in VALID_PREVIOUS[state]:
            raise IllegalTransition(
                f"transactional id {self.transactional_id!r}: {self.state.display_name} -> {state.display_name}"
            )
        if state is TxnState.ONGOING and self.state is not TxnState.ONGOING:
            self.start_ms = now
        if state in (TxnState.EMPTY, TxnState.DEAD):
            self.partitions = set()
            self.start_ms = -1
        self.state = state
        self.last_update_ms = now


def partition_for(transactional_id: str, num_partitions: int) -> int:
    """The partition of ``__transaction_state`` holding ``transactional_id``: Kafka's
    ``Utils.abs(transactionalId.hashCode) % partitions``."""
    if num_partitions < 1:
        raise ValueError(f"transaction.state.log.num.partitions must be at least 1, not {num_partitions}")
    return kafka_abs(java_string_hash(transactional_id)) % num_partitions
