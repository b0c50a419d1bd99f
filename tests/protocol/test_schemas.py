"""Cross-checks of every advertised (API, version) that kafka-python 3 implements against its
independent encoder and decoder (generated from Kafka 4.x JSON): requests and responses, in both
directions, and byte equality where both libraries encode the same message.

Versions kafka-python dropped (Produce v0-2, CreateTopics v0-1, DeleteTopics v0, DescribeConfigs v0,
DescribeLogDirs v0, OffsetForLeaderEpoch v0-1, the ACL APIs v0) are checked
against hand-written byte layouts in ``test_versions.py``.
"""

import pytest

from broker.protocol.apis import APIS, ApiKey
from broker.protocol.types import Reader, Writer

from .bridge import (
    canonical,
    cross_checked_versions,
    from_kafka_python,
    hand_checked_versions,
    kafka_python_class,
    schema,
    to_kafka_python,
)
from .samples import REQUESTS, RESPONSES

SAMPLES = {"request": REQUESTS, "response": RESPONSES}


def _cases():
    for key in APIS:
        for kind in ("request", "response"):
            for version in cross_checked_versions(key):
                for sample in SAMPLES[kind][key]:
                    if sample.valid_in(version):
                        yield pytest.param(key, kind, version, sample, id=f"{key.name}-v{version}-{kind}-{sample.name}")


CASES = list(_cases())


def encode_ours(key, kind, value, version) -> bytes:
    writer = Writer()
    schema(key, kind).encode(writer, value, version)
    return b"".join(writer.finish())


# kafka-python implements only the flexible versions of these: their bytes are checked by hand (test_versions)
ONLY_FLEXIBLE_IN_KAFKA_PYTHON = {ApiKey.WRITE_TXN_MARKERS}


def test_every_api_has_samples_and_cross_checked_versions():
    for key in APIS:
        assert REQUESTS[key] and RESPONSES[key], key
        assert cross_checked_versions(key) or key in ONLY_FLEXIBLE_IN_KAFKA_PYTHON, key


@pytest.mark.parametrize("key", list(APIS), ids=lambda k: k.name)
def test_only_versions_kafka_python_dropped_are_left_to_hand_checks(key):
    dropped = {
        "PRODUCE": [0, 1, 2],
        "CREATE_TOPICS": [0, 1],
        "DELETE_TOPICS": [0],
        "DESCRIBE_CONFIGS": [0],
        "DESCRIBE_LOG_DIRS": [0],
        "OFFSET_COMMIT": [0, 1],
        "OFFSET_FETCH": [0],
        "OFFSET_FOR_LEADER_EPOCH": [0, 1],
        "DESCRIBE_ACLS": [0],
        "CREATE_ACLS": [0],
        "DELETE_ACLS": [0],
        "WRITE_TXN_MARKERS": [0],
    }
    assert hand_checked_versions(key) == dropped.get(key.name, [])


@pytest.mark.parametrize("key, kind, version, sample", CASES)
def test_kafka_python_encoding_decodes_with_our_schema(key, kind, version, sample):
    data = bytes(to_kafka_python(key, kind, sample.value, version).encode())
    reader = Reader(data)
    decoded = schema(key, kind).decode(reader, version)
    assert reader.remaining == 0
    assert canonical(schema(key, kind), decoded, version) == canonical(schema(key, kind), sample.value, version)


@pytest.mark.parametrize("key, kind, version, sample", CASES)
def test_our_encoding_decodes_with_kafka_python(key, kind, version, sample):
    data = encode_ours(key, kind, sample.value, version)
    message = kafka_python_class(key, kind)[version].decode(data)
    assert from_kafka_python(key, kind, message, version) == canonical(schema(key, kind), sample.value, version)


@pytest.mark.parametrize("key, kind, version, sample", CASES)
def test_both_encodings_are_byte_equal(key, kind, version, sample):
    ours = encode_ours(key, kind, sample.value, version)
    theirs = bytes(to_kafka_python(key, kind, sample.value, version).encode())
    assert ours == theirs


@pytest.mark.parametrize("key, kind, version, sample", CASES)
def test_our_encoding_round_trips_through_our_decoder(key, kind, version, sample):
    struct = schema(key, kind)
    reader = Reader(encode_ours(key, kind, sample.value, version))
    assert canonical(struct, struct.decode(reader, version), version) == canonical(struct, sample.value, version)
    assert reader.remaining == 0
