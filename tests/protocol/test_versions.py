"""Field presence by version, checked against byte layouts written by hand from the protocol
guide (Appendix A; section 2.4 for Produce v0-2; Kafka's message JSON for DescribeConfigs and
DescribeLogDirs): for every advertised version of every API, our encoder writes exactly these bytes
and our decoder reads them back, with absent fields given Kafka's defaults. This is also the only
check of the versions kafka-python no longer implements (Produce v0-2, CreateTopics v0-1,
DeleteTopics v0, DescribeConfigs v0, DescribeLogDirs v0, OffsetCommit v0-1, OffsetFetch v0,
OffsetForLeaderEpoch v0-1, the ACL APIs v0).
DeleteRecords, AlterConfigs, CreatePartitions, IncrementalAlterConfigs and the consumer-group
APIs follow Kafka's message JSON.
"""

import re
from pathlib import Path

import pytest

from broker.protocol.apis import APIS, UNREQUESTED_AUTHORIZED_OPERATIONS, ApiKey
from broker.protocol.types import ProtocolError, Reader, Writer

from .bridge import canonical
from .layout import array, boolean, i8, i16, i32, i64, nbytes, string


def _if(condition: bool, data: bytes) -> bytes:
    return data if condition else b""


# --- one message per (API, kind), and its bytes at each version --------------------------------

