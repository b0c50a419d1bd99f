"""The client's errors, and the one place that turns an error code a broker answered into one.

A code is either retriable (``retry.RETRIABLE``: the request is sent again after the metadata is
refreshed) or final: a ``KafkaError`` naming what it concerned, an ``AuthorizationError`` naming
the principal denied and the operation it needs, an ``UnknownTopicOrPartitionError``.
"""

from broker.protocol.errors import ErrorCode, error_name

DENIED = frozenset(
    {
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    }
)


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
        super().__init__(
            f"offset {offset} of {topic}-{partition} is out of range "
            f"(the broker holds [{log_start_offset}, {high_watermark}))",
            ErrorCode.OFFSET_OUT_OF_RANGE,
        )
        self.topic, self.partition, self.offset = topic, partition, offset
        self.log_start_offset, self.high_watermark = log_start_offset, high_watermark


def error_for(
    code: int, subject: str, message: str | None = None, *, principal: str | None = None, needs: str | None = None
) -> KafkaError | None:
    """The KafkaError for an error code the broker answered about ``subject``, None for no error;
    an authorization failure names the ``principal`` denied and the operation it ``needs``."""
    if code == ErrorCode.NONE:
        return None
    if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        return UnknownTopicOrPartitionError(f"{subject} does not exist", code)
    name = error_name(code)
    if code in DENIED:
        return _denied(code, subject, principal, needs)
    if not message:
        return KafkaError(f"{subject}: broker error {name}", code)
    return KafkaError(f"{message} ({name})" if subject in message else f"{subject}: {message} ({name})", code)


def _denied(code: int, subject: str, principal: str | None, needs: str | None) -> AuthorizationError:
    resource = "the cluster" if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED else subject
    return AuthorizationError(
        f"access to {resource} denied for {principal or 'this client'} "
        f"({f'needs {needs}; ' if needs else ''}{error_name(code)})",
        code,
    )


def raise_for(
    code: int, subject: str, message: str | None = None, *, principal: str | None = None, needs: str | None = None
) -> None:
    """Raise ``error_for``'s error, if any."""
    error = error_for(code, subject, message, principal=principal, needs=needs)
    if error is not None:
        raise error


def topic_error(topic: str, code: int, principal: str | None) -> KafkaError:
    """The error for a topic Metadata answered ``code`` for: Kafka answers TOPIC_AUTHORIZATION_FAILED
    for a topic the principal may not describe (whether it exists or not), else it does not exist."""
    if code == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
        return _denied(code, f"topic {topic!r}", principal, "DESCRIBE")
    return UnknownTopicOrPartitionError(f"topic {topic!r} does not exist (error {code})", code)


def internal_refusal(code: int, refused: str) -> str | None:
    """The message of a refusal that DeleteTopics and DeleteRecords answer without one: Kafka's brokers
    answer INVALID_TOPIC_EXCEPTION for a topic that is internal (``refused`` says what cannot be done)."""
    return f"it is an internal topic and {refused}" if code == ErrorCode.INVALID_TOPIC_EXCEPTION else None
