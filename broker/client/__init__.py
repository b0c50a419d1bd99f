"""A synchronous Kafka-protocol client: metadata, list offsets, fetch by offset (the stateless
offset API), produce (idempotent or not), topic admin, consumer groups and ACLs; reusing
``broker.protocol`` and ``broker.records``. Used by the Spark data source, the jobs, the demo and
the CLI, which import from here only.

Modules, as aiokafka divides its client: ``connection`` (one broker: versions, SASL, TLS),
``metadata`` (the cluster's brokers and leaders), ``retry`` (the one retry policy), ``fetcher``
(ListOffsets, Fetch), ``producer`` and ``idempotence`` (Produce), ``batches`` and ``partitioner``
(a producer's batching), ``admin`` (topic and config requests), ``groups`` and ``membership``
(consumer groups), ``acls``, ``transactions`` (a transactional producer, the transaction tools'
views); ``client`` is the ``KafkaClient`` that does their I/O.
"""

from broker.common.offsets import EARLIEST, LATEST
from broker.protocol.apis import READ_COMMITTED, READ_UNCOMMITTED

from .acls import AclClient, describe_text
from .admin import BROKER_RESOURCE, DEFAULT_CONFIG, TOPIC_RESOURCE, ConfigEntry, NewTopic
from .batches import BATCH_BYTES, Batcher
from .client import KafkaClient
from .connection import AuthenticationError, BrokerConnection, BrokerConnectionError, UnsupportedVersionError
from .errors import (
    AuthorizationError,
    BrokerUnavailableError,
    KafkaError,
    OffsetOutOfRangeError,
    RecordsRefusedError,
    UnknownTopicOrPartitionError,
)
from .fetcher import ISOLATION_LEVELS, FetchResult, ListedOffset
from .groups import CommittedOffset, GroupClient, GroupsUnsupportedError
from .idempotence import ProducerSequences
from .membership import GroupMember
from .metadata import Broker, Metadata, parse_bootstrap
from .partitioner import partition_for_key
from .producer import ACKS_ALL
from .security import KEYS as SECURITY_KEYS
from .security import PLAINTEXT, ClientSecurity, SecuritySettingError, from_settings, hidden_secrets
from .transactions import (
    ProducerFencedError,
    TransactionalProducer,
    TransactionListing,
    TransactionStateError,
    describe_transaction,
    list_transactions,
)

__all__ = [
    "ACKS_ALL",
    "BATCH_BYTES",
    "BROKER_RESOURCE",
    "DEFAULT_CONFIG",
    "EARLIEST",
    "LATEST",
    "PLAINTEXT",
    "ISOLATION_LEVELS",
    "READ_COMMITTED",
    "READ_UNCOMMITTED",
    "SECURITY_KEYS",
    "TOPIC_RESOURCE",
    "AclClient",
    "AuthenticationError",
    "AuthorizationError",
    "Batcher",
    "Broker",
    "BrokerConnection",
    "BrokerConnectionError",
    "BrokerUnavailableError",
    "ClientSecurity",
    "CommittedOffset",
    "ConfigEntry",
    "FetchResult",
    "GroupClient",
    "GroupMember",
    "GroupsUnsupportedError",
    "KafkaClient",
    "KafkaError",
    "ListedOffset",
    "Metadata",
    "NewTopic",
    "OffsetOutOfRangeError",
    "ProducerSequences",
    "RecordsRefusedError",
    "SecuritySettingError",
    "UnknownTopicOrPartitionError",
    "UnsupportedVersionError",
    "describe_text",
    "from_settings",
    "hidden_secrets",
    "parse_bootstrap",
    "partition_for_key",
    "ProducerFencedError",
    "TransactionalProducer",
    "TransactionListing",
    "TransactionStateError",
    "describe_transaction",
    "list_transactions",
]
