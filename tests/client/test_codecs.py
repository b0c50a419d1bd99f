"""What the client fetches is exactly what confluent-kafka produced (offsets, timestamps, keys,
values, headers), for every compression codec, on both brokers; the batches carry that codec."""

import pytest
from kafka import KafkaProducer

from broker.client import KafkaClient
from broker.records import record_set
from broker.records.batch import Record, TimestampType
from broker.records.compression import Codec

from .support import Msg, expected_by_partition, produce, read_partition, topic_for

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PARTITIONS = range(4)
GROUPS = 3


def _messages(group: int, partition: int) -> list[Msg]:
    """Records of every shape: null and empty keys and values, large compressible values,
    repeated, empty and null header values, non-ASCII bytes, timestamps not in order."""
    base = 1_700_000_000_000 + 1000 * group + 100 * partition
    tag = f"g{group}p{partition}"
    return [
        Msg(partition, f"{tag}-key".encode(), f"{tag}-value ".encode() * 50, (("h", b"1"), ("h", b"2")), base),
        Msg(partition, None, f"{tag}-no-key".encode(), (), base + 1),
        Msg(partition, f"{tag}-tombstone".encode(), None, (("why", b"deleted"),), base + 2),
        Msg(partition, b"", b"", (("empty", b""), ("null", None)), base - 50),
        Msg(partition, "ключ-ü".encode(), bytes(range(256)) * 4, (("ü-header", b"wert"),), base + 3),
        Msg(partition, f"{tag}-last".encode(), b"x" * 3000, (), base + 4),
    ]


@pytest.mark.parametrize("codec", CODECS)
def test_fetched_records_equal_produced(cluster, request, codec):
    topic = topic_for(request)
    groups = [[m for p in PARTITIONS for m in _messages(g, p)] for g in range(GROUPS)]
    expected = expected_by_partition(produce(cluster.bootstrap, topic, groups, compression=codec))
    with KafkaClient(cluster.bootstrap, timeout=10, retries=1) as client:
        for partition in PARTITIONS:
            assert [r.offset for r in expected[partition]] == list(range(len(expected[partition])))
            assert read_partition(client, topic, partition, max_bytes=1 << 20) == expected[partition]
            assert read_partition(client, topic, partition, max_bytes=1) == expected[partition]
            entries = _every_batch_header(client, topic, partition, len(expected[partition]))
            assert all(h.magic == 2 and h.timestamp_type == TimestampType.CREATE_TIME for h in entries)
            # librdkafka sends a batch uncompressed when compressing does not make it smaller
            wanted = Codec.from_name(codec)
            assert wanted in {h.compression for h in entries} <= {wanted, Codec.NONE}


def _every_batch_header(client, topic, partition, end):
    headers, offset = [], 0
    while offset < end:
        _, header = next(record_set.iter_entries(client.fetch(topic, partition, offset, 1).records))
        headers.append(header)
        offset = header.last_offset + 1
    return headers


def test_lz4_batches_on_our_broker(broker, request):
    """lz4 from another producer (kafka-python), which our broker does get compressed."""
    topic = topic_for(request)
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        compression_type="lz4",
        linger_ms=1000,
        request_timeout_ms=15000,
        max_block_ms=15000,
    )
    groups = [
        [
            m._replace(headers=tuple((k, v) for k, v in m.headers if v is not None))  # no null headers there
            for m in _messages(g, 0)
        ]
        for g in range(GROUPS)
    ]
    messages = [m for group in groups for m in group]
    try:
        futures = []
        for group in groups:
            futures += [
                producer.send(
                    topic, key=m.key, value=m.value, headers=list(m.headers), partition=0, timestamp_ms=m.timestamp
                )
                for m in group
            ]
            producer.flush(timeout=20)
        offsets = [f.get(timeout=20).offset for f in futures]
    finally:
        producer.close(timeout=10)
    expected = [Record(o, m.timestamp, m.key, m.value, m.headers) for o, m in zip(offsets, messages, strict=True)]
    with KafkaClient(broker.bootstrap, timeout=10, retries=1) as client:
        assert read_partition(client, topic, 0, max_bytes=1 << 20) == expected
        result = client.fetch(topic, 0, 0, 1 << 20)
    entries = [header for _, header in record_set.iter_entries(result.records)]
    assert entries and {h.compression for h in entries} == {Codec.LZ4}
