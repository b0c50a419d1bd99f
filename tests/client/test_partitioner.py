"""The keyed-record partitioner is Kafka's: murmur2 equal to Java's ``Utils.murmur2`` (values from
Kafka's own UtilsTest) and to kafka-python's independent implementation, for every tail length."""

import random

import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from broker.client.partitioner import murmur2, partition_for_key


@pytest.mark.parametrize(
    "data, expected",
    [
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (bytes([ord("a"), ord("b"), ord("c")]), 479470107),
    ],
)
def test_murmur2_matches_javas(data, expected):
    assert murmur2(data) == expected


def test_murmur2_matches_kafka_python_for_every_length():
    rng = random.Random(7)
    for length in range(0, 70):
        for _ in range(20):
            data = rng.randbytes(length)
            assert murmur2(data) & 0xFFFFFFFF == kafka_python_murmur2(bytearray(data)) & 0xFFFFFFFF, data


def test_partition_for_key_is_stable_and_in_range():
    assert [partition_for_key(f"key-{i}".encode(), 4) for i in range(3)] == [
        (murmur2(f"key-{i}".encode()) & 0x7FFFFFFF) % 4 for i in range(3)
    ]
    assert all(0 <= partition_for_key(random.Random(i).randbytes(8), 7) < 7 for i in range(200))
