"""A whole request answered with one error code, in each of its API's error fields.

Kafka's ``AbstractRequest.getErrorResponse``: when a handler fails with an ``OSError`` (a full
disk, an I/O error, too many open files) the client gets KAFKA_STORAGE_ERROR for everything it
asked about, never a closed connection. Handlers whose items succeed or fail one by one (a produce
to several partitions) catch storage errors per item themselves; this is the answer for the rest.
"""

from broker.protocol.apis import ApiKey


def _produce(request, code, message):
    return {
        "responses": [
            {
                "name": t["name"],
                "partitions": [
                    {"index": p["index"], "error_code": code, "base_offset": -1, "error_message": message}
                    for p in t["partitions"]
                ],
            }
            for t in request["topics"]
        ]
    }


def _fetch(request, code, message):
    return {
        "error_code": code,
        "responses": [
            {
                "topic": t["topic"],
                "partitions": [
                    {"partition_index": p["partition"], "error_code": code, "high_watermark": -1, "records": b""}
                    for p in t["partitions"]
                ],
            }
            for t in request["topics"]
        ],
    }


def _list_offsets(request, code, message):
    return {
        "topics": [
            {
                "name": t["name"],
                "partitions": [{"partition_index": p["partition_index"], "error_code": code} for p in t["partitions"]],
            }
            for t in request["topics"]
        ]
    }


def _offset_for_leader_epoch(request, code, message):
    return {
        "topics": [
            {
                "topic": t["topic"],
                "partitions": [{"partition": p["partition"], "error_code": code} for p in t["partitions"]],
            }
            for t in request["topics"]
        ]
    }


def _metadata(request, code, message):
    return {"topics": [{"error_code": code, "name": t["name"]} for t in request["topics"] or []]}


def _api_versions(request, code, message):
    return {"error_code": code}


def _create_topics(request, code, message):
    return {"topics": [{"name": t["name"], "error_code": code, "error_message": message} for t in request["topics"]]}


def _delete_topics(request, code, message):
    return {"responses": [{"name": name, "error_code": code} for name in request["topic_names"]]}


def _delete_records(request, code, message):
    return {
        "topics": [
            {
                "name": t["name"],
                "partitions": [
                    {"partition_index": p["partition_index"], "low_watermark": -1, "error_code": code}
                    for p in t["partitions"]
                ],
            }
            for t in request["topics"]
        ]
    }


def _init_producer_id(request, code, message):
    return {"error_code": code}


def _add_partitions_to_txn(request, code, message):
    return {
        "results_by_topic": [
            {
                "name": t["name"],
                "results_by_partition": [{"partition_index": p, "partition_error_code": code} for p in t["partitions"]],
            }
            for t in request["topics"]
        ]
    }


def _describe_transactions(request, code, message):
    return {"transaction_states": [{"error_code": code, "transactional_id": t} for t in request["transactional_ids"]]}


def _txn_offset_commit(request, code, message):
    return {
        "topics": [
            {
                "name": t["name"],
                "partitions": [{"partition_index": p["partition_index"], "error_code": code} for p in t["partitions"]],
            }
            for t in request["topics"]
        ]
    }


def _describe_configs(request, code, message):
    return {
        "results": [
            {
                "error_code": code,
                "error_message": message,
                "resource_type": r["resource_type"],
                "resource_name": r["resource_name"],
            }
            for r in request["resources"]
        ]
    }


def _alter_configs(request, code, message):  # IncrementalAlterConfigs v0 answers in the same shape
    return {
        "responses": [
            {
                "error_code": code,
                "error_message": message,
                "resource_type": r["resource_type"],
                "resource_name": r["resource_name"],
            }
            for r in request["resources"]
        ]
    }


def _create_partitions(request, code, message):
    return {"results": [{"name": t["name"], "error_code": code, "error_message": message} for t in request["topics"]]}


def _describe_log_dirs(request, code, message):
    return {"results": []}  # versions 0-1 have no error field outside a log directory: Kafka answers empty


def _sasl_handshake(request, code, message):
    return {"error_code": code, "mechanisms": []}


