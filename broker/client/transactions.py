"""A transactional producer for the client, as Kafka's producer with a ``transactional.id``.

``init_transactions`` finds the id's transaction coordinator (FindCoordinator, key type 1) and gets
the id's producer id at its next epoch (InitProducerId), which fences any earlier producer of the
id and has the coordinator abort its open transaction. Then each transaction: ``begin``, ``send``
(the partition is added to the transaction before its first batch, AddPartitionsToTxn; batches are
idempotent and transactional), ``send_offsets_to_transaction`` (AddOffsetsToTxn to the
transaction coordinator, then TxnOffsetCommit to the group's coordinator), and ``commit`` or
``abort`` (EndTxn; a transaction that added nothing ends without it, as Kafka's producer does).
CONCURRENT_TRANSACTIONS, a coordinator loading or moved are retried under the client's retry
policy; a fenced producer gets ``ProducerFencedError`` and must be closed.

``list_transactions`` and ``describe_transaction`` are the transaction tools' views
(ListTransactions to every broker, DescribeTransactions to an id's coordinator).
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.records.compression import Codec

from .client import KafkaClient
from .connection import Body, BrokerConnectionError
from .errors import KafkaError, error_for
from .groups import GroupClient
from .idempotence import ProducerSequences
from .producer import ACKS_ALL, ProducerRecord
from .retry import RetriableError, TopicPartition

TRANSACTION_KEY_TYPE = 1
DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000
_RETRIED = frozenset(
    {
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
    }
)
_FENCED = frozenset({ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH})


class ProducerFencedError(KafkaError):
    """A newer producer with the same transactional id exists (or the transaction timed out): this
    one can do nothing more."""


class TransactionStateError(RuntimeError):
    """A call out of order: ``send`` outside a transaction, ``begin`` inside one, ..."""


class TransactionListing(NamedTuple):
    transactional_id: str
    producer_id: int
    state: str  # Kafka's name: Ongoing, CompleteCommit, ...
    coordinator: int  # the node id of the broker coordinating it


def find_coordinator(client: KafkaClient, transactional_id: str) -> int:
    """The node id of ``transactional_id``'s coordinator (FindCoordinator, key type 1)."""
    node_id = client.controller_or_any()
    response = client.request(
        node_id, ApiKey.FIND_COORDINATOR, {"key": transactional_id, "key_type": TRANSACTION_KEY_TYPE}
    )
    code = response["error_code"]
    if code in _RETRIED:
        raise RetriableError(f"transactional id {transactional_id!r}: {ErrorCode(code).name}", code)
    error = error_for(
        code,
        f"transactional id {transactional_id!r}",
        response["error_message"],
        principal=client.security.principal,
        needs="DESCRIBE",
    )
    if error is not None:
        raise error
    coordinator: int = response["node_id"]
    if coordinator not in client.cluster.current.brokers:
        client.refresh_metadata([])
    return coordinator


def list_transactions(client: KafkaClient, states: Sequence[str] = ()) -> list[TransactionListing]:
    """Every transactional id of the cluster (each broker lists those it coordinates), in the
    ``states`` named (Kafka's names; none: all); KafkaError for a state name no broker knows."""
    client.refresh_metadata([])
    listed: list[TransactionListing] = []
    for node_id in sorted(client.cluster.current.brokers):

        def ask(node_id: int = node_id) -> Body:
            body = {"state_filters": list(states), "producer_id_filters": [], "duration_filter": -1}
            response = client.request(node_id, ApiKey.LIST_TRANSACTIONS, body)
            if response["error_code"] in _RETRIED:
                raise RetriableError(
                    f"broker {node_id}: {ErrorCode(response['error_code']).name}", response["error_code"]
                )
            error = error_for(response["error_code"], f"the transactions of broker {node_id}")
            if error is not None:
                raise error
            return response

        response = client.retrying(ask, f"list the transactions of broker {node_id}")
        if response["unknown_state_filters"]:
            raise KafkaError(f"unknown transaction state(s): {', '.join(response['unknown_state_filters'])}")
        listed += [
            TransactionListing(s["transactional_id"], s["producer_id"], s["transaction_state"], node_id)
            for s in response["transaction_states"]
        ]
    return sorted(listed)


def describe_transaction(client: KafkaClient, transactional_id: str) -> dict[str, Any]:
    """The coordinator's view of ``transactional_id``: state, producer id and epoch, timeout, start
    time, partitions (DescribeTransactions answer fields), plus ``coordinator``."""

    def ask() -> dict[str, Any]:
        coordinator = find_coordinator(client, transactional_id)
        response = client.request(coordinator, ApiKey.DESCRIBE_TRANSACTIONS, {"transactional_ids": [transactional_id]})
        (state,) = response["transaction_states"]
        if state["error_code"] in _RETRIED:
            raise RetriableError(
                f"transactional id {transactional_id!r}: {ErrorCode(state['error_code']).name}", state["error_code"]
            )
        error = error_for(
            state["error_code"],
            f"transactional id {transactional_id!r}",
            principal=client.security.principal,
            needs="DESCRIBE",
        )
        if error is not None:
            raise error
        return {**state, "coordinator": coordinator}

    return client.retrying(ask, f"describe transactional id {transactional_id!r}")


def _partition_codes(response: Body) -> list[int]:
    return [p["partition_error_code"] for t in response["results_by_topic"] for p in t["results_by_partition"]]


