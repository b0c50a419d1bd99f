"""Realistic request and response bodies for every advertised API, as dicts with the field names
of ``broker.protocol.apis``.

Each sample is written for the API's highest advertised version; older versions simply drop the
fields they lack. A sample may be limited to a version range (``since``/``until``), e.g. a null
Metadata topic list is only valid from v1.
"""

from typing import NamedTuple

from broker.protocol.apis import UNREQUESTED_AUTHORIZED_OPERATIONS, ApiKey

# A v2 record batch header's worth of bytes is enough: the protocol layer treats records as opaque.
BATCH = bytes(range(61)) + "valeur \u00e9\u00e8".encode()


class Sample(NamedTuple):
    name: str
    value: dict
    since: int = 0
    until: int = 2**15 - 1

    def valid_in(self, version: int) -> bool:
        return self.since <= version <= self.until


REQUESTS = {
    ApiKey.DESCRIBE_ACLS: [
        Sample(
            "prefixed-topic",
            {
                "resource_type_filter": 2,
                "resource_name_filter": "orders.",
                "pattern_type_filter": 4,
                "principal_filter": "User:etl",
                "host_filter": None,
                "operation": 1,
                "permission_type": 1,
            },
        ),
        Sample(
            "any",
            {
                "resource_type_filter": 1,
                "resource_name_filter": None,
                "pattern_type_filter": 1,
                "principal_filter": None,
                "host_filter": None,
                "operation": 1,
                "permission_type": 1,
            },
        ),
    ],
    ApiKey.CREATE_ACLS: [
        Sample(
            "two",
            {
                "creations": [
                    {
                        "resource_type": 2,
                        "resource_name": "orders",
                        "resource_pattern_type": 3,
                        "principal": "User:etl",
                        "host": "*",
                        "operation": 4,
                        "permission_type": 3,
                    },
                    {
                        "resource_type": 3,
                        "resource_name": "loaders-",
                        "resource_pattern_type": 4,
                        "principal": "User:*",
                        "host": "10.0.0.5",
                        "operation": 3,
                        "permission_type": 2,
                    },
                ]
            },
        ),
    ],
    ApiKey.DELETE_ACLS: [
        Sample(
            "one-filter",
            {
                "filters": [
                    {
                        "resource_type_filter": 2,
                        "resource_name_filter": "\u00e9",
                        "pattern_type_filter": 2,
                        "principal_filter": None,
                        "host_filter": "*",
                        "operation": 2,
                        "permission_type": 3,
                    }
                ]
            },
        ),
    ],
    ApiKey.PRODUCE: [
        Sample(
            "two-topics",
            {
                "transactional_id": None,
                "acks": -1,
                "timeout_ms": 30000,
                "topics": [
                    {
                        "name": "orders",
                        "partitions": [
                            {"index": 0, "records": BATCH},
                            {"index": 3, "records": b""},
                        ],
                    },
                    {"name": "payments", "partitions": [{"index": 1, "records": None}]},
                ],
            },
        ),
        Sample(
            "transactional-empty",
            {
                "transactional_id": "tx-\u00e9t\u00e9",
                "acks": 1,
                "timeout_ms": 5,
                "topics": [],
            },
        ),
        Sample(
            "acks0-topic-without-partitions",
            {
                "transactional_id": "",
                "acks": 0,
                "timeout_ms": 0,
                "topics": [{"name": "t", "partitions": []}],
            },
        ),
    ],
    ApiKey.FETCH: [
        Sample(
            "consumer",
            {
                "replica_id": -1,
                "max_wait_ms": 500,
                "min_bytes": 1,
                "max_bytes": 52428800,
                "isolation_level": 1,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic": "orders",
                        "partitions": [
                            {
                                "partition": 0,
                                "current_leader_epoch": 4,
                                "fetch_offset": 1234567890123,
                                "log_start_offset": -1,
                                "partition_max_bytes": 1048576,
                            },
                            {
                                "partition": 2,
                                "current_leader_epoch": -1,
                                "fetch_offset": 0,
                                "log_start_offset": 17,
                                "partition_max_bytes": 65536,
                            },
                        ],
                    },
                    {"topic": "empty", "partitions": []},
                ],
                "forgotten_topics_data": [{"topic": "old", "partitions": [1, 2, 7]}, {"topic": "x", "partitions": []}],
                "rack_id": "rack-a",
            },
        ),
        Sample(
            "session-no-topics",
            {
                "replica_id": -1,
                "max_wait_ms": 0,
                "min_bytes": 0,
                "max_bytes": 0x7FFFFFFF,
                "isolation_level": 0,
                "session_id": 987654,
                "session_epoch": 3,
                "topics": [],
                "forgotten_topics_data": [],
                "rack_id": "",
            },
        ),
    ],
    ApiKey.LIST_OFFSETS: [
        Sample(
            "earliest-latest",
            {
                "replica_id": -1,
                "isolation_level": 1,
                "topics": [
                    {
                        "name": "orders",
                        "partitions": [
                            {"partition_index": 0, "current_leader_epoch": 5, "timestamp": -1},
                            {"partition_index": 1, "current_leader_epoch": -1, "timestamp": -2},
                            {"partition_index": 2, "current_leader_epoch": 0, "timestamp": 1700000000000},
                        ],
                    },
                    {"name": "none", "partitions": []},
                ],
            },
        ),
        Sample("empty", {"replica_id": -1, "isolation_level": 0, "topics": []}),
    ],
    ApiKey.OFFSET_FOR_LEADER_EPOCH: [
        Sample(
            "follower",
            {
                "replica_id": 2,
                "topics": [
                    {
                        "topic": "orders",
                        "partitions": [
                            {"partition": 0, "current_leader_epoch": 7, "leader_epoch": 5},
                            {"partition": 3, "current_leader_epoch": -1, "leader_epoch": 0},
                        ],
                    },
                    {"topic": "none", "partitions": []},
                ],
            },
        ),
        Sample("empty", {"replica_id": -1, "topics": []}),
    ],
    ApiKey.METADATA: [
        Sample(
            "named-topics",
            {
                "topics": [{"name": "orders"}, {"name": "payments"}],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": True,
                "include_topic_authorized_operations": True,
            },
        ),
        Sample(
            "empty-list",
            {
                "topics": [],
                "allow_auto_topic_creation": True,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            },
        ),
        Sample(
            "all-topics",
            {
                "topics": None,
                "allow_auto_topic_creation": True,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": True,
            },
            since=1,
        ),
    ],
    ApiKey.API_VERSIONS: [Sample("empty", {})],
    ApiKey.CREATE_TOPICS: [
        Sample(
            "two-topics",
            {
                "topics": [
                    {
                        "name": "new",
                        "num_partitions": 3,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [
                            {"name": "retention.ms", "value": "1000"},
                            {"name": "cleanup.policy", "value": None},
                        ],
                    },
                    {
                        "name": "manual",
                        "num_partitions": -1,
                        "replication_factor": -1,
                        "assignments": [
                            {"partition_index": 0, "broker_ids": [1]},
                            {"partition_index": 1, "broker_ids": [1, 2, 3]},
                            {"partition_index": 2, "broker_ids": []},
                        ],
                        "configs": [],
                    },
                ],
                "timeout_ms": 60000,
                "validate_only": True,
            },
        ),
        Sample("empty", {"topics": [], "timeout_ms": 0, "validate_only": False}),
    ],
    ApiKey.DELETE_TOPICS: [
        Sample("two-topics", {"topic_names": ["orders", "\u00e9v\u00e9nements"], "timeout_ms": 30000}),
        Sample("empty", {"topic_names": [], "timeout_ms": -1}),
    ],
    ApiKey.INIT_PRODUCER_ID: [
        Sample("idempotent", {"transactional_id": None, "transaction_timeout_ms": 2147483647}),
        Sample("transactional", {"transactional_id": "tx-1", "transaction_timeout_ms": 60000}),
    ],
    ApiKey.WRITE_TXN_MARKERS: [
        Sample(
            "commit-and-abort",
            {
                "markers": [
                    {
                        "producer_id": 1000,
                        "producer_epoch": 3,
                        "transaction_result": True,
                        "topics": [{"name": "orders", "partition_indexes": [0, 2]}],
                        "coordinator_epoch": 7,
                    },
                    {
                        "producer_id": 1001,
                        "producer_epoch": 0,
                        "transaction_result": False,
                        "topics": [],
                        "coordinator_epoch": 7,
                    },
                ]
            },
        ),
        Sample("empty", {"markers": []}),
    ],
    ApiKey.ADD_PARTITIONS_TO_TXN: [
        Sample(
            "two-topics",
            {
                "transactional_id": "tx-\u00e9",
                "producer_id": 1000,
                "producer_epoch": 3,
                "topics": [{"name": "orders", "partitions": [0, 2]}, {"name": "audit", "partitions": [1]}],
            },
        ),
    ],
    ApiKey.ADD_OFFSETS_TO_TXN: [
        Sample("group", {"transactional_id": "tx-1", "producer_id": 1000, "producer_epoch": 3, "group_id": "loaders"}),
    ],
    ApiKey.END_TXN: [
        Sample("commit", {"transactional_id": "tx-1", "producer_id": 1000, "producer_epoch": 3, "committed": True}),
        Sample(
            "abort", {"transactional_id": "tx-1", "producer_id": 2**62, "producer_epoch": 32767, "committed": False}
        ),
    ],
    ApiKey.TXN_OFFSET_COMMIT: [
        Sample(
            "offsets",
            {
                "transactional_id": "tx-1",
                "group_id": "loaders",
                "producer_id": 1000,
                "producer_epoch": 3,
                "topics": [
                    {
                        "name": "orders",
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 42,
                                "committed_leader_epoch": 7,
                                "committed_metadata": "m\u00e9ta",
                            },
                            {
                                "partition_index": 1,
                                "committed_offset": 0,
                                "committed_leader_epoch": -1,
                                "committed_metadata": None,
                            },
                        ],
                    }
                ],
            },
        ),
    ],
    ApiKey.DESCRIBE_TRANSACTIONS: [
        Sample("two", {"transactional_ids": ["tx-1", "tx-\u00e9"]}),
        Sample("none", {"transactional_ids": []}),
    ],
    ApiKey.LIST_TRANSACTIONS: [
        Sample(
            "filtered", {"state_filters": ["Ongoing"], "producer_id_filters": [1000, 2**62], "duration_filter": 60000}
        ),
        Sample("all", {"state_filters": [], "producer_id_filters": [], "duration_filter": -1}),
    ],
    ApiKey.DESCRIBE_CONFIGS: [
        Sample(
            "topics-and-broker",
            {
                "resources": [
                    {"resource_type": 2, "resource_name": "orders", "configuration_keys": None},
                    {
                        "resource_type": 2,
                        "resource_name": "\u00e9v\u00e9nements",
                        "configuration_keys": ["retention.ms", "segment.bytes"],
                    },
                    {"resource_type": 4, "resource_name": "0", "configuration_keys": []},
                ],
                "include_synonyms": True,
                "include_documentation": False,
            },
        ),
        Sample("empty", {"resources": [], "include_synonyms": False, "include_documentation": True}),
    ],
    ApiKey.DESCRIBE_LOG_DIRS: [
        Sample(
            "some-partitions",
            {"topics": [{"topic": "orders", "partitions": [0, 3, 7]}, {"topic": "none", "partitions": []}]},
        ),
        Sample("all", {"topics": None}),
        Sample("no-topics", {"topics": []}),
    ],
    ApiKey.DELETE_RECORDS: [
        Sample(
            "two-topics",
            {
                "topics": [
                    {
                        "name": "orders",
                        "partitions": [{"partition_index": 0, "offset": 42}, {"partition_index": 3, "offset": -1}],
                    },
                    {"name": "\u00e9v\u00e9nements", "partitions": []},
                ],
                "timeout_ms": 30000,
            },
        ),
        Sample("empty", {"topics": [], "timeout_ms": 0}),
    ],
    ApiKey.ALTER_CONFIGS: [
        Sample(
            "topic-and-broker",
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": "orders",
                        "configs": [
                            {"name": "retention.ms", "value": "3600000"},
                            {"name": "segment.bytes", "value": None},
                        ],
                    },
                    {"resource_type": 4, "resource_name": "", "configs": []},
                ],
                "validate_only": True,
            },
        ),
        Sample("empty", {"resources": [], "validate_only": False}),
    ],
    ApiKey.CREATE_PARTITIONS: [
        Sample(
            "count-and-assignment",
            {
                "topics": [
                    {"name": "orders", "count": 6, "assignments": None},
                    {
                        "name": "\u00e9v\u00e9nements",
                        "count": 3,
                        "assignments": [{"broker_ids": [0]}, {"broker_ids": [0, 1]}],
                    },
                ],
                "timeout_ms": 30000,
                "validate_only": False,
            },
        ),
        Sample("empty", {"topics": [], "timeout_ms": -1, "validate_only": True}),
    ],
    ApiKey.INCREMENTAL_ALTER_CONFIGS: [
        Sample(
            "every-operation",
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": "orders",
                        "configs": [
                            {"name": "retention.ms", "config_operation": 0, "value": "3600000"},
                            {"name": "segment.bytes", "config_operation": 1, "value": None},
                            {"name": "cleanup.policy", "config_operation": 2, "value": "delete"},
                        ],
                    },
                    {
                        "resource_type": 4,
                        "resource_name": "0",
                        "configs": [{"name": "log.retention.ms", "config_operation": 3, "value": "\u00e9"}],
                    },
                ],
                "validate_only": False,
            },
        ),
        Sample("empty", {"resources": [], "validate_only": True}),
    ],
    ApiKey.OFFSET_COMMIT: [
        Sample(
            "two-topics",
            {
                "group_id": "loaders",
                "generation_id_or_member_epoch": 4,
                "member_id": "m-1",
                "group_instance_id": "host-a",
                "retention_time_ms": -1,
                "topics": [
                    {
                        "name": "orders",
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 42,
                                "committed_leader_epoch": 3,
                                "commit_timestamp": -1,
                                "committed_metadata": "run 7 \u00e9",
                            },
                            {
                                "partition_index": 2,
                                "committed_offset": 0,
                                "committed_leader_epoch": -1,
                                "commit_timestamp": 1700000000000,
                                "committed_metadata": None,
                            },
                        ],
                    },
                    {"name": "\u00e9v\u00e9nements", "partitions": []},
                ],
            },
        ),
    ],
    ApiKey.OFFSET_FETCH: [
        Sample(
            "some-topics",
            {
                "group_id": "loaders",
                "topics": [{"name": "orders", "partition_indexes": [0, 2]}, {"name": "empty", "partition_indexes": []}],
            },
        ),
        Sample("all-topics", {"group_id": "loaders", "topics": None}, since=2),
    ],
    ApiKey.FIND_COORDINATOR: [
        Sample("group", {"key": "loaders \u00e9", "key_type": 0}),
    ],
    ApiKey.DESCRIBE_GROUPS: [
        Sample("two", {"groups": ["loaders", ""], "include_authorized_operations": True}),
    ],
    ApiKey.LIST_GROUPS: [
        Sample("all", {}),
    ],
    ApiKey.DELETE_GROUPS: [
        Sample("two", {"groups_names": ["loaders", "\u00e9"]}),
    ],
    ApiKey.OFFSET_DELETE: [
        Sample(
            "one-topic",
            {
                "group_id": "loaders",
                "topics": [{"name": "orders", "partitions": [{"partition_index": 0}, {"partition_index": 5}]}],
            },
        ),
    ],
    ApiKey.SASL_HANDSHAKE: [Sample("scram", {"mechanism": "SCRAM-SHA-512"})],
    ApiKey.SASL_AUTHENTICATE: [Sample("client-first", {"auth_bytes": b"n,,n=alice,r=fyko+d2lbbFgONRv9qkxdawL"})],
    ApiKey.JOIN_GROUP: [
        Sample(
            "new-member",
            {
                "group_id": "loaders",
                "session_timeout_ms": 45000,
                "rebalance_timeout_ms": 300000,
                "member_id": "",
                "group_instance_id": None,
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b"\x00\x01"}, {"name": "roundrobin", "metadata": b""}],
            },
        ),
        Sample(
            "static",
            {
                "group_id": "\u00e9",
                "session_timeout_ms": 6000,
                "rebalance_timeout_ms": -1,
                "member_id": "m-1",
                "group_instance_id": "host-a",
                "protocol_type": "consumer",
                "protocols": [],
            },
        ),
    ],
    ApiKey.SYNC_GROUP: [
        Sample(
            "leader",
            {
                "group_id": "loaders",
                "generation_id": 4,
                "member_id": "m-1",
                "group_instance_id": None,
                "assignments": [{"member_id": "m-1", "assignment": b"a1"}, {"member_id": "m-2", "assignment": b""}],
            },
        ),
        Sample(
            "follower",
            {
                "group_id": "loaders",
                "generation_id": 4,
                "member_id": "m-2",
                "group_instance_id": "host-b",
                "assignments": [],
            },
        ),
    ],
    ApiKey.HEARTBEAT: [
        Sample("member", {"group_id": "loaders", "generation_id": 4, "member_id": "m-1", "group_instance_id": None}),
    ],
    ApiKey.LEAVE_GROUP: [
        Sample("one", {"group_id": "loaders", "member_id": "m-1", "members": []}, until=2),
        Sample(
            "batch",
            {
                "group_id": "loaders",
                "member_id": "",
                "members": [
                    {"member_id": "m-1", "group_instance_id": None},
                    {"member_id": "", "group_instance_id": "host-b"},
                ],
            },
            since=3,
        ),
    ],
}

