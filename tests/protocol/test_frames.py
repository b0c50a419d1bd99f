"""Request and response frames: the worked bytes of the protocol guide (section 2.3), request
headers v0/v1/v2 and their errors, whole-body decoding, response size prefixes, file slices kept
as separate parts, and whole frames cross-checked with kafka-python's header codecs."""

import pytest
from kafka.protocol.consumer import FetchResponse
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.producer import ProduceResponse

from broker.protocol import frames
from broker.protocol.apis import APIS, ApiKey
from broker.protocol.frames import RequestHeader, decode_request_body, encode_response, parse_request
from broker.protocol.types import ProtocolError

from .bridge import canonical, cross_checked_versions, from_kafka_python, kafka_python_class, schema, to_kafka_python
from .layout import array, i16, i32, i64, nbytes, string
from .samples import REQUESTS, RESPONSES

API_VERSIONS_V0_REQUEST = bytes.fromhex("0000000b 0012 0000 00000001 0001 63".replace(" ", ""))
API_VERSIONS_V3_REQUEST = (
    bytes.fromhex("00000025 0012 0003 00000001 0007")
    + b"rdkafka"
    + b"\x00"
    + b"\x0b"
    + b"librdkafka"
    + b"\x07"
    + b"2.16.0"
    + b"\x00"
)
UNSUPPORTED_REPLY = bytes.fromhex("00000010 00000001 0023 00000001 0012 0000 0002".replace(" ", ""))


class FileSlice:
    """Stands for a slice of a segment file: only ``size`` and ``read()``, no bytes protocol."""

    def __init__(self, data: bytes):
        self.data = data
        self.size = len(data)
        self.reads = 0

    def read(self) -> bytes:
        self.reads += 1
        return self.data


def part_size(part) -> int:
    return len(part) if isinstance(part, (bytes, bytearray)) else part.size


def join(parts) -> bytes:
    return b"".join(part if isinstance(part, (bytes, bytearray)) else part.read() for part in parts)


# --- worked bytes, section 2.3 ------------------------------------------------------------------


def test_api_versions_v0_request_worked_bytes():
    frame = API_VERSIONS_V0_REQUEST
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    header, reader = parse_request(frame[4:])
    assert header == RequestHeader(api_key=18, api_version=0, correlation_id=1, client_id="c")
    assert reader.remaining == 0
    assert decode_request_body(header, reader) == {}


def test_api_versions_v0_worked_bytes_are_what_kafka_python_sends():
    request = ApiVersionsRequest[0]()
    request.with_header(correlation_id=1, client_id="c")
    assert bytes(request.encode(header=True, framed=True)) == API_VERSIONS_V0_REQUEST


def test_api_versions_v3_request_header_v2_skips_tags_after_client_id():
    frame = API_VERSIONS_V3_REQUEST
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4 == 0x25
    header, reader = parse_request(frame[4:])
    assert header == RequestHeader(18, 3, 1, "rdkafka")
    # the reader stands at the (flexible) body: two compact strings and an empty tag section
    assert bytes(reader.buf[reader.pos :]) == b"\x0blibrdkafka\x072.16.0\x00"


def test_api_versions_v3_worked_bytes_are_what_kafka_python_sends():
    request = ApiVersionsRequest[3](client_software_name="librdkafka", client_software_version="2.16.0")
    request.with_header(correlation_id=1, client_id="rdkafka")
    assert bytes(request.encode(header=True, framed=True)) == API_VERSIONS_V3_REQUEST


def test_flexible_header_with_tagged_fields_skips_them():
    header_tags = b"\x02" + b"\x00\x02ab" + b"\x05\x00"  # two tags: (0, b"ab") and (5, b"")
    frame = i16(18) + i16(4) + i32(9) + string("cli") + header_tags + b"BODY"
    header, reader = parse_request(frame)
    assert header == RequestHeader(18, 4, 9, "cli")
    assert bytes(reader.take(reader.remaining)) == b"BODY"


