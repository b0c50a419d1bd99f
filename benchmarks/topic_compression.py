"""What a topic's ``compression.type`` costs the broker: the same confluent-kafka producer (snappy
batches of compressible 1 KiB values, acks=1) writes to two topics of one broker in one run, one
with ``compression.type=producer`` (batches stored as sent: the reference) and one with ``zstd``
(every batch decompressed and recompressed by the broker, as Kafka does).

    .venv/bin/python -m benchmarks.topic_compression [--mib 64]
"""

import argparse
import tempfile
import time

from confluent_kafka import Producer

from broker.client import KafkaClient, NewTopic
from broker.embedded import EmbeddedBroker

MIB = 1024 * 1024
VALUE_SIZE = 1024
PRODUCER_SETTINGS = {
    "acks": "1",
    "linger.ms": 50,
    "batch.size": 1_000_000,
    "compression.type": "snappy",
    "queue.buffering.max.kbytes": 1024 * 1024,
    "queue.buffering.max.messages": 10_000_000,
}


def compressible_values(count: int) -> list[bytes]:
    """Values that compress to roughly a third, like JSON events."""
    return [
        (b'{"user":%08d,"page":"/products/%05d","referrer":"https://example.com/search?q=shoes"}' % (i, i % 997)).ljust(
            VALUE_SIZE, b" "
        )
        for i in range(count)
    ]


def produce(bootstrap: str, topic: str, values: list[bytes]) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_SETTINGS})
    producer.list_topics(topic, timeout=30)
    started = time.perf_counter()
    for value in values:
        while True:
            try:
                producer.produce(topic, value, partition=0)
                break
            except BufferError:
                producer.poll(0.001)
    if producer.flush(300):
        raise RuntimeError(f"records not delivered to {topic}")
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64, help="MiB of values per topic (default 64)")
    args = parser.parse_args(argv)
    values = compressible_values(args.mib * MIB // VALUE_SIZE)
    with (
        tempfile.TemporaryDirectory() as directory,
        EmbeddedBroker(f"{directory}/log", {"num.partitions": "1"}) as broker,
    ):
        with KafkaClient(broker.bootstrap) as client:
            client.create_topics(
                [
                    NewTopic("as-sent", 1, {"compression.type": "producer"}),
                    NewTopic("recompressed", 1, {"compression.type": "zstd"}),
                ]
            )
        produce(broker.bootstrap, "warm-up", values[: len(values) // 8])
        results = {topic: produce(broker.bootstrap, topic, values) for topic in ("as-sent", "recompressed")}
    mb = len(values) * VALUE_SIZE / 1e6
    for topic, seconds in results.items():
        print(f"{topic:>12}: {mb / seconds:8.1f} MB/s of values, {len(values) / seconds:10,.0f} records/s")
    print(f"ratio recompressed / as-sent: {results['as-sent'] / results['recompressed']:.2f}")


if __name__ == "__main__":
    main()
