"""What request handlers share: the broker's configuration, logs, topics, coordination state, the group
coordinator and the pool of threads that does their disk work; and the address of the client asking."""

import contextvars
import dataclasses

from broker.log.manager import LogManager

from .config import BrokerConfig
from .io_pool import IoPool
from .producer_ids import ProducerIdAllocator
from .request_memory import RequestMemory
from .topics import TopicRegistry
from .waiters import DataWaiters

LEADER_EPOCH = 0  # a single, never re-elected leader: the epoch stays 0 (clients then skip KIP-320 checks)


@dataclasses.dataclass
class BrokerContext:
    config: BrokerConfig
    log_manager: LogManager
    topics: TopicRegistry
    producer_ids: ProducerIdAllocator
    waiters: DataWaiters
    io: IoPool  # every handler's log and file work runs here, off the event loop
    request_memory: RequestMemory
    port: int  # the port actually bound (the configured one may be 0)
    stopping: bool = False  # set at shutdown: long-polling fetches return at once
    groups: object = None  # the group coordinator's GroupRuntime, set once the context exists

    @property
    def node_id(self) -> int:
        return self.config.broker_id

    @property
    def advertised_host(self) -> str:
        return self.config.advertised_host

    @property
    def advertised_port(self) -> int:
        return self.config.advertised_port(self.port)


client_host = contextvars.ContextVar("client_host", default="")
"""The address of the client whose request is being handled, as Kafka shows it (``/127.0.0.1``):
set by each connection's task for the handlers it runs."""

MAX_ERROR_MESSAGE = 1000


def error_text(error) -> str:
    """An error message for a response, short enough to encode whatever names the client sent."""
    text = str(error)
    return text if len(text) <= MAX_ERROR_MESSAGE else text[:MAX_ERROR_MESSAGE - 3] + "..."


class CloseConnection(Exception):
    """Raised by a handler when Kafka would drop the connection instead of answering
    (an acks=0 produce that failed: the client has no other way to learn it)."""
