"""``KafkaClient``: a synchronous client for Kafka's stateless offset API (metadata, list offsets,
fetch by offset) plus what the command-line tools need: produce, and the topic admin requests.

It works against any Kafka-protocol broker (this project's, Apache Kafka, librdkafka's mock
cluster): it bootstraps from a ``host:port`` list, learns each partition's leader from Metadata,
sends ListOffsets, Fetch, Produce and DeleteRecords to the leaders, OffsetForLeaderEpoch to the
broker named (a follower's leader), and the admin requests (CreateTopics, DeleteTopics,
CreatePartitions, DescribeConfigs, IncrementalAlterConfigs) to the controller, and keeps one
connection per broker. Nothing is
stored in the broker: the caller owns the offsets (the design's "stateless" consumption).
The requests and answers of each kind are in ``metadata``, ``fetcher``, ``producer``, ``admin``
and ``broker.protocol.leader_epochs`` (shared with a follower's fetcher);
this class does the I/O.

Transient failures (connection reset, leader not available, not leader) are retried by the one
``RetryPolicy``, which forgets what the failure made stale (``ClusterMetadata.forget_after``): a
bounded number of times with a backoff; when no broker can be reached the error is a
``BrokerUnavailableError``. Partitions without a leader (their broker is down) are named together,
with the brokers that hold them when the metadata lists them and they are not live. A fetch
whose first batch is larger than the requested size (possible with old brokers) is retried
with a doubled size, up to ``max_fetch_bytes``. Produce without an idempotent producer's sequences
is like Kafka's producer with ``enable.idempotence=false``: a retry after a lost answer may store a
batch twice. A batch the broker refuses because of its records (too large, an invalid record) is
a ``RecordsRefusedError``; ``produce_each`` splits such a batch, as Kafka's producer splits a
too-large one, until every refused record is alone, so the others are stored and each
refused one is named. With an idempotent producer's sequences (``init_producer_id``) a produce is
idempotent instead: a retry carries the batch's sequence numbers, and the broker stores it once.
DescribeLogDirs goes to each partition's leader.

The isolation level applies to ListOffsets and Fetch: under read_committed LATEST is the last
stable offset, a fetch stops there and lists the aborted transactions among its records
(``FetchResult.aborted_transactions``), and the reader drops their batches with the
``read_filter()`` of each partition it reads. A broker whose ListOffsets is older than v2 (no
isolation level) is refused under read_committed rather than read uncommitted.
"""

import collections
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from types import TracebackType
from typing import TypeVar

from broker.protocol import leader_epochs
from broker.protocol.apis import READ_COMMITTED, READ_UNCOMMITTED, ApiKey
from broker.protocol.errors import ErrorCode
from broker.protocol.leader_epochs import CONSUMER_REPLICA_ID, EpochEndOffset, EpochQuery
from broker.records import batch
from broker.records.committed import ReadFilter
from broker.records.compression import Codec

from . import admin, fetcher, metadata, producer
from .admin import TOPIC_RESOURCE, ConfigEntry, NewTopic
from .connection import Body, BrokerConnection, BrokerConnectionError, UnsupportedVersionError
from .errors import KafkaError, RecordsRefusedError, UnknownTopicOrPartitionError, error_for, topic_error
from .fetcher import FetchResult, ListedOffset
from .idempotence import INT32_MAX, ProducerSequences
from .metadata import Broker, ClusterMetadata, Metadata, parse_bootstrap
from .producer import ACKS_ALL, ProducerRecord
from .retry import RetryPolicy, TopicPartition
from .security import PLAINTEXT, ClientSecurity

T = TypeVar("T")


