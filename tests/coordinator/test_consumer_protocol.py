"""The consumer protocol's subscription and assignment, cross-checked both ways against
kafka-python's generated ConsumerProtocolSubscription / ConsumerProtocolAssignment (versions 0-3),
kafka-python's and aiokafka's hand-written v0 ConsumerProtocolMemberMetadata / MemberAssignment,
plus forward compatibility, clear errors, and hypothesis round trips."""

import struct

import pytest
from aiokafka.coordinator import protocol as aiokafka_protocol
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kafka.protocol.old import consumer_protocol as kafka_v0

from broker.coordinator.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

OWNED = (("events", (0, 3, 7)), ("\u65e5\u672c", (1,)))
SUBSCRIPTIONS = {  # version: the richest subscription that version carries
    0: Subscription(("events", "clicks"), b"\x00user"),
    1: Subscription(("events",), None, OWNED),
    2: Subscription(("events", "\u65e5\u672c"), b"", OWNED, 12),
    3: Subscription(("events",), b"sticky", OWNED, 12, "eu-west-1a"),
}
ASSIGNMENT = Assignment(OWNED, b"\x00\x01")


def kafka_python_subscription(subscription: Subscription, version: int) -> ConsumerProtocolSubscription:
    owned = [
        ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=list(p))
        for t, p in subscription.owned_partitions
    ]
    return ConsumerProtocolSubscription(
        version=version,
        topics=list(subscription.topics),
        user_data=subscription.user_data,
        owned_partitions=owned,
        generation_id=subscription.generation_id,
        rack_id=subscription.rack_id,
    )


@pytest.mark.parametrize("version", sorted(SUBSCRIPTIONS))
def test_subscription_bytes_match_kafka_python_both_ways(version):
    subscription = SUBSCRIPTIONS[version]
    theirs = kafka_python_subscription(subscription, version).encode(version=version)
    assert encode_subscription(subscription, version) == theirs
    assert decode_subscription(theirs) == subscription
    decoded = ConsumerProtocolSubscription.decode(encode_subscription(subscription, version))
    assert decoded.version == version and decoded.topics == list(subscription.topics)
    assert decoded.user_data == subscription.user_data
    assert [(tp.topic, tuple(tp.partitions)) for tp in decoded.owned_partitions] == list(subscription.owned_partitions)


@pytest.mark.parametrize("version", range(4))
def test_assignment_bytes_match_kafka_python_both_ways(version):
    assigned = [ConsumerProtocolAssignment.TopicPartition(topic=t, partitions=list(p)) for t, p in OWNED]
    theirs = ConsumerProtocolAssignment(
        version=version, assigned_partitions=assigned, user_data=ASSIGNMENT.user_data
    ).encode(version=version)
    assert encode_assignment(ASSIGNMENT, version) == theirs
    assert decode_assignment(theirs) == ASSIGNMENT
    decoded = ConsumerProtocolAssignment.decode(encode_assignment(ASSIGNMENT, version))
    assert [(tp.topic, tuple(tp.partitions)) for tp in decoded.assigned_partitions] == list(OWNED)


@pytest.mark.parametrize(
    "metadata_class, assignment_class",
    [
        (kafka_v0.ConsumerProtocolMemberMetadata_v0, kafka_v0.ConsumerProtocolMemberAssignment_v0),
        (aiokafka_protocol.ConsumerProtocolMemberMetadata, aiokafka_protocol.ConsumerProtocolMemberAssignment),
    ],
)
def test_v0_matches_the_hand_written_client_structs(metadata_class, assignment_class):
    theirs = metadata_class(0, ["events", "clicks"], b"\x00user").encode()
    assert decode_subscription(theirs) == SUBSCRIPTIONS[0]
    assert encode_subscription(SUBSCRIPTIONS[0], 0) == theirs
    theirs = assignment_class(0, [(t, list(p)) for t, p in OWNED], b"\x00\x01").encode()
    assert decode_assignment(theirs) == ASSIGNMENT
    assert (
        assignment_class.decode(encode_assignment(ASSIGNMENT, 0)).partitions()
        == assignment_class(0, [(t, list(p)) for t, p in OWNED], b"").partitions()
    )


def test_a_newer_version_is_read_as_version_3_skipping_what_it_appends():
    v3 = encode_subscription(SUBSCRIPTIONS[3], 3)
    assert decode_subscription(struct.pack(">h", 9) + v3[2:] + b"future field") == SUBSCRIPTIONS[3]
    v3 = encode_assignment(ASSIGNMENT, 3)
    assert decode_assignment(struct.pack(">h", 4) + v3[2:] + b"\x00\x00") == ASSIGNMENT


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x00", "subscription of 1 bytes has no version"),
        (struct.pack(">h", -1), "subscription version -1 is negative"),
        (encode_subscription(SUBSCRIPTIONS[3])[:-1], "subscription v3: field of 10 bytes"),
        (encode_subscription(SUBSCRIPTIONS[0], 0) + b"\x00", "subscription v0: 1 bytes after the last field"),
        (struct.pack(">hi", 0, 2**31 - 1), "subscription v0: array of 2147483647 elements"),
        (
            struct.pack(">hih", 0, 1, 2) + b"\xc3\x28" + struct.pack(">i", -1),
            "subscription v0: string at 8 is not UTF-8",
        ),
    ],
)
def test_malformed_subscriptions_are_refused_with_one_clear_line(data, message):
    with pytest.raises(ConsumerProtocolError, match=message):
        decode_subscription(data)


def test_malformed_assignments_and_unencodable_values_are_refused():
    with pytest.raises(ConsumerProtocolError, match="assignment v1: truncated"):
        decode_assignment(struct.pack(">hi", 1, 1) + b"\x00")
    with pytest.raises(ConsumerProtocolError, match="subscription v0 cannot carry owned partitions"):
        encode_subscription(SUBSCRIPTIONS[1], 0)
    with pytest.raises(ConsumerProtocolError, match="subscription v2 cannot carry rack id 'eu-west-1a'"):
        encode_subscription(SUBSCRIPTIONS[3], 2)
    with pytest.raises(ConsumerProtocolError, match="assignment version 4 is unknown"):
        encode_assignment(ASSIGNMENT, 4)


names = st.text(max_size=20)
partitions = st.lists(
    st.tuples(names, st.lists(st.integers(-(2**31), 2**31 - 1), max_size=5).map(tuple)), max_size=4
).map(tuple)
optional_bytes = st.none() | st.binary(max_size=100)
PROPERTIES = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def versioned_subscriptions(draw):
    version = draw(st.integers(0, 3))
    return version, Subscription(
        tuple(draw(st.lists(names, max_size=5))),
        draw(optional_bytes),
        draw(partitions) if version >= 1 else (),
        draw(st.integers(-(2**31), 2**31 - 1)) if version >= 2 else -1,
        draw(st.none() | names) if version >= 3 else None,
    )


@PROPERTIES
@given(versioned_subscriptions())
def test_subscriptions_round_trip(versioned):
    version, subscription = versioned
    assert decode_subscription(encode_subscription(subscription, version)) == subscription


@PROPERTIES
@given(st.integers(0, 3), partitions, optional_bytes)
def test_assignments_round_trip(version, assigned, user_data):
    assignment = Assignment(assigned, user_data)
    assert decode_assignment(encode_assignment(assignment, version)) == assignment


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.binary(max_size=200))
def test_random_bytes_decode_or_raise_the_protocol_error(data):
    for decode in (decode_subscription, decode_assignment):
        try:
            decode(data)
        except ConsumerProtocolError:
            pass
