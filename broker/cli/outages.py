"""What ``consume --follow`` does while something it reads cannot be reached, as Kafka's consumer
does: it tries again every few seconds, for ever or for ``--retry-for`` seconds, saying once on
stderr when a thing stops being readable and once when it is read again. Shared by the plain
consume (per partition) and the group member (its group coordinator)."""

import sys
import time
from collections.abc import Callable
from typing import TypeVar

from broker.client import BrokerUnavailableError, KafkaError
from broker.protocol.errors import ErrorCode

from .common import CommandError

RETRY_SECONDS = 2.0  # the wait before what could not be read is tried again
# errors of a broker that is down, not leading any more or not coordinating any more: waited out
_OUTAGE_CODES = {
    ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
}


def is_outage(error: KafkaError) -> bool:
    """Whether ``error`` says a broker is down or moving (worth waiting for), not that a request is wrong."""
    return isinstance(error, BrokerUnavailableError) or error.code in _OUTAGE_CODES


class Outages:
    """What cannot be read now (a partition ``topic-N``, a topic while the reading starts, a group):
    each is tried again after RETRY_SECONDS, until it can be, or until it has failed for longer than
    ``retry_for`` seconds (None: for ever), which ends the command."""

    def __init__(self, prog: str, retry_for: float | None) -> None:
        self.prog, self.retry_for = prog, retry_for
        self.since: dict[str, float] = {}  # what -> when it first failed
        self.next_try: dict[str, float] = {}

    def ready(self, what: str) -> bool:
        return time.monotonic() >= self.next_try.get(what, 0.0)

    def failed(self, what: str, error: KafkaError) -> None:
        now = time.monotonic()
        if what not in self.since:
            self.since[what] = now
            until = "until it can be read" if self.retry_for is None else f"for up to {self.retry_for:g} s"
            print(f"{self.prog}: {what} cannot be read now ({error}); retrying {until}", file=sys.stderr)
        elif self.retry_for is not None and now - self.since[what] > self.retry_for:
            raise CommandError(f"{what} could not be read for {self.retry_for:g} s (--retry-for): {error}")
        self.next_try[what] = now + RETRY_SECONDS

    def read(self, what: str) -> None:
        if self.since.pop(what, None) is not None:
            self.next_try.pop(what, None)
            print(f"{self.prog}: {what} is read again", file=sys.stderr)


Result = TypeVar("Result")


def wait_out(outages: Outages | None, what: str, call: Callable[[], Result]) -> Result:
    """``call()``; with ``outages`` (--follow), an outage of the broker it needs is waited out."""
    while True:
        try:
            result = call()
        except KafkaError as exc:
            if outages is None or not is_outage(exc):
                raise
            outages.failed(what, exc)
            time.sleep(RETRY_SECONDS)
            continue
        if outages is not None:
            outages.read(what)
        return result