def test_flexible_header_without_its_tag_byte_is_rejected():
    with pytest.raises(ProtocolError):
        parse_request(i16(18) + i16(3) + i32(9) + string("cli"))


@pytest.mark.parametrize("version", [0, 1, 2])
def test_non_flexible_api_versions_header_has_no_tag_byte(version):
    header, reader = parse_request(i16(18) + i16(version) + i32(9) + string("cli") + b"\x00")
    assert header == RequestHeader(18, version, 9, "cli")
    assert reader.remaining == 1  # the stray byte is body, left for decode_request_body to reject
    with pytest.raises(ProtocolError):
        decode_request_body(header, reader)


def test_unsupported_api_versions_reply_worked_bytes():
    assert frames.unsupported_api_versions_reply(1) == UNSUPPORTED_REPLY


def test_unsupported_api_versions_reply_decodes_with_kafka_python():
    reply = ApiVersionsResponse.decode(
        frames.unsupported_api_versions_reply(0x01020304), version=3, header=True, framed=True
    )
    assert reply.header.correlation_id == 0x01020304
    assert reply.error_code == 35
    assert [(k.api_key, k.min_version, k.max_version) for k in reply.api_keys] == [(18, 0, 2)]


# --- request headers ----------------------------------------------------------------------------


def test_null_client_id():
    header, reader = parse_request(i16(3) + i16(1) + i32(7) + i16(-1) + i32(-1))  # Metadata v1, null topics
    assert header == RequestHeader(3, 1, 7, None)
    assert decode_request_body(header, reader)["topics"] is None


def test_empty_client_id_is_not_null():
    header, _ = parse_request(i16(3) + i16(1) + i32(7) + string(""))
    assert header.client_id == ""


def test_header_v0_has_no_client_id():
    header, reader = parse_request(i16(18) + i16(0) + i32(-5))
    assert header == RequestHeader(18, 0, -5, None)
    assert reader.remaining == 0
    assert decode_request_body(header, reader) == {}


def test_unicode_client_id():
    header, _ = parse_request(i16(18) + i16(0) + i32(1) + string("cli\u00e9nt-\u65e5\u672c"))
    assert header.client_id == "cli\u00e9nt-\u65e5\u672c"


def test_header_fields_are_signed_big_endian():
    header, _ = parse_request(bytes.fromhex("7fff 8000 ffffffff".replace(" ", "")))
    assert header[:3] == (32767, -32768, -1)


@pytest.mark.parametrize("size", range(8))
def test_header_shorter_than_eight_bytes_is_rejected(size):
    with pytest.raises(ProtocolError):
        parse_request((i16(18) + i16(0) + i32(1))[:size])


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(i16(18) + i16(0) + i32(1) + b"\x00", id="half-a-length"),
        pytest.param(i16(18) + i16(0) + i32(1) + i16(5) + b"ab", id="client-id-truncated"),
        pytest.param(i16(18) + i16(0) + i32(1) + i16(-2), id="negative-length"),
        pytest.param(i16(18) + i16(0) + i32(1) + i16(-32768), id="most-negative-length"),
        pytest.param(i16(18) + i16(0) + i32(1) + i16(2) + b"\xc3\x28", id="invalid-utf8"),
        pytest.param(i16(18) + i16(3) + i32(1) + string("c") + b"\x01\x00", id="tag-truncated"),
        pytest.param(i16(18) + i16(3) + i32(1) + string("c") + b"\x01\x00\x05ab", id="tag-data-truncated"),
        pytest.param(i16(18) + i16(3) + i32(1) + string("c") + b"\xff\xff\xff\xff\xff\x01", id="varint-too-long"),
    ],
)
def test_bad_request_headers_raise_protocol_error(frame):
    with pytest.raises(ProtocolError):
        parse_request(frame)