RESPONSES = {
    ApiKey.DESCRIBE_ACLS: [
        Sample(
            "two-resources",
            {
                "throttle_time_ms": 0,
                "error_code": 0,
                "error_message": None,
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": "orders",
                        "pattern_type": 3,
                        "acls": [
                            {"principal": "User:etl", "host": "*", "operation": 4, "permission_type": 3},
                            {"principal": "User:*", "host": "10.0.0.5", "operation": 3, "permission_type": 2},
                        ],
                    },
                    {"resource_type": 4, "resource_name": "kafka-cluster", "pattern_type": 3, "acls": []},
                ],
            },
        ),
        Sample("refused", {"throttle_time_ms": 0, "error_code": 54, "error_message": "no authorizer", "resources": []}),
    ],
    ApiKey.CREATE_ACLS: [
        Sample(
            "ok-and-error",
            {
                "throttle_time_ms": 0,
                "results": [{"error_code": 0, "error_message": None}, {"error_code": 42, "error_message": "bad host"}],
            },
        ),
    ],
    ApiKey.DELETE_ACLS: [
        Sample(
            "matches",
            {
                "throttle_time_ms": 0,
                "filter_results": [
                    {
                        "error_code": 0,
                        "error_message": None,
                        "matching_acls": [
                            {
                                "error_code": 0,
                                "error_message": None,
                                "resource_type": 3,
                                "resource_name": "loaders-",
                                "pattern_type": 4,
                                "principal": "User:*",
                                "host": "*",
                                "operation": 3,
                                "permission_type": 3,
                            }
                        ],
                    },
                    {"error_code": 31, "error_message": "not allowed", "matching_acls": []},
                ],
            },
        ),
    ],
    ApiKey.PRODUCE: [
        Sample(
            "ok-and-errors",
            {
                "responses": [
                    {
                        "name": "orders",
                        "partitions": [
                            {
                                "index": 0,
                                "error_code": 0,
                                "base_offset": 42,
                                "log_append_time_ms": -1,
                                "log_start_offset": 0,
                                "record_errors": [],
                                "error_message": None,
                            },
                            {
                                "index": 1,
                                "error_code": 87,
                                "base_offset": -1,
                                "log_append_time_ms": 1700000000123,
                                "log_start_offset": 5,
                                "record_errors": [
                                    {"batch_index": 0, "batch_index_error_message": "bad \u00e9"},
                                    {"batch_index": 3, "batch_index_error_message": None},
                                ],
                                "error_message": "One or more records have been rejected",
                            },
                        ],
                    },
                    {
                        "name": "unknown",
                        "partitions": [
                            {
                                "index": 9,
                                "error_code": 3,
                                "base_offset": -1,
                                "log_append_time_ms": -1,
                                "log_start_offset": -1,
                                "record_errors": [],
                                "error_message": "",
                            },
                        ],
                    },
                ],
                "throttle_time_ms": 17,
            },
        ),
        Sample("empty", {"responses": [], "throttle_time_ms": 0}),
    ],
    ApiKey.FETCH: [
        Sample(
            "records-and-errors",
            {
                "throttle_time_ms": 3,
                "error_code": 0,
                "session_id": 123,
                "responses": [
                    {
                        "topic": "orders",
                        "partitions": [
                            {
                                "partition_index": 0,
                                "error_code": 0,
                                "high_watermark": 200,
                                "last_stable_offset": 190,
                                "log_start_offset": 0,
                                "aborted_transactions": None,
                                "preferred_read_replica": -1,
                                "records": BATCH,
                            },
                            {
                                "partition_index": 2,
                                "error_code": 1,
                                "high_watermark": -1,
                                "last_stable_offset": -1,
                                "log_start_offset": -1,
                                "aborted_transactions": [
                                    {"producer_id": 7, "first_offset": 10},
                                    {"producer_id": 2**40, "first_offset": 0},
                                ],
                                "preferred_read_replica": 2,
                                "records": None,
                            },
                            {
                                "partition_index": 3,
                                "error_code": 0,
                                "high_watermark": 5,
                                "last_stable_offset": 5,
                                "log_start_offset": 5,
                                "aborted_transactions": [],
                                "preferred_read_replica": -1,
                                "records": b"",
                            },
                        ],
                    },
                    {"topic": "quiet", "partitions": []},
                ],
            },
        ),
        Sample("session-error", {"throttle_time_ms": 0, "error_code": 70, "session_id": 0, "responses": []}),
    ],
    ApiKey.LIST_OFFSETS: [
        Sample(
            "offsets",
            {
                "throttle_time_ms": 0,
                "topics": [
                    {
                        "name": "orders",
                        "partitions": [
                            {"partition_index": 0, "error_code": 0, "timestamp": -1, "offset": 123, "leader_epoch": 5},
                            {"partition_index": 1, "error_code": 6, "timestamp": -1, "offset": -1, "leader_epoch": -1},
                            {
                                "partition_index": 2,
                                "error_code": 0,
                                "timestamp": 1700000000000,
                                "offset": 9,
                                "leader_epoch": 0,
                            },
                        ],
                    },
                    {"name": "unknown", "partitions": []},
                ],
            },
        ),
        Sample("empty", {"throttle_time_ms": 100, "topics": []}),
    ],
    ApiKey.OFFSET_FOR_LEADER_EPOCH: [
        Sample(
            "end-offsets",
            {
                "throttle_time_ms": 0,
                "topics": [
                    {
                        "topic": "orders",
                        "partitions": [
                            {"error_code": 0, "partition": 0, "leader_epoch": 5, "end_offset": 1234},
                            {"error_code": 74, "partition": 3, "leader_epoch": -1, "end_offset": -1},
                        ],
                    },
                    {"topic": "unknown", "partitions": []},
                ],
            },
        ),
        Sample("empty", {"throttle_time_ms": 100, "topics": []}),
    ],
    ApiKey.METADATA: [
        Sample(
            "cluster",
            {
                "throttle_time_ms": 0,
                "brokers": [
                    {"node_id": 1, "host": "localhost", "port": 9092, "rack": None},
                    {"node_id": 2, "host": "broker-2.example", "port": 19093, "rack": "rack-b"},
                ],
                "cluster_id": "kafkalog-cluster-\u00e9",
                "controller_id": 1,
                "topics": [
                    {
                        "error_code": 0,
                        "name": "orders",
                        "is_internal": False,
                        "partitions": [
                            {
                                "error_code": 0,
                                "partition_index": 0,
                                "leader_id": 1,
                                "leader_epoch": 0,
                                "replica_nodes": [1, 2],
                                "isr_nodes": [1],
                                "offline_replicas": [2],
                            },
                            {
                                "error_code": 5,
                                "partition_index": 1,
                                "leader_id": -1,
                                "leader_epoch": -1,
                                "replica_nodes": [],
                                "isr_nodes": [],
                                "offline_replicas": [],
                            },
                        ],
                        "topic_authorized_operations": UNREQUESTED_AUTHORIZED_OPERATIONS,
                    },
                    {
                        "error_code": 3,
                        "name": "missing",
                        "is_internal": True,
                        "partitions": [],
                        "topic_authorized_operations": (1 << 3) | (1 << 4) | (1 << 8),
                    },
                ],
                "cluster_authorized_operations": (1 << 2) | (1 << 7),
            },
        ),
        Sample(
            "no-cluster-id",
            {
                "throttle_time_ms": 250,
                "brokers": [],
                "cluster_id": None,
                "controller_id": -1,
                "topics": [],
                "cluster_authorized_operations": UNREQUESTED_AUTHORIZED_OPERATIONS,
            },
        ),
    ],
    ApiKey.API_VERSIONS: [
        Sample(
            "advertised",
            {
                "error_code": 0,
                "api_keys": [
                    {"api_key": 0, "min_version": 0, "max_version": 8},
                    {"api_key": 1, "min_version": 4, "max_version": 11},
                    {"api_key": 18, "min_version": 0, "max_version": 2},
                ],
                "throttle_time_ms": 0,
            },
        ),
        # kafka-python (like Java clients) reads any ApiVersions error reply as v0
        Sample(
            "unsupported",
            {
                "error_code": 35,
                "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 2}],
                "throttle_time_ms": 0,
            },
            until=0,
        ),
    ],
    ApiKey.CREATE_TOPICS: [
        Sample(
            "mixed",
            {
                "throttle_time_ms": 0,
                "topics": [
                    {"name": "new", "error_code": 0, "error_message": None},
                    {"name": "exists", "error_code": 36, "error_message": "Topic 'exists' already exists."},
                    {"name": "bad", "error_code": 37, "error_message": ""},
                ],
            },
        ),
        Sample("empty", {"throttle_time_ms": 5, "topics": []}),
    ],
    ApiKey.DELETE_TOPICS: [
        Sample(
            "mixed",
            {
                "throttle_time_ms": 0,
                "responses": [{"name": "orders", "error_code": 0}, {"name": "missing", "error_code": 3}],
            },
        ),
        Sample("empty", {"throttle_time_ms": 9, "responses": []}),
    ],
    ApiKey.INIT_PRODUCER_ID: [
        Sample("ok", {"throttle_time_ms": 0, "error_code": 0, "producer_id": 1000, "producer_epoch": 0}),
        Sample("error", {"throttle_time_ms": 0, "error_code": 15, "producer_id": -1, "producer_epoch": -1}),
    ],
    ApiKey.WRITE_TXN_MARKERS: [
        Sample(
            "per-partition-errors",
            {
                "markers": [
                    {
                        "producer_id": 1000,
                        "topics": [
                            {
                                "name": "orders",
                                "partitions": [
                                    {"partition_index": 0, "error_code": 0},
                                    {"partition_index": 2, "error_code": 47},
                                ],
                            }
                        ],
                    }
                ]
            },
        ),
        Sample("empty", {"markers": []}),
    ],
    ApiKey.ADD_PARTITIONS_TO_TXN: [
        Sample(
            "mixed",
            {
                "throttle_time_ms": 0,
                "results_by_topic": [
                    {
                        "name": "orders",
                        "results_by_partition": [
                            {"partition_index": 0, "partition_error_code": 0},
                            {"partition_index": 2, "partition_error_code": 51},
                        ],
                    }
                ],
            },
        ),
    ],
    ApiKey.ADD_OFFSETS_TO_TXN: [Sample("fenced", {"throttle_time_ms": 5, "error_code": 90})],
    ApiKey.END_TXN: [Sample("ok", {"throttle_time_ms": 0, "error_code": 0})],
    ApiKey.TXN_OFFSET_COMMIT: [
        Sample(
            "per-partition",
            {
                "throttle_time_ms": 0,
                "topics": [
                    {
                        "name": "orders",
                        "partitions": [
                            {"partition_index": 0, "error_code": 0},
                            {"partition_index": 1, "error_code": 3},
                        ],
                    }
                ],
            },
        ),
    ],
    ApiKey.DESCRIBE_TRANSACTIONS: [
        Sample(
            "ongoing-and-unknown",
            {
                "throttle_time_ms": 0,
                "transaction_states": [
                    {
                        "error_code": 0,
                        "transactional_id": "tx-1",
                        "transaction_state": "Ongoing",
                        "transaction_timeout_ms": 60000,
                        "transaction_start_time_ms": 1700000000000,
                        "producer_id": 1000,
                        "producer_epoch": 3,
                        "topics": [{"topic": "orders", "partitions": [0, 2]}],
                    },
                    {
                        "error_code": 105,
                        "transactional_id": "tx-\u00e9",
                        "transaction_state": "",
                        "transaction_timeout_ms": 0,
                        "transaction_start_time_ms": -1,
                        "producer_id": -1,
                        "producer_epoch": -1,
                        "topics": [],
                    },
                ],
            },
        ),
    ],
    ApiKey.LIST_TRANSACTIONS: [
        Sample(
            "listed",
            {
                "throttle_time_ms": 0,
                "error_code": 0,
                "unknown_state_filters": ["Nope"],
                "transaction_states": [
                    {"transactional_id": "tx-1", "producer_id": 1000, "transaction_state": "Ongoing"}
                ],
            },
        ),
    ],
    ApiKey.DESCRIBE_CONFIGS: [
        Sample(
            "configs-and-errors",
            {
                "throttle_time_ms": 0,
                "results": [
                    {
                        "error_code": 0,
                        "error_message": None,
                        "resource_type": 2,
                        "resource_name": "orders",
                        "configs": [
                            {
                                "name": "retention.ms",
                                "value": "3600000",
                                "read_only": True,
                                "config_source": 1,
                                "is_default": False,
                                "is_sensitive": False,
                                "synonyms": [
                                    {"name": "retention.ms", "value": "3600000", "source": 1},
                                    {"name": "log.retention.ms", "value": "604800000", "source": 5},
                                ],
                                "config_type": 5,
                                "documentation": None,
                            },
                            {
                                "name": "cleanup.policy",
                                "value": "delete",
                                "read_only": False,
                                "config_source": 5,
                                "is_default": True,
                                "is_sensitive": False,
                                "synonyms": [],
                                "config_type": 7,
                                "documentation": "What happens to old segments \u00e9",
                            },
                            {
                                "name": "secret",
                                "value": None,
                                "read_only": True,
                                "config_source": 4,
                                "is_default": False,
                                "is_sensitive": True,
                                "synonyms": [{"name": "secret", "value": None, "source": 4}],
                                "config_type": 9,
                                "documentation": "",
                            },
                        ],
                    },
                    {
                        "error_code": 3,
                        "error_message": "topic 'missing' does not exist",
                        "resource_type": 2,
                        "resource_name": "missing",
                        "configs": [],
                    },
                ],
            },
        ),
        Sample("empty", {"throttle_time_ms": 12, "results": []}),
    ],
    ApiKey.DESCRIBE_LOG_DIRS: [
        Sample(
            "one-dir",
            {
                "throttle_time_ms": 0,
                "results": [
                    {
                        "error_code": 0,
                        "log_dir": "/var/lib/kafkalog",
                        "topics": [
                            {
                                "name": "orders",
                                "partitions": [
                                    {
                                        "partition_index": 0,
                                        "partition_size": 2**40,
                                        "offset_lag": 0,
                                        "is_future_key": False,
                                    },
                                    {
                                        "partition_index": 3,
                                        "partition_size": 0,
                                        "offset_lag": 17,
                                        "is_future_key": True,
                                    },
                                ],
                            },
                            {"name": "empty", "partitions": []},
                        ],
                    },
                    {"error_code": 56, "log_dir": "/broken", "topics": []},
                ],
            },
        ),
        Sample("nothing", {"throttle_time_ms": 3, "results": []}),
    ],
    ApiKey.DELETE_RECORDS: [
        Sample(
            "ok-and-errors",
            {
                "throttle_time_ms": 0,
                "topics": [
                    {
                        "name": "orders",
                        "partitions": [
                            {"partition_index": 0, "low_watermark": 42, "error_code": 0},
                            {"partition_index": 3, "low_watermark": -1, "error_code": 1},
                        ],
                    },
                    {"name": "missing", "partitions": [{"partition_index": 0, "low_watermark": -1, "error_code": 3}]},
                ],
            },
        ),
        Sample("empty", {"throttle_time_ms": 5, "topics": []}),
    ],
    ApiKey.ALTER_CONFIGS: [
        Sample(
            "ok-and-error",
            {
                "throttle_time_ms": 0,
                "responses": [
                    {"error_code": 0, "error_message": None, "resource_type": 2, "resource_name": "orders"},
                    {
                        "error_code": 40,
                        "error_message": "retention.ms: 'soon' is not an integer \u00e9",
                        "resource_type": 2,
                        "resource_name": "\u00e9v\u00e9nements",
                    },
                ],
            },
        ),
        Sample("empty", {"throttle_time_ms": 7, "responses": []}),
    ],
    ApiKey.CREATE_PARTITIONS: [
        Sample(
            "ok-and-error",
            {
                "throttle_time_ms": 0,
                "results": [
                    {"name": "orders", "error_code": 0, "error_message": None},
                    {"name": "\u00e9v\u00e9nements", "error_code": 37, "error_message": "has 3 partitions"},
                ],
            },
        ),
        Sample("empty", {"throttle_time_ms": 1, "results": []}),
    ],
    ApiKey.INCREMENTAL_ALTER_CONFIGS: [
        Sample(
            "ok-and-error",
            {
                "throttle_time_ms": 0,
                "responses": [
                    {"error_code": 0, "error_message": None, "resource_type": 4, "resource_name": "0"},
                    {
                        "error_code": 42,
                        "error_message": "num.partitions: read-only",
                        "resource_type": 4,
                        "resource_name": "",
                    },
                ],
            },
        ),
        Sample("empty", {"throttle_time_ms": 2, "responses": []}),
    ],
    ApiKey.OFFSET_COMMIT: [
        Sample(
            "ok-and-error",
            {
                "throttle_time_ms": 0,
                "topics": [
                    {
                        "name": "orders",
                        "partitions": [
                            {"partition_index": 0, "error_code": 0},
                            {"partition_index": 2, "error_code": 25},
                        ],
                    }
                ],
            },
        ),
    ],
    ApiKey.OFFSET_FETCH: [
        Sample(
            "offsets",
            {
                "throttle_time_ms": 0,
                "error_code": 0,
                "topics": [
                    {
                        "name": "orders",
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 42,
                                "committed_leader_epoch": 3,
                                "metadata": "run 7 \u00e9",
                                "error_code": 0,
                            },
                            {
                                "partition_index": 2,
                                "committed_offset": -1,
                                "committed_leader_epoch": -1,
                                "metadata": None,
                                "error_code": 0,
                            },
                        ],
                    }
                ],
            },
        ),
    ],
    ApiKey.FIND_COORDINATOR: [
        Sample(
            "found",
            {
                "throttle_time_ms": 0,
                "error_code": 0,
                "error_message": None,
                "node_id": 2,
                "host": "broker-2.example",
                "port": 9092,
            },
        ),
        Sample(
            "not-available",
            {
                "throttle_time_ms": 0,
                "error_code": 15,
                "error_message": "loading \u00e9",
                "node_id": -1,
                "host": "",
                "port": -1,
            },
        ),
    ],
    ApiKey.DESCRIBE_GROUPS: [
        Sample(
            "stable",
            {
                "throttle_time_ms": 0,
                "groups": [
                    {
                        "error_code": 0,
                        "group_id": "loaders",
                        "group_state": "Stable",
                        "protocol_type": "consumer",
                        "protocol_data": "range",
                        "members": [
                            {
                                "member_id": "m-1",
                                "group_instance_id": "host-a",
                                "client_id": "rdkafka",
                                "client_host": "/127.0.0.1",
                                "member_metadata": b"\x00\x01",
                                "member_assignment": b"",
                            }
                        ],
                        "authorized_operations": -2147483648,
                    },
                    {
                        "error_code": 69,
                        "group_id": "gone",
                        "group_state": "Dead",
                        "protocol_type": "",
                        "protocol_data": "",
                        "members": [],
                        "authorized_operations": -2147483648,
                    },
                ],
            },
        ),
    ],
    ApiKey.LIST_GROUPS: [
        Sample(
            "two",
            {
                "throttle_time_ms": 0,
                "error_code": 0,
                "groups": [
                    {"group_id": "loaders", "protocol_type": "consumer"},
                    {"group_id": "\u00e9", "protocol_type": ""},
                ],
            },
        ),
    ],
    ApiKey.DELETE_GROUPS: [
        Sample(
            "ok-and-error",
            {
                "throttle_time_ms": 0,
                "results": [{"group_id": "loaders", "error_code": 0}, {"group_id": "busy", "error_code": 68}],
            },
        ),
    ],
    ApiKey.OFFSET_DELETE: [
        Sample(
            "ok-and-error",
            {
                "error_code": 0,
                "throttle_time_ms": 0,
                "topics": [
                    {
                        "name": "orders",
                        "partitions": [
                            {"partition_index": 0, "error_code": 0},
                            {"partition_index": 5, "error_code": 86},
                        ],
                    }
                ],
            },
        ),
    ],
    ApiKey.SASL_HANDSHAKE: [
        Sample("mechanisms", {"error_code": 0, "mechanisms": ["PLAIN", "SCRAM-SHA-256"]}),
        Sample("unsupported", {"error_code": 33, "mechanisms": ["SCRAM-SHA-512"]}),
    ],
    ApiKey.SASL_AUTHENTICATE: [
        Sample(
            "server-first",
            {
                "error_code": 0,
                "error_message": None,
                "auth_bytes": b"r=abc,s=QSXCR+Q6sek8bf92,i=4096",
                "session_lifetime_ms": 0,
            },
        ),
        Sample(
            "failed",
            {"error_code": 58, "error_message": "Authentication failed", "auth_bytes": b"", "session_lifetime_ms": 0},
        ),
    ],
    ApiKey.JOIN_GROUP: [
        Sample(
            "leader",
            {
                "throttle_time_ms": 0,
                "error_code": 0,
                "generation_id": 4,
                "protocol_name": "range",
                "leader": "m-1",
                "member_id": "m-1",
                "members": [
                    {"member_id": "m-1", "group_instance_id": None, "metadata": b"\x00\x01"},
                    {"member_id": "m-2", "group_instance_id": "host-b", "metadata": b""},
                ],
            },
        ),
        Sample(
            "member-id-required",
            {
                "throttle_time_ms": 0,
                "error_code": 79,
                "generation_id": -1,
                "protocol_name": "",
                "leader": "",
                "member_id": "m-3",
                "members": [],
            },
        ),
    ],
    ApiKey.SYNC_GROUP: [
        Sample("assigned", {"throttle_time_ms": 0, "error_code": 0, "assignment": b"a1"}),
    ],
    ApiKey.HEARTBEAT: [
        Sample("rebalancing", {"throttle_time_ms": 0, "error_code": 27}),
    ],
    ApiKey.LEAVE_GROUP: [
        Sample(
            "batch",
            {
                "throttle_time_ms": 0,
                "error_code": 0,
                "members": [
                    {"member_id": "m-1", "group_instance_id": None, "error_code": 0},
                    {"member_id": "", "group_instance_id": "host-b", "error_code": 25},
                ],
            },
        ),
    ],
}
