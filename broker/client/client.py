"""A synchronous client for Kafka's stateless offset API: metadata, list offsets, fetch by offset,
plus what the command-line tools need: produce, and the topic admin requests.

It works against any Kafka-protocol broker (this project's, Apache Kafka, librdkafka's mock
cluster): it bootstraps from a ``host:port`` list, learns each partition's leader from Metadata,
sends ListOffsets, Fetch, Produce and DeleteRecords to the leaders and the admin requests
(CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs, IncrementalAlterConfigs) to the
controller, and keeps one connection per broker. Nothing is
stored in the broker: the caller owns the offsets (the design's "stateless" consumption).

Transient failures (connection reset, leader not available, not leader) refresh the metadata
and retry, a bounded number of times with a backoff; when no broker can be reached the error is a
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
"""

import collections
import logging
import random
import re
import time
from typing import NamedTuple

from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode, error_name
from broker.records import batch, record_set
from broker.records.batch import Record
from broker.records.compression import Codec
from broker.records.errors import CorruptRecordError

from .connection import BrokerConnection, BrokerConnectionError, UnsupportedVersionError
from .idempotence import INT32_MAX, ProducerSequences
from .security import PLAINTEXT, ClientSecurity

log = logging.getLogger(__name__)

READ_UNCOMMITTED = 0
READ_COMMITTED = 1
ACKS_ALL = -1
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4  # DescribeConfigs and AlterConfigs resource types
SET_CONFIG, DELETE_CONFIG = 0, 1  # IncrementalAlterConfigs operations
DEFAULT_CONFIG, UNKNOWN_CONFIG = 5, 0  # DescribeConfigs config sources
SHOWN_PARTITIONS = 20  # partitions named in an error, at most
_RETRIABLE = {ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REQUEST_TIMED_OUT,
              ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.KAFKA_STORAGE_ERROR,
              ErrorCode.OFFSET_NOT_AVAILABLE}
