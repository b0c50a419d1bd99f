"""The Kafka APIs this project speaks: their keys, the non-flexible version ranges, and
request/response schemas.

Only non-flexible versions are listed (every supported client can use them), except for the
transaction tools' APIs that exist only in flexible versions (DescribeTransactions,
ListTransactions: ``first_flexible`` 0; compact encodings, tagged fields, request header v2 and
response header v1, ``broker.protocol.flexible``); each schema below
covers all of its API's listed versions, with per-field version ranges taken from Kafka's message
JSON. The broker advertises and serves those it has a handler for (``broker.server.handlers.HANDLERS``);
the project's client uses them too, the consumer-group admin calls against any Kafka cluster's
group coordinator. Produce v0-2 are advertised (old librdkafka needs min 0 to enable
compression) but answered UNSUPPORTED_VERSION, as Kafka 4 does.
"""

import enum
from typing import NamedTuple

from .flexible import COMPACT_STRING, CompactArray, FlexibleStruct
from .types import BOOLEAN, BYTES, INT8, INT16, INT32, INT64, NULLABLE_STRING, RECORDS, STRING, Array, Field, Struct


class ApiKey(enum.IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    INCREMENTAL_ALTER_CONFIGS = 44
    OFFSET_DELETE = 47
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66


class Api(NamedTuple):
    key: ApiKey
    min_version: int
    max_version: int
    request: Struct
    response: Struct
    first_flexible: int | None = None  # the first version using the flexible encodings and headers

    def is_flexible(self, version: int) -> bool:
        return self.first_flexible is not None and version >= self.first_flexible


PRODUCE_REQUEST = Struct(
    Field("transactional_id", NULLABLE_STRING, since=3),
    ("acks", INT16),
    ("timeout_ms", INT32),
    (
        "topics",
        Array(
            Struct(
                ("name", STRING),
                (
                    "partitions",
                    Array(
                        Struct(
                            ("index", INT32),
                            ("records", RECORDS),
                        )
                    ),
                ),
            )
        ),
    ),
)
PRODUCE_RESPONSE = Struct(
    (
        "responses",
        Array(
            Struct(
                ("name", STRING),
                (
                    "partitions",
                    Array(
                        Struct(
                            ("index", INT32),
                            ("error_code", INT16),
                            ("base_offset", INT64),
                            Field("log_append_time_ms", INT64, since=2, default=-1),
                            Field("log_start_offset", INT64, since=5, default=-1),
                            Field(
                                "record_errors",
                                Array(
                                    Struct(
                                        ("batch_index", INT32),
                                        ("batch_index_error_message", NULLABLE_STRING),
                                    )
                                ),
                                since=8,
                            ),
                            Field("error_message", NULLABLE_STRING, since=8),
                        )
                    ),
                ),
            )
        ),
    ),
    Field("throttle_time_ms", INT32, since=1),
)

# the isolation_level of Fetch (v4+) and ListOffsets (v2+)
READ_UNCOMMITTED = 0
READ_COMMITTED = 1

FETCH_REQUEST = Struct(
    ("replica_id", INT32),
    ("max_wait_ms", INT32),
    ("min_bytes", INT32),
    Field("max_bytes", INT32, since=3, default=0x7FFFFFFF),
    Field("isolation_level", INT8, since=4),
    Field("session_id", INT32, since=7),
    Field("session_epoch", INT32, since=7, default=-1),
    (
        "topics",
        Array(
            Struct(
                ("topic", STRING),
                (
                    "partitions",
                    Array(
                        Struct(
                            ("partition", INT32),
                            Field("current_leader_epoch", INT32, since=9, default=-1),
                            ("fetch_offset", INT64),
                            Field("log_start_offset", INT64, since=5, default=-1),
                            ("partition_max_bytes", INT32),
                        )
                    ),
                ),
            )
        ),
    ),
    Field(
        "forgotten_topics_data",
        Array(
            Struct(
                ("topic", STRING),
                ("partitions", Array(INT32)),
            )
        ),
        since=7,
    ),
    Field("rack_id", STRING, since=11),
)
FETCH_RESPONSE = Struct(
    Field("throttle_time_ms", INT32, since=1),
    Field("error_code", INT16, since=7),
    Field("session_id", INT32, since=7),
    (
        "responses",
        Array(
            Struct(
                ("topic", STRING),
                (
                    "partitions",
                    Array(
                        Struct(
                            ("partition_index", INT32),
                            ("error_code", INT16),
                            ("high_watermark", INT64),
                            Field("last_stable_offset", INT64, since=4, default=-1),
                            Field("log_start_offset", INT64, since=5, default=-1),
                            Field(
                                "aborted_transactions",
                                Array(
                                    Struct(
                                        ("producer_id", INT64),
                                        ("first_offset", INT64),
                                    ),
                                    nullable_since=4,
                                ),
                                since=4,
                            ),
                            Field("preferred_read_replica", INT32, since=11, default=-1),
                            ("records", RECORDS),
                        )
                    ),
                ),
            )
        ),
    ),
)

LIST_OFFSETS_REQUEST = Struct(
    ("replica_id", INT32),
    Field("isolation_level", INT8, since=2),
    (
        "topics",
        Array(
            Struct(
                ("name", STRING),
                (
                    "partitions",
                    Array(
                        Struct(
                            ("partition_index", INT32),
                            Field("current_leader_epoch", INT32, since=4, default=-1),
                            ("timestamp", INT64),
                        )
                    ),
                ),
            )
        ),
    ),
)
LIST_OFFSETS_RESPONSE = Struct(
    Field("throttle_time_ms", INT32, since=2),
    (
        "topics",
        Array(
            Struct(
                ("name", STRING),
                (
                    "partitions",
                    Array(
                        Struct(
                            ("partition_index", INT32),
                            ("error_code", INT16),
                            Field("timestamp", INT64, default=-1),
                            Field("offset", INT64, default=-1),
                            Field("leader_epoch", INT32, since=4, default=-1),
                        )
                    ),
                ),
            )
        ),
    ),
)

OFFSET_FOR_LEADER_EPOCH_REQUEST = Struct(
    Field("replica_id", INT32, since=3, default=-2),
    (
        "topics",
        Array(
            Struct(
                ("topic", STRING),
                (
                    "partitions",
                    Array(
                        Struct(
                            ("partition", INT32),
                            Field("current_leader_epoch", INT32, since=2, default=-1),
                            ("leader_epoch", INT32),
                        )
                    ),
                ),
            )
        ),
    ),
)
OFFSET_FOR_LEADER_EPOCH_RESPONSE = Struct(
    Field("throttle_time_ms", INT32, since=2),
    (
        "topics",
        Array(
            Struct(
                ("topic", STRING),
                (
                    "partitions",
                    Array(
                        Struct(
                            ("error_code", INT16),
                            ("partition", INT32),
                            Field("leader_epoch", INT32, since=1, default=-1),
                            Field("end_offset", INT64, default=-1),
                        )
                    ),
                ),
            )
        ),
    ),
)

METADATA_REQUEST = Struct(
    ("topics", Array(Struct(("name", STRING)), nullable_since=1)),
    Field("allow_auto_topic_creation", BOOLEAN, since=4, default=True),
    Field("include_cluster_authorized_operations", BOOLEAN, since=8),
    Field("include_topic_authorized_operations", BOOLEAN, since=8),
)
UNREQUESTED_AUTHORIZED_OPERATIONS = -(2**31)
METADATA_RESPONSE = Struct(
    Field("throttle_time_ms", INT32, since=3),
    (
        "brokers",
        Array(
            Struct(
                ("node_id", INT32),
                ("host", STRING),
                ("port", INT32),
                Field("rack", NULLABLE_STRING, since=1),
            )
        ),
    ),
    Field("cluster_id", NULLABLE_STRING, since=2),
    Field("controller_id", INT32, since=1, default=-1),
    (
        "topics",
        Array(
            Struct(
                ("error_code", INT16),
                ("name", STRING),
                Field("is_internal", BOOLEAN, since=1),
                (
                    "partitions",
                    Array(
                        Struct(
                            ("error_code", INT16),
                            ("partition_index", INT32),
                            ("leader_id", INT32),
                            Field("leader_epoch", INT32, since=7, default=-1),
                            ("replica_nodes", Array(INT32)),
                            ("isr_nodes", Array(INT32)),
                            Field("offline_replicas", Array(INT32), since=5),
                        )
                    ),
                ),
                Field("topic_authorized_operations", INT32, since=8, default=UNREQUESTED_AUTHORIZED_OPERATIONS),
            )
        ),
    ),
    Field("cluster_authorized_operations", INT32, since=8, default=UNREQUESTED_AUTHORIZED_OPERATIONS),
)

API_VERSIONS_REQUEST = Struct()
API_VERSIONS_RESPONSE = Struct(
    ("error_code", INT16),
    (
        "api_keys",
        Array(
            Struct(
                ("api_key", INT16),
                ("min_version", INT16),
                ("max_version", INT16),
            )
        ),
    ),
    Field("throttle_time_ms", INT32, since=1),
)

CREATE_TOPICS_REQUEST = Struct(
    (
        "topics",
        Array(
            Struct(
                ("name", STRING),
                ("num_partitions", INT32),
                ("replication_factor", INT16),
                (
                    "assignments",
                    Array(
                        Struct(
                            ("partition_index", INT32),
                            ("broker_ids", Array(INT32)),
                        )
                    ),
                ),
                (
                    "configs",
                    Array(
                        Struct(
                            ("name", STRING),
                            ("value", NULLABLE_STRING),
                        )
                    ),
                ),
            )
        ),
    ),
    ("timeout_ms", INT32),
    Field("validate_only", BOOLEAN, since=1),
)
CREATE_TOPICS_RESPONSE = Struct(
    Field("throttle_time_ms", INT32, since=2),
    (
        "topics",
        Array(
            Struct(
                ("name", STRING),
                ("error_code", INT16),
                Field("error_message", NULLABLE_STRING, since=1),
            )
        ),
    ),
)

DELETE_TOPICS_REQUEST = Struct(
    ("topic_names", Array(STRING)),
    ("timeout_ms", INT32),
)
DELETE_TOPICS_RESPONSE = Struct(
    Field("throttle_time_ms", INT32, since=1),
    (
        "responses",
        Array(
            Struct(
                ("name", STRING),
                ("error_code", INT16),
            )
        ),
    ),
)

DELETE_RECORDS_REQUEST = Struct(
    (
        "topics",
        Array(
            Struct(
                ("name", STRING),
                (
                    "partitions",
                    Array(
                        Struct(
                            ("partition_index", INT32),
                            ("offset", INT64),
                        )
                    ),
                ),
            )
        ),
    ),
    ("timeout_ms", INT32),
)
DELETE_RECORDS_RESPONSE = Struct(
    ("throttle_time_ms", INT32),
    (
        "topics",
        Array(
            Struct(
                ("name", STRING),
                (
                    "partitions",
                    Array(
                        Struct(
                            ("partition_index", INT32),
                            ("low_watermark", INT64),
                            ("error_code", INT16),
                        )
                    ),
                ),
            )
        ),
    ),
)

INIT_PRODUCER_ID_REQUEST = Struct(
    ("transactional_id", NULLABLE_STRING),
    ("transaction_timeout_ms", INT32),
)
INIT_PRODUCER_ID_RESPONSE = Struct(
    ("throttle_time_ms", INT32),
    ("error_code", INT16),
    Field("producer_id", INT64, default=-1),
    ("producer_epoch", INT16),
)

WRITE_TXN_MARKERS_REQUEST = Struct(
    (
        "markers",
        Array(
            Struct(
                ("producer_id", INT64),
                ("producer_epoch", INT16),
                ("transaction_result", BOOLEAN),
                ("topics", Array(Struct(("name", STRING), ("partition_indexes", Array(INT32))))),
                ("coordinator_epoch", INT32),
            )
        ),
    ),
)
WRITE_TXN_MARKERS_RESPONSE = Struct(
    (
        "markers",
        Array(
            Struct(
                ("producer_id", INT64),
                (
                    "topics",
                    Array(
                        Struct(
                            ("name", STRING),
                            ("partitions", Array(Struct(("partition_index", INT32), ("error_code", INT16)))),
                        )
                    ),
                ),
            )
        ),
    ),
)

ADD_PARTITIONS_TO_TXN_REQUEST = Struct(
    ("transactional_id", STRING),
    ("producer_id", INT64),
    ("producer_epoch", INT16),
    ("topics", Array(Struct(("name", STRING), ("partitions", Array(INT32))))),
)
ADD_PARTITIONS_TO_TXN_RESPONSE = Struct(
    ("throttle_time_ms", INT32),
    (
        "results_by_topic",
        Array(
            Struct(
                ("name", STRING),
                ("results_by_partition", Array(Struct(("partition_index", INT32), ("partition_error_code", INT16)))),
            )
        ),
    ),
)

ADD_OFFSETS_TO_TXN_REQUEST = Struct(
    ("transactional_id", STRING),
    ("producer_id", INT64),
    ("producer_epoch", INT16),
    ("group_id", STRING),
)
ADD_OFFSETS_TO_TXN_RESPONSE = Struct(("throttle_time_ms", INT32), ("error_code", INT16))

END_TXN_REQUEST = Struct(
    ("transactional_id", STRING),
    ("producer_id", INT64),
    ("producer_epoch", INT16),
    ("committed", BOOLEAN),
)
END_TXN_RESPONSE = Struct(("throttle_time_ms", INT32), ("error_code", INT16))

TXN_OFFSET_COMMIT_REQUEST = Struct(
    ("transactional_id", STRING),
    ("group_id", STRING),
    ("producer_id", INT64),
    ("producer_epoch", INT16),
    (
        "topics",
        Array(
            Struct(
                ("name", STRING),
                (
                    "partitions",
                    Array(
                        Struct(
                            ("partition_index", INT32),
                            ("committed_offset", INT64),
                            Field("committed_leader_epoch", INT32, since=2, default=-1),
                            ("committed_metadata", NULLABLE_STRING),
                        )
                    ),
                ),
            )
        ),
    ),
)
TXN_OFFSET_COMMIT_RESPONSE = Struct(
    ("throttle_time_ms", INT32),
    (
        "topics",
        Array(
            Struct(
                ("name", STRING),
                ("partitions", Array(Struct(("partition_index", INT32), ("error_code", INT16)))),
            )
        ),
    ),
)

DESCRIBE_TRANSACTIONS_REQUEST = FlexibleStruct(("transactional_ids", CompactArray(COMPACT_STRING)))
DESCRIBE_TRANSACTIONS_RESPONSE = FlexibleStruct(
    ("throttle_time_ms", INT32),
    (
        "transaction_states",
        CompactArray(
            FlexibleStruct(
                ("error_code", INT16),
                ("transactional_id", COMPACT_STRING),
                ("transaction_state", COMPACT_STRING),
                ("transaction_timeout_ms", INT32),
                ("transaction_start_time_ms", INT64),
                ("producer_id", INT64),
                ("producer_epoch", INT16),
                (
                    "topics",
                    CompactArray(FlexibleStruct(("topic", COMPACT_STRING), ("partitions", CompactArray(INT32)))),
                ),
            )
        ),
    ),
)

LIST_TRANSACTIONS_REQUEST = FlexibleStruct(
    ("state_filters", CompactArray(COMPACT_STRING)),
    ("producer_id_filters", CompactArray(INT64)),
    Field("duration_filter", INT64, since=1, default=-1),
)
LIST_TRANSACTIONS_RESPONSE = FlexibleStruct(
    ("throttle_time_ms", INT32),
    ("error_code", INT16),
    ("unknown_state_filters", CompactArray(COMPACT_STRING)),
    (
        "transaction_states",
        CompactArray(
            FlexibleStruct(
                ("transactional_id", COMPACT_STRING),
                ("producer_id", INT64),
                ("transaction_state", COMPACT_STRING),
            )
        ),
    ),
)

DESCRIBE_CONFIGS_REQUEST = Struct(
    (
        "resources",
        Array(
            Struct(
                ("resource_type", INT8),
                ("resource_name", STRING),
                ("configuration_keys", Array(STRING, nullable_since=0)),
            )
        ),
    ),
    Field("include_synonyms", BOOLEAN, since=1),
    Field("include_documentation", BOOLEAN, since=3),
)
DESCRIBE_CONFIGS_RESPONSE = Struct(
    ("throttle_time_ms", INT32),
    (
        "results",
        Array(
            Struct(
                ("error_code", INT16),
                ("error_message", NULLABLE_STRING),
                ("resource_type", INT8),
                ("resource_name", STRING),
                (
                    "configs",
                    Array(
                        Struct(
                            ("name", STRING),
                            ("value", NULLABLE_STRING),
                            ("read_only", BOOLEAN),
                            Field("config_source", INT8, since=1, default=-1),
                            Field("is_default", BOOLEAN, until=0),
                            ("is_sensitive", BOOLEAN),
                            Field(
                                "synonyms",
                                Array(
                                    Struct(
                                        ("name", STRING),
                                        ("value", NULLABLE_STRING),
                                        ("source", INT8),
                                    )
                                ),
                                since=1,
                            ),
                            Field("config_type", INT8, since=3),
                            Field("documentation", NULLABLE_STRING, since=3),
                        )
                    ),
                ),
            )
        ),
    ),
)

ALTER_CONFIGS_REQUEST = Struct(
    (
        "resources",
        Array(
            Struct(
                ("resource_type", INT8),
                ("resource_name", STRING),
                (
                    "configs",
                    Array(
                        Struct(
                            ("name", STRING),
                            ("value", NULLABLE_STRING),
                        )
                    ),
                ),
            )
        ),
    ),
    ("validate_only", BOOLEAN),
)
ALTER_CONFIGS_RESPONSE = Struct(
    ("throttle_time_ms", INT32),
    (
        "responses",
        Array(
            Struct(
                ("error_code", INT16),
                ("error_message", NULLABLE_STRING),
                ("resource_type", INT8),
                ("resource_name", STRING),
            )
        ),
    ),
)
INCREMENTAL_ALTER_CONFIGS_REQUEST = Struct(
    (
        "resources",
        Array(
            Struct(
                ("resource_type", INT8),
                ("resource_name", STRING),
                (
                    "configs",
                    Array(
                        Struct(
                            ("name", STRING),
                            ("config_operation", INT8),
                            ("value", NULLABLE_STRING),
                        )
                    ),
                ),
            )
        ),
    ),
    ("validate_only", BOOLEAN),
)

DESCRIBE_LOG_DIRS_REQUEST = Struct(
    (
        "topics",
        Array(
            Struct(
                ("topic", STRING),
                ("partitions", Array(INT32)),
            ),
            nullable_since=0,
        ),
    ),
)
DESCRIBE_LOG_DIRS_RESPONSE = Struct(
    ("throttle_time_ms", INT32),
    (
        "results",
        Array(
            Struct(
                ("error_code", INT16),
                ("log_dir", STRING),
                (
                    "topics",
                    Array(
                        Struct(
                            ("name", STRING),
                            (
                                "partitions",
                                Array(
                                    Struct(
                                        ("partition_index", INT32),
                                        ("partition_size", INT64),
                                        ("offset_lag", INT64),
                                        ("is_future_key", BOOLEAN),
                                    )
                                ),
                            ),
                        )
                    ),
                ),
            )
        ),
    ),
)

CREATE_PARTITIONS_REQUEST = Struct(
    (
        "topics",
        Array(
            Struct(
                ("name", STRING),
                ("count", INT32),
                (
                    "assignments",
                    Array(
                        Struct(
                            ("broker_ids", Array(INT32)),
                        ),
                        nullable_since=0,
                    ),
                ),
            )
        ),
    ),
    ("timeout_ms", INT32),
    ("validate_only", BOOLEAN),
)
CREATE_PARTITIONS_RESPONSE = Struct(
    ("throttle_time_ms", INT32),
    (
        "results",
        Array(
            Struct(
                ("name", STRING),
                ("error_code", INT16),
                ("error_message", NULLABLE_STRING),
            )
        ),
    ),
)

OFFSET_COMMIT_REQUEST = Struct(
    ("group_id", STRING),
    Field("generation_id_or_member_epoch", INT32, since=1, default=-1),
    Field("member_id", STRING, since=1),
    Field("group_instance_id", NULLABLE_STRING, since=7),
    Field("retention_time_ms", INT64, since=2, until=4, default=-1),
    (
        "topics",
        Array(
            Struct(
                ("name", STRING),
                (
                    "partitions",
                    Array(
                        Struct(
                            ("partition_index", INT32),
                            ("committed_offset", INT64),
                            Field("committed_leader_epoch", INT32, since=6, default=-1),
                            Field("commit_timestamp", INT64, since=1, until=1, default=-1),
                            ("committed_metadata", NULLABLE_STRING),
                        )
                    ),
                ),
            )
        ),
    ),
)
OFFSET_COMMIT_RESPONSE = Struct(
    Field("throttle_time_ms", INT32, since=3),
    (
        "topics",
        Array(
            Struct(
                ("name", STRING),
                (
                    "partitions",
                    Array(
                        Struct(
                            ("partition_index", INT32),
                            ("error_code", INT16),
                        )
                    ),
                ),
            )
        ),
    ),
)

OFFSET_FETCH_REQUEST = Struct(
    ("group_id", STRING),
    (
        "topics",
        Array(
            Struct(
                ("name", STRING),
                ("partition_indexes", Array(INT32)),
            ),
            nullable_since=2,
        ),
    ),
)
OFFSET_FETCH_RESPONSE = Struct(
    Field("throttle_time_ms", INT32, since=3),
    (
        "topics",
        Array(
            Struct(
                ("name", STRING),
                (
                    "partitions",
                    Array(
                        Struct(
                            ("partition_index", INT32),
                            ("committed_offset", INT64),
                            Field("committed_leader_epoch", INT32, since=5, default=-1),
                            ("metadata", NULLABLE_STRING),
                            ("error_code", INT16),
                        )
                    ),
                ),
            ),
            nullable_since=2,
        ),
    ),  # never null from Kafka; librdkafka's mock cluster echoes a null request's null
    Field("error_code", INT16, since=2),
)

FIND_COORDINATOR_REQUEST = Struct(
    ("key", STRING),
    Field("key_type", INT8, since=1),
)
FIND_COORDINATOR_RESPONSE = Struct(
    Field("throttle_time_ms", INT32, since=1),
    ("error_code", INT16),
    Field("error_message", NULLABLE_STRING, since=1),
    ("node_id", INT32),
    ("host", STRING),
    ("port", INT32),
)

JOIN_GROUP_REQUEST = Struct(
    ("group_id", STRING),
    ("session_timeout_ms", INT32),
    Field("rebalance_timeout_ms", INT32, since=1, default=-1),
    ("member_id", STRING),
    Field("group_instance_id", NULLABLE_STRING, since=5),
    ("protocol_type", STRING),
    (
        "protocols",
        Array(
            Struct(
                ("name", STRING),
                ("metadata", BYTES),
            )
        ),
    ),
)
JOIN_GROUP_RESPONSE = Struct(
    Field("throttle_time_ms", INT32, since=2),
    ("error_code", INT16),
    Field("generation_id", INT32, default=-1),
    ("protocol_name", STRING),
    ("leader", STRING),
    ("member_id", STRING),
    (
        "members",
        Array(
            Struct(
                ("member_id", STRING),
                Field("group_instance_id", NULLABLE_STRING, since=5),
                ("metadata", BYTES),
            )
        ),
    ),
)

SYNC_GROUP_REQUEST = Struct(
    ("group_id", STRING),
    ("generation_id", INT32),
    ("member_id", STRING),
    Field("group_instance_id", NULLABLE_STRING, since=3),
    (
        "assignments",
        Array(
            Struct(
                ("member_id", STRING),
                ("assignment", BYTES),
            )
        ),
    ),
)
SYNC_GROUP_RESPONSE = Struct(
    Field("throttle_time_ms", INT32, since=1),
    ("error_code", INT16),
    ("assignment", BYTES),
)

HEARTBEAT_REQUEST = Struct(
    ("group_id", STRING),
    ("generation_id", INT32),
    ("member_id", STRING),
    Field("group_instance_id", NULLABLE_STRING, since=3),
)
HEARTBEAT_RESPONSE = Struct(
    Field("throttle_time_ms", INT32, since=1),
    ("error_code", INT16),
)

LEAVE_GROUP_REQUEST = Struct(
    ("group_id", STRING),
    Field("member_id", STRING, until=2),
    Field(
        "members",
        Array(
            Struct(
                ("member_id", STRING),
                ("group_instance_id", NULLABLE_STRING),
            )
        ),
        since=3,
    ),
)
LEAVE_GROUP_RESPONSE = Struct(
    Field("throttle_time_ms", INT32, since=1),
    ("error_code", INT16),
    Field(
        "members",
        Array(
            Struct(
                ("member_id", STRING),
                ("group_instance_id", NULLABLE_STRING),
                ("error_code", INT16),
            )
        ),
        since=3,
    ),
)

DESCRIBE_GROUPS_REQUEST = Struct(
    ("groups", Array(STRING)),
    Field("include_authorized_operations", BOOLEAN, since=3),
)
DESCRIBE_GROUPS_RESPONSE = Struct(
    Field("throttle_time_ms", INT32, since=1),
    (
        "groups",
        Array(
            Struct(
                ("error_code", INT16),
                ("group_id", STRING),
                ("group_state", STRING),
                ("protocol_type", STRING),
                ("protocol_data", STRING),
                (
                    "members",
                    Array(
                        Struct(
                            ("member_id", STRING),
                            Field("group_instance_id", NULLABLE_STRING, since=4),
                            ("client_id", STRING),
                            ("client_host", STRING),
                            ("member_metadata", BYTES),
                            ("member_assignment", BYTES),
                        )
                    ),
                ),
                Field("authorized_operations", INT32, since=3, default=UNREQUESTED_AUTHORIZED_OPERATIONS),
            )
        ),
    ),
)

LIST_GROUPS_REQUEST = Struct()
LIST_GROUPS_RESPONSE = Struct(
    Field("throttle_time_ms", INT32, since=1),
    ("error_code", INT16),
    (
        "groups",
        Array(
            Struct(
                ("group_id", STRING),
                ("protocol_type", STRING),
            )
        ),
    ),
)

DELETE_GROUPS_REQUEST = Struct(
    ("groups_names", Array(STRING)),
)
DELETE_GROUPS_RESPONSE = Struct(
    ("throttle_time_ms", INT32),
    (
        "results",
        Array(
            Struct(
                ("group_id", STRING),
                ("error_code", INT16),
            )
        ),
    ),
)

OFFSET_DELETE_REQUEST = Struct(
    ("group_id", STRING),
    (
        "topics",
        Array(
            Struct(
                ("name", STRING),
                (
                    "partitions",
                    Array(
                        Struct(
                            ("partition_index", INT32),
                        )
                    ),
                ),
            )
        ),
    ),
)
OFFSET_DELETE_RESPONSE = Struct(
    ("error_code", INT16),
    ("throttle_time_ms", INT32),
    (
        "topics",
        Array(
            Struct(
                ("name", STRING),
                (
                    "partitions",
                    Array(
                        Struct(
                            ("partition_index", INT32),
                            ("error_code", INT16),
                        )
                    ),
                ),
            )
        ),
    ),
)

SASL_HANDSHAKE_REQUEST = Struct(("mechanism", STRING))
SASL_HANDSHAKE_RESPONSE = Struct(("error_code", INT16), ("mechanisms", Array(STRING)))
SASL_AUTHENTICATE_REQUEST = Struct(("auth_bytes", BYTES))
SASL_AUTHENTICATE_RESPONSE = Struct(
    ("error_code", INT16),
    ("error_message", NULLABLE_STRING),
    ("auth_bytes", BYTES),
    Field("session_lifetime_ms", INT64, since=1, default=0),
)

LITERAL_PATTERN = 3  # the pattern type of every ACL in v0 of the ACL APIs (v1 adds prefixed ones)
ACL_FILTER = (
    ("resource_type_filter", INT8),
    ("resource_name_filter", NULLABLE_STRING),
    Field("pattern_type_filter", INT8, since=1, default=LITERAL_PATTERN),
    ("principal_filter", NULLABLE_STRING),
    ("host_filter", NULLABLE_STRING),
    ("operation", INT8),
    ("permission_type", INT8),
)
DESCRIBE_ACLS_REQUEST = Struct(*ACL_FILTER)
DESCRIBE_ACLS_RESPONSE = Struct(
    ("throttle_time_ms", INT32),
    ("error_code", INT16),
    ("error_message", NULLABLE_STRING),
    (
        "resources",
        Array(
            Struct(
                ("resource_type", INT8),
                ("resource_name", STRING),
                Field("pattern_type", INT8, since=1, default=LITERAL_PATTERN),
                (
                    "acls",
                    Array(
                        Struct(
                            ("principal", STRING),
                            ("host", STRING),
                            ("operation", INT8),
                            ("permission_type", INT8),
                        )
                    ),
                ),
            )
        ),
    ),
)
CREATE_ACLS_REQUEST = Struct(
    (
        "creations",
        Array(
            Struct(
                ("resource_type", INT8),
                ("resource_name", STRING),
                Field("resource_pattern_type", INT8, since=1, default=LITERAL_PATTERN),
                ("principal", STRING),
                ("host", STRING),
                ("operation", INT8),
                ("permission_type", INT8),
            )
        ),
    ),
)
CREATE_ACLS_RESPONSE = Struct(
    ("throttle_time_ms", INT32),
    (
        "results",
        Array(
            Struct(
                ("error_code", INT16),
                ("error_message", NULLABLE_STRING),
            )
        ),
    ),
)
DELETE_ACLS_REQUEST = Struct(("filters", Array(Struct(*ACL_FILTER))))
DELETE_ACLS_RESPONSE = Struct(
    ("throttle_time_ms", INT32),
    (
        "filter_results",
        Array(
            Struct(
                ("error_code", INT16),
                ("error_message", NULLABLE_STRING),
                (
                    "matching_acls",
                    Array(
                        Struct(
                            ("error_code", INT16),
                            ("error_message", NULLABLE_STRING),
                            ("resource_type", INT8),
                            ("resource_name", STRING),
                            Field("pattern_type", INT8, since=1, default=LITERAL_PATTERN),
                            ("principal", STRING),
                            ("host", STRING),
                            ("operation", INT8),
                            ("permission_type", INT8),
                        )
                    ),
                ),
            )
        ),
    ),
)

APIS = {
    api.key: api
    for api in (
        Api(ApiKey.PRODUCE, 0, 8, PRODUCE_REQUEST, PRODUCE_RESPONSE),
        Api(ApiKey.FETCH, 4, 11, FETCH_REQUEST, FETCH_RESPONSE),
        Api(ApiKey.LIST_OFFSETS, 1, 5, LIST_OFFSETS_REQUEST, LIST_OFFSETS_RESPONSE),
        Api(ApiKey.METADATA, 0, 8, METADATA_REQUEST, METADATA_RESPONSE),
        Api(ApiKey.API_VERSIONS, 0, 2, API_VERSIONS_REQUEST, API_VERSIONS_RESPONSE),
        Api(ApiKey.CREATE_TOPICS, 0, 4, CREATE_TOPICS_REQUEST, CREATE_TOPICS_RESPONSE),
        Api(ApiKey.DELETE_TOPICS, 0, 3, DELETE_TOPICS_REQUEST, DELETE_TOPICS_RESPONSE),
        Api(ApiKey.DELETE_RECORDS, 0, 1, DELETE_RECORDS_REQUEST, DELETE_RECORDS_RESPONSE),
        Api(ApiKey.INIT_PRODUCER_ID, 0, 1, INIT_PRODUCER_ID_REQUEST, INIT_PRODUCER_ID_RESPONSE),
        Api(ApiKey.OFFSET_FOR_LEADER_EPOCH, 0, 3, OFFSET_FOR_LEADER_EPOCH_REQUEST, OFFSET_FOR_LEADER_EPOCH_RESPONSE),
        Api(ApiKey.ADD_PARTITIONS_TO_TXN, 0, 2, ADD_PARTITIONS_TO_TXN_REQUEST, ADD_PARTITIONS_TO_TXN_RESPONSE),
        Api(ApiKey.ADD_OFFSETS_TO_TXN, 0, 2, ADD_OFFSETS_TO_TXN_REQUEST, ADD_OFFSETS_TO_TXN_RESPONSE),
        Api(ApiKey.END_TXN, 0, 2, END_TXN_REQUEST, END_TXN_RESPONSE),
        Api(ApiKey.WRITE_TXN_MARKERS, 0, 0, WRITE_TXN_MARKERS_REQUEST, WRITE_TXN_MARKERS_RESPONSE),
        Api(ApiKey.TXN_OFFSET_COMMIT, 0, 2, TXN_OFFSET_COMMIT_REQUEST, TXN_OFFSET_COMMIT_RESPONSE),
        Api(ApiKey.DESCRIBE_ACLS, 0, 1, DESCRIBE_ACLS_REQUEST, DESCRIBE_ACLS_RESPONSE),
        Api(ApiKey.CREATE_ACLS, 0, 1, CREATE_ACLS_REQUEST, CREATE_ACLS_RESPONSE),
        Api(ApiKey.DELETE_ACLS, 0, 1, DELETE_ACLS_REQUEST, DELETE_ACLS_RESPONSE),
        Api(ApiKey.DESCRIBE_CONFIGS, 0, 3, DESCRIBE_CONFIGS_REQUEST, DESCRIBE_CONFIGS_RESPONSE),
        Api(ApiKey.ALTER_CONFIGS, 0, 1, ALTER_CONFIGS_REQUEST, ALTER_CONFIGS_RESPONSE),
        Api(ApiKey.DESCRIBE_LOG_DIRS, 0, 1, DESCRIBE_LOG_DIRS_REQUEST, DESCRIBE_LOG_DIRS_RESPONSE),
        Api(ApiKey.CREATE_PARTITIONS, 0, 1, CREATE_PARTITIONS_REQUEST, CREATE_PARTITIONS_RESPONSE),
        Api(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 0, INCREMENTAL_ALTER_CONFIGS_REQUEST, ALTER_CONFIGS_RESPONSE),
        Api(ApiKey.OFFSET_COMMIT, 0, 7, OFFSET_COMMIT_REQUEST, OFFSET_COMMIT_RESPONSE),
        Api(ApiKey.OFFSET_FETCH, 0, 5, OFFSET_FETCH_REQUEST, OFFSET_FETCH_RESPONSE),
        Api(ApiKey.FIND_COORDINATOR, 0, 2, FIND_COORDINATOR_REQUEST, FIND_COORDINATOR_RESPONSE),
        Api(ApiKey.JOIN_GROUP, 0, 5, JOIN_GROUP_REQUEST, JOIN_GROUP_RESPONSE),
        Api(ApiKey.SYNC_GROUP, 0, 3, SYNC_GROUP_REQUEST, SYNC_GROUP_RESPONSE),
        Api(ApiKey.HEARTBEAT, 0, 3, HEARTBEAT_REQUEST, HEARTBEAT_RESPONSE),
        Api(ApiKey.LEAVE_GROUP, 0, 3, LEAVE_GROUP_REQUEST, LEAVE_GROUP_RESPONSE),
        Api(ApiKey.DESCRIBE_GROUPS, 0, 4, DESCRIBE_GROUPS_REQUEST, DESCRIBE_GROUPS_RESPONSE),
        Api(ApiKey.LIST_GROUPS, 0, 2, LIST_GROUPS_REQUEST, LIST_GROUPS_RESPONSE),
        Api(ApiKey.DELETE_GROUPS, 0, 1, DELETE_GROUPS_REQUEST, DELETE_GROUPS_RESPONSE),
        Api(ApiKey.OFFSET_DELETE, 0, 0, OFFSET_DELETE_REQUEST, OFFSET_DELETE_RESPONSE),
        Api(ApiKey.SASL_HANDSHAKE, 0, 1, SASL_HANDSHAKE_REQUEST, SASL_HANDSHAKE_RESPONSE),
        Api(ApiKey.SASL_AUTHENTICATE, 0, 1, SASL_AUTHENTICATE_REQUEST, SASL_AUTHENTICATE_RESPONSE),
        Api(ApiKey.DESCRIBE_TRANSACTIONS, 0, 0, DESCRIBE_TRANSACTIONS_REQUEST, DESCRIBE_TRANSACTIONS_RESPONSE, 0),
        Api(ApiKey.LIST_TRANSACTIONS, 0, 1, LIST_TRANSACTIONS_REQUEST, LIST_TRANSACTIONS_RESPONSE, 0),
    )
}
"""Every API this project speaks, with exactly its non-flexible version range (the flexible-only
ones: their flexible range; the broker serves the subset it has handlers for)."""
