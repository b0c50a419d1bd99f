"""ApiVersions: the table of advertised APIs and versions: those the broker has handlers for."""

import functools

from broker.protocol.errors import ErrorCode


@functools.cache
def _table() -> list[dict]:
    from . import SERVED  # complete only once every handler module is imported

    return [
        {"api_key": api.key, "min_version": api.min_version, "max_version": api.max_version} for api in SERVED.values()
    ]


async def handle(ctx, header, request) -> dict:
    return {"error_code": ErrorCode.NONE, "api_keys": _table(), "throttle_time_ms": 0}
