"""What request handlers share: the broker's configuration, logs, topics, coordination state and the pool
of threads that does their disk work."""

import dataclasses

from broker.log.manager import LogManager
from broker.security.credentials import ScramCredentials

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
    bound_ports: dict[str, int]  # listener name -> the port actually bound (the configured one may be 0)
    scram_credentials: ScramCredentials
    stopping: bool = False  # set at shutdown: long-polling fetches return at once

    @property
    def node_id(self) -> int:
        return self.config.broker_id

    def advertised_address(self, listener_name: str) -> tuple[str, int]:
        """The host and port of this broker for clients of the listener ``listener_name``."""
        listener = next(item for item in self.config.listeners if item.name == listener_name)
        return self.config.advertised_address(listener, self.bound_ports[listener_name])


MAX_ERROR_MESSAGE = 1000


def error_text(error) -> str:
    """An error message for a response, short enough to encode whatever names the client sent."""
    text = str(error)
    return text if len(text) <= MAX_ERROR_MESSAGE else text[:MAX_ERROR_MESSAGE - 3] + "..."


class CloseConnection(Exception):
    """Raised by a handler when Kafka would drop the connection instead of answering
    (an acks=0 produce that failed: the client has no other way to learn it)."""
