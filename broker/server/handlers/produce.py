"""Produce: append each partition's batch to its log, or say per partition why not.

Clients cannot write to ``__consumer_offsets`` (INVALID_TOPIC_EXCEPTION, as in Kafka).
Request-level rules (Kafka's, for v3+): exactly one v2 batch per partition, no zstd before v7,
``acks`` in {-1, 0, 1}. Transactional batches are appended under the producer rules of the log
(a producer id and epoch, sequences as for idempotence, INVALID_TXN_STATE for a non-transactional
batch while the producer's transaction is open); a client's control batch is INVALID_RECORD.
Legacy magic 0/1 message sets are up-converted to one v2 batch before the append, and a batch
whose codec differs from the topic's ``compression.type`` (unless that is ``producer``) is
recompressed, as Kafka does (a batch over ``max.message.bytes`` is refused
before it is decompressed). Versions 0-2 are advertised but answered UNSUPPORTED_VERSION, as
Kafka 4 does.
Each topic needs Write (TOPIC_AUTHORIZATION_FAILED, checked before anything else, as in Kafka).
A partition named more than once in one request is appended once, with its last mention, and
answered once at its first place, as Kafka's request map does (appending each mention would store
a batch twice under one acknowledgement).
acks=0 gets no response; if such a produce fails, the connection is closed so the client notices.
Each partition's checks and append run on the I/O pool as that partition's writer; the partitions
of one request are appended concurrently (the response waits for all of them), and fetches waiting
for them are woken on the event loop.
acks=1 answers after the leader's append; acks=-1 (all) checks first that the ISR has at least
``min.insync.replicas`` members (NOT_ENOUGH_REPLICAS, nothing appended), then waits on the event
loop until the high watermark passes the records (every in-sync replica has them), for at most the
request's ``timeout_ms`` (REQUEST_TIMED_OUT: the records stay in the log, as in Kafka), answering
NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below the minimum meanwhile.
"""

import asyncio

from broker.coordinator.offset_manager import OFFSETS_TOPIC
from broker.log import errors as log_errors
from broker.protocol.errors import ErrorCode
from broker.records import recompress, record_set
from broker.records.batch import BatchHeader
from broker.records.compression import Codec
from broker.records.errors import CorruptRecordError
from broker.replica.partition import Partition
from broker.replica.replica_manager import PartitionError
from broker.security.acls import Operation, ResourceType

from ..context import CloseConnection, error_text
from ..replication import replicated
from .partition_lists import distinct

FIRST_SUPPORTED_VERSION = 3
FIRST_ZSTD_VERSION = 7
LEGACY_MAX_EXPANSION = 16  # a legacy wrapper may decompress to at most 16 x max.message.bytes

_LOG_ERRORS = {
    log_errors.InvalidBatchError: ErrorCode.CORRUPT_MESSAGE,
    log_errors.RecordTooLargeError: ErrorCode.MESSAGE_TOO_LARGE,
    log_errors.InvalidRecordError: ErrorCode.INVALID_RECORD,
    log_errors.InvalidTimestampError: ErrorCode.INVALID_TIMESTAMP,
    log_errors.OutOfOrderSequenceError: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    log_errors.InvalidProducerEpochError: ErrorCode.INVALID_PRODUCER_EPOCH,
    log_errors.InvalidTxnStateError: ErrorCode.INVALID_TXN_STATE,
    log_errors.LogStorageError: ErrorCode.KAFKA_STORAGE_ERROR,
    log_errors.LogDeletedError: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
}


class _Refused(Exception):
    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code