MESSAGES = {
    (ApiKey.PRODUCE, "request"): {
        "transactional_id": "tx",
        "acks": -1,
        "timeout_ms": 1500,
        "topics": [{"name": "t", "partitions": [{"index": 0, "records": b"abc"}, {"index": 1, "records": None}]}],
    },
    (ApiKey.PRODUCE, "response"): {
        "responses": [
            {
                "name": "t",
                "partitions": [
                    {
                        "index": 1,
                        "error_code": 87,
                        "base_offset": 42,
                        "log_append_time_ms": 1700000000123,
                        "log_start_offset": 5,
                        "record_errors": [{"batch_index": 0, "batch_index_error_message": "bad"}],
                        "error_message": "rejected",
                    },
                    {
                        "index": 2,
                        "error_code": 0,
                        "base_offset": 7,
                        "log_append_time_ms": -1,
                        "log_start_offset": 0,
                        "record_errors": [],
                        "error_message": None,
                    },
                ],
            }
        ],
        "throttle_time_ms": 17,
    },
    (ApiKey.FETCH, "request"): {
        "replica_id": -1,
        "max_wait_ms": 500,
        "min_bytes": 1,
        "max_bytes": 1000,
        "isolation_level": 1,
        "session_id": 5,
        "session_epoch": 2,
        "topics": [
            {
                "topic": "t",
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": 3,
                        "fetch_offset": 10,
                        "log_start_offset": 2,
                        "partition_max_bytes": 4096,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [{"topic": "f", "partitions": [4, 5]}],
        "rack_id": "r",
    },
    (ApiKey.FETCH, "response"): {
        "throttle_time_ms": 3,
        "error_code": 0,
        "session_id": 9,
        "responses": [
            {
                "topic": "t",
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": 0,
                        "high_watermark": 100,
                        "last_stable_offset": 90,
                        "log_start_offset": 1,
                        "aborted_transactions": [{"producer_id": 7, "first_offset": 8}],
                        "preferred_read_replica": 2,
                        "records": b"xyz",
                    },
                    {
                        "partition_index": 1,
                        "error_code": 6,
                        "high_watermark": -1,
                        "last_stable_offset": -1,
                        "log_start_offset": -1,
                        "aborted_transactions": None,
                        "preferred_read_replica": -1,
                        "records": None,
                    },
                ],
            }
        ],
    },
    (ApiKey.LIST_OFFSETS, "request"): {
        "replica_id": -1,
        "isolation_level": 1,
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "current_leader_epoch": 4, "timestamp": -1}]}],
    },
    (ApiKey.LIST_OFFSETS, "response"): {
        "throttle_time_ms": 5,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {"partition_index": 0, "error_code": 0, "timestamp": -1, "offset": 42, "leader_epoch": 4}
                ],
            }
        ],
    },
    (ApiKey.METADATA, "request"): {
        "topics": [{"name": "a"}, {"name": "b"}],
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": True,
        "include_topic_authorized_operations": True,
    },
    (ApiKey.METADATA, "response"): {
        "throttle_time_ms": 7,
        "brokers": [{"node_id": 1, "host": "h", "port": 9092, "rack": "r"}],
        "cluster_id": "c",
        "controller_id": 1,
        "topics": [
            {
                "error_code": 0,
                "name": "t",
                "is_internal": True,
                "partitions": [
                    {
                        "error_code": 0,
                        "partition_index": 0,
                        "leader_id": 1,
                        "leader_epoch": 2,
                        "replica_nodes": [1, 2],
                        "isr_nodes": [1],
                        "offline_replicas": [2],
                    }
                ],
                "topic_authorized_operations": 0x18,
            }
        ],
        "cluster_authorized_operations": 0x84,
    },
    (ApiKey.API_VERSIONS, "request"): {},
    (ApiKey.API_VERSIONS, "response"): {
        "error_code": 0,
        "api_keys": [
            {"api_key": 0, "min_version": 0, "max_version": 8},
            {"api_key": 18, "min_version": 0, "max_version": 2},
        ],
        "throttle_time_ms": 1,
    },
    (ApiKey.CREATE_TOPICS, "request"): {
        "topics": [
            {
                "name": "n",
                "num_partitions": 3,
                "replication_factor": 1,
                "assignments": [{"partition_index": 0, "broker_ids": [1, 2]}],
                "configs": [{"name": "k", "value": "v"}, {"name": "k2", "value": None}],
            }
        ],
        "timeout_ms": 1000,
        "validate_only": True,
    },
    (ApiKey.CREATE_TOPICS, "response"): {
        "throttle_time_ms": 4,
        "topics": [
            {"name": "n", "error_code": 36, "error_message": "exists"},
            {"name": "m", "error_code": 0, "error_message": None},
        ],
    },
    (ApiKey.DELETE_TOPICS, "request"): {"topic_names": ["a", "b"], "timeout_ms": 1000},
    (ApiKey.DELETE_TOPICS, "response"): {
        "throttle_time_ms": 4,
        "responses": [{"name": "a", "error_code": 0}, {"name": "b", "error_code": 3}],
    },
    (ApiKey.INIT_PRODUCER_ID, "request"): {"transactional_id": None, "transaction_timeout_ms": 1000},
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, "request"): {
        "replica_id": 2,
        "topics": [{"topic": "t", "partitions": [{"partition": 1, "current_leader_epoch": 7, "leader_epoch": 5}]}],
    },
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, "response"): {
        "throttle_time_ms": 4,
        "topics": [
            {
                "topic": "t",
                "partitions": [
                    {"error_code": 0, "partition": 1, "leader_epoch": 5, "end_offset": 120},
                    {"error_code": 74, "partition": 2, "leader_epoch": -1, "end_offset": -1},
                ],
            }
        ],
    },
    (ApiKey.INIT_PRODUCER_ID, "response"): {
        "throttle_time_ms": 0,
        "error_code": 0,
        "producer_id": 77,
        "producer_epoch": 1,
    },
    (ApiKey.WRITE_TXN_MARKERS, "request"): {
        "markers": [
            {
                "producer_id": 9,
                "producer_epoch": 2,
                "transaction_result": True,
                "topics": [{"name": "t", "partition_indexes": [1]}],
                "coordinator_epoch": 5,
            }
        ]
    },
    (ApiKey.WRITE_TXN_MARKERS, "response"): {
        "markers": [
            {"producer_id": 9, "topics": [{"name": "t", "partitions": [{"partition_index": 1, "error_code": 52}]}]}
        ]
    },
    (ApiKey.ADD_PARTITIONS_TO_TXN, "request"): {
        "transactional_id": "tx",
        "producer_id": 77,
        "producer_epoch": 1,
        "topics": [{"name": "t", "partitions": [0, 3]}],
    },
    (ApiKey.ADD_PARTITIONS_TO_TXN, "response"): {
        "throttle_time_ms": 2,
        "results_by_topic": [
            {"name": "t", "results_by_partition": [{"partition_index": 3, "partition_error_code": 51}]}
        ],
    },
    (ApiKey.ADD_OFFSETS_TO_TXN, "request"): {
        "transactional_id": "tx",
        "producer_id": 77,
        "producer_epoch": 1,
        "group_id": "g",
    },
    (ApiKey.ADD_OFFSETS_TO_TXN, "response"): {"throttle_time_ms": 2, "error_code": 47},
    (ApiKey.END_TXN, "request"): {"transactional_id": "tx", "producer_id": 77, "producer_epoch": 1, "committed": True},
    (ApiKey.END_TXN, "response"): {"throttle_time_ms": 2, "error_code": 48},
    (ApiKey.TXN_OFFSET_COMMIT, "request"): {
        "transactional_id": "tx",
        "group_id": "g",
        "producer_id": 77,
        "producer_epoch": 1,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 42,
                        "committed_leader_epoch": 5,
                        "committed_metadata": None,
                    }
                ],
            }
        ],
    },
    (ApiKey.TXN_OFFSET_COMMIT, "response"): {
        "throttle_time_ms": 2,
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "error_code": 0}]}],
    },
    (ApiKey.DESCRIBE_TRANSACTIONS, "request"): {"transactional_ids": ["tx"]},
    (ApiKey.DESCRIBE_TRANSACTIONS, "response"): {
        "throttle_time_ms": 2,
        "transaction_states": [
            {
                "error_code": 0,
                "transactional_id": "tx",
                "transaction_state": "Ongoing",
                "transaction_timeout_ms": 1000,
                "transaction_start_time_ms": 5,
                "producer_id": 77,
                "producer_epoch": 1,
                "topics": [{"topic": "t", "partitions": [3]}],
            }
        ],
    },
    (ApiKey.LIST_TRANSACTIONS, "request"): {
        "state_filters": ["Ongoing"],
        "producer_id_filters": [77],
        "duration_filter": 9,
    },
    (ApiKey.LIST_TRANSACTIONS, "response"): {
        "throttle_time_ms": 2,
        "error_code": 0,
        "unknown_state_filters": ["x"],
        "transaction_states": [{"transactional_id": "tx", "producer_id": 77, "transaction_state": "Ongoing"}],
    },
    (ApiKey.DESCRIBE_CONFIGS, "request"): {
        "resources": [
            {"resource_type": 2, "resource_name": "t", "configuration_keys": ["retention.ms"]},
            {"resource_type": 2, "resource_name": "u", "configuration_keys": None},
        ],
        "include_synonyms": True,
        "include_documentation": True,
    },
    (ApiKey.DESCRIBE_CONFIGS, "response"): {
        "throttle_time_ms": 6,
        "results": [
            {
                "error_code": 0,
                "error_message": None,
                "resource_type": 2,
                "resource_name": "t",
                "configs": [
                    {
                        "name": "retention.ms",
                        "value": "1000",
                        "read_only": True,
                        "config_source": 1,
                        "is_default": True,
                        "is_sensitive": False,
                        "synonyms": [{"name": "retention.ms", "value": "1000", "source": 1}],
                        "config_type": 5,
                        "documentation": "d",
                    }
                ],
            }
        ],
    },
    (ApiKey.DESCRIBE_LOG_DIRS, "request"): {"topics": [{"topic": "t", "partitions": [0, 2]}]},
    (ApiKey.DESCRIBE_LOG_DIRS, "response"): {
        "throttle_time_ms": 8,
        "results": [
            {
                "error_code": 0,
                "log_dir": "/d",
                "topics": [
                    {
                        "name": "t",
                        "partitions": [
                            {"partition_index": 2, "partition_size": 4096, "offset_lag": 0, "is_future_key": False}
                        ],
                    }
                ],
            }
        ],
    },
    (ApiKey.DELETE_RECORDS, "request"): {
        "topics": [{"name": "t", "partitions": [{"partition_index": 1, "offset": 42}]}],
        "timeout_ms": 1000,
    },
    (ApiKey.DELETE_RECORDS, "response"): {
        "throttle_time_ms": 3,
        "topics": [{"name": "t", "partitions": [{"partition_index": 1, "low_watermark": 42, "error_code": 0}]}],
    },
    (ApiKey.ALTER_CONFIGS, "request"): {
        "resources": [{"resource_type": 2, "resource_name": "t", "configs": [{"name": "k", "value": None}]}],
        "validate_only": True,
    },
    (ApiKey.ALTER_CONFIGS, "response"): {
        "throttle_time_ms": 2,
        "responses": [{"error_code": 40, "error_message": "bad", "resource_type": 2, "resource_name": "t"}],
    },
    (ApiKey.CREATE_PARTITIONS, "request"): {
        "topics": [
            {"name": "t", "count": 3, "assignments": [{"broker_ids": [0]}]},
            {"name": "u", "count": 2, "assignments": None},
        ],
        "timeout_ms": 1000,
        "validate_only": False,
    },
    (ApiKey.CREATE_PARTITIONS, "response"): {
        "throttle_time_ms": 1,
        "results": [{"name": "t", "error_code": 37, "error_message": None}],
    },
    (ApiKey.INCREMENTAL_ALTER_CONFIGS, "request"): {
        "resources": [
            {"resource_type": 4, "resource_name": "0", "configs": [{"name": "k", "config_operation": 1, "value": None}]}
        ],
        "validate_only": False,
    },
    (ApiKey.INCREMENTAL_ALTER_CONFIGS, "response"): {
        "throttle_time_ms": 0,
        "responses": [{"error_code": 0, "error_message": None, "resource_type": 4, "resource_name": "0"}],
    },
    (ApiKey.OFFSET_COMMIT, "request"): {
        "group_id": "g",
        "generation_id_or_member_epoch": 3,
        "member_id": "m",
        "group_instance_id": "i",
        "retention_time_ms": 60000,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {
                        "partition_index": 1,
                        "committed_offset": 42,
                        "committed_leader_epoch": 5,
                        "commit_timestamp": 1700000000000,
                        "committed_metadata": "md",
                    }
                ],
            }
        ],
    },
    (ApiKey.OFFSET_COMMIT, "response"): {
        "throttle_time_ms": 2,
        "topics": [{"name": "t", "partitions": [{"partition_index": 1, "error_code": 25}]}],
    },
    (ApiKey.OFFSET_FETCH, "request"): {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 3]}]},
    (ApiKey.OFFSET_FETCH, "response"): {
        "throttle_time_ms": 6,
        "error_code": 14,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {
                        "partition_index": 3,
                        "committed_offset": 9,
                        "committed_leader_epoch": 2,
                        "metadata": None,
                        "error_code": 0,
                    }
                ],
            }
        ],
    },
    (ApiKey.FIND_COORDINATOR, "request"): {"key": "g", "key_type": 1},
    (ApiKey.FIND_COORDINATOR, "response"): {
        "throttle_time_ms": 1,
        "error_code": 0,
        "error_message": "ok",
        "node_id": 2,
        "host": "h",
        "port": 9092,
    },
    (ApiKey.DESCRIBE_GROUPS, "request"): {"groups": ["g"], "include_authorized_operations": True},
    (ApiKey.DESCRIBE_GROUPS, "response"): {
        "throttle_time_ms": 4,
        "groups": [
            {
                "error_code": 0,
                "group_id": "g",
                "group_state": "Stable",
                "protocol_type": "consumer",
                "protocol_data": "range",
                "members": [
                    {
                        "member_id": "m",
                        "group_instance_id": "i",
                        "client_id": "c",
                        "client_host": "/h",
                        "member_metadata": b"md",
                        "member_assignment": b"as",
                    }
                ],
                "authorized_operations": 8,
            }
        ],
    },
    (ApiKey.LIST_GROUPS, "request"): {},
    (ApiKey.LIST_GROUPS, "response"): {
        "throttle_time_ms": 5,
        "error_code": 0,
        "groups": [{"group_id": "g", "protocol_type": "consumer"}],
    },
    (ApiKey.DELETE_GROUPS, "request"): {"groups_names": ["g", "h"]},
    (ApiKey.DELETE_GROUPS, "response"): {
        "throttle_time_ms": 0,
        "results": [{"group_id": "g", "error_code": 0}, {"group_id": "h", "error_code": 68}],
    },
    (ApiKey.JOIN_GROUP, "request"): {
        "group_id": "g",
        "session_timeout_ms": 6000,
        "rebalance_timeout_ms": 30000,
        "member_id": "m",
        "group_instance_id": "i",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"md"}],
    },
    (ApiKey.JOIN_GROUP, "response"): {
        "throttle_time_ms": 7,
        "error_code": 0,
        "generation_id": 3,
        "protocol_name": "range",
        "leader": "m",
        "member_id": "m",
        "members": [{"member_id": "m", "group_instance_id": "i", "metadata": b"md"}],
    },
    (ApiKey.SYNC_GROUP, "request"): {
        "group_id": "g",
        "generation_id": 3,
        "member_id": "m",
        "group_instance_id": "i",
        "assignments": [{"member_id": "m", "assignment": b"as"}],
    },
    (ApiKey.SYNC_GROUP, "response"): {"throttle_time_ms": 8, "error_code": 27, "assignment": b"as"},
    (ApiKey.HEARTBEAT, "request"): {"group_id": "g", "generation_id": 3, "member_id": "m", "group_instance_id": "i"},
    (ApiKey.HEARTBEAT, "response"): {"throttle_time_ms": 9, "error_code": 22},
    (ApiKey.LEAVE_GROUP, "request"): {
        "group_id": "g",
        "member_id": "m",
        "members": [{"member_id": "m", "group_instance_id": "i"}],
    },
    (ApiKey.LEAVE_GROUP, "response"): {
        "throttle_time_ms": 1,
        "error_code": 0,
        "members": [{"member_id": "m", "group_instance_id": "i", "error_code": 25}],
    },
    (ApiKey.DESCRIBE_ACLS, "request"): {
        "resource_type_filter": 2,
        "resource_name_filter": "t",
        "pattern_type_filter": 4,
        "principal_filter": None,
        "host_filter": "*",
        "operation": 3,
        "permission_type": 3,
    },
    (ApiKey.DESCRIBE_ACLS, "response"): {
        "throttle_time_ms": 4,
        "error_code": 0,
        "error_message": None,
        "resources": [
            {
                "resource_type": 2,
                "resource_name": "t",
                "pattern_type": 4,
                "acls": [{"principal": "User:a", "host": "*", "operation": 3, "permission_type": 3}],
            }
        ],
    },
    (ApiKey.CREATE_ACLS, "request"): {
        "creations": [
            {
                "resource_type": 3,
                "resource_name": "g",
                "resource_pattern_type": 4,
                "principal": "User:a",
                "host": "*",
                "operation": 3,
                "permission_type": 2,
            }
        ]
    },
    (ApiKey.CREATE_ACLS, "response"): {
        "throttle_time_ms": 2,
        "results": [{"error_code": 0, "error_message": None}, {"error_code": 42, "error_message": "bad"}],
    },
    (ApiKey.DELETE_ACLS, "request"): {
        "filters": [
            {
                "resource_type_filter": 1,
                "resource_name_filter": None,
                "pattern_type_filter": 1,
                "principal_filter": "User:a",
                "host_filter": None,
                "operation": 1,
                "permission_type": 1,
            }
        ]
    },
    (ApiKey.DELETE_ACLS, "response"): {
        "throttle_time_ms": 0,
        "filter_results": [
            {
                "error_code": 0,
                "error_message": None,
                "matching_acls": [
                    {
                        "error_code": 0,
                        "error_message": None,
                        "resource_type": 2,
                        "resource_name": "t",
                        "pattern_type": 4,
                        "principal": "User:a",
                        "host": "*",
                        "operation": 4,
                        "permission_type": 3,
                    }
                ],
            }
        ],
    },
    (ApiKey.OFFSET_DELETE, "request"): {
        "group_id": "g",
        "topics": [{"name": "t", "partitions": [{"partition_index": 2}]}],
    },
    (ApiKey.OFFSET_DELETE, "response"): {
        "error_code": 0,
        "throttle_time_ms": 3,
        "topics": [{"name": "t", "partitions": [{"partition_index": 2, "error_code": 86}]}],
    },
    (ApiKey.SASL_HANDSHAKE, "request"): {"mechanism": "PLAIN"},
    (ApiKey.SASL_HANDSHAKE, "response"): {"error_code": 33, "mechanisms": ["SCRAM-SHA-256", "SCRAM-SHA-512"]},
    (ApiKey.SASL_AUTHENTICATE, "request"): {"auth_bytes": b"\0u\0p"},
    (ApiKey.SASL_AUTHENTICATE, "response"): {
        "error_code": 58,
        "error_message": "no",
        "auth_bytes": b"",
        "session_lifetime_ms": 9,
    },
}


