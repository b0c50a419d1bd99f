"""The client's one retry policy: which failures are transient, how long to wait before trying
again, and how often.

A transient failure is a broken or refused connection (``BrokerConnectionError``) or an error code
in ``RETRIABLE`` (a leader that moved or is not yet elected, a request that timed out, too few
in-sync replicas for acks=all, as Kafka's clients retry them); it raises
``RetriableError`` naming the partitions it concerns, so that only what it made stale is fetched
again (the caller's ``on_retry``). Waits grow exponentially from ``retry_backoff_ms``, with
jitter, as Kafka's clients back off; after ``retries`` the failure is final: a
``BrokerUnavailableError`` for a connection, a ``KafkaError`` with the last code otherwise.
"""

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from broker.protocol.errors import ErrorCode

from .connection import BrokerConnectionError
from .errors import BrokerUnavailableError, KafkaError, raise_for

log = logging.getLogger(__name__)

T = TypeVar("T")
TopicPartition = tuple[str, int]

RETRIABLE = frozenset(
    {
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.OFFSET_NOT_AVAILABLE,
        ErrorCode.NOT_ENOUGH_REPLICAS,  # acks=all while the ISR is below min.insync.replicas: it may grow back
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    }
)


class RetriableError(Exception):
    """A transient error code; ``partitions`` are those whose leaders it makes stale (none: it
    concerns no partition's leader, e.g. a group coordinator that moved)."""

    def __init__(self, message: str, code: int, partitions: tuple[TopicPartition, ...] = ()):
        super().__init__(message)
        self.code = code
        self.partitions = partitions


def raise_for_partition(
    code: int,
    topic: str,
    partition: int,
    message: str | None = None,
    *,
    principal: str | None = None,
    needs: str | None = None,
) -> None:
    """Raise for an error code answered about one partition: RetriableError if transient, else the
    KafkaError that names it (nothing for no error)."""
    if code in RETRIABLE:
        raise RetriableError(f"{topic}-{partition}: error {code}", code, ((topic, partition),))
    subject = f"topic {topic!r}" if code == ErrorCode.TOPIC_AUTHORIZATION_FAILED else f"{topic}-{partition}"
    raise_for(code, subject, message, principal=principal, needs=needs)


class RetryPolicy:
    def __init__(self, retries: int, retry_backoff_ms: int):
        self.retries, self.retry_backoff_ms = retries, retry_backoff_ms

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after failed attempt ``attempt`` (0 for the first): exponential, with 20% jitter."""
        return self.retry_backoff_ms * 2.0**attempt * (0.8 + 0.4 * random.random()) / 1000

    def run(
        self, action: Callable[[], T], what: str, on_retry: Callable[[BrokerConnectionError | RetriableError], None]
    ) -> T:
        """``action()``; after a transient failure, wait, let ``on_retry`` forget what the failure made
        stale, and try again, ``retries`` times at most."""
        attempt = 0
        while True:
            try:
                return action()
            except (BrokerConnectionError, RetriableError) as exc:
                if attempt == self.retries:
                    if isinstance(exc, BrokerConnectionError):
                        raise BrokerUnavailableError(
                            f"{what} failed after {self.retries + 1} attempts: {exc}", ErrorCode.UNKNOWN_SERVER_ERROR
                        ) from None
                    raise KafkaError(f"{what} failed after {self.retries + 1} attempts: {exc}", exc.code) from None
                log.info("%s: %s; retrying", what, exc)
                time.sleep(self.backoff(attempt))
                on_retry(exc)
                attempt += 1
