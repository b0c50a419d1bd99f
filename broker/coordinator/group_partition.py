"""The ``__consumer_offsets`` partition of a group, as Kafka computes it.

Kafka: ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`` (``GroupMetadataManager
.partitionFor``, and ``GroupCoordinatorService.partitionFor`` in the new coordinator). ``Utils.abs``
is ``n == Integer.MIN_VALUE ? 0 : Math.abs(n)`` (clients/.../common/utils/Utils.java), not
``Utils.toPositive`` (``n & 0x7fffffff``, used by the producer's partitioner): the two differ for
every negative hash (``abs(-1)`` is 1, ``-1 & 0x7fffffff`` is 2147483647), so this matters.
"""

_INT32_MIN = -(2**31)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, int32."""
    data = text.encode("utf-16-be", "surrogatepass")
    value = 0
    for i in range(0, len(data), 2):
        value = (value * 31 + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return value - 2**32 if value >= 2**31 else value


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: the absolute value, with ``Integer.MIN_VALUE`` mapped to 0."""
    return 0 if n == _INT32_MIN else abs(n)


def partition_for(group_id: str, num_partitions: int) -> int:
    """The partition of ``__consumer_offsets`` that holds ``group_id``'s offsets and metadata."""
    if num_partitions < 1:
        raise ValueError(f"offsets.topic.num.partitions must be at least 1, not {num_partitions}")
    return kafka_abs(java_string_hash(group_id)) % num_partitions
