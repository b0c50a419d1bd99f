"""ApiVersions: the table of advertised APIs and versions (see broker.protocol.apis)."""

from broker.protocol.apis import APIS
from broker.protocol.errors import ErrorCode

_TABLE = [{"api_key": api.key, "min_version": api.min_version, "max_version": api.max_version}
          for api in sorted(APIS.values(), key=lambda a: a.key)]


async def handle(ctx, header, request) -> dict:
    return {"error_code": ErrorCode.NONE, "api_keys": _TABLE, "throttle_time_ms": 0}
