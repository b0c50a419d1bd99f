"""Robustness of the request decoders, which read bytes straight from the network: for every
advertised (API, version), random bytes, every truncation of a valid request, and random
mutations of valid requests either decode or raise ProtocolError, which is the only exception the
connection handler catches. Whatever decodes re-encodes to a message that decodes the same."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.protocol import frames
from broker.protocol.apis import APIS
from broker.protocol.types import ProtocolError, Reader, Writer

from .bridge import canonical
from .samples import REQUESTS, RESPONSES

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ADVERTISED = [
    pytest.param(key, version, id=f"{key.name}-v{version}")
    for key, api in APIS.items()
    for version in range(api.min_version, api.max_version + 1)
]


def encode(struct, value, version) -> bytes:
    writer = Writer()
    struct.encode(writer, value, version)
    return b"".join(writer.finish())


def decode_or_protocol_error(struct, data, version):
    """The decoded dict, or None for a ProtocolError; any other exception fails the test."""
    reader = Reader(data)
    try:
        value = struct.decode(reader, version)
    except ProtocolError:
        return None
    assert 0 <= reader.remaining <= len(data)
    return value


def check_re_encoding(struct, value, version):
    again = decode_or_protocol_error(struct, encode(struct, value, version), version)
    assert again is not None
    assert canonical(struct, again, version) == canonical(struct, value, version)


def valid_requests(key, version):
    return [encode(APIS[key].request, s.value, version) for s in REQUESTS[key] if s.valid_in(version)]


@pytest.mark.parametrize("key, version", ADVERTISED)
@FUZZ
@given(data=st.binary(max_size=160))
def test_random_bytes_decode_or_raise_protocol_error(key, version, data):
    struct = APIS[key].request
    value = decode_or_protocol_error(struct, data, version)
    if value is not None:
        check_re_encoding(struct, value, version)


@pytest.mark.parametrize("key, version", ADVERTISED)
def test_every_truncation_of_a_valid_request_raises_protocol_error(key, version):
    struct = APIS[key].request
    for data in valid_requests(key, version):
        for end in range(len(data)):
            with pytest.raises(ProtocolError):
                struct.decode(Reader(data[:end]), version)


@pytest.mark.parametrize("key, version", ADVERTISED)
@FUZZ
@given(st.data())
def test_mutated_valid_requests_decode_or_raise_protocol_error(key, version, data):
    struct = APIS[key].request
    original = bytearray(data.draw(st.sampled_from(valid_requests(key, version))))
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(original)))
        action = data.draw(st.sampled_from(["set", "insert", "delete"]))
        byte = data.draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF, 0xC3, 0xFE]))
        if action == "insert" or position == len(original):
            original.insert(position, byte)
        elif action == "set":
            original[position] = byte
        else:
            del original[position]
    value = decode_or_protocol_error(struct, bytes(original), version)
    if value is not None:
        check_re_encoding(struct, value, version)


@FUZZ
@given(
    st.binary(max_size=120),
    st.sampled_from([(k, v) for k, a in APIS.items() for v in range(a.min_version, a.max_version + 1)]),
)
def test_random_frames_parse_or_raise_protocol_error(tail, key_version):
    """A frame with a valid API key and version, then random bytes for client id, tags and body."""
    key, version = key_version
    frame = key.to_bytes(2, "big") + version.to_bytes(2, "big") + b"\x00\x00\x00\x01" + tail
    try:
        header, reader = frames.parse_request(frame)
        frames.decode_request_body(header, reader)
    except ProtocolError:
        pass


@pytest.mark.parametrize("key, version", ADVERTISED)
@FUZZ
@given(data=st.binary(max_size=160))
def test_response_decoders_too(key, version, data):
    struct = APIS[key].response
    value = decode_or_protocol_error(struct, data, version)
    if value is not None:
        check_re_encoding(struct, value, version)


def test_samples_cover_every_advertised_version():
    for key, api in APIS.items():
        for version in range(api.min_version, api.max_version + 1):
            assert valid_requests(key, version), (key, version)
            assert any(s.valid_in(version) for s in RESPONSES[key]), (key, version)
