"""What request handlers share: the broker's configuration, the metadata cache (the cluster as this
broker knows it), the replica manager (the partitions it leads, with their logs), the topic store
(topic changes and settings), coordination state, the group and transaction coordinators
(``groups``, ``transactions``), the SCRAM credentials, the ACLs and the authorizer that reads them,
and the pool of threads that does their disk work.
Which listener a request came in on is the connection's ``session``."""

import contextvars
import dataclasses
from typing import TYPE_CHECKING

from broker.cluster.metadata_cache import MetadataCache
from broker.cluster.topic_store import TopicStore
from broker.replica.replica_manager import ReplicaManager
from broker.security.acl_store import AclStore
from broker.security.acls import Authorizer
from broker.security.credentials import ScramCredentials

from .config import BrokerConfig
from .io_pool import IoPool
from .producer_ids import ProducerIdAllocator
from .request_memory import RequestMemory
from .waiters import DataWaiters

if TYPE_CHECKING:  # the runtime is made from a context: imported for the annotation only
    from .group_runtime import GroupRuntime
    from .transaction_runtime import TransactionRuntime


@dataclasses.dataclass
class BrokerContext:
    config: BrokerConfig
    metadata: MetadataCache
    replicas: ReplicaManager
    topics: TopicStore  # topics.json on a single broker, ZooKeeper in a cluster
    producer_ids: ProducerIdAllocator
    waiters: DataWaiters
    io: IoPool  # every handler's log and file work runs here, off the event loop
    request_memory: RequestMemory
    bound_ports: dict[str, int]  # listener name -> the port actually bound (the configured one may be 0)
    scram_credentials: ScramCredentials
    acls: AclStore
    authorizer: Authorizer
    stopping: bool = False  # set at shutdown: long-polling fetches return at once
    groups: "GroupRuntime" = dataclasses.field(init=False)  # the group coordinator's, set once the context exists
    transactions: "TransactionRuntime" = dataclasses.field(init=False)  # the transaction coordinator's, likewise

    @property
    def node_id(self) -> int:
        return self.config.broker_id


client_host = contextvars.ContextVar("client_host", default="")
"""The address of the client whose request is being handled, as Kafka shows it (``/127.0.0.1``):
set by each connection's task for the handlers it runs."""

MAX_ERROR_MESSAGE = 1000


def error_text(error) -> str:
    """An error message for a response, short enough to encode whatever names the client sent."""
    text = str(error)
    return text if len(text) <= MAX_ERROR_MESSAGE else text[: MAX_ERROR_MESSAGE - 3] + "..."


class CloseConnection(Exception):
    """Raised by a handler when Kafka would drop the connection instead of answering
    (an acks=0 produce that failed: the client has no other way to learn it)."""