def test_parse_request_accepts_any_buffer():
    for frame in (bytearray(API_VERSIONS_V0_REQUEST[4:]), memoryview(API_VERSIONS_V0_REQUEST)[4:]):
        header, _ = parse_request(frame)
        assert header == RequestHeader(18, 0, 1, "c")


# --- request bodies -----------------------------------------------------------------------------


@pytest.mark.parametrize("extra", [b"\x00", b"\xff" * 9], ids=["one-byte", "nine-bytes"])
def test_decode_request_body_rejects_leftover_bytes(extra):
    body = array([string("a")])  # Metadata v1
    header, reader = parse_request(i16(3) + i16(1) + i32(1) + string("c") + body)
    assert decode_request_body(header, reader) == {
        "topics": [{"name": "a"}],
        "allow_auto_topic_creation": True,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }
    header, reader = parse_request(i16(3) + i16(1) + i32(1) + string("c") + body + extra)
    with pytest.raises(ProtocolError, match="left"):
        decode_request_body(header, reader)


def test_decode_request_body_rejects_a_truncated_body():
    header, reader = parse_request(i16(22) + i16(1) + i32(1) + string("c") + string(None) + i16(0))
    with pytest.raises(ProtocolError):
        decode_request_body(header, reader)


def test_request_records_are_views_of_the_frame():
    body = string(None) + i16(1) + i32(100) + array([string("t") + array([i32(0) + nbytes(b"batch")])])
    frame = bytearray(i16(0) + i16(8) + i32(1) + string("c") + body)
    header, reader = parse_request(frame)
    records = decode_request_body(header, reader)["topics"][0]["partitions"][0]["records"]
    assert bytes(records) == b"batch"


def _request_cases():
    for key in APIS:
        for version in cross_checked_versions(key):
            for sample in REQUESTS[key]:
                if sample.valid_in(version):
                    yield pytest.param(key, version, sample, id=f"{key.name}-v{version}-{sample.name}")


@pytest.mark.parametrize("key, version, sample", list(_request_cases()))
def test_kafka_python_request_frames_parse(key, version, sample):
    request = to_kafka_python(key, "request", sample.value, version)
    request.with_header(correlation_id=2**31 - 1, client_id="kafka-python-3.0.12")
    frame = bytes(request.encode(header=True, framed=True))
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    header, reader = parse_request(frame[4:])
    assert header == RequestHeader(key, version, 2**31 - 1, "kafka-python-3.0.12")
    body = decode_request_body(header, reader)
    assert canonical(schema(key, "request"), body, version) == canonical(schema(key, "request"), sample.value, version)


# --- responses ----------------------------------------------------------------------------------


def _response_cases():
    for key in APIS:
        for version in cross_checked_versions(key):
            for sample in RESPONSES[key]:
                if sample.valid_in(version):
                    yield pytest.param(key, version, sample, id=f"{key.name}-v{version}-{sample.name}")


@pytest.mark.parametrize("key, version, sample", list(_response_cases()))
def test_response_frames_decode_with_kafka_python(key, version, sample):
    parts, size = encode_response(-7, key, version, sample.value)
    frame = join(parts)
    assert size == len(frame) == sum(part_size(p) for p in parts)
    assert int.from_bytes(frame[:4], "big", signed=True) == size - 4
    response = kafka_python_class(key, "response").decode(frame, version=version, header=True, framed=True)
    assert response.header.correlation_id == -7
    assert from_kafka_python(key, "response", response, version) == canonical(
        schema(key, "response"), sample.value, version
    )


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_v0_to_v2_response_frames_by_hand(version):
    body = {
        "responses": [
            {"name": "t", "partitions": [{"index": 0, "error_code": 0, "base_offset": 5, "log_append_time_ms": 99}]}
        ],
        "throttle_time_ms": 3,
    }
    parts, size = encode_response(11, ApiKey.PRODUCE, version, body)
    partition = i32(0) + i16(0) + i64(5) + (i64(99) if version >= 2 else b"")
    expected_body = array([string("t") + array([partition])]) + (i32(3) if version >= 1 else b"")
    assert parts == [i32(4 + len(expected_body)) + i32(11) + expected_body]
    assert size == 8 + len(expected_body)