_DENIED = {ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED,
           ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
# Produce errors that refuse a batch because of its records: a smaller batch may be accepted.
_RECORD_ERRORS = {ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_RECORD,
                  ErrorCode.CORRUPT_MESSAGE, ErrorCode.INVALID_TIMESTAMP}


class KafkaError(Exception):
    """A broker answered with an error code that is not retried (or retries ran out)."""

    def __init__(self, message: str, code: int = ErrorCode.UNKNOWN_SERVER_ERROR):
        super().__init__(message)
        self.code = code


class UnknownTopicOrPartitionError(KafkaError):
    pass


class AuthorizationError(KafkaError):
    """The broker denied the client's principal an operation on a topic, a group or the cluster
    (TOPIC_, GROUP_ or CLUSTER_AUTHORIZATION_FAILED); the message names the principal."""


class RecordsRefusedError(KafkaError):
    """The broker refused a produced batch because of its records; ``record_indexes`` are the
    positions in the batch of the records it named (Produce v8 ``record_errors``; often none)."""

    def __init__(self, message: str, code: int, record_indexes: list[int]):
        super().__init__(message, code)
        self.record_indexes = record_indexes


class BrokerUnavailableError(KafkaError):
    """No broker could be reached, or the connection kept breaking, until the retries ran out."""


class OffsetOutOfRangeError(KafkaError):
    def __init__(self, topic: str, partition: int, offset: int, log_start_offset: int, high_watermark: int):
        super().__init__(f"offset {offset} of {topic}-{partition} is out of range "
                         f"(the broker holds [{log_start_offset}, {high_watermark}))", ErrorCode.OFFSET_OUT_OF_RANGE)
        self.topic, self.partition, self.offset = topic, partition, offset
        self.log_start_offset, self.high_watermark = log_start_offset, high_watermark


class Broker(NamedTuple):
    node_id: int
    host: str
    port: int


class Metadata(NamedTuple):
    brokers: dict  # node id -> Broker
    leaders: dict  # (topic, partition) -> leader node id (-1 when none)
    topic_errors: dict  # topic -> error code, for topics the broker answered with an error
    controller_id: int = -1
    internal: frozenset = frozenset()  # topics the cluster marks internal (__consumer_offsets)
    cluster_id: str | None = None  # None from brokers before Metadata v2
    replicas: dict = {}  # (topic, partition) -> the ids of its replicas


class NewTopic(NamedTuple):
    name: str
    partitions: int = -1  # -1: the broker's num.partitions (CreateTopics v4+)
    configs: dict | None = None  # topic settings under Kafka's names, e.g. {"retention.ms": "3600000"}
    replication_factor: int = -1  # -1: the broker's default (CreateTopics v4+)


class ConfigEntry(NamedTuple):
    name: str
    value: str | None
    source: int  # Kafka's ConfigSource: 1 the topic's own, 4 the broker's configuration, 5 Kafka's default, ...
    read_only: bool
    sensitive: bool
    documentation: str | None = None  # when asked for (DescribeConfigs v3): this broker says why a setting has
    # no effect here; Apache Kafka gives each setting's documentation

    @property
    def is_default(self) -> bool:
        return self.source == DEFAULT_CONFIG


class FetchResult(NamedTuple):
    records: memoryview  # whole entries (v2 batches or legacy messages), possibly a partial last one
    high_watermark: int
    log_start_offset: int
    last_stable_offset: int


class KafkaClient:
    def __init__(self, bootstrap_servers: str, *, timeout: float = 30.0, client_id: str = "kafkalog",
                 retries: int = 5, retry_backoff_ms: int = 200, max_fetch_bytes: int = 256 * 1024 * 1024,
                 isolation_level: int = READ_UNCOMMITTED, security: ClientSecurity = PLAINTEXT):
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.security = security
        self.timeout, self.client_id = timeout, client_id
        self.retries, self.retry_backoff_ms = retries, retry_backoff_ms
        self.max_fetch_bytes = max_fetch_bytes
        self.isolation_level = isolation_level
        self._connections: dict[int, BrokerConnection] = {}
        self._metadata = Metadata({}, {}, {})

    # -- connections ---------------------------------------------------------------------

    def _connection(self, node_id: int) -> BrokerConnection:
        connection = self._connections.get(node_id)
        if connection is None:
            broker = self._metadata.brokers.get(node_id)
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

    def __exit__(self, *exc) -> None:
        self.close()

    def _retrying(self, action, what: str):
        """Run ``action()``; on a transient failure refresh the metadata and try again."""
        for attempt in range(self.retries + 1):
            try:
                return action()
            except (BrokerConnectionError, _Retriable) as exc:
                if attempt == self.retries:
                    error = BrokerUnavailableError if isinstance(exc, BrokerConnectionError) else KafkaError
                    raise error(f"{what} failed after {self.retries + 1} attempts: {exc}",
                                getattr(exc, "code", ErrorCode.UNKNOWN_SERVER_ERROR)) from None
                log.info("%s: %s; retrying", what, exc)
                time.sleep(self.retry_backoff_ms * (2 ** attempt) * (0.8 + 0.4 * random.random()) / 1000)
                self._metadata = Metadata({}, {}, {})

    # -- metadata ------------------------------------------------------------------------

    def metadata(self, topics: list[str] | None = None, create: bool = False) -> Metadata:
        """Brokers and partition leaders of ``topics`` (all topics when None). Creates none of them
        unless ``create`` (as a producer's request does: a broker with ``auto.create.topics.enable``
        then creates a missing topic)."""
        return self._retrying(lambda: self._fetch_metadata(topics, create), "metadata")

    def _fetch_metadata(self, topics, create: bool = False):
        errors = []
        for host, port in random.sample(self.bootstrap, len(self.bootstrap)) if not self._metadata.brokers else \
                [(b.host, b.port) for b in self._metadata.brokers.values()]:
            try:
                connection = BrokerConnection(host, port, self.timeout, self.client_id, self.security)
            except BrokerConnectionError as exc:
                errors.append(str(exc))
                continue
            try:
                version = connection.version_for(ApiKey.METADATA)
                if topics is None:
                    wanted = [] if version == 0 else None
                else:
                    wanted = [{"name": t} for t in topics]
                response = connection.request(ApiKey.METADATA, {"topics": wanted, "allow_auto_topic_creation": create})
            except BrokerConnectionError as exc:
                errors.append(str(exc))
                continue
            finally:
                connection.close()
            brokers = {b["node_id"]: Broker(b["node_id"], b["host"], b["port"]) for b in response["brokers"]}
            leaders, replicas, topic_errors, internal = {}, {}, {}, set()
            for topic in response["topics"]:
                if topic["is_internal"]:
                    internal.add(topic["name"])
                if topic["error_code"] in _RETRIABLE:
                    raise _Retriable(f"topic {topic['name']}: error {topic['error_code']}", topic["error_code"])
                if topic["error_code"]:
                    topic_errors[topic["name"]] = topic["error_code"]
                for p in topic["partitions"]:
                    leaders[(topic["name"], p["partition_index"])] = p["leader_id"]
                    replicas[(topic["name"], p["partition_index"])] = tuple(p["replica_nodes"])
            self._metadata = Metadata(brokers, leaders, topic_errors, response["controller_id"], frozenset(internal),
                                      response.get("cluster_id"), replicas)
            for node_id in [n for n in self._connections if n not in brokers]:
                self._drop(node_id)
            return self._metadata
        raise BrokerConnectionError("no broker of " + ",".join(f"{h}:{p}" for h, p in self.bootstrap)
                                    + " could be reached: " + "; ".join(errors))

    def partitions_of(self, topic: str, create: bool = False) -> list[int]:
        """The partition numbers of a topic; UnknownTopicOrPartitionError if it does not exist (and,
        with ``create``, the broker did not create it), AuthorizationError if the principal may not
        describe it."""
        metadata = self.metadata([topic], create)
        if topic in metadata.topic_errors:
            raise self.topic_error(topic, metadata.topic_errors[topic])
        return sorted(p for t, p in metadata.leaders if t == topic)

    def topic_error(self, topic: str, code: int) -> KafkaError:
        """The error for a topic Metadata answered ``code`` for: Kafka answers TOPIC_AUTHORIZATION_FAILED
        for a topic the principal may not describe (whether it exists or not), else it does not exist."""
        if code == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
            return _error(code, f"topic {topic!r}", principal=self.security.principal, needs="DESCRIBE")
        return UnknownTopicOrPartitionError(f"topic {topic!r} does not exist (error {code})", code)

    def available_partitions(self, topic: str) -> list[int]:
        """The partitions of ``topic`` that have a leader, by the metadata last fetched (none when it
        lacks the topic; nothing is sent): where a producer sends the records without a key."""
        return sorted(p for (t, p), leader in self._metadata.leaders.items() if t == topic and leader >= 0)

    def topics(self, include_internal: bool = False) -> list[str]:
        """Every topic of the cluster; internal ones (``__consumer_offsets``) only when asked, as a
        Kafka consumer's pattern subscription leaves them out (``exclude.internal.topics``)."""
        metadata = self.metadata(None)
        return sorted({t for t, _ in metadata.leaders if include_internal or t not in metadata.internal})

    def _leader(self, topic: str, partition: int) -> int:
        return self._leaders([(topic, partition)])[(topic, partition)]

    def _leaders(self, partitions) -> dict:
        """``{(topic, partition): leader node id}``, the metadata fetched anew if it lacks one of them;
        one retriable error naming every partition without a leader (and the brokers holding them)."""
        if any(tp not in self._metadata.leaders for tp in partitions):
            self.metadata(sorted({t for t, _ in self._metadata.leaders} | {t for t, _ in partitions}))
        found = {}
        for topic, partition in partitions:
            leader = self._metadata.leaders.get((topic, partition))
            if leader is None and topic in self._metadata.topic_errors:
                raise self.topic_error(topic, self._metadata.topic_errors[topic])
            if leader is None:
                raise UnknownTopicOrPartitionError(f"{topic}-{partition} does not exist",
                                                   ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            found[(topic, partition)] = leader
        leaderless = sorted(tp for tp, leader in found.items() if leader < 0)
        if leaderless:
            raise _Retriable(_no_leader(self._metadata, leaderless), ErrorCode.LEADER_NOT_AVAILABLE)
        return found

    def leader_of(self, topic: str, partition: int) -> Broker:
        def lookup() -> Broker:
            leader = self._leader(topic, partition)  # first: it may fetch the metadata anew
            return self._metadata.brokers[leader]
        return self._retrying(lookup, "leader lookup")

    # -- list offsets --------------------------------------------------------------------

    def list_offsets(self, wanted: dict) -> dict:
        """``{(topic, partition): timestamp}`` (or EARLIEST / LATEST) -> ``{(topic, partition): (offset, timestamp)}``.

        For a timestamp, the offset is the first whose record timestamp is at or after it, or -1 if none.
        """
        return self._retrying(lambda: self._list_offsets(wanted), "list offsets")

    def _list_offsets(self, wanted: dict) -> dict:
        leaders = self._leaders(list(wanted))
        by_leader: dict[int, list] = {}
        for (topic, partition), timestamp in wanted.items():
            by_leader.setdefault(leaders[(topic, partition)], []).append((topic, partition, timestamp))
        results = {}
        for node_id, entries in by_leader.items():
            topics: dict[str, list] = {}
            for topic, partition, timestamp in entries:
                topics.setdefault(topic, []).append({"partition_index": partition, "current_leader_epoch": -1,
                                                     "timestamp": timestamp})
            response = self._request(node_id, ApiKey.LIST_OFFSETS, {
                "replica_id": -1, "isolation_level": self.isolation_level,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]})
            for topic in response["topics"]:
                for p in topic["partitions"]:
                    _raise_for(p["error_code"], topic["name"], p["partition_index"], principal=self.security.principal,
                               needs="DESCRIBE")
                    results[(topic["name"], p["partition_index"])] = (p["offset"], p["timestamp"])
        return results

    # -- fetch ---------------------------------------------------------------------------

    def fetch(self, topic: str, partition: int, offset: int, max_bytes: int, max_wait_ms: int = 0) -> FetchResult:
        """Entries of one partition from the one containing ``offset``: at least one whole entry
        if there is data (the size is doubled, up to ``max_fetch_bytes``, until one fits)."""
        size = max_bytes
        while True:
            result = self._retrying(lambda: self._fetch(topic, partition, offset, size, max_wait_ms),
                                    f"fetch {topic}-{partition}@{offset}")
            if not len(result.records) or _holds_a_whole_entry(result.records) or size >= self.max_fetch_bytes:
                if len(result.records) and not _holds_a_whole_entry(result.records):
                    raise KafkaError(f"{topic}-{partition}@{offset}: a batch is larger than max_fetch_bytes "
                                     f"({self.max_fetch_bytes})", ErrorCode.MESSAGE_TOO_LARGE)
                return result
            size = min(size * 2, self.max_fetch_bytes)

    def _fetch(self, topic, partition, offset, max_bytes, max_wait_ms) -> FetchResult:
        node_id = self._leader(topic, partition)
        response = self._request(node_id, ApiKey.FETCH, {
            "replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": max_bytes,
            "isolation_level": self.isolation_level, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [{
                "partition": partition, "current_leader_epoch": -1, "fetch_offset": offset,
                "log_start_offset": -1, "partition_max_bytes": max_bytes}]}],
            "forgotten_topics_data": [], "rack_id": ""}, extra_wait=max(max_wait_ms, 0) / 1000)
        if response["error_code"]:
            _raise_for(response["error_code"], topic, partition, principal=self.security.principal, needs="READ")
        data = response["responses"][0]["partitions"][0]
        if data["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE:
            raise OffsetOutOfRangeError(topic, partition, offset, data["log_start_offset"], data["high_watermark"])
        _raise_for(data["error_code"], topic, partition, principal=self.security.principal, needs="READ")
        records = data["records"] if data["records"] is not None else memoryview(b"")
        return FetchResult(records, data["high_watermark"], data["log_start_offset"], data["last_stable_offset"])

    # -- produce -------------------------------------------------------------------------

    def produce(self, topic: str, partition: int, records, compression: int = Codec.NONE, acks: int = 1,
                timestamp: int | None = None, sequences: ProducerSequences | None = None) -> int | None:
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
        producer_fields = sequences.batch_fields(topic, partition) if sequences is not None else {}
        data = batch.build([_record(i, r, stamp) for i, r in enumerate(records)], compression=compression,
                           **producer_fields)
        offset = self._retrying(lambda: self._produce(topic, partition, data, acks), f"produce to {topic}-{partition}")
        if sequences is not None:
            sequences.acknowledged(topic, partition, len(records))
        return offset

    def produce_each(self, topic: str, partition: int, records, compression: int = Codec.NONE, acks: int = 1,
                     timestamp: int | None = None,
                     sequences: ProducerSequences | None = None) -> dict[int, KafkaError | UnsupportedVersionError]:
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
                    parts.extendleft(reversed(_split(start, end, exc.record_indexes)))
            except (KafkaError, UnsupportedVersionError) as exc:
                for first, last in [(start, end), *parts]:
                    not_stored.update(dict.fromkeys(range(first, last), exc))
                break
        return not_stored

    def init_producer_id(self) -> ProducerSequences:
        """A new idempotent producer (InitProducerId, without a transactional id), its sequences at 0."""
        response = self._retrying(lambda: self._request(self._controller_or_any(), ApiKey.INIT_PRODUCER_ID,
                                                        {"transactional_id": None, "transaction_timeout_ms": INT32_MAX}),
                                  "init producer id")
        error = _error(response["error_code"], "an idempotent producer id", principal=self.security.principal,
                       needs="IDEMPOTENT_WRITE on the cluster, or WRITE on a topic")
        if error is not None:
            raise error
        return ProducerSequences(response["producer_id"], response["producer_epoch"])

    def _produce(self, topic: str, partition: int, data: bytes, acks: int) -> int | None:
        node_id = self._leader(topic, partition)
        body = {"transactional_id": None, "acks": acks, "timeout_ms": int(self.timeout * 1000),
                "topics": [{"name": topic, "partitions": [{"index": partition, "records": data}]}]}
        if acks == 0:
            self._send(node_id, ApiKey.PRODUCE, body)
            return None
        result = self._request(node_id, ApiKey.PRODUCE, body)["responses"][0]["partitions"][0]
        if result["error_code"] in _RECORD_ERRORS:
            error = _error(result["error_code"], f"{topic}-{partition}", result["error_message"])
            raise RecordsRefusedError(str(error), error.code,
                                      [e["batch_index"] for e in result.get("record_errors") or ()])
        _raise_for(result["error_code"], topic, partition, result["error_message"], principal=self.security.principal,
                   needs="WRITE")
        return result["base_offset"]

    # -- topic admin ---------------------------------------------------------------------

    def create_topics(self, topics: list[NewTopic], validate_only: bool = False) -> dict:
        """Create topics; ``{name: None}`` for each one created, or the KafkaError the broker answered."""
        body = {"topics": [{"name": t.name, "num_partitions": t.partitions, "replication_factor": t.replication_factor,
                            "assignments": [],
                            "configs": [{"name": k, "value": v} for k, v in (t.configs or {}).items()]}
                           for t in topics],
                "timeout_ms": int(self.timeout * 1000), "validate_only": validate_only}
        response = self._admin_request(ApiKey.CREATE_TOPICS, body)
        return {t["name"]: _error(t["error_code"], f"topic {t['name']!r}", t["error_message"],
                                  principal=self.security.principal, needs="CREATE")
                for t in response["topics"]}

    def delete_topics(self, names: list[str]) -> dict:
        """Delete topics; ``{name: None}`` for each one deleted, or the KafkaError the broker answered."""
        response = self._admin_request(ApiKey.DELETE_TOPICS, {"topic_names": list(names),
                                                              "timeout_ms": int(self.timeout * 1000)})
        return {r["name"]: _error(r["error_code"], f"topic {r['name']!r}",
                                  _internal_refusal(r["error_code"], "cannot be deleted"),
                                  principal=self.security.principal, needs="DELETE")
                for r in response["responses"]}

    def create_partitions(self, topic: str, count: int, validate_only: bool = False) -> None:
        """Grow ``topic`` to ``count`` partitions (KafkaError if the broker refuses)."""
        response = self._admin_request(ApiKey.CREATE_PARTITIONS, {
            "topics": [{"name": topic, "count": count, "assignments": None}],
            "timeout_ms": int(self.timeout * 1000), "validate_only": validate_only})
        [result] = response["results"]
        error = _error(result["error_code"], f"topic {topic!r}", result["error_message"],
                       principal=self.security.principal, needs="ALTER")
        if error is not None:
            raise error

    def describe_configs(self, topic: str, resource_type: int = TOPIC_RESOURCE,
                         documentation: bool = False) -> list[ConfigEntry]:
        """Every setting of a topic (or, with BROKER_RESOURCE, of a broker id or "" for the
        cluster default) with its value and where the value comes from (and its documentation)."""
        response = self._admin_request(ApiKey.DESCRIBE_CONFIGS, {
            "resources": [{"resource_type": resource_type, "resource_name": topic, "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": documentation})
        [result] = response["results"]
        error = _error(result["error_code"], _resource_subject(resource_type, topic), result["error_message"],
                       principal=self.security.principal, needs="DESCRIBE_CONFIGS")
        if error is not None:
            raise error
        return [ConfigEntry(c["name"], c["value"], _config_source(c), c["read_only"], c["is_sensitive"],
                            c["documentation"] or None) for c in result["configs"]]

    def alter_configs(self, name: str, changes: dict, resource_type: int = TOPIC_RESOURCE,
                      validate_only: bool = False) -> None:
        """Set settings (``{key: value}``) or remove them back to their defaults (``{key: None}``)
        on a topic or a broker resource, one by one (IncrementalAlterConfigs)."""
        configs = [{"name": key, "config_operation": DELETE_CONFIG if value is None else SET_CONFIG, "value": value}
                   for key, value in changes.items()]
        response = self._admin_request(ApiKey.INCREMENTAL_ALTER_CONFIGS, {
            "resources": [{"resource_type": resource_type, "resource_name": name, "configs": configs}],
            "validate_only": validate_only})
        [result] = response["responses"]
        error = _error(result["error_code"], _resource_subject(resource_type, name), result["error_message"],
                       principal=self.security.principal, needs="ALTER_CONFIGS")
        if error is not None:
            raise error

    def delete_records(self, before: dict) -> dict:
        """Delete the records below ``{(topic, partition): offset}`` (-1: all of them) on each
        partition's leader; returns ``{(topic, partition): new log start offset}``."""
        return self._retrying(lambda: self._delete_records(before), "delete records")

    def _delete_records(self, before: dict) -> dict:
        leaders = self._leaders(list(before))
        by_leader: dict[int, dict] = {}
        for (topic, partition), offset in before.items():
            by_leader.setdefault(leaders[(topic, partition)], {}).setdefault(topic, []).append(
                {"partition_index": partition, "offset": offset})
        low_watermarks = {}
        for node_id, topics in by_leader.items():
            response = self._request(node_id, ApiKey.DELETE_RECORDS, {
                "topics": [{"name": t, "partitions": p} for t, p in topics.items()],
                "timeout_ms": int(self.timeout * 1000)})
            for topic in response["topics"]:
                for p in topic["partitions"]:
                    _raise_for(p["error_code"], topic["name"], p["partition_index"],
                               _internal_refusal(p["error_code"], "its records cannot be deleted"),
                               principal=self.security.principal, needs="DELETE")
                    low_watermarks[(topic["name"], p["partition_index"])] = p["low_watermark"]
        return low_watermarks

    def partition_sizes(self, topic: str, partitions: list[int]) -> dict[int, int]:
        """``{partition: bytes}`` of each partition's log on its leader (DescribeLogDirs);
        partitions a leader does not report are left out."""
        return self._retrying(lambda: self._partition_sizes(topic, partitions), f"describe log dirs of {topic}")

    def _partition_sizes(self, topic: str, partitions: list[int]) -> dict[int, int]:
        leaders = self._leaders([(topic, partition) for partition in partitions])
        by_leader: dict[int, list] = {}
        for partition in partitions:
            by_leader.setdefault(leaders[(topic, partition)], []).append(partition)
        sizes = {}
        for node_id, led in by_leader.items():
            response = self._request(node_id, ApiKey.DESCRIBE_LOG_DIRS,
                                     {"topics": [{"topic": topic, "partitions": led}]})
            for log_dir in (d for d in response["results"] if d["error_code"] == ErrorCode.NONE):
                for p in (p for t in log_dir["topics"] if t["name"] == topic for p in t["partitions"]):
                    if p["partition_index"] in led and not p["is_future_key"]:
                        sizes[p["partition_index"]] = p["partition_size"]
        return sizes

    def _admin_request(self, api_key: ApiKey, body: dict) -> dict:
        """A request for the controller (any broker when the cluster names none)."""
        return self._retrying(lambda: self._request(self._controller_or_any(), api_key, body),
                              api_key.name.lower().replace("_", " "))

    def _controller_or_any(self) -> int:
        """The node id of the controller, or of any broker when the cluster names none."""
        metadata = self._metadata if self._metadata.brokers else self._fetch_metadata([])
        if not metadata.brokers:
            raise BrokerConnectionError("the cluster metadata lists no broker")
        return metadata.controller_id if metadata.controller_id in metadata.brokers else min(metadata.brokers)

    # -- requests ------------------------------------------------------------------------

    def _request(self, node_id: int, api_key: ApiKey, body: dict, extra_wait: float = 0.0,
                 max_version: int | None = None) -> dict:
        try:
            return self._connection(node_id).request(api_key, body, extra_wait, max_version)
        except BrokerConnectionError:
            self._drop(node_id)
            raise

    def _send(self, node_id: int, api_key: ApiKey, body: dict) -> None:
        try:
            self._connection(node_id).send(api_key, body)
        except BrokerConnectionError:
            self._drop(node_id)
            raise


class _Retriable(Exception):
    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def _record(offset: int, fields: tuple, default_timestamp: int) -> Record:
    """A Record from ``(key, value[, timestamp[, headers]])``."""
    timestamp = fields[2] if len(fields) > 2 and fields[2] is not None else default_timestamp
    return Record(offset, timestamp, fields[0], fields[1], tuple(fields[3]) if len(fields) > 3 else ())


def _split(start: int, end: int, named: list[int]) -> list[tuple[int, int]]:
    """The parts to retry of records ``[start, end)`` refused as a batch: each record the broker
    named (an index within the batch) alone, and the runs of records between them (the broker
    names every keyless record of a compacted topic, so a batch is refused once, not once per
    bad record); or two halves when it named none."""
    inside = sorted({start + i for i in named if 0 <= i < end - start})
    if not inside:
        middle = (start + end) // 2
        return [(start, middle), (middle, end)]
    parts, after = [], start
    for bad in inside:
        parts += [(after, bad), (bad, bad + 1)]
        after = bad + 1
    return [(a, b) for a, b in (*parts, (after, end)) if a < b]


def _no_leader(metadata: Metadata, partitions: list) -> str:
    """``t-1, t-4 have no leader (LEADER_NOT_AVAILABLE): broker 2, which holds them, is down (live
    brokers: 1, 3)``; the brokers named when the metadata lists the partitions' replicas."""
    names = ", ".join(f"{t}-{p}" for t, p in partitions[:SHOWN_PARTITIONS]) + \
        (f" and {len(partitions) - SHOWN_PARTITIONS} more" if len(partitions) > SHOWN_PARTITIONS else "")
    one = len(partitions) == 1
    message = f"{names} {'has' if one else 'have'} no leader (LEADER_NOT_AVAILABLE)"
    down = sorted({r for tp in partitions for r in metadata.replicas.get(tp, ()) if r not in metadata.brokers})
    if not down:
        return message
    live = ", ".join(map(str, sorted(metadata.brokers))) or "none"
    return (f"{message}: broker{'s' if len(down) > 1 else ''} {', '.join(map(str, down))}, which "
            f"{'hold' if len(down) > 1 else 'holds'} {'it' if one else 'them'}, {'are' if len(down) > 1 else 'is'} "
            f"down (live brokers: {live})")


def _raise_for(code: int, topic: str, partition: int, message: str | None = None, *, principal: str | None = None,
               needs: str | None = None) -> None:
    if code in _RETRIABLE:
        raise _Retriable(f"{topic}-{partition}: error {code}", code)
    subject = f"topic {topic!r}" if code == ErrorCode.TOPIC_AUTHORIZATION_FAILED else f"{topic}-{partition}"
    error = _error(code, subject, message, principal=principal, needs=needs)
    if error is not None:
        raise error


def _internal_refusal(code: int, refused: str) -> str | None:
    """The message of a refusal that DeleteTopics and DeleteRecords answer without one: Kafka's brokers
    answer INVALID_TOPIC_EXCEPTION for a topic that is internal (``refused`` says what cannot be done)."""
    return f"it is an internal topic and {refused}" if code == ErrorCode.INVALID_TOPIC_EXCEPTION else None


def _error(code: int, subject: str, message: str | None = None, *, principal: str | None = None,
           needs: str | None = None) -> KafkaError | None:
    """The KafkaError for an error code the broker answered about ``subject``, None for no error;
    an authorization failure names the ``principal`` denied and the operation it ``needs``."""
    if code == ErrorCode.NONE:
        return None
    if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        return UnknownTopicOrPartitionError(f"{subject} does not exist", code)
    name = error_name(code)
    if code in _DENIED:
        resource = "the cluster" if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED else subject
        return AuthorizationError(f"access to {resource} denied for {principal or 'this client'} "
                                  f"({f'needs {needs}; ' if needs else ''}{name})", code)
    if not message:
        return KafkaError(f"{subject}: broker error {name}", code)
    return KafkaError(f"{message} ({name})" if subject in message else f"{subject}: {message} ({name})", code)


def _resource_subject(resource_type: int, name: str) -> str:
    if resource_type == BROKER_RESOURCE:
        return f"broker {name}" if name else "the cluster-wide broker default"
    return f"topic {name!r}"


def _config_source(config: dict) -> int:
    """DescribeConfigs v1+ gives the source; v0 only says whether the value is Kafka's default."""
    if config["config_source"] >= 0:
        return config["config_source"]
    return DEFAULT_CONFIG if config["is_default"] else UNKNOWN_CONFIG


def _holds_a_whole_entry(records) -> bool:
    try:
        return next(record_set.iter_entries(records), None) is not None
    except CorruptRecordError:
        return True  # let the decoder report it


def parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    """``"h1:9092,h2:9093"`` -> ``[("h1", 9092), ("h2", 9093)]``; ValueError with an example if malformed.
    A listener name before an address (``PLAINTEXT://h1:9092``) is ignored, as Kafka's clients ignore it."""
    out = []
    for item in (re.sub(r"^[A-Za-z0-9_]+://", "", s.strip()) for s in servers.split(",")):
        host, sep, port = item.rpartition(":")
        if (not item or not sep or not host or any(c.isspace() for c in host) or not port.isascii()
                or not port.isdigit() or not 0 < int(port) < 65536):
            raise ValueError(f"{servers!r} is not a list of host:port (for example 127.0.0.1:9092,broker2:9092)")
        out.append((host.strip("[]"), int(port)))
    return out