def produce_request(v):
    return (
        _if(v >= 3, string("tx"))
        + i16(-1)
        + i32(1500)
        + array([string("t") + array([i32(0) + nbytes(b"abc"), i32(1) + nbytes(None)])])
    )


def produce_response(v):
    first = (
        i32(1)
        + i16(87)
        + i64(42)
        + _if(v >= 2, i64(1700000000123))
        + _if(v >= 5, i64(5))
        + _if(v >= 8, array([i32(0) + string("bad")]) + string("rejected"))
    )
    second = (
        i32(2) + i16(0) + i64(7) + _if(v >= 2, i64(-1)) + _if(v >= 5, i64(0)) + _if(v >= 8, array([]) + string(None))
    )
    return array([string("t") + array([first, second])]) + _if(v >= 1, i32(17))


def fetch_request(v):
    partition = i32(0) + _if(v >= 9, i32(3)) + i64(10) + _if(v >= 5, i64(2)) + i32(4096)
    return (
        i32(-1)
        + i32(500)
        + i32(1)
        + i32(1000)
        + i8(1)
        + _if(v >= 7, i32(5) + i32(2))
        + array([string("t") + array([partition])])
        + _if(v >= 7, array([string("f") + array([i32(4), i32(5)])]))
        + _if(v >= 11, string("r"))
    )


def fetch_response(v):
    first = (
        i32(0)
        + i16(0)
        + i64(100)
        + i64(90)
        + _if(v >= 5, i64(1))
        + array([i64(7) + i64(8)])
        + _if(v >= 11, i32(2))
        + nbytes(b"xyz")
    )
    second = (
        i32(1) + i16(6) + i64(-1) + i64(-1) + _if(v >= 5, i64(-1)) + array(None) + _if(v >= 11, i32(-1)) + nbytes(None)
    )
    return i32(3) + _if(v >= 7, i16(0) + i32(9)) + array([string("t") + array([first, second])])


