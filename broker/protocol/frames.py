"""Request and response frames: ``INT32 size`` + header + body.

Requests use header v1 (``api_key, api_version, correlation_id, client_id``), or v2 (v1 plus
tagged fields) for flexible versions: ApiVersions v3+ sent first by librdkafka and kafka-python,
and the flexible-only transaction tools' APIs. Responses use header v0 (``correlation_id``), or
v1 (plus tagged fields) for those flexible APIs; ApiVersions responses always use v0.
"""

import struct
from typing import NamedTuple, cast

from .apis import APIS, ApiKey
from .errors import ErrorCode
from .types import INT32, NULLABLE_STRING, Message, Part, ProtocolError, Reader, Writer

SIZE = struct.Struct(">i")
_MIN_HEADER = struct.Struct(">hhi")
FIRST_FLEXIBLE_API_VERSIONS = 3


class RequestHeader(NamedTuple):
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def parse_request(frame: bytes | bytearray | memoryview) -> tuple[RequestHeader, Reader]:
    """The header of a request frame (without its size prefix), and a reader positioned at the body."""
    if len(frame) < _MIN_HEADER.size:
        raise ProtocolError(f"request of {len(frame)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = _MIN_HEADER.unpack_from(frame, 0)
    reader = Reader(frame, _MIN_HEADER.size)
    client_id = None
    if reader.remaining:
        size = reader.int16()
        if size >= 0:
            client_id = reader.text(size)
        elif size != -1:
            raise ProtocolError(f"client id length {size}")
    if (api_key == ApiKey.API_VERSIONS and api_version >= FIRST_FLEXIBLE_API_VERSIONS) or _flexible(
        api_key, api_version
    ):
        reader.skip_tagged_fields()
    return RequestHeader(api_key, api_version, correlation_id, client_id), reader


def _flexible(api_key: int, api_version: int) -> bool:
    api = APIS.get(cast(ApiKey, api_key))
    return api is not None and api.is_flexible(api_version)


def read_response_header(reader: Reader, api_key: int, api_version: int) -> int:
    """The correlation id of a response (header v0, or v1 for a flexible version: tags skipped)."""
    correlation_id = reader.int32()
    if _flexible(api_key, api_version):
        reader.skip_tagged_fields()
    return correlation_id


def decode_request_body(header: RequestHeader, reader: Reader) -> Message:
    """Decode the body of a request for an advertised API and version; the whole body must be used."""
    api = APIS[ApiKey(header.api_key)]
    body = api.request.decode(reader, header.api_version)
    if reader.remaining:
        raise ProtocolError(f"{reader.remaining} bytes left after the {api.key.name} v{header.api_version} request")
    return body


def encode_request(api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: Message) -> bytes:
    """A whole request frame (size prefix included): header v1, then the body in the API's schema."""
    writer = Writer()
    writer.write(_MIN_HEADER.pack(api_key, api_version, correlation_id))
    NULLABLE_STRING.encode(writer, client_id, api_version)
    if _flexible(api_key, api_version):
        writer.write(b"\x00")  # header v2: no tagged fields
    APIS[ApiKey(api_key)].request.encode(writer, body, api_version)
    payload = writer.finish_bytes()
    return SIZE.pack(len(payload)) + payload


def encode_response(correlation_id: int, api_key: int, api_version: int, body: Message) -> tuple[list[Part], int]:
    """The response frame as parts (bytes and file slices) and its total size in bytes."""
    writer = Writer()
    writer.pack(SIZE, 0)  # patched below, once the size is known
    INT32.encode(writer, correlation_id, api_version)
    if _flexible(api_key, api_version):
        writer.write(b"\x00")  # header v1: no tagged fields
    APIS[ApiKey(api_key)].response.encode(writer, body, api_version)
    parts = writer.finish_framed(SIZE)
    return parts, writer.size


def unsupported_api_versions_reply(correlation_id: int) -> bytes:
    """Kafka's answer to an ApiVersions version it does not know: v0 body, error 35, only key 18.

    Clients decode it as v0 whatever version they sent (kafka-python loops forever otherwise).
    """
    api = APIS[ApiKey.API_VERSIONS]
    parts, _ = encode_response(
        correlation_id,
        ApiKey.API_VERSIONS,
        0,
        {
            "error_code": ErrorCode.UNSUPPORTED_VERSION,
            "api_keys": [{"api_key": api.key, "min_version": api.min_version, "max_version": api.max_version}],
        },
    )
    return cast(bytes, parts[0])  # one buffered part: no file slice
