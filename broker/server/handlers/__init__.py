"""One handler per API: ``async handle(ctx, header, request_dict) -> response_dict | None``."""

from broker.protocol.apis import ApiKey

from . import (admin, api_versions, describe_configs, describe_log_dirs, fetch, init_producer_id, list_offsets,
               metadata, produce)

HANDLERS = {
    ApiKey.PRODUCE: produce.handle,
    ApiKey.FETCH: fetch.handle,
    ApiKey.LIST_OFFSETS: list_offsets.handle,
    ApiKey.METADATA: metadata.handle,
    ApiKey.API_VERSIONS: api_versions.handle,
    ApiKey.CREATE_TOPICS: admin.handle_create,
    ApiKey.DELETE_TOPICS: admin.handle_delete,
    ApiKey.INIT_PRODUCER_ID: init_producer_id.handle,
    ApiKey.DESCRIBE_CONFIGS: describe_configs.handle,
    ApiKey.DESCRIBE_LOG_DIRS: describe_log_dirs.handle,
}
