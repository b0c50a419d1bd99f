"""``__consumer_offsets`` keys and values: Kafka's byte layouts for every version (built by hand
here, field by field, from Kafka's message schemas), tombstones, and clear errors for bad bytes."""

import struct

import pytest

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
    version_of,
)


def s(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def b(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


NULL_STRING = struct.pack(">h", -1)
T = 1_700_000_000_000


def test_offset_key_v1_bytes():
    data = struct.pack(">h", 1) + s("g") + s("events") + struct.pack(">i", 4)
    assert encode_key(OffsetKey("g", "events", 4)) == data
    assert decode_key(data) == OffsetKey("g", "events", 4)
    assert decode_key(struct.pack(">h", 0) + data[2:]) == OffsetKey("g", "events", 4)  # v0: same layout


def test_group_key_v2_bytes():
    data = struct.pack(">h", 2) + s("grp")
    assert encode_key(GroupKey("grp")) == data
    assert decode_key(data) == GroupKey("grp")


OFFSET_VALUES = {  # version: (bytes as Kafka writes them, decoded value)
    0: (struct.pack(">hq", 0, 42) + s("meta") + struct.pack(">q", T), OffsetValue(42, "meta", T)),
    1: (
        struct.pack(">hq", 1, 42) + s("meta") + struct.pack(">qq", T, T + 5),
        OffsetValue(42, "meta", T, expire_timestamp=T + 5),
    ),
    2: (struct.pack(">hq", 2, 42) + s("") + struct.pack(">q", T), OffsetValue(42, "", T)),
    3: (struct.pack(">hqi", 3, 42, 7) + s("meta") + struct.pack(">q", T), OffsetValue(42, "meta", T, 7)),
}


@pytest.mark.parametrize("version", sorted(OFFSET_VALUES))
def test_offset_value_bytes_every_version(version):
    data, value = OFFSET_VALUES[version]
    assert decode_value(OffsetKey("g", "t", 0), data) == value
    assert encode_value(value, version) == data


def test_default_offset_value_versions_are_the_ones_kafka_writes():
    assert version_of(encode_value(OffsetValue(1, "", T, leader_epoch=3))) == 3
    assert version_of(encode_value(OffsetValue(1, "", T, expire_timestamp=T))) == 1


def member_bytes(version: int) -> bytes:
    out = s("m-1")
    if version >= 3:
        out += s("instance-1")
    out += s("client-1") + s("/10.0.0.1")
    if version >= 1:
        out += struct.pack(">i", 300_000)
    return out + struct.pack(">i", 10_000) + b(b"\x00\x01sub") + b(b"\x00\x01asg")


def group_value_bytes(version: int) -> bytes:
    out = struct.pack(">h", version) + s("consumer") + struct.pack(">i", 5) + s("range") + s("m-1")
    if version >= 2:
        out += struct.pack(">q", T)
    return out + struct.pack(">i", 1) + member_bytes(version)


@pytest.mark.parametrize("version", range(4))
def test_group_value_bytes_every_version(version):
    member = GroupMember(
        "m-1",
        "instance-1" if version >= 3 else None,
        "client-1",
        "/10.0.0.1",
        300_000 if version >= 1 else 10_000,
        10_000,
        b"\x00\x01sub",
        b"\x00\x01asg",
    )
    value = GroupValue("consumer", 5, "range", "m-1", T if version >= 2 else -1, (member,))
    assert decode_value(GroupKey("g"), group_value_bytes(version)) == value
    assert encode_value(value, version) == group_value_bytes(version)


def test_flexible_v4_values_compact_encodings_and_tagged_fields_skipped():
    tagged = b"\x01" + b"\x05\x02ab"  # one unknown tagged field: tag 5, 2 bytes
    data = struct.pack(">hqi", 4, 42, 7) + b"\x05meta" + struct.pack(">q", T) + tagged
    assert decode_value(OffsetKey("g", "t", 0), data) == OffsetValue(42, "meta", T, 7)
    assert encode_value(OffsetValue(42, "meta", T, 7), 4) == data[: -len(tagged)] + b"\x00"
    member = b"\x02m" + b"\x00" + b"\x02c" + b"\x02h" + struct.pack(">ii", 20, 10) + b"\x02s" + b"\x01" + tagged
    data = (
        struct.pack(">h", 4)
        + b"\x09consumer"
        + struct.pack(">i", 3)
        + b"\x00"
        + b"\x02m"
        + struct.pack(">q", T)
        + b"\x02"
        + member
        + b"\x00"
    )
    value = GroupValue("consumer", 3, None, "m", T, (GroupMember("m", None, "c", "h", 20, 10, b"s", b""),))
    assert decode_value(GroupKey("g"), data) == value
    assert decode_value(GroupKey("g"), encode_value(value, 4)) == value
    assert version_of(encode_value(value)) == 3  # what Kafka writes


def test_empty_group_with_null_protocol_and_leader():
    data = (
        struct.pack(">h", 3)
        + s("consumer")
        + struct.pack(">i", 0)
        + NULL_STRING
        + NULL_STRING
        + struct.pack(">qi", T, 0)
    )
    value = GroupValue("consumer", 0, None, None, T, ())
    assert decode_value(GroupKey("g"), data) == value
    assert encode_value(value) == data


def test_tombstones():
    assert encode_value(None) is None
    assert decode_value(OffsetKey("g", "t", 0), None) is None
    assert decode_value(GroupKey("g"), None) is None


def test_values_a_version_cannot_carry_are_refused_not_dropped():
    with pytest.raises(OffsetsRecordError, match="offset commit value v1 cannot carry leader_epoch=7"):
        encode_value(OffsetValue(1, "", T, leader_epoch=7), 1)
    with pytest.raises(OffsetsRecordError, match="v3 cannot carry expire_timestamp"):
        encode_value(OffsetValue(1, "", T, leader_epoch=7, expire_timestamp=T), 3)
    member = GroupMember("m", "static-1", "c", "h", 10, 10)
    with pytest.raises(OffsetsRecordError, match="group metadata value v2 cannot carry group_instance_id='static-1'"):
        encode_value(GroupValue("consumer", 1, "range", "m", T, (member,)), 2)
    slow_rebalance = GroupMember("m", None, "c", "h", 300_000, 10_000)
    with pytest.raises(OffsetsRecordError, match="v0 cannot carry a rebalance timeout other than the session"):
        encode_value(GroupValue("consumer", 1, "range", "m", -1, (slow_rebalance,)), 0)
    with pytest.raises(OffsetsRecordError, match="version 5 is unknown"):
        encode_value(OffsetValue(1), 5)
    with pytest.raises(OffsetsRecordError, match="offset commit key has version 0 or 1, not 2"):
        encode_key(OffsetKey("g", "t", 0), 2)
    with pytest.raises(OffsetsRecordError, match="offset commit key v1: .*longer than a protocol string"):
        encode_key(OffsetKey("g" * 40_000, "t", 0))
    with pytest.raises(OffsetsRecordError, match="does not fit INT32"):
        encode_key(OffsetKey("g", "t", 2**31))


GOOD_KEY = encode_key(OffsetKey("g", "t", 0))
GOOD_OFFSET = OFFSET_VALUES[3][0]


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "key of 0 bytes has no version"),
        (b"\x00", "key of 1 bytes has no version"),
        (struct.pack(">h", 3) + s("g"), "key version 3 is unknown"),
        (struct.pack(">h", -1), "key version -1 is unknown"),
        (GOOD_KEY[:-1], "offset commit key v1: truncated"),
        (GOOD_KEY + b"\x00", "offset commit key v1: 1 bytes after the last field"),
        (struct.pack(">hh", 2, 5) + b"ab", "group metadata key v2: field of 5 bytes .* overruns"),
        (struct.pack(">hh", 2, -2), "group metadata key v2: string length -2"),
        (struct.pack(">hh", 2, 2) + b"\xff\xfe", "group metadata key v2: string at 4 is not UTF-8"),
    ],
)
def test_malformed_keys_are_refused_with_one_clear_line(data, message):
    with pytest.raises(OffsetsRecordError, match=message) as info:
        decode_key(data)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "key, data, message",
    [
        (OffsetKey("g", "t", 0), struct.pack(">h", 5) + GOOD_OFFSET[2:], "offset commit value version 5 is unknown"),
        (
            OffsetKey("g", "t", 0),
            struct.pack(">hqi", 4, 1, 2) + b"\x00",
            "offset commit value v4: null for a non-nullable",
        ),
        (OffsetKey("g", "t", 0), GOOD_OFFSET[:10], "offset commit value v3: truncated"),
        (GroupKey("g"), struct.pack(">h", 9), "group metadata value version 9 is unknown"),
        (GroupKey("g"), group_value_bytes(3)[:-2], "group metadata value v3: field of 5 bytes"),
        # a hostile member count: bounded by the bytes present, not allocated
        (
            GroupKey("g"),
            group_value_bytes(1)[: 2 + 10 + 4 + 7 + 5] + struct.pack(">i", 2**31 - 1),
            "group metadata value v1: array of 2147483647 elements",
        ),
    ],
)
def test_malformed_values_are_refused_with_one_clear_line(key, data, message):
    with pytest.raises(OffsetsRecordError, match=message):
        decode_value(key, data)