def list_offsets_request(v):
    return i32(-1) + _if(v >= 2, i8(1)) + array([string("t") + array([i32(0) + _if(v >= 4, i32(4)) + i64(-1)])])


def list_offsets_response(v):
    partition = i32(0) + i16(0) + i64(-1) + i64(42) + _if(v >= 4, i32(4))
    return _if(v >= 2, i32(5)) + array([string("t") + array([partition])])


def metadata_request(v):
    return array([string("a"), string("b")]) + _if(v >= 4, boolean(False)) + _if(v >= 8, boolean(True) + boolean(True))


def metadata_response(v):
    broker = i32(1) + string("h") + i32(9092) + _if(v >= 1, string("r"))
    partition = (
        i16(0)
        + i32(0)
        + i32(1)
        + _if(v >= 7, i32(2))
        + array([i32(1), i32(2)])
        + array([i32(1)])
        + _if(v >= 5, array([i32(2)]))
    )
    topic = i16(0) + string("t") + _if(v >= 1, boolean(True)) + array([partition]) + _if(v >= 8, i32(0x18))
    return (
        _if(v >= 3, i32(7))
        + array([broker])
        + _if(v >= 2, string("c"))
        + _if(v >= 1, i32(1))
        + array([topic])
        + _if(v >= 8, i32(0x84))
    )


def api_versions_request(v):
    return b""


def api_versions_response(v):
    return i16(0) + array([i16(0) + i16(0) + i16(8), i16(18) + i16(0) + i16(2)]) + _if(v >= 1, i32(1))


def create_topics_request(v):
    topic = (
        string("n")
        + i32(3)
        + i16(1)
        + array([i32(0) + array([i32(1), i32(2)])])
        + array([string("k") + string("v"), string("k2") + string(None)])
    )
    return array([topic]) + i32(1000) + _if(v >= 1, boolean(True))


def create_topics_response(v):
    return _if(v >= 2, i32(4)) + array(
        [string("n") + i16(36) + _if(v >= 1, string("exists")), string("m") + i16(0) + _if(v >= 1, string(None))]
    )


def delete_topics_request(v):
    return array([string("a"), string("b")]) + i32(1000)


def delete_topics_response(v):
    return _if(v >= 1, i32(4)) + array([string("a") + i16(0), string("b") + i16(3)])


def init_producer_id_request(v):
    return string(None) + i32(1000)


def init_producer_id_response(v):
    return i32(0) + i16(0) + i64(77) + i16(1)


def write_txn_markers_request(v):
    return array([i64(9) + i16(2) + boolean(True) + array([string("t") + array([i32(1)])]) + i32(5)])


def write_txn_markers_response(v):
    return array([i64(9) + array([string("t") + array([i32(1) + i16(52)])])])


def offset_for_leader_epoch_request(v):
    partition = i32(1) + _if(v >= 2, i32(7)) + i32(5)
    return _if(v >= 3, i32(2)) + array([string("t") + array([partition])])


def offset_for_leader_epoch_response(v):
    def partition(error: int, index: int, epoch: int, end: int) -> bytes:
        return i16(error) + i32(index) + _if(v >= 1, i32(epoch)) + i64(end)

    return _if(v >= 2, i32(4)) + array([string("t") + array([partition(0, 1, 5, 120), partition(74, 2, -1, -1)])])


def add_partitions_to_txn_request(v):
    return string("tx") + i64(77) + i16(1) + array([string("t") + array([i32(0), i32(3)])])


def add_partitions_to_txn_response(v):
    return i32(2) + array([string("t") + array([i32(3) + i16(51)])])


def add_offsets_to_txn_request(v):
    return string("tx") + i64(77) + i16(1) + string("g")


def add_offsets_to_txn_response(v):
    return i32(2) + i16(47)


def end_txn_request(v):
    return string("tx") + i64(77) + i16(1) + boolean(True)


def end_txn_response(v):
    return i32(2) + i16(48)


def txn_offset_commit_request(v):
    partition = i32(0) + i64(42) + _if(v >= 2, i32(5)) + string(None)
    return string("tx") + string("g") + i64(77) + i16(1) + array([string("t") + array([partition])])


def txn_offset_commit_response(v):
    return i32(2) + array([string("t") + array([i32(0) + i16(0)])])


def _cstring(text: str) -> bytes:
    data = text.encode()
    return bytes([len(data) + 1]) + data  # one-byte unsigned varint lengths: short strings only


def _carray(items: list[bytes]) -> bytes:
    return bytes([len(items) + 1]) + b"".join(items)


TAGS = b"\x00"  # an empty tagged-field section


def describe_transactions_request(v):
    return _carray([_cstring("tx")]) + TAGS


def describe_transactions_response(v):
    topic = _cstring("t") + _carray([i32(3)]) + TAGS
    state = (
        i16(0) + _cstring("tx") + _cstring("Ongoing") + i32(1000) + i64(5) + i64(77) + i16(1) + _carray([topic]) + TAGS
    )
    return i32(2) + _carray([state]) + TAGS


def list_transactions_request(v):
    return _carray([_cstring("Ongoing")]) + _carray([i64(77)]) + _if(v >= 1, i64(9)) + TAGS


def list_transactions_response(v):
    state = _cstring("tx") + i64(77) + _cstring("Ongoing") + TAGS
    return i32(2) + i16(0) + _carray([_cstring("x")]) + _carray([state]) + TAGS


def describe_configs_request(v):
    return (
        array([i8(2) + string("t") + array([string("retention.ms")]), i8(2) + string("u") + array(None)])
        + _if(v >= 1, boolean(True))
        + _if(v >= 3, boolean(True))
    )


def describe_configs_response(v):
    config = (
        string("retention.ms")
        + string("1000")
        + boolean(True)
        + _if(v >= 1, i8(1))
        + _if(v == 0, boolean(True))
        + boolean(False)
        + _if(v >= 1, array([string("retention.ms") + string("1000") + i8(1)]))
        + _if(v >= 3, i8(5) + string("d"))
    )
    return i32(6) + array([i16(0) + string(None) + i8(2) + string("t") + array([config])])


def describe_log_dirs_request(v):
    return array([string("t") + array([i32(0), i32(2)])])


def describe_log_dirs_response(v):
    partition = i32(2) + i64(4096) + i64(0) + boolean(False)
    return i32(8) + array([i16(0) + string("/d") + array([string("t") + array([partition])])])


def delete_records_request(v):
    return array([string("t") + array([i32(1) + i64(42)])]) + i32(1000)


def delete_records_response(v):
    return i32(3) + array([string("t") + array([i32(1) + i64(42) + i16(0)])])


def alter_configs_request(v):
    return array([i8(2) + string("t") + array([string("k") + string(None)])]) + boolean(True)


def alter_configs_response(v):
    return i32(2) + array([i16(40) + string("bad") + i8(2) + string("t")])


def create_partitions_request(v):
    return (
        array([string("t") + i32(3) + array([array([i32(0)])]), string("u") + i32(2) + array(None)])
        + i32(1000)
        + boolean(False)
    )


def create_partitions_response(v):
    return i32(1) + array([string("t") + i16(37) + string(None)])


def incremental_alter_configs_request(v):
    return array([i8(4) + string("0") + array([string("k") + i8(1) + string(None)])]) + boolean(False)


def incremental_alter_configs_response(v):
    return i32(0) + array([i16(0) + string(None) + i8(4) + string("0")])