def _checked_records(records, version: int, max_message_bytes: int):
    """The batch to append, after Kafka's request-level checks (and up-conversion of legacy sets)."""
    if records is None or len(records) == 0:
        raise _Refused(ErrorCode.INVALID_RECORD, "no records")
    try:
        entries = list(record_set.iter_entries(records, allow_partial_tail=False))
        if entries and entries[0][1].magic < 2:
            records = record_set.upconvert(records, LEGACY_MAX_EXPANSION * max_message_bytes)
            entries = list(record_set.iter_entries(records, allow_partial_tail=False))
    except CorruptRecordError as exc:
        raise _Refused(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
    if len(entries) != 1:
        raise _Refused(
            ErrorCode.INVALID_RECORD,
            f"a produce request must carry exactly one batch per partition, got {len(entries)}",
        )
    header = entries[0][1]
    assert isinstance(header, BatchHeader)  # legacy batches were up-converted above
    if version < FIRST_ZSTD_VERSION and (header.attributes & 0x07) == Codec.ZSTD:
        raise _Refused(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"zstd needs produce v{FIRST_ZSTD_VERSION}+")
    return records


def _recompressed(records, codec: Codec):
    try:
        return recompress.with_codec(records, codec)
    except CorruptRecordError as exc:
        raise _Refused(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None


def _append(
    ctx, topic: str, partition: int, records, version: int, acks: int
) -> tuple[dict, tuple[Partition, int] | None, bool]:
    """The partition's response, the partition written with the offset its records end before (None
    when nothing was written) and whether records were appended (False for a retried batch already
    in the log) (on an I/O thread)."""
    response = {
        "index": partition,
        "error_code": ErrorCode.NONE,
        "base_offset": -1,
        "log_append_time_ms": -1,
        "log_start_offset": -1,
        "record_errors": [],
        "error_message": None,
    }
    if version < FIRST_SUPPORTED_VERSION:
        response.update(
            error_code=ErrorCode.UNSUPPORTED_VERSION,
            error_message=f"produce v{version} is not supported; use v3 or later",
        )
        return response, None, False
    try:
        leader = ctx.replicas.leader_partition(topic, partition)
    except PartitionError as exc:
        response.update(error_code=exc.code, error_message=error_text(exc))
        return response, None, False
    if topic == OFFSETS_TOPIC:  # the group coordinator's alone, as in Kafka
        response.update(
            error_code=ErrorCode.INVALID_TOPIC_EXCEPTION,
            error_message=f"cannot append to the internal topic {OFFSETS_TOPIC}",
        )
        return response, None, False
    log = leader.log
    if acks == -1 and len(leader.isr) < log.config.min_insync_replicas:
        response.update(
            error_code=ErrorCode.NOT_ENOUGH_REPLICAS,
            error_message=f"{topic}-{partition} has {len(leader.isr)} in-sync replica(s) {list(leader.isr)}, "
            f"min.insync.replicas is {log.config.min_insync_replicas}",
            log_start_offset=log.log_start_offset,
        )
        return response, None, False
    try:
        records = _checked_records(records, version, log.config.max_message_bytes)
        if log.config.broker_codec is not None and len(records) <= log.config.max_message_bytes:
            records = _recompressed(records, log.config.broker_codec)
        result = leader.append_records(records)
    except _Refused as exc:
        response.update(error_code=exc.code, error_message=error_text(exc), log_start_offset=log.log_start_offset)
        return response, None, False
    except log_errors.LogError as exc:
        response.update(
            error_code=_LOG_ERRORS.get(type(exc), ErrorCode.UNKNOWN_SERVER_ERROR),
            error_message=error_text(exc),
            log_start_offset=log.log_start_offset,
        )
        if isinstance(exc, log_errors.InvalidRecordError):  # Kafka names each bad record; the client fails those
            response["record_errors"] = [
                {"batch_index": index, "batch_index_error_message": exc.record_reason or error_text(exc)}
                for index in exc.record_indexes
            ]
        return response, None, False
    except OSError as exc:  # per partition: the other partitions' appends stand (a full disk, EMFILE)
        response.update(
            error_code=ErrorCode.KAFKA_STORAGE_ERROR,
            error_message=error_text(exc),
            log_start_offset=log.log_start_offset,
        )
        return response, None, False
    response.update(
        base_offset=result.first_offset,
        log_append_time_ms=result.log_append_time,
        log_start_offset=result.log_start_offset,
    )
    return response, (leader, result.last_offset + 1), not result.duplicate


async def _produce(ctx, topic: str, partition: dict, acks: int, version: int, timeout_ms: int) -> dict:
    if acks not in (-1, 0, 1):
        return {
            "index": partition["index"],
            "error_code": ErrorCode.INVALID_REQUIRED_ACKS,
            "base_offset": -1,
            "error_message": f"acks={acks} is not -1, 0 or 1",
        }
    if not ctx.allows(Operation.WRITE, ResourceType.TOPIC, topic):
        return {
            "index": partition["index"],
            "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            "base_offset": -1,
            "error_message": f"not authorized to write to topic {topic!r}",
        }
    key = (topic, partition["index"])
    response, written, appended = await ctx.io.write(
        [key], _append, ctx, topic, partition["index"], partition["records"], version, acks
    )
    if appended:
        ctx.waiters.notify(key)
    if acks == -1 and written is not None:
        partition_written, up_to = written
        code, message = await replicated(ctx, partition_written, up_to, timeout_ms)
        if code != ErrorCode.NONE:
            response.update(error_code=code, error_message=message)
    return response


async def handle(ctx, header, request) -> dict | None:
    acks = request["acks"]
    topics = distinct(request["topics"], "name", "index")
    results = await asyncio.gather(
        *(
            _produce(ctx, name, partition, acks, header.api_version, request["timeout_ms"])
            for name, partitions in topics
            for partition in partitions
        ),
        return_exceptions=True,
    )  # every append has ended before anything is raised
    produced: list[dict] = []
    for result in results:
        if isinstance(result, BaseException):
            raise result
        produced.append(result)
    in_order = iter(produced)
    responses = [{"name": name, "partitions": [next(in_order) for _ in partitions]} for name, partitions in topics]
    if acks == 0:
        failed = [p for p in produced if p["error_code"] != ErrorCode.NONE]
        if failed:
            raise CloseConnection(f"acks=0 produce failed: {failed[0].get('error_message')}")
        return None
    return {"responses": responses, "throttle_time_ms": 0}