def test_response_header_is_v0_even_for_api_versions():
    parts, _ = encode_response(5, ApiKey.API_VERSIONS, 2, {"error_code": 0, "api_keys": [], "throttle_time_ms": 0})
    assert parts == [i32(14) + i32(5) + i16(0) + i32(0) + i32(0)]


def fetch_body(*records):
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 0,
        "responses": [
            {
                "topic": "t",
                "partitions": [
                    {
                        "partition_index": i,
                        "error_code": 0,
                        "high_watermark": 10,
                        "last_stable_offset": 10,
                        "log_start_offset": 0,
                        "aborted_transactions": None,
                        "preferred_read_replica": -1,
                        "records": r,
                    }
                    for i, r in enumerate(records)
                ],
            }
        ],
    }


@pytest.mark.parametrize("version", range(4, 12))
def test_fetch_response_keeps_a_file_slice_as_its_own_part(version):
    data = b"\x00" * 12 + b"a record batch, sent with sendfile"
    file_slice = FileSlice(data)
    parts, size = encode_response(3, ApiKey.FETCH, version, fetch_body(file_slice))
    assert len(parts) == 2
    head, tail = parts
    assert tail is file_slice and file_slice.reads == 0  # not read while encoding
    assert isinstance(head, bytes)
    assert head.endswith(i32(file_slice.size))  # the RECORDS length prefix
    assert size == len(head) + file_slice.size
    assert int.from_bytes(head[:4], "big") == size - 4
    frame = join(parts)
    assert frame[len(head) :] == data
    response = FetchResponse.decode(frame, version=version, header=True, framed=True)
    assert response.header.correlation_id == 3
    assert response.responses[0].partitions[0].records == data


def test_fetch_response_with_slices_bytes_and_null_records():
    first, second = FileSlice(b"first-batch"), FileSlice(b"2nd")
    parts, size = encode_response(4, ApiKey.FETCH, 11, fetch_body(first, b"inline", None, second, b""))
    assert [type(p) for p in parts] == [bytes, FileSlice, bytes, FileSlice, bytes]
    assert parts[1] is first and parts[3] is second
    assert parts[0].endswith(i32(11)) and parts[2].endswith(i32(3))
    assert parts[4].endswith(i32(-1) + i32(0))  # the last partition: no preferred replica, empty records
    assert size == sum(part_size(p) for p in parts)
    assert int.from_bytes(parts[0][:4], "big") == size - 4
    response = FetchResponse.decode(join(parts), version=11, header=True, framed=True)
    assert [p.records for p in response.responses[0].partitions] == [b"first-batch", b"inline", None, b"2nd", b""]


def test_empty_file_slice_still_has_its_length_prefix():
    empty = FileSlice(b"")
    parts, size = encode_response(1, ApiKey.FETCH, 4, fetch_body(empty))
    assert parts[0].endswith(i32(0))
    assert size == sum(part_size(p) for p in parts)
    response = FetchResponse.decode(join(parts), version=4, header=True, framed=True)
    assert response.responses[0].partitions[0].records == b""


def test_produce_response_frame_size_counts_every_byte():
    body = {"responses": [{"name": "t" * 300, "partitions": [{"index": i} for i in range(50)]}], "throttle_time_ms": 0}
    parts, size = encode_response(1, ApiKey.PRODUCE, 8, body)
    frame = join(parts)
    assert size == len(frame) and int.from_bytes(frame[:4], "big") == len(frame) - 4
    decoded = ProduceResponse.decode(frame, version=8, header=True, framed=True)
    assert [p.index for p in decoded.responses[0].partition_responses] == list(range(50))
