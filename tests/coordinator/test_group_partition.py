"""The group's partition of ``__consumer_offsets``: Java's String.hashCode and Kafka's Utils.abs."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.coordinator.group_partition import java_string_hash, kafka_abs, partition_for

# (group id, String.hashCode, partition of 50, partition of 7): computed by Java 17 with
# Kafka's formula, Utils.abs(groupId.hashCode()) % partitions
JAVA_VALUES = [
    ("", 0, 0, 0),
    ("a", 97, 47, 6),
    ("hello", 99162322, 22, 0),
    ("polygenelubricants", -2147483648, 0, 0),
    ("console-consumer-12345", 158455506, 6, 6),
    ("spark-kafka-source", -877681262, 12, 3),
    ("my-group", -1906497762, 12, 1),
    ("load-events-parquet", -408816377, 27, 4),
    ("\u00e9t\u00e9", 227742, 42, 4),
    ("\U0001f389-party", -2036846618, 18, 2),  # a surrogate pair: two UTF-16 code units
    ("group-with-a-long-name-that-overflows-many-times-over", 285075997, 47, 3),
]


@pytest.mark.parametrize("group, java_hash, of_50, of_7", JAVA_VALUES)
def test_matches_java_and_kafka(group, java_hash, of_50, of_7):
    assert java_string_hash(group) == java_hash
    assert partition_for(group, 50) == of_50
    assert partition_for(group, 7) == of_7


def test_integer_min_value_maps_to_partition_zero_not_to_a_negative_partition():
    assert kafka_abs(-(2**31)) == 0
    assert partition_for("polygenelubricants", 7) == 0


def test_negative_hashes_use_abs_not_the_sign_bit_mask():
    # Utils.toPositive (n & 0x7fffffff) would put "my-group" in partition 36 of 50
    assert (java_string_hash("my-group") & 0x7FFFFFFF) % 50 == 36
    assert partition_for("my-group", 50) == 12


def test_one_partition_and_bad_counts():
    assert partition_for("anything", 1) == 0
    with pytest.raises(ValueError, match="offsets.topic.num.partitions must be at least 1, not 0"):
        partition_for("g", 0)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=50), st.integers(1, 1000))
def test_every_group_lands_in_a_partition_that_exists(group, partitions):
    assert 0 <= java_string_hash(group) + 2**31 < 2**32
    assert 0 <= partition_for(group, partitions) < partitions
