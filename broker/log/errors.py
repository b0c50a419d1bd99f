"""Errors raised by the log layer. Each maps to one Kafka error code at the protocol layer."""

from broker.records.errors import CorruptRecordError


class LogError(Exception):
    """Base class of log-layer errors."""


class OffsetOutOfRangeError(LogError):
    """A read asked for an offset below the log start offset or above the log end offset."""

    def __init__(self, topic_partition: str, offset: int, log_start_offset: int, log_end_offset: int):
        super().__init__(
            f"offset {offset} is out of range for {topic_partition}: "
            f"the log holds [{log_start_offset}, {log_end_offset})"
        )
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class RecordTooLargeError(LogError):
    """A batch is larger than the topic's ``max.message.bytes`` (MESSAGE_TOO_LARGE)."""


class InvalidRecordError(LogError):
    """A batch with a valid CRC that the log refuses: empty, a control batch from a client, bad
    offsets, malformed records (INVALID_RECORD). ``record_indexes`` are the bad records (every one
    where Kafka names every one: keys of a compacted topic, timestamps), ``record_reason`` a short
    reason to give each of them (None: the message)."""

    def __init__(self, message: str, record_indexes: tuple[int, ...] = (), record_reason: str | None = None):
        super().__init__(message)
        self.record_indexes = record_indexes
        self.record_reason = record_reason


class InvalidTimestampError(InvalidRecordError):
    """A CreateTime record whose timestamp lies further from the broker's clock than the topic's
    ``message.timestamp.before.max.ms`` / ``after.max.ms`` allow (INVALID_TIMESTAMP)."""


class InvalidBatchError(LogError, CorruptRecordError):
    """A batch whose bytes do not parse or whose CRC is wrong (CORRUPT_MESSAGE)."""


class InvalidEntryError(CorruptRecordError):
    """Invalid bytes found while scanning a ``.log`` file, at ``position``."""

    def __init__(self, position: int, reason: str):
        super().__init__(f"invalid entry at position {position}: {reason}")
        self.position = position
        self.reason = reason


class OutOfOrderSequenceError(LogError):
    """An idempotent producer's batch does not follow its last sequence (OUT_OF_ORDER_SEQUENCE_NUMBER)."""


class InvalidProducerEpochError(LogError):
    """An idempotent producer's epoch is older than the one the partition knows (INVALID_PRODUCER_EPOCH)."""


class InvalidTxnStateError(LogError):
    """A producer's batch does not fit its transaction's state: a non-transactional batch while
    its transaction is open (INVALID_TXN_STATE)."""


class TransactionCoordinatorFencedError(LogError):
    """A transaction marker from a coordinator epoch older than one already seen
    (TRANSACTION_COORDINATOR_FENCED)."""


class CorruptIndexError(LogError):
    """An index file failed its sanity check; the segment rebuilds it from the log."""


class LogStorageError(LogError):
    """Writing to or syncing a log file failed (disk full, I/O error); nothing partial was kept."""


class LogDeletedError(LogError):
    """The partition's log was deleted while a request was using it (UNKNOWN_TOPIC_OR_PARTITION)."""


class LogDirInUseError(LogError):
    """Another process (or another LogManager) holds the log directory's lock."""


class LogDirConfigError(LogError):
    """The log directory belongs to another broker or holds files this broker cannot interpret."""