# The consumer-group APIs, from Kafka's message JSON.


def offset_commit_request(v):
    partition = i32(1) + i64(42) + _if(v >= 6, i32(5)) + _if(v == 1, i64(1700000000000)) + string("md")
    return (
        string("g")
        + _if(v >= 1, i32(3) + string("m"))
        + _if(v >= 7, string("i"))
        + _if(2 <= v <= 4, i64(60000))
        + array([string("t") + array([partition])])
    )


def offset_commit_response(v):
    return _if(v >= 3, i32(2)) + array([string("t") + array([i32(1) + i16(25)])])


def offset_fetch_request(v):
    return string("g") + array([string("t") + array([i32(0), i32(3)])])


def offset_fetch_response(v):
    partition = i32(3) + i64(9) + _if(v >= 5, i32(2)) + string(None) + i16(0)
    return _if(v >= 3, i32(6)) + array([string("t") + array([partition])]) + _if(v >= 2, i16(14))


def find_coordinator_request(v):
    return string("g") + _if(v >= 1, i8(1))


def find_coordinator_response(v):
    return _if(v >= 1, i32(1)) + i16(0) + _if(v >= 1, string("ok")) + i32(2) + string("h") + i32(9092)


def describe_groups_request(v):
    return array([string("g")]) + _if(v >= 3, boolean(True))


def describe_groups_response(v):
    member = string("m") + _if(v >= 4, string("i")) + string("c") + string("/h") + nbytes(b"md") + nbytes(b"as")
    group = (
        i16(0)
        + string("g")
        + string("Stable")
        + string("consumer")
        + string("range")
        + array([member])
        + _if(v >= 3, i32(8))
    )
    return _if(v >= 1, i32(4)) + array([group])


def list_groups_request(v):
    return b""


def list_groups_response(v):
    return _if(v >= 1, i32(5)) + i16(0) + array([string("g") + string("consumer")])


def delete_groups_request(v):
    return array([string("g"), string("h")])


def delete_groups_response(v):
    return i32(0) + array([string("g") + i16(0), string("h") + i16(68)])


def _acl_filter(v, resource_type, name, pattern_type, principal, host, operation, permission):
    return (
        i8(resource_type)
        + string(name)
        + _if(v >= 1, i8(pattern_type))
        + string(principal)
        + string(host)
        + i8(operation)
        + i8(permission)
    )


def describe_acls_request(v):
    return _acl_filter(v, 2, "t", 4, None, "*", 3, 3)


def describe_acls_response(v):
    acl = string("User:a") + string("*") + i8(3) + i8(3)
    return i32(4) + i16(0) + string(None) + array([i8(2) + string("t") + _if(v >= 1, i8(4)) + array([acl])])


def create_acls_request(v):
    return array([i8(3) + string("g") + _if(v >= 1, i8(4)) + string("User:a") + string("*") + i8(3) + i8(2)])


def create_acls_response(v):
    return i32(2) + array([i16(0) + string(None), i16(42) + string("bad")])


def delete_acls_request(v):
    return array([_acl_filter(v, 1, None, 1, "User:a", None, 1, 1)])


def delete_acls_response(v):
    matching = (
        i16(0)
        + string(None)
        + i8(2)
        + string("t")
        + _if(v >= 1, i8(4))
        + string("User:a")
        + string("*")
        + i8(4)
        + i8(3)
    )
    return i32(0) + array([i16(0) + string(None) + array([matching])])


def offset_delete_request(v):
    return string("g") + array([string("t") + array([i32(2)])])


def offset_delete_response(v):
    return i16(0) + i32(3) + array([string("t") + array([i32(2) + i16(86)])])


def sasl_handshake_request(v):
    return string("PLAIN")


def sasl_handshake_response(v):
    return i16(33) + array([string("SCRAM-SHA-256"), string("SCRAM-SHA-512")])


def sasl_authenticate_request(v):
    return i32(4) + b"\0u\0p"


def sasl_authenticate_response(v):
    return i16(58) + string("no") + i32(0) + _if(v >= 1, i64(9))


def join_group_request(v):
    return (
        string("g")
        + i32(6000)
        + _if(v >= 1, i32(30000))
        + string("m")
        + _if(v >= 5, string("i"))
        + string("consumer")
        + array([string("range") + nbytes(b"md")])
    )


def join_group_response(v):
    member = string("m") + _if(v >= 5, string("i")) + nbytes(b"md")
    return _if(v >= 2, i32(7)) + i16(0) + i32(3) + string("range") + string("m") + string("m") + array([member])


def sync_group_request(v):
    return string("g") + i32(3) + string("m") + _if(v >= 3, string("i")) + array([string("m") + nbytes(b"as")])


def sync_group_response(v):
    return _if(v >= 1, i32(8)) + i16(27) + nbytes(b"as")


def heartbeat_request(v):
    return string("g") + i32(3) + string("m") + _if(v >= 3, string("i"))


def heartbeat_response(v):
    return _if(v >= 1, i32(9)) + i16(22)


def leave_group_request(v):
    return string("g") + _if(v <= 2, string("m")) + _if(v >= 3, array([string("m") + string("i")]))


def leave_group_response(v):
    return _if(v >= 1, i32(1)) + i16(0) + _if(v >= 3, array([string("m") + string("i") + i16(25)]))