class KafkaClient:
    def __init__(
        self,
        bootstrap_servers: str,
        *,
        timeout: float = 30.0,
        client_id: str = "kafkalog",
        retries: int = 5,
        retry_backoff_ms: int = 200,
        max_fetch_bytes: int = 256 * 1024 * 1024,
        isolation_level: int = READ_UNCOMMITTED,
        security: ClientSecurity = PLAINTEXT,
    ):
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.security = security
        self.timeout, self.client_id = timeout, client_id
        self.retry_policy = RetryPolicy(retries, retry_backoff_ms)
        self.max_fetch_bytes = max_fetch_bytes
        self.isolation_level = isolation_level
        self.cluster = ClusterMetadata()
        self._connections: dict[int, BrokerConnection] = {}

    # -- connections ---------------------------------------------------------------------

    def connection(self, node_id: int) -> BrokerConnection:
        """The connection to broker ``node_id`` (opened when there is none)."""
        connection = self._connections.get(node_id)
        if connection is None:
            broker = self.cluster.current.brokers.get(node_id)
            if broker is None:
                raise BrokerConnectionError(f"broker {node_id} is not in the cluster metadata")
            connection = BrokerConnection(broker.host, broker.port, self.timeout, self.client_id, self.security)
            self._connections[node_id] = connection
        return connection

    def _drop(self, node_id: int) -> None:
        connection = self._connections.pop(node_id, None)
        if connection is not None:
            connection.close()

    def close(self) -> None:
        for node_id in list(self._connections):
            self._drop(node_id)

    def __enter__(self) -> "KafkaClient":
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def retrying(self, action: Callable[[], T], what: str) -> T:
        """Run ``action()`` under the retry policy, forgetting the metadata a failure made stale."""
        return self.retry_policy.run(action, what, self.cluster.forget_after)

    # -- metadata ------------------------------------------------------------------------

    def metadata(self, topics: Sequence[str] | None = None, create: bool = False) -> Metadata:
        """Brokers and partition leaders of ``topics`` (all topics when None). Creates none of them
        unless ``create`` (as a producer's request does: a broker with ``auto.create.topics.enable``
        then creates a missing topic)."""
        return self.retrying(lambda: self.refresh_metadata(topics, create), "metadata")

    def refresh_metadata(self, topics: Sequence[str] | None, create: bool = False) -> Metadata:
        """Fetch the metadata of ``topics`` (all when None) once, from a broker known (or, knowing none,
        from the bootstrap list, in random order); the answer, which the cluster metadata takes in."""
        errors = []
        known = self.cluster.current.brokers
        for host, port in (
            random.sample(self.bootstrap, len(self.bootstrap))
            if not known
            else [(b.host, b.port) for b in known.values()]
        ):
            try:
                connection = BrokerConnection(host, port, self.timeout, self.client_id, self.security)
            except BrokerConnectionError as exc:
                errors.append(str(exc))
                continue
            try:
                body = metadata.request_body(connection.version_for(ApiKey.METADATA), topics, create)
                response = connection.request(ApiKey.METADATA, body)
            except BrokerConnectionError as exc:
                errors.append(str(exc))
                continue
            finally:
                connection.close()
            answer = metadata.from_response(response)
            self.cluster.update(answer, topics)
            for node_id in [n for n in self._connections if n not in answer.brokers]:
                self._drop(node_id)
            return answer
        raise BrokerConnectionError(
            "no broker of "
            + ",".join(f"{h}:{p}" for h, p in self.bootstrap)
            + " could be reached: "
            + "; ".join(errors)
        )

    def partitions_of(self, topic: str, create: bool = False) -> list[int]:
        """The partition numbers of a topic; UnknownTopicOrPartitionError if it does not exist (and,
        with ``create``, the broker did not create it), AuthorizationError if the principal may not
        describe it."""
        found = self.metadata([topic], create)
        if topic in found.topic_errors:
            raise self.topic_error(topic, found.topic_errors[topic])
        return sorted(p for t, p in found.leaders if t == topic)

    def topic_error(self, topic: str, code: int) -> KafkaError:
        """The error for a topic Metadata answered ``code`` for."""
        return topic_error(topic, code, self.security.principal)

    def available_partitions(self, topic: str) -> list[int]:
        """The partitions of ``topic`` that have a leader, by the metadata last fetched (none when it
        lacks the topic; nothing is sent): where a producer sends the records without a key."""
        return sorted(p for (t, p), leader in self.cluster.current.leaders.items() if t == topic and leader >= 0)

    def topics(self, include_internal: bool = False) -> list[str]:
        """Every topic of the cluster; internal ones (``__consumer_offsets``) only when asked, as a
        Kafka consumer's pattern subscription leaves them out (``exclude.internal.topics``)."""
        found = self.metadata(None)
        return sorted({t for t, _ in found.leaders if include_internal or t not in found.internal})

    def _leader(self, topic: str, partition: int) -> int:
        return self._leaders([(topic, partition)])[(topic, partition)]

    def _leaders(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        """``{(topic, partition): leader node id}``, the metadata of the topics it lacks fetched anew;
        one retriable error naming every partition without a leader (and the brokers holding them)."""
        missing = sorted({t for t, p in partitions if (t, p) not in self.cluster.current.leaders})
        if missing:
            self.metadata(missing)
        current = self.cluster.current
        for topic, partition in partitions:
            if (topic, partition) not in current.leaders:
                if topic in current.topic_errors:
                    raise self.topic_error(topic, current.topic_errors[topic])
                raise UnknownTopicOrPartitionError(
                    f"{topic}-{partition} does not exist", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                )
        return self.cluster.leaders(partitions)

    def _by_leader(self, partitions: list[TopicPartition]) -> dict[int, list[TopicPartition]]:
        """``partitions`` grouped by their leaders' node ids, in the order given."""
        grouped: dict[int, list[TopicPartition]] = {}
        for tp, leader in self._leaders(partitions).items():
            grouped.setdefault(leader, []).append(tp)
        return grouped

    def leader_of(self, topic: str, partition: int) -> Broker:
        def lookup() -> Broker:
            leader = self._leader(topic, partition)  # first: it may fetch the metadata anew
            return self.cluster.current.brokers[leader]

        return self.retrying(lookup, "leader lookup")

    # -- list offsets --------------------------------------------------------------------

    def list_offsets(self, wanted: Mapping[TopicPartition, int]) -> dict[TopicPartition, ListedOffset]:
        """``{(topic, partition): timestamp}`` (or EARLIEST / LATEST) -> ``{(topic, partition): (offset, timestamp)}``.

        For a timestamp, the offset is the first whose record timestamp is at or after it, or -1 if none.
        """
        return self.retrying(lambda: self._list_offsets(wanted), "list offsets")

    def _list_offsets(self, wanted: Mapping[TopicPartition, int]) -> dict[TopicPartition, ListedOffset]:
        results = {}
        for node_id, led in self._by_leader(list(wanted)).items():
            self._check_list_offsets_isolation(node_id)
            response = self.request(
                node_id,
                ApiKey.LIST_OFFSETS,
                fetcher.list_offsets_body({tp: wanted[tp] for tp in led}, self.isolation_level),
            )
            results.update(fetcher.listed_offsets(response, self.security.principal))
        return results

    def offsets_for_leader_epochs(
        self, node_id: int, wanted: Mapping[TopicPartition, EpochQuery], replica_id: int = CONSUMER_REPLICA_ID
    ) -> dict[TopicPartition, EpochEndOffset]:
        """Where each partition's asked leader epoch ends, by broker ``node_id`` (a follower asks its
        leader, with its own id as ``replica_id``). Errors of a partition are in its answer;
        BrokerConnectionError when the broker cannot be reached."""
        if node_id not in self.cluster.current.brokers:
            self.refresh_metadata([])
        body = leader_epochs.offset_for_leader_epoch_body(wanted, replica_id)
        return leader_epochs.epoch_end_offsets(self.request(node_id, ApiKey.OFFSET_FOR_LEADER_EPOCH, body))

    # -- fetch ---------------------------------------------------------------------------

    def fetch(self, topic: str, partition: int, offset: int, max_bytes: int, max_wait_ms: int = 0) -> FetchResult:
        """Entries of one partition from the one containing ``offset``: at least one whole entry
        if there is data (the size is doubled, up to ``max_fetch_bytes``, until one fits)."""
        size = max_bytes
        while True:
            result = self.retrying(
                partial(self._fetch, topic, partition, offset, size, max_wait_ms), f"fetch {topic}-{partition}@{offset}"
            )
            whole = fetcher.holds_a_whole_entry(result.records)
            if not len(result.records) or whole or size >= self.max_fetch_bytes:
                if len(result.records) and not whole:
                    raise KafkaError(
                        f"{topic}-{partition}@{offset}: a batch is larger than max_fetch_bytes "
                        f"({self.max_fetch_bytes})",
                        ErrorCode.MESSAGE_TOO_LARGE,
                    )
                return result
            size = min(size * 2, self.max_fetch_bytes)

    def _fetch(self, topic: str, partition: int, offset: int, max_bytes: int, max_wait_ms: int) -> FetchResult:
        node_id = self._leader(topic, partition)
        response = self.request(
            node_id,
            ApiKey.FETCH,
            fetcher.fetch_body(topic, partition, offset, max_bytes, max_wait_ms, self.isolation_level),
            extra_wait=max(max_wait_ms, 0) / 1000,
        )
        return fetcher.fetch_result(response, topic, partition, offset, self.security.principal)

    def read_filter(self) -> ReadFilter:
        """A new filter of the fetched entries of one partition, for this client's isolation level."""
        return ReadFilter(self.isolation_level == READ_COMMITTED)

    def _check_list_offsets_isolation(self, node_id: int) -> None:
        """Refuse read_committed with a broker whose ListOffsets has no isolation level (below v2);
        every Fetch version this client speaks has one."""
        if self.isolation_level == READ_COMMITTED:
            connection = self.connection(node_id)
            newest = connection.version_for(ApiKey.LIST_OFFSETS)
            if newest < 2:
                raise UnsupportedVersionError(
                    f"read_committed needs LIST_OFFSETS v2 or later; the broker at {connection.address} "
                    f"implements v{newest} at most"
                )

    # -- produce -------------------------------------------------------------------------

    def produce(
        self,
        topic: str,
        partition: int,
        records: Sequence[ProducerRecord],
        compression: int = Codec.NONE,
        acks: int = 1,
        timestamp: int | None = None,
        sequences: ProducerSequences | None = None,
    ) -> int | None:
        """Append ``records`` to a partition as one v2 batch. A record is ``(key, value)``, bytes or
        None, stamped ``timestamp`` (epoch ms; default now), or ``(key, value, timestamp)`` (None: the
        default), or ``(key, value, timestamp, headers)`` with headers ``((str, bytes | None), ...)``.
        ``acks`` is 0, 1 or ACKS_ALL (-1); with ``sequences`` (an idempotent producer) it must be ACKS_ALL.

        Returns the offset of the first record, or None with acks=0 (the broker does not answer).
        A batch refused because of its records raises RecordsRefusedError: nothing of it is stored.
        """
        if sequences is not None and acks != ACKS_ALL:
            raise ValueError(f"an idempotent producer needs acks=all (-1), not {acks}")
        stamp = int(time.time() * 1000) if timestamp is None else timestamp
        built = [producer.record(i, r, stamp) for i, r in enumerate(records)]
        if sequences is not None:
            data = batch.build(built, compression=compression, **sequences.batch_fields(topic, partition))
        else:
            data = batch.build(built, compression=compression)
        transactional_id = sequences.transactional_id if sequences is not None else None
        offset = self.retrying(
            lambda: self._produce(topic, partition, data, acks, transactional_id), f"produce to {topic}-{partition}"
        )
        if sequences is not None:
            sequences.acknowledged(topic, partition, len(records))
        return offset

    def produce_each(
        self,
        topic: str,
        partition: int,
        records: Sequence[ProducerRecord],
        compression: int = Codec.NONE,
        acks: int = 1,
        timestamp: int | None = None,
        sequences: ProducerSequences | None = None,
    ) -> dict[int, KafkaError | UnsupportedVersionError]:
        """Append ``records`` (as for ``produce``) in as few batches as the broker accepts: a batch it
        refuses because of its records is split (around the records it names, else in halves) until
        each refused record is alone. Returns ``{index in records: error}`` for every record not
        stored: a RecordsRefusedError for a record refused on its own, the error that stopped it
        for the records not sent after any other failure (nothing is sent after one). Every record
        not named was stored, in the order given.
        """
        stamp = int(time.time() * 1000) if timestamp is None else timestamp
        not_stored: dict[int, KafkaError | UnsupportedVersionError] = {}
        parts = collections.deque([(0, len(records))])
        while parts:
            start, end = parts.popleft()
            try:
                self.produce(topic, partition, records[start:end], compression, acks, stamp, sequences)
            except RecordsRefusedError as exc:
                if end - start == 1:
                    not_stored[start] = exc
                else:
                    parts.extendleft(reversed(producer.split(start, end, exc.record_indexes)))
            except (KafkaError, UnsupportedVersionError) as exc:
                for first, last in [(start, end), *parts]:
                    not_stored.update(dict.fromkeys(range(first, last), exc))
                break
        return not_stored

    def init_producer_id(self) -> ProducerSequences:
        """A new idempotent producer (InitProducerId, without a transactional id), its sequences at 0."""
        response = self.admin_request(
            ApiKey.INIT_PRODUCER_ID, {"transactional_id": None, "transaction_timeout_ms": INT32_MAX}, "init producer id"
        )
        error = error_for(
            response["error_code"],
            "an idempotent producer id",
            principal=self.security.principal,
            needs="IDEMPOTENT_WRITE on the cluster, or WRITE on a topic",
        )
        if error is not None:
            raise error
        return ProducerSequences(response["producer_id"], response["producer_epoch"])

    def _produce(
        self, topic: str, partition: int, data: bytes, acks: int, transactional_id: str | None = None
    ) -> int | None:
        node_id = self._leader(topic, partition)
        body = producer.produce_body(topic, partition, data, acks, int(self.timeout * 1000), transactional_id)
        if acks == 0:
            self._send(node_id, ApiKey.PRODUCE, body)
            return None
        return producer.produced_offset(
            self.request(node_id, ApiKey.PRODUCE, body), topic, partition, self.security.principal
        )

    # -- topic admin ---------------------------------------------------------------------

    def create_topics(self, topics: Sequence[NewTopic], validate_only: bool = False) -> dict[str, KafkaError | None]:
        """Create topics; ``{name: None}`` for each one created, or the KafkaError the broker answered."""
        response = self.admin_request(
            ApiKey.CREATE_TOPICS, admin.create_topics_body(topics, int(self.timeout * 1000), validate_only)
        )
        return admin.created_topics(response, self.security.principal)

    def delete_topics(self, names: Iterable[str]) -> dict[str, KafkaError | None]:
        """Delete topics; ``{name: None}`` for each one deleted, or the KafkaError the broker answered."""
        response = self.admin_request(
            ApiKey.DELETE_TOPICS, {"topic_names": list(names), "timeout_ms": int(self.timeout * 1000)}
        )
        return admin.deleted_topics(response, self.security.principal)

    def create_partitions(self, topic: str, count: int, validate_only: bool = False) -> None:
        """Grow ``topic`` to ``count`` partitions (KafkaError if the broker refuses)."""
        response = self.admin_request(
            ApiKey.CREATE_PARTITIONS,
            {
                "topics": [{"name": topic, "count": count, "assignments": None}],
                "timeout_ms": int(self.timeout * 1000),
                "validate_only": validate_only,
            },
        )
        admin.check_created_partitions(response, topic, self.security.principal)

    def describe_configs(
        self, topic: str, resource_type: int = TOPIC_RESOURCE, documentation: bool = False
    ) -> list[ConfigEntry]:
        """Every setting of a topic (or, with BROKER_RESOURCE, of a broker id or "" for the
        cluster default) with its value and where the value comes from (and its documentation)."""
        response = self.admin_request(
            ApiKey.DESCRIBE_CONFIGS, admin.describe_configs_body(topic, resource_type, documentation)
        )
        return admin.config_entries(response, topic, resource_type, self.security.principal)

    def alter_configs(
        self,
        name: str,
        changes: Mapping[str, str | None],
        resource_type: int = TOPIC_RESOURCE,
        validate_only: bool = False,
    ) -> None:
        """Set settings (``{key: value}``) or remove them back to their defaults (``{key: None}``)
        on a topic or a broker resource, one by one (IncrementalAlterConfigs)."""
        response = self.admin_request(
            ApiKey.INCREMENTAL_ALTER_CONFIGS, admin.alter_configs_body(name, changes, resource_type, validate_only)
        )
        admin.check_altered_configs(response, name, resource_type, self.security.principal)

    def delete_records(self, before: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Delete the records below ``{(topic, partition): offset}`` (-1: all of them) on each
        partition's leader; returns ``{(topic, partition): new log start offset}``."""
        return self.retrying(lambda: self._delete_records(before), "delete records")

    def _delete_records(self, before: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        low_watermarks = {}
        for node_id, led in self._by_leader(list(before)).items():
            response = self.request(
                node_id,
                ApiKey.DELETE_RECORDS,
                admin.delete_records_body({tp: before[tp] for tp in led}, int(self.timeout * 1000)),
            )
            low_watermarks.update(admin.low_watermarks(response, self.security.principal))
        return low_watermarks

    def partition_sizes(self, topic: str, partitions: Sequence[int]) -> dict[int, int]:
        """``{partition: bytes}`` of each partition's log on its leader (DescribeLogDirs);
        partitions a leader does not report are left out."""
        return self.retrying(lambda: self._partition_sizes(topic, partitions), f"describe log dirs of {topic}")

    def _partition_sizes(self, topic: str, partitions: Sequence[int]) -> dict[int, int]:
        sizes = {}
        for node_id, led in self._by_leader([(topic, partition) for partition in partitions]).items():
            numbers = [partition for _, partition in led]
            response = self.request(node_id, ApiKey.DESCRIBE_LOG_DIRS, admin.describe_log_dirs_body(topic, numbers))
            sizes.update(admin.partition_sizes(response, topic, numbers))
        return sizes

    def admin_request(self, api_key: ApiKey, body: Body, what: str | None = None) -> Body:
        """A request for the controller (any broker when the cluster names none), retried."""
        return self.retrying(
            lambda: self.request(self.controller_or_any(), api_key, body),
            what or api_key.name.lower().replace("_", " "),
        )

    def controller_or_any(self) -> int:
        """The node id of the controller, or of any broker when the cluster names none."""
        current = self.cluster.current if self.cluster.current.brokers else self.refresh_metadata([])
        if not current.brokers:
            raise BrokerConnectionError("the cluster metadata lists no broker")
        return current.controller_id if current.controller_id in current.brokers else min(current.brokers)

    # -- requests ------------------------------------------------------------------------

    def request(
        self, node_id: int, api_key: ApiKey, body: Body, extra_wait: float = 0.0, max_version: int | None = None
    ) -> Body:
        """One request to broker ``node_id`` and its answer (the connection is dropped if it breaks)."""
        try:
            return self.connection(node_id).request(api_key, body, extra_wait, max_version)
        except BrokerConnectionError:
            self._drop(node_id)
            raise

    def _send(self, node_id: int, api_key: ApiKey, body: Body) -> None:
        try:
            self.connection(node_id).send(api_key, body)
        except BrokerConnectionError:
            self._drop(node_id)
            raise
