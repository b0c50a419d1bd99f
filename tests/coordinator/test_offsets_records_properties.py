"""Hypothesis properties of the ``__consumer_offsets`` formats: encode/decode round trips for every
version (flexible v4 too), and on random or mutated bytes the decoders either succeed or raise OffsetsRecordError."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.coordinator.offsets_records import (
    GroupKey,
    GroupMember,
    GroupValue,
    OffsetKey,
    OffsetsRecordError,
    OffsetValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)

ROUND_TRIP = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FUZZ = settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

int32s = st.integers(-(2**31), 2**31 - 1)
int64s = st.integers(-(2**63), 2**63 - 1)
names = st.text(max_size=30)
optional_names = st.none() | names
opaque = st.binary(max_size=200)

offset_keys = st.builds(OffsetKey, names, names, int32s)
group_keys = st.builds(GroupKey, names)


@st.composite
def offset_values(draw):
    version = draw(st.integers(0, 4))
    value = OffsetValue(
        draw(int64s),
        draw(names),
        draw(int64s),
        leader_epoch=draw(int32s) if version >= 3 else -1,
        expire_timestamp=draw(int64s) if version == 1 else -1,
    )
    return version, value


@st.composite
def group_values(draw):
    version = draw(st.integers(0, 4))
    members = []
    for _ in range(draw(st.integers(0, 4))):
        session = draw(int32s)
        members.append(
            GroupMember(
                draw(names),
                draw(optional_names) if version >= 3 else None,
                draw(names),
                draw(names),
                draw(int32s) if version >= 1 else session,
                session,
                draw(opaque),
                draw(opaque),
            )
        )
    value = GroupValue(
        draw(names),
        draw(int32s),
        draw(optional_names),
        draw(optional_names),
        draw(int64s) if version >= 2 else -1,
        tuple(members),
    )
    return version, value


@ROUND_TRIP
@given(st.one_of(offset_keys, group_keys))
def test_keys_round_trip(key):
    assert decode_key(encode_key(key)) == key


@ROUND_TRIP
@given(offset_keys, offset_values())
def test_offset_values_round_trip_in_every_version(key, versioned):
    version, value = versioned
    assert decode_value(key, encode_value(value, version)) == value


@ROUND_TRIP
@given(group_values())
def test_group_values_round_trip_in_every_version(versioned):
    version, value = versioned
    assert decode_value(GroupKey("g"), encode_value(value, version)) == value


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_decode_or_raise_the_format_error(data):
    for decode in (
        decode_key,
        lambda d: decode_value(OffsetKey("g", "t", 0), d),
        lambda d: decode_value(GroupKey("g"), d),
    ):
        try:
            decode(data)
        except OffsetsRecordError:
            pass


@FUZZ
@given(group_values(), st.data())
def test_mutated_values_decode_or_raise_the_format_error(versioned, data):
    encoded = bytearray(encode_value(versioned[1], versioned[0]))
    position = data.draw(st.integers(0, len(encoded) - 1))
    encoded[position] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(encoded)))
    try:
        decode_value(GroupKey("g"), bytes(encoded[:cut]))
    except OffsetsRecordError:
        pass