LAYOUTS = {
    (ApiKey.PRODUCE, "request"): produce_request,
    (ApiKey.PRODUCE, "response"): produce_response,
    (ApiKey.FETCH, "request"): fetch_request,
    (ApiKey.FETCH, "response"): fetch_response,
    (ApiKey.LIST_OFFSETS, "request"): list_offsets_request,
    (ApiKey.LIST_OFFSETS, "response"): list_offsets_response,
    (ApiKey.METADATA, "request"): metadata_request,
    (ApiKey.METADATA, "response"): metadata_response,
    (ApiKey.API_VERSIONS, "request"): api_versions_request,
    (ApiKey.API_VERSIONS, "response"): api_versions_response,
    (ApiKey.CREATE_TOPICS, "request"): create_topics_request,
    (ApiKey.CREATE_TOPICS, "response"): create_topics_response,
    (ApiKey.DELETE_TOPICS, "request"): delete_topics_request,
    (ApiKey.DELETE_TOPICS, "response"): delete_topics_response,
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, "request"): offset_for_leader_epoch_request,
    (ApiKey.OFFSET_FOR_LEADER_EPOCH, "response"): offset_for_leader_epoch_response,
    (ApiKey.INIT_PRODUCER_ID, "request"): init_producer_id_request,
    (ApiKey.INIT_PRODUCER_ID, "response"): init_producer_id_response,
    (ApiKey.WRITE_TXN_MARKERS, "request"): write_txn_markers_request,
    (ApiKey.WRITE_TXN_MARKERS, "response"): write_txn_markers_response,
    (ApiKey.ADD_PARTITIONS_TO_TXN, "request"): add_partitions_to_txn_request,
    (ApiKey.ADD_PARTITIONS_TO_TXN, "response"): add_partitions_to_txn_response,
    (ApiKey.ADD_OFFSETS_TO_TXN, "request"): add_offsets_to_txn_request,
    (ApiKey.ADD_OFFSETS_TO_TXN, "response"): add_offsets_to_txn_response,
    (ApiKey.END_TXN, "request"): end_txn_request,
    (ApiKey.END_TXN, "response"): end_txn_response,
    (ApiKey.TXN_OFFSET_COMMIT, "request"): txn_offset_commit_request,
    (ApiKey.TXN_OFFSET_COMMIT, "response"): txn_offset_commit_response,
    (ApiKey.DESCRIBE_TRANSACTIONS, "request"): describe_transactions_request,
    (ApiKey.DESCRIBE_TRANSACTIONS, "response"): describe_transactions_response,
    (ApiKey.LIST_TRANSACTIONS, "request"): list_transactions_request,
    (ApiKey.LIST_TRANSACTIONS, "response"): list_transactions_response,
    (ApiKey.DESCRIBE_CONFIGS, "request"): describe_configs_request,
    (ApiKey.DESCRIBE_CONFIGS, "response"): describe_configs_response,
    (ApiKey.DESCRIBE_LOG_DIRS, "request"): describe_log_dirs_request,
    (ApiKey.DESCRIBE_LOG_DIRS, "response"): describe_log_dirs_response,
    (ApiKey.DELETE_RECORDS, "request"): delete_records_request,
    (ApiKey.DELETE_RECORDS, "response"): delete_records_response,
    (ApiKey.ALTER_CONFIGS, "request"): alter_configs_request,
    (ApiKey.ALTER_CONFIGS, "response"): alter_configs_response,
    (ApiKey.CREATE_PARTITIONS, "request"): create_partitions_request,
    (ApiKey.CREATE_PARTITIONS, "response"): create_partitions_response,
    (ApiKey.INCREMENTAL_ALTER_CONFIGS, "request"): incremental_alter_configs_request,
    (ApiKey.INCREMENTAL_ALTER_CONFIGS, "response"): incremental_alter_configs_response,
    (ApiKey.OFFSET_COMMIT, "request"): offset_commit_request,
    (ApiKey.OFFSET_COMMIT, "response"): offset_commit_response,
    (ApiKey.OFFSET_FETCH, "request"): offset_fetch_request,
    (ApiKey.OFFSET_FETCH, "response"): offset_fetch_response,
    (ApiKey.FIND_COORDINATOR, "request"): find_coordinator_request,
    (ApiKey.FIND_COORDINATOR, "response"): find_coordinator_response,
    (ApiKey.DESCRIBE_GROUPS, "request"): describe_groups_request,
    (ApiKey.DESCRIBE_GROUPS, "response"): describe_groups_response,
    (ApiKey.LIST_GROUPS, "request"): list_groups_request,
    (ApiKey.LIST_GROUPS, "response"): list_groups_response,
    (ApiKey.DELETE_GROUPS, "request"): delete_groups_request,
    (ApiKey.DELETE_GROUPS, "response"): delete_groups_response,
    (ApiKey.JOIN_GROUP, "request"): join_group_request,
    (ApiKey.JOIN_GROUP, "response"): join_group_response,
    (ApiKey.SYNC_GROUP, "request"): sync_group_request,
    (ApiKey.SYNC_GROUP, "response"): sync_group_response,
    (ApiKey.HEARTBEAT, "request"): heartbeat_request,
    (ApiKey.HEARTBEAT, "response"): heartbeat_response,
    (ApiKey.LEAVE_GROUP, "request"): leave_group_request,
    (ApiKey.LEAVE_GROUP, "response"): leave_group_response,
    (ApiKey.DESCRIBE_ACLS, "request"): describe_acls_request,
    (ApiKey.DESCRIBE_ACLS, "response"): describe_acls_response,
    (ApiKey.CREATE_ACLS, "request"): create_acls_request,
    (ApiKey.CREATE_ACLS, "response"): create_acls_response,
    (ApiKey.DELETE_ACLS, "request"): delete_acls_request,
    (ApiKey.DELETE_ACLS, "response"): delete_acls_response,
    (ApiKey.OFFSET_DELETE, "request"): offset_delete_request,
    (ApiKey.OFFSET_DELETE, "response"): offset_delete_response,
    (ApiKey.SASL_HANDSHAKE, "request"): sasl_handshake_request,
    (ApiKey.SASL_HANDSHAKE, "response"): sasl_handshake_response,
    (ApiKey.SASL_AUTHENTICATE, "request"): sasl_authenticate_request,
    (ApiKey.SASL_AUTHENTICATE, "response"): sasl_authenticate_response,
}


def struct_of(key, kind):
    return APIS[key].request if kind == "request" else APIS[key].response


def encode(key, kind, value, version) -> bytes:
    writer = Writer()
    struct_of(key, kind).encode(writer, value, version)
    return b"".join(writer.finish())


def decode(key, kind, data, version) -> dict:
    reader = Reader(data)
    value = struct_of(key, kind).decode(reader, version)
    assert reader.remaining == 0, "the decoder did not use the whole message"
    return value


ALL_VERSIONS = [
    pytest.param(key, kind, version, id=f"{key.name}-v{version}-{kind}")
    for key, api in APIS.items()
    for kind in ("request", "response")
    for version in range(api.min_version, api.max_version + 1)
]


def test_advertised_version_ranges():
    ranges = {api.key.name: (api.min_version, api.max_version) for api in APIS.values()}
    assert ranges == {
        "PRODUCE": (0, 8),
        "FETCH": (4, 11),
        "LIST_OFFSETS": (1, 5),
        "METADATA": (0, 8),
        "API_VERSIONS": (0, 2),
        "CREATE_TOPICS": (0, 4),
        "DELETE_TOPICS": (0, 3),
        "INIT_PRODUCER_ID": (0, 1),
        "OFFSET_FOR_LEADER_EPOCH": (0, 3),
        "ADD_PARTITIONS_TO_TXN": (0, 2),
        "ADD_OFFSETS_TO_TXN": (0, 2),
        "END_TXN": (0, 2),
        "TXN_OFFSET_COMMIT": (0, 2),
        "DESCRIBE_TRANSACTIONS": (0, 0),
        "LIST_TRANSACTIONS": (0, 1),
        "DESCRIBE_CONFIGS": (0, 3),
        "DESCRIBE_LOG_DIRS": (0, 1),
        "DELETE_RECORDS": (0, 1),
        "ALTER_CONFIGS": (0, 1),
        "CREATE_PARTITIONS": (0, 1),
        "INCREMENTAL_ALTER_CONFIGS": (0, 0),
        "OFFSET_COMMIT": (0, 7),
        "OFFSET_FETCH": (0, 5),
        "FIND_COORDINATOR": (0, 2),
        "DESCRIBE_GROUPS": (0, 4),
        "LIST_GROUPS": (0, 2),
        "DELETE_GROUPS": (0, 1),
        "OFFSET_DELETE": (0, 0),
        "JOIN_GROUP": (0, 5),
        "SYNC_GROUP": (0, 3),
        "HEARTBEAT": (0, 3),
        "LEAVE_GROUP": (0, 3),
        "SASL_HANDSHAKE": (0, 1),
        "SASL_AUTHENTICATE": (0, 1),
        "DESCRIBE_ACLS": (0, 1),
        "CREATE_ACLS": (0, 1),
        "DELETE_ACLS": (0, 1),
        "WRITE_TXN_MARKERS": (0, 0),
    }