def _sasl_authenticate(request, code, message):
    return {"error_code": code, "error_message": message, "auth_bytes": b""}


def _error_code(request, code, message):  # FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup
    return {"error_code": code}


def _offset_commit(request, code, message):
    return {
        "topics": [
            {
                "name": t["name"],
                "partitions": [{"partition_index": p["partition_index"], "error_code": code} for p in t["partitions"]],
            }
            for t in request["topics"]
        ]
    }


def _offset_fetch(request, code, message):  # v0-1 have no top-level error: each partition says it
    return {
        "error_code": code,
        "topics": [
            {
                "name": t["name"],
                "partitions": [
                    {"partition_index": p, "committed_offset": -1, "error_code": code} for p in t["partition_indexes"]
                ],
            }
            for t in request["topics"] or []
        ],
    }


def _describe_groups(request, code, message):
    return {"groups": [{"error_code": code, "group_id": g} for g in request["groups"]]}


def _delete_groups(request, code, message):
    return {"results": [{"group_id": g, "error_code": code} for g in request["groups_names"]]}


def _describe_acls(request, code, message):
    return {"error_code": code, "error_message": message}


def _create_acls(request, code, message):
    return {"results": [{"error_code": code, "error_message": message} for _ in request["creations"]]}


def _delete_acls(request, code, message):
    return {"filter_results": [{"error_code": code, "error_message": message} for _ in request["filters"]]}


def _write_txn_markers(request, code, message):
    return {
        "markers": [
            {
                "producer_id": m["producer_id"],
                "topics": [
                    {
                        "name": t["name"],
                        "partitions": [{"partition_index": p, "error_code": code} for p in t["partition_indexes"]],
                    }
                    for t in m["topics"]
                ],
            }
            for m in request["markers"]
        ]
    }


ERROR_RESPONSES = {
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _fetch,
    ApiKey.LIST_OFFSETS: _list_offsets,
    ApiKey.METADATA: _metadata,
    ApiKey.API_VERSIONS: _api_versions,
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.DELETE_RECORDS: _delete_records,
    ApiKey.INIT_PRODUCER_ID: _init_producer_id,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _offset_for_leader_epoch,
    ApiKey.WRITE_TXN_MARKERS: _write_txn_markers,
    ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: _error_code,
    ApiKey.END_TXN: _error_code,
    ApiKey.TXN_OFFSET_COMMIT: _txn_offset_commit,
    ApiKey.DESCRIBE_TRANSACTIONS: _describe_transactions,
    ApiKey.LIST_TRANSACTIONS: _error_code,
    ApiKey.DESCRIBE_CONFIGS: _describe_configs,
    ApiKey.ALTER_CONFIGS: _alter_configs,
    ApiKey.DESCRIBE_LOG_DIRS: _describe_log_dirs,
    ApiKey.CREATE_PARTITIONS: _create_partitions,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _alter_configs,
    ApiKey.SASL_HANDSHAKE: _sasl_handshake,
    ApiKey.SASL_AUTHENTICATE: _sasl_authenticate,
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.FIND_COORDINATOR: _error_code,
    ApiKey.JOIN_GROUP: _error_code,
    ApiKey.SYNC_GROUP: _error_code,
    ApiKey.HEARTBEAT: _error_code,
    ApiKey.LEAVE_GROUP: _error_code,
    ApiKey.DESCRIBE_GROUPS: _describe_groups,
    ApiKey.LIST_GROUPS: _error_code,
    ApiKey.DELETE_GROUPS: _delete_groups,
    ApiKey.OFFSET_DELETE: _error_code,
    ApiKey.DESCRIBE_ACLS: _describe_acls,
    ApiKey.CREATE_ACLS: _create_acls,
    ApiKey.DELETE_ACLS: _delete_acls,
}


def error_response(api_key: ApiKey, request: dict, code: int, message: str) -> dict:
    """The response to ``request`` saying ``code`` (with ``message`` where the API has one) for every item."""
    return ERROR_RESPONSES[api_key](request, code, message)
