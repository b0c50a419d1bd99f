"""One handler per API: ``async handle(ctx, header, request_dict) -> response_dict | None``."""

from broker.protocol.apis import APIS, ApiKey

from . import (
    acls,
    admin,
    alter_configs,
    api_versions,
    create_partitions,
    delete_records,
    describe_configs,
    describe_log_dirs,
    fetch,
    group_admin,
    group_membership,
    group_offsets,
    init_producer_id,
    list_offsets,
    metadata,
    offset_for_leader_epoch,
    produce,
    sasl,
    transactions,
    write_txn_markers,
)

HANDLERS = {
    ApiKey.PRODUCE: produce.handle,
    ApiKey.FETCH: fetch.handle,
    ApiKey.LIST_OFFSETS: list_offsets.handle,
    ApiKey.METADATA: metadata.handle,
    ApiKey.API_VERSIONS: api_versions.handle,
    ApiKey.CREATE_TOPICS: admin.handle_create,
    ApiKey.DELETE_TOPICS: admin.handle_delete,
    ApiKey.DELETE_RECORDS: delete_records.handle,
    ApiKey.INIT_PRODUCER_ID: init_producer_id.handle,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch.handle,
    ApiKey.WRITE_TXN_MARKERS: write_txn_markers.handle,
    ApiKey.ADD_PARTITIONS_TO_TXN: transactions.handle_add_partitions,
    ApiKey.ADD_OFFSETS_TO_TXN: transactions.handle_add_offsets,
    ApiKey.END_TXN: transactions.handle_end_txn,
    ApiKey.TXN_OFFSET_COMMIT: transactions.handle_txn_offset_commit,
    ApiKey.DESCRIBE_TRANSACTIONS: transactions.handle_describe_transactions,
    ApiKey.LIST_TRANSACTIONS: transactions.handle_list_transactions,
    ApiKey.DESCRIBE_ACLS: acls.handle_describe,
    ApiKey.CREATE_ACLS: acls.handle_create,
    ApiKey.DELETE_ACLS: acls.handle_delete,
    ApiKey.DESCRIBE_CONFIGS: describe_configs.handle,
    ApiKey.ALTER_CONFIGS: alter_configs.handle_alter,
    ApiKey.DESCRIBE_LOG_DIRS: describe_log_dirs.handle,
    ApiKey.CREATE_PARTITIONS: create_partitions.handle,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: alter_configs.handle_incremental_alter,
    ApiKey.SASL_HANDSHAKE: sasl.handle_handshake,
    ApiKey.SASL_AUTHENTICATE: sasl.handle_authenticate,
    ApiKey.OFFSET_COMMIT: group_offsets.handle_commit,
    ApiKey.OFFSET_FETCH: group_offsets.handle_fetch,
    ApiKey.OFFSET_DELETE: group_offsets.handle_delete,
    ApiKey.FIND_COORDINATOR: group_admin.handle_find_coordinator,
    ApiKey.LIST_GROUPS: group_admin.handle_list,
    ApiKey.DESCRIBE_GROUPS: group_admin.handle_describe,
    ApiKey.DELETE_GROUPS: group_admin.handle_delete,
    ApiKey.JOIN_GROUP: group_membership.handle_join,
    ApiKey.SYNC_GROUP: group_membership.handle_sync,
    ApiKey.HEARTBEAT: group_membership.handle_heartbeat,
    ApiKey.LEAVE_GROUP: group_membership.handle_leave,
}

SERVED = {key: APIS[key] for key in sorted(HANDLERS)}
"""The APIs the broker advertises (ApiVersions) and answers: exactly those with a handler (a client
told of an API with no handler here would use it, librdkafka turns features on by the advertised
APIs, and be cut off)."""