def test_the_manuals_protocol_table_lists_exactly_the_advertised_versions():
    """The manual's table of APIs and versions and ApiVersions grow together: one row per API."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "operating" / "protocol.md").read_text(encoding="utf-8")
    section = page.split("# Protocol\n", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| [A-Za-z]+ \((\d+)\) \| (\d+)(?:-(\d+))? \|", section, re.MULTILINE)
    documented = [(int(key), (int(low), int(high or low))) for key, low, high in rows]
    assert sorted(documented) == sorted((int(api.key), (api.min_version, api.max_version)) for api in APIS.values())


@pytest.mark.parametrize("key, kind, version", ALL_VERSIONS)
def test_encoding_matches_hand_layout(key, kind, version):
    assert encode(key, kind, MESSAGES[key, kind], version) == LAYOUTS[key, kind](version)


@pytest.mark.parametrize("key, kind, version", ALL_VERSIONS)
def test_hand_layout_decodes_to_the_message(key, kind, version):
    struct = struct_of(key, kind)
    decoded = decode(key, kind, LAYOUTS[key, kind](version), version)
    assert set(decoded) == {field.name for field in struct.fields}, "every field, present or not"
    assert canonical(struct, decoded, version) == canonical(struct, MESSAGES[key, kind], version)


# --- Produce ------------------------------------------------------------------------------------


def _partitions(body):
    return body["responses"][0]["partitions"]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_request_before_v3_has_no_transactional_id(version):
    data = produce_request(version)
    assert data.startswith(i16(-1) + i32(1500))  # acks first
    assert decode(ApiKey.PRODUCE, "request", data, version)["transactional_id"] is None


@pytest.mark.parametrize("version", range(3, 9))
def test_produce_request_transactional_id_comes_first_from_v3(version):
    data = encode(ApiKey.PRODUCE, "request", dict(MESSAGES[ApiKey.PRODUCE, "request"], transactional_id=None), version)
    assert data.startswith(i16(-1) + i16(-1) + i32(1500))


def test_produce_response_v0_has_only_base_fields_and_no_throttle():
    body = decode(ApiKey.PRODUCE, "response", produce_response(0), 0)
    assert body["throttle_time_ms"] == 0
    first = _partitions(body)[0]
    assert (first["index"], first["error_code"], first["base_offset"]) == (1, 87, 42)
    assert first["log_append_time_ms"] == -1 and first["log_start_offset"] == -1
    assert first["record_errors"] == [] and first["error_message"] is None


@pytest.mark.parametrize("version", range(1, 9))
def test_produce_response_throttle_time_is_the_last_field_from_v1(version):
    data = encode(ApiKey.PRODUCE, "response", MESSAGES[ApiKey.PRODUCE, "response"], version)
    assert data.endswith(i32(17))
    assert data[:-4] == produce_response(version)[:-4]


def test_produce_response_v0_ends_with_the_last_partition():
    v0 = {
        "responses": [{"name": "t", "partitions": [{"index": 1, "error_code": 87, "base_offset": 42}]}],
        "throttle_time_ms": 17,
    }
    assert encode(ApiKey.PRODUCE, "response", v0, 0) == array([string("t") + array([i32(1) + i16(87) + i64(42)])])


@pytest.mark.parametrize("version, has_append_time", [(0, False), (1, False), (2, True), (8, True)])
def test_produce_response_log_append_time_from_v2(version, has_append_time):
    first = _partitions(decode(ApiKey.PRODUCE, "response", produce_response(version), version))[0]
    assert first["log_append_time_ms"] == (1700000000123 if has_append_time else -1)


@pytest.mark.parametrize("version, has_start", [(4, False), (5, True), (7, True)])
def test_produce_response_log_start_offset_from_v5(version, has_start):
    first = _partitions(decode(ApiKey.PRODUCE, "response", produce_response(version), version))[0]
    assert first["log_start_offset"] == (5 if has_start else -1)


@pytest.mark.parametrize("version", range(0, 9))
def test_produce_response_record_errors_and_error_message_only_in_v8(version):
    first = _partitions(decode(ApiKey.PRODUCE, "response", produce_response(version), version))[0]
    if version >= 8:
        assert first["record_errors"] == [{"batch_index": 0, "batch_index_error_message": "bad"}]
        assert first["error_message"] == "rejected"
    else:
        assert first["record_errors"] == [] and first["error_message"] is None


# --- Fetch --------------------------------------------------------------------------------------


def test_fetch_request_v4_isolation_level_follows_max_bytes():
    data = fetch_request(4)
    assert data[:17] == i32(-1) + i32(500) + i32(1) + i32(1000) + i8(1)
    assert decode(ApiKey.FETCH, "request", data, 4)["isolation_level"] == 1


@pytest.mark.parametrize("version", [4, 5, 6])
def test_fetch_request_before_v7_has_no_session_or_forgotten_topics(version):
    body = decode(ApiKey.FETCH, "request", fetch_request(version), version)
    assert (body["session_id"], body["session_epoch"]) == (0, -1)
    assert body["forgotten_topics_data"] == []


@pytest.mark.parametrize("version", range(7, 12))
def test_fetch_request_session_and_forgotten_topics_from_v7(version):
    body = decode(ApiKey.FETCH, "request", fetch_request(version), version)
    assert (body["session_id"], body["session_epoch"]) == (5, 2)
    assert canonical(struct_of(ApiKey.FETCH, "request"), body, version)["forgotten_topics_data"] == [
        {"topic": "f", "partitions": [4, 5]}
    ]


@pytest.mark.parametrize("version", range(4, 12))
def test_fetch_request_current_leader_epoch_from_v9_and_log_start_offset_from_v5(version):
    partition = decode(ApiKey.FETCH, "request", fetch_request(version), version)["topics"][0]["partitions"][0]
    assert partition["current_leader_epoch"] == (3 if version >= 9 else -1)
    assert partition["log_start_offset"] == (2 if version >= 5 else -1)
    assert partition["fetch_offset"] == 10 and partition["partition_max_bytes"] == 4096


@pytest.mark.parametrize("version", range(4, 12))
def test_fetch_request_rack_id_only_in_v11(version):
    data = fetch_request(version)
    assert decode(ApiKey.FETCH, "request", data, version)["rack_id"] == ("r" if version >= 11 else "")
    assert data.endswith(string("r")) == (version >= 11)


@pytest.mark.parametrize("version", range(4, 12))
def test_fetch_response_preferred_read_replica_only_in_v11(version):
    body = decode(ApiKey.FETCH, "response", fetch_response(version), version)
    first, second = body["responses"][0]["partitions"]
    assert first["preferred_read_replica"] == (2 if version >= 11 else -1)
    assert bytes(first["records"]) == b"xyz" and second["records"] is None


@pytest.mark.parametrize("version", range(4, 12))
def test_fetch_response_top_level_error_and_session_from_v7(version):
    data = fetch_response(version)
    body = decode(ApiKey.FETCH, "response", data, version)
    assert body["throttle_time_ms"] == 3
    assert body["session_id"] == (9 if version >= 7 else 0)
    assert data[4:10] == (i16(0) + i32(9) if version >= 7 else i32(1) + i16(1))  # error, session / count, name


@pytest.mark.parametrize("version", range(4, 12))
def test_fetch_response_aborted_transactions_may_be_null(version):
    partitions = decode(ApiKey.FETCH, "response", fetch_response(version), version)["responses"][0]["partitions"]
    assert partitions[0]["aborted_transactions"] == [{"producer_id": 7, "first_offset": 8}]
    assert partitions[1]["aborted_transactions"] is None


# --- ListOffsets --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(1, 6))
def test_list_offsets_versions(version):
    request = decode(ApiKey.LIST_OFFSETS, "request", list_offsets_request(version), version)
    assert request["isolation_level"] == (1 if version >= 2 else 0)
    assert request["topics"][0]["partitions"][0]["current_leader_epoch"] == (4 if version >= 4 else -1)
    response = decode(ApiKey.LIST_OFFSETS, "response", list_offsets_response(version), version)
    assert response["throttle_time_ms"] == (5 if version >= 2 else 0)
    partition = response["topics"][0]["partitions"][0]
    assert (partition["timestamp"], partition["offset"]) == (-1, 42)
    assert partition["leader_epoch"] == (4 if version >= 4 else -1)


# --- Metadata -----------------------------------------------------------------------------------


def test_metadata_v0_topics_cannot_be_null():
    with pytest.raises(ProtocolError):
        decode(ApiKey.METADATA, "request", i32(-1), 0)
    with pytest.raises(ValueError):
        encode(ApiKey.METADATA, "request", {"topics": None}, 0)


@pytest.mark.parametrize("version", range(1, 9))
def test_metadata_null_topics_means_all_from_v1(version):
    value = dict(MESSAGES[ApiKey.METADATA, "request"], topics=None)
    data = encode(ApiKey.METADATA, "request", value, version)
    assert data.startswith(i32(-1))
    assert decode(ApiKey.METADATA, "request", data, version)["topics"] is None


@pytest.mark.parametrize("version", range(0, 9))
def test_metadata_empty_topic_list_is_not_null(version):
    data = encode(ApiKey.METADATA, "request", dict(MESSAGES[ApiKey.METADATA, "request"], topics=[]), version)
    assert data.startswith(i32(0))
    assert decode(ApiKey.METADATA, "request", data, version)["topics"] == []


@pytest.mark.parametrize("version", range(0, 4))
def test_metadata_allow_auto_topic_creation_defaults_to_true_before_v4(version):
    body = decode(ApiKey.METADATA, "request", metadata_request(version), version)
    assert body["allow_auto_topic_creation"] is True
    assert body["include_cluster_authorized_operations"] is False
    assert body["include_topic_authorized_operations"] is False


@pytest.mark.parametrize("version", range(4, 9))
def test_metadata_allow_auto_topic_creation_is_read_from_v4(version):
    assert decode(ApiKey.METADATA, "request", metadata_request(version), version)["allow_auto_topic_creation"] is False


def test_metadata_v8_request_has_both_authorized_operations_flags():
    body = decode(ApiKey.METADATA, "request", array([]) + boolean(True) + boolean(False) + boolean(True), 8)
    assert body["include_cluster_authorized_operations"] is False
    assert body["include_topic_authorized_operations"] is True


@pytest.mark.parametrize("version", range(0, 9))
def test_metadata_response_authorized_operations_only_in_v8(version):
    body = decode(ApiKey.METADATA, "response", metadata_response(version), version)
    unrequested = UNREQUESTED_AUTHORIZED_OPERATIONS
    assert unrequested == -(2**31)
    assert body["cluster_authorized_operations"] == (0x84 if version >= 8 else unrequested)
    assert body["topics"][0]["topic_authorized_operations"] == (0x18 if version >= 8 else unrequested)


@pytest.mark.parametrize("version", range(0, 9))
def test_metadata_response_optional_fields_by_version(version):
    body = decode(ApiKey.METADATA, "response", metadata_response(version), version)
    assert body["throttle_time_ms"] == (7 if version >= 3 else 0)
    assert body["brokers"][0]["rack"] == ("r" if version >= 1 else None)
    assert body["cluster_id"] == ("c" if version >= 2 else None)
    assert body["controller_id"] == (1 if version >= 1 else -1)
    topic = body["topics"][0]
    assert topic["is_internal"] is (version >= 1)
    partition = topic["partitions"][0]
    assert partition["leader_epoch"] == (2 if version >= 7 else -1)
    assert partition["offline_replicas"] == ([2] if version >= 5 else [])


# --- ApiVersions, CreateTopics, DeleteTopics, InitProducerId -------------------------------------


@pytest.mark.parametrize("version", range(0, 3))
def test_api_versions_throttle_from_v1(version):
    body = decode(ApiKey.API_VERSIONS, "response", api_versions_response(version), version)
    assert body["throttle_time_ms"] == (1 if version >= 1 else 0)
    assert decode(ApiKey.API_VERSIONS, "request", b"", version) == {}


@pytest.mark.parametrize("version", range(0, 5))
def test_create_topics_versions(version):
    request = decode(ApiKey.CREATE_TOPICS, "request", create_topics_request(version), version)
    assert request["validate_only"] is (version >= 1)
    assert request["topics"][0]["configs"][1]["value"] is None
    response = decode(ApiKey.CREATE_TOPICS, "response", create_topics_response(version), version)
    assert response["throttle_time_ms"] == (4 if version >= 2 else 0)
    assert [t["error_message"] for t in response["topics"]] == (["exists", None] if version >= 1 else [None, None])


@pytest.mark.parametrize("version", range(0, 4))
def test_delete_topics_throttle_from_v1(version):
    response = decode(ApiKey.DELETE_TOPICS, "response", delete_topics_response(version), version)
    assert response["throttle_time_ms"] == (4 if version >= 1 else 0)
    assert response["responses"] == [{"name": "a", "error_code": 0}, {"name": "b", "error_code": 3}]
    assert decode(ApiKey.DELETE_TOPICS, "request", delete_topics_request(version), version) == {
        "topic_names": ["a", "b"],
        "timeout_ms": 1000,
    }


@pytest.mark.parametrize("version", [0, 1])
def test_init_producer_id_same_layout_in_v0_and_v1(version):
    assert decode(ApiKey.INIT_PRODUCER_ID, "request", string("tx") + i32(5), version) == {
        "transactional_id": "tx",
        "transaction_timeout_ms": 5,
    }
    assert decode(ApiKey.INIT_PRODUCER_ID, "response", init_producer_id_response(version), version) == {
        "throttle_time_ms": 0,
        "error_code": 0,
        "producer_id": 77,
        "producer_epoch": 1,
    }


@pytest.mark.parametrize("key, kind, version", ALL_VERSIONS)
def test_missing_keys_encode_as_defaults_and_decode_back(key, kind, version):
    """An empty dict encodes every field's default; decoding gives a dict with every field."""
    struct = struct_of(key, kind)
    if key == ApiKey.API_VERSIONS and kind == "request":
        assert encode(key, kind, {}, version) == b""
        return
    body = decode(key, kind, encode(key, kind, {}, version), version)
    assert set(body) == {field.name for field in struct.fields}


