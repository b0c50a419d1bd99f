"""Produce and fetch throughput of the broker, side by side with librdkafka's in-process mock cluster.

The same confluent-kafka client runs against both brokers in one run: a producer (acks=1,
uncompressed, ~1 MiB batches) writing 100-byte and 1 KiB values, and consumers (``assign``,
batched ``consume``). The mock cluster is librdkafka's own in-memory broker, written in C: the
reference, not a target to beat. It keeps only about 5 MiB per partition, so the side-by-side
fetch reads a 4 x 4 MiB window again and again; reading a whole 1 GiB topic from the start is
measured on kafkalog alone.

    .venv/bin/python -m benchmarks.broker_throughput [--produce-mib 256] [--fetch-mib 1024]
"""

import argparse
import os
import tempfile
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from broker.embedded import EmbeddedBroker

MIB = 1024 * 1024
WINDOW_PARTITIONS = 4
WINDOW_BYTES_PER_PARTITION = 4 * MIB  # the mock cluster keeps only ~5 MiB per partition
WINDOW_READS = 25
PRODUCER_SETTINGS = {
    "acks": "1",
    "linger.ms": 50,
    "batch.size": 1_000_000,
    "compression.type": "none",
    "queue.buffering.max.kbytes": 1024 * 1024,
    "queue.buffering.max.messages": 10_000_000,
}


def produce(
    bootstrap: str,
    topic: str,
    value_size: int,
    total_bytes: int,
    partitions: int = 1,
    client_settings: dict | None = None,
) -> tuple[float, int]:
    """Produce ``total_bytes`` of values, round-robin over ``partitions``; return (seconds, records).
    ``client_settings``: more librdkafka settings (security)."""
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_SETTINGS, **(client_settings or {})})
    producer.list_topics(topic, timeout=30)  # create the topic and connect before the clock starts
    value = os.urandom(value_size)
    count = total_bytes // value_size
    started = time.perf_counter()
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.001)
    remaining = producer.flush(300)
    elapsed = time.perf_counter() - started
    if remaining:
        raise RuntimeError(f"{remaining} records not delivered to {bootstrap}")
    return elapsed, count


def watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, tuple[int, int]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench"})
    marks = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30) for p in range(partitions)}
    consumer.close()
    return marks


def consume(
    bootstrap: str, topic: str, ranges: dict[int, tuple[int, int]], client_settings: dict | None = None
) -> tuple[float, int]:
    """Read every partition's [start, end) range; return (seconds, bytes of values)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.max.bytes": 64 * MIB,
            "max.partition.fetch.bytes": 16 * MIB,
            "fetch.wait.max.ms": 100,
            **(client_settings or {}),
        }
    )
    consumer.assign([TopicPartition(topic, p, start) for p, (start, _) in ranges.items()])
    expected = sum(end - start for start, end in ranges.values())
    count = size = 0
    started = time.perf_counter()
    deadline = started + 600
    while count < expected and time.perf_counter() < deadline:
        for message in consumer.consume(min(10_000, expected - count), 1.0):
            if not message.error():
                count += 1
                size += len(message.value() or b"")
    elapsed = time.perf_counter() - started
    consumer.close()
    if count < expected:
        raise RuntimeError(f"read {count} of {expected} records from {bootstrap}")
    return elapsed, size


def measure(bootstrap: str, produce_bytes: int, full_fetch_bytes: int | None) -> dict:
    result = {}
    for value_size in (100, 1024):
        seconds, records = produce(bootstrap, f"produce-{value_size}", value_size, produce_bytes)
        result[f"produce_{value_size}_mb_s"] = records * value_size / seconds / 1e6
        result[f"produce_{value_size}_records_s"] = records / seconds
    produce(bootstrap, "window", 1024, WINDOW_PARTITIONS * WINDOW_BYTES_PER_PARTITION, WINDOW_PARTITIONS)
    ranges = watermarks(bootstrap, "window", WINDOW_PARTITIONS)
    seconds = size = 0
    for _ in range(WINDOW_READS):
        elapsed, read = consume(bootstrap, "window", ranges)
        seconds, size = seconds + elapsed, size + read
    result["fetch_window_mb_s"] = size / seconds / 1e6
    if full_fetch_bytes:
        _, records = produce(bootstrap, "fetch", 1024, full_fetch_bytes)
        seconds, size = consume(bootstrap, "fetch", {0: (0, records)})
        result["fetch_full_mb_s"] = size / seconds / 1e6
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--produce-mib", type=int, default=256)
    parser.add_argument("--fetch-mib", type=int, default=1024)
    args = parser.parse_args(argv)
    produce_bytes, fetch_bytes = args.produce_mib * MIB, args.fetch_mib * MIB

    mock_owner = Producer({"test.mock.num.brokers": 1})  # the mock cluster lives as long as this handle
    mock_brokers = mock_owner.list_topics(timeout=30).brokers.values()
    mock_bootstrap = ",".join(f"{b.host}:{b.port}" for b in mock_brokers)
    mock = measure(mock_bootstrap, produce_bytes, None)
    del mock_owner

    with tempfile.TemporaryDirectory() as directory:
        broker = EmbeddedBroker(os.path.join(directory, "log"), {"num.partitions": str(WINDOW_PARTITIONS)}).start()
        try:
            ours = measure(broker.bootstrap, produce_bytes, fetch_bytes)
        finally:
            broker.stop()

    print(
        f"confluent-kafka client; produce {args.produce_mib} MiB per value size; fetch a "
        f"{WINDOW_PARTITIONS} x {WINDOW_BYTES_PER_PARTITION // MIB} MiB window {WINDOW_READS} times:"
    )
    print(f"  {'':28s} {'kafkalog':>12s} {'librdkafka mock':>16s} {'ratio':>7s}")
    for key, label in [
        ("produce_100_mb_s", "produce 100 B values MB/s"),
        ("produce_100_records_s", "produce 100 B records/s"),
        ("produce_1024_mb_s", "produce 1 KiB values MB/s"),
        ("produce_1024_records_s", "produce 1 KiB records/s"),
        ("fetch_window_mb_s", "fetch 1 KiB values MB/s"),
    ]:
        print(f"  {label:28s} {ours[key]:12,.0f} {mock[key]:16,.0f} {ours[key] / mock[key]:7.2f}")
    print(
        f"  fetch a {args.fetch_mib} MiB topic from the start (kafkalog only; the mock cannot hold it): "
        f"{ours['fetch_full_mb_s']:,.0f} MB/s"
    )
    return {"kafkalog": ours, "mock": mock}


if __name__ == "__main__":
    main()
