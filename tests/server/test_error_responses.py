"""Every advertised API can answer any request of any of its versions with one error code
(KAFKA_STORAGE_ERROR after an OSError), in every error field its response has for the request;
a handler failing unexpectedly is answered UNKNOWN_SERVER_ERROR and the connection goes on."""

import logging

import pytest

from broker.protocol import frames
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.protocol.types import Array, Struct
from broker.server.error_responses import error_response
from broker.server.handlers import HANDLERS, SERVED

from .in_process import broker_in_this_process
from .wire import connect, decode_response, list_offsets_body

NO_ITEM_ERRORS = {"DESCRIBE_LOG_DIRS"}  # v0-1 have no error field outside a log directory: Kafka answers empty


def one_of_each(schema):
    """A value of ``schema`` with one element in every array, so each per-item error field appears."""
    if isinstance(schema, Struct):
        return {field.name: one_of_each(field.type) for field in schema.fields}
    if isinstance(schema, Array):
        return [one_of_each(schema.item)]
    return schema.default


def error_codes(schema, value, version: int) -> list[int]:
    """The values of every ``error_code`` field (AddPartitionsToTxn's ``partition_error_code``) of
    ``value`` that ``version`` has."""
    if isinstance(schema, Struct):
        return [
            code
            for field in schema.fields
            if field.present_in(version)
            for code in (
                [value[field.name]]
                if field.name in ("error_code", "partition_error_code")
                else error_codes(field.type, value[field.name], version)
            )
        ]
    if isinstance(schema, Array):
        return [code for item in value or [] for code in error_codes(schema.item, item, version)]
    return []


@pytest.mark.parametrize(
    "api,version",
    [
        pytest.param(api, version, id=f"{api.key.name}-v{version}")
        for api in SERVED.values()
        for version in range(api.min_version, api.max_version + 1)
    ],
)
def test_every_api_and_version_has_a_storage_error_response(api, version):
    frame = frames.encode_request(api.key, version, 7, "test", one_of_each(api.request))
    header, reader = frames.parse_request(frame[4:])
    request = frames.decode_request_body(header, reader)

    response = error_response(api.key, request, ErrorCode.KAFKA_STORAGE_ERROR, "disk full")
    parts, _ = frames.encode_response(7, api.key, version, response)
    _, decoded = decode_response(b"".join(bytes(p) for p in parts)[4:], api.key, version)

    codes = error_codes(api.response, decoded, version)
    assert set(codes) <= {ErrorCode.KAFKA_STORAGE_ERROR}
    assert codes or api.key.name in NO_ITEM_ERRORS


def test_a_handler_failing_unexpectedly_is_answered_unknown_server_error_and_the_connection_goes_on(
    tmp_path, monkeypatch, caplog
):
    """The fault is injected (the fuzzer, ``test_protocol_fuzzer``, keeps real ones from coming back)."""

    async def broken(ctx, header, request):
        raise KeyError("a bug")

    monkeypatch.setitem(HANDLERS, ApiKey.LIST_OFFSETS, broken)
    with broker_in_this_process(tmp_path / "log") as port, connect("127.0.0.1", port) as client:
        answer = client.call(ApiKey.LIST_OFFSETS, 1, list_offsets_body("any", 0, -1))
        assert [p["error_code"] for t in answer["topics"] for p in t["partitions"]] == [ErrorCode.UNKNOWN_SERVER_ERROR]
        assert client.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == ErrorCode.NONE
        client_port = client.sock.getsockname()[1]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == [
        f"LIST_OFFSETS v1 request from ('127.0.0.1', {client_port}) failed; answered UNKNOWN_SERVER_ERROR"
    ]