# --- DescribeConfigs, DescribeLogDirs ----------------------------------------------------------------


@pytest.mark.parametrize("version", range(0, 4))
def test_describe_configs_request_flags_by_version(version):
    request = decode(ApiKey.DESCRIBE_CONFIGS, "request", describe_configs_request(version), version)
    assert request["include_synonyms"] is (version >= 1)
    assert request["include_documentation"] is (version >= 3)
    assert [r["configuration_keys"] for r in request["resources"]] == [["retention.ms"], None]


@pytest.mark.parametrize("version", range(0, 4))
def test_describe_configs_response_is_default_only_in_v0_then_source_and_synonyms(version):
    response = decode(ApiKey.DESCRIBE_CONFIGS, "response", describe_configs_response(version), version)
    [config] = response["results"][0]["configs"]
    assert config["is_default"] is (version == 0)
    assert config["config_source"] == (1 if version >= 1 else -1)
    assert config["synonyms"] == ([{"name": "retention.ms", "value": "1000", "source": 1}] if version >= 1 else [])
    assert (config["config_type"], config["documentation"]) == ((5, "d") if version >= 3 else (0, None))


@pytest.mark.parametrize("version", [0, 1])
def test_describe_log_dirs_same_layout_in_v0_and_v1_and_null_means_all_topics(version):
    assert decode(ApiKey.DESCRIBE_LOG_DIRS, "request", array(None), version) == {"topics": None}
    response = decode(ApiKey.DESCRIBE_LOG_DIRS, "response", describe_log_dirs_response(version), version)
    assert response["results"][0]["topics"][0]["partitions"][0]["partition_size"] == 4096