class TransactionalProducer:
    def __init__(self, client: KafkaClient, transactional_id: str, timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS):
        if not transactional_id:
            raise ValueError("a transactional producer needs a non-empty transactional id")
        self.client = client
        self.transactional_id = transactional_id
        self.timeout_ms = timeout_ms
        self.sequences: ProducerSequences | None = None
        self._coordinator: int | None = None
        self._in_transaction = False
        self._added: set[TopicPartition] = set()  # partitions of the open transaction
        self._offsets_added = False  # a group's offsets are in it too
        self._groups = GroupClient(client)

    # -- the coordinator -------------------------------------------------------------------

    def _find_coordinator(self) -> int:
        return find_coordinator(self.client, self.transactional_id)

    def _to_coordinator(
        self, api_key: ApiKey, body: Body, what: str, codes: Callable[[Body], list[int]] = lambda r: [r["error_code"]]
    ) -> Body:
        """A request to the transaction coordinator, found again and retried while it moves, loads or
        answers CONCURRENT_TRANSACTIONS; other errors raised."""

        def send() -> Body:
            if self._coordinator is None:
                self._coordinator = self._find_coordinator()
            try:
                response = self.client.request(self._coordinator, api_key, body)
            except BrokerConnectionError:
                self._coordinator = None
                raise
            for code in codes(response):
                if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
                    self._coordinator = None
                if code in _RETRIED:
                    raise RetriableError(f"{what}: {ErrorCode(code).name}", code)
                self._raise_for(code, None, needs="WRITE")
            return response

        return self.client.retrying(send, what)

    def _raise_for(self, code: int, message: str | None, needs: str) -> None:
        if code in _RETRIED:
            raise RetriableError(f"transactional id {self.transactional_id!r}: {ErrorCode(code).name}", code)
        subject = f"transactional id {self.transactional_id!r}"
        if code in _FENCED:
            raise ProducerFencedError(f"{subject}: fenced by a newer producer ({ErrorCode(code).name})", code)
        error = error_for(code, subject, message, principal=self.client.security.principal, needs=needs)
        if error is not None:
            raise error

    def _producer_fields(self) -> dict[str, Any]:
        if self.sequences is None:
            raise TransactionStateError("call init_transactions() first")
        return {
            "transactional_id": self.transactional_id,
            "producer_id": self.sequences.producer_id,
            "producer_epoch": self.sequences.epoch,
        }

    # -- the producer's calls ----------------------------------------------------------------

    def init_transactions(self) -> None:
        """Become the id's producer (fencing any earlier one); its sequences start at 0."""
        response = self._to_coordinator(
            ApiKey.INIT_PRODUCER_ID,
            {"transactional_id": self.transactional_id, "transaction_timeout_ms": self.timeout_ms},
            f"init transactions for {self.transactional_id!r}",
        )
        self.sequences = ProducerSequences(response["producer_id"], response["producer_epoch"], self.transactional_id)
        self._in_transaction, self._added, self._offsets_added = False, set(), False

    def begin(self) -> None:
        self._producer_fields()
        if self._in_transaction:
            raise TransactionStateError("a transaction is already open")
        self._in_transaction, self._added, self._offsets_added = True, set(), False

    def _check_open(self) -> None:
        self._producer_fields()
        if not self._in_transaction:
            raise TransactionStateError("no transaction is open: call begin() first")

    def send(self, topic: str, partition: int, records: Sequence[ProducerRecord], compression: int = Codec.NONE) -> int:
        """Append ``records`` (as ``KafkaClient.produce`` takes them) in the open transaction; the
        offset of the first."""
        self._check_open()
        if (topic, partition) not in self._added:
            self._to_coordinator(
                ApiKey.ADD_PARTITIONS_TO_TXN,
                {**self._producer_fields(), "topics": [{"name": topic, "partitions": [partition]}]},
                f"add {topic}-{partition} to the transaction",
                codes=_partition_codes,
            )
            self._added.add((topic, partition))
        offset = self.client.produce(topic, partition, records, compression, acks=ACKS_ALL, sequences=self.sequences)
        assert offset is not None  # acks=all is answered
        return offset

    def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, int], group_id: str) -> None:
        """Commit ``offsets`` (the next offset to read, per partition) for ``group_id`` with the transaction."""
        self._check_open()
        fields = self._producer_fields()
        self._to_coordinator(
            ApiKey.ADD_OFFSETS_TO_TXN, {**fields, "group_id": group_id}, f"add group {group_id!r} to the transaction"
        )
        self._offsets_added = True
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), offset in offsets.items():
            by_topic.setdefault(topic, []).append(
                {
                    "partition_index": partition,
                    "committed_offset": offset,
                    "committed_leader_epoch": -1,
                    "committed_metadata": None,
                }
            )
        body = {
            **fields,
            "group_id": group_id,
            "topics": [{"name": topic, "partitions": partitions} for topic, partitions in by_topic.items()],
        }
        response = self._groups.txn_offset_commit(group_id, body)
        for topic in response["topics"]:
            for partition in topic["partitions"]:
                self._raise_for(partition["error_code"], None, needs="READ")

    def commit(self) -> None:
        self._end(True)

    def abort(self) -> None:
        self._end(False)

    def _end(self, commit: bool) -> None:
        self._check_open()
        if self._added or self._offsets_added:
            self._to_coordinator(
                ApiKey.END_TXN,
                {**self._producer_fields(), "committed": commit},
                f"{'commit' if commit else 'abort'} the transaction of {self.transactional_id!r}",
            )
        self._in_transaction, self._added, self._offsets_added = False, set(), False
