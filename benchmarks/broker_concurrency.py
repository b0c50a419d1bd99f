"""Concurrent clients: produce throughput with 1 and 8 producers, and a small producer's ack latency
while a large one writes, each with and without ``log.flush.interval.messages=1``.

Every producer is a confluent-kafka client of its own (librdkafka's threads do the network work)
writing 1 KiB values with acks=1 to a partition of its own, so the broker sees concurrent writers
on different partitions. The latency probe sends one 100-byte record at a time and waits for its
ack, while a large producer streams ~1 MiB batches to another partition of the same broker; the
reference is the same probe against the same broker with nobody else writing (same run).

    .venv/bin/python -m benchmarks.broker_concurrency [--mib 64] [--probes 300]
"""

import argparse
import os
import statistics
import tempfile
import threading
import time

from confluent_kafka import Producer

from broker.embedded import EmbeddedBroker

MIB = 1024 * 1024
VALUE_BYTES = 1024
PARTITIONS = 8
FLUSH_EVERY_MESSAGE = {"log.flush.interval.messages": "1"}
THROUGHPUT_SETTINGS = {
    "acks": "1",
    "linger.ms": 5,
    "batch.size": 256 * 1024,
    "compression.type": "none",
    "queue.buffering.max.kbytes": 256 * 1024,
}
LARGE_SETTINGS = {
    "acks": "1",
    "linger.ms": 20,
    "batch.size": 1_000_000,
    "compression.type": "none",
    "queue.buffering.max.kbytes": 256 * 1024,
}
PROBE_SETTINGS = {"acks": "1", "linger.ms": 0, "compression.type": "none"}


def _producer(bootstrap: str, settings: dict, topic: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, **settings})
    producer.list_topics(topic, timeout=30)  # create the topic and connect before any clock starts
    return producer


def _write(producer: Producer, topic: str, partition: int, count: int, value: bytes, keep_going=None) -> None:
    """Produce ``count`` records (or until ``keep_going()`` turns false) and wait for every ack."""
    sent = 0
    while sent < count if keep_going is None else keep_going():
        try:
            producer.produce(topic, value, partition=partition)
            sent += 1
        except BufferError:
            producer.poll(0.001)
    if producer.flush(300):
        raise RuntimeError(f"records not acknowledged by the broker on {topic}-{partition}")


def throughput(bootstrap: str, topic: str, producers: int, total_bytes: int) -> float:
    """MB/s of values acknowledged, ``producers`` clients each on its own partition."""
    clients = [_producer(bootstrap, THROUGHPUT_SETTINGS, topic) for _ in range(producers)]
    value = os.urandom(VALUE_BYTES)
    each = total_bytes // VALUE_BYTES // producers
    threads = [
        threading.Thread(target=_write, args=(client, topic, i, each, value)) for i, client in enumerate(clients)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return each * producers * VALUE_BYTES / (time.perf_counter() - started) / 1e6


def probe_latencies(bootstrap: str, topic: str, probes: int) -> list[float]:
    """Milliseconds from produce to ack of ``probes`` records sent one at a time."""
    producer = _producer(bootstrap, PROBE_SETTINGS, topic)
    latencies = []
    for _ in range(probes):
        started = time.perf_counter()
        producer.produce(topic, b"p" * 100, partition=0)
        if producer.flush(60):
            raise RuntimeError("a probe record was not acknowledged")
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def latency_under_load(bootstrap: str, topic: str, probes: int) -> tuple[list[float], list[float]]:
    """The probe's latencies alone, then while a large producer writes to partition 1."""
    alone = probe_latencies(bootstrap, topic, probes)
    large = _producer(bootstrap, LARGE_SETTINGS, topic)
    running = threading.Event()
    running.set()
    writer = threading.Thread(target=_write, args=(large, topic, 1, 0, os.urandom(VALUE_BYTES), running.is_set))
    writer.start()
    try:
        time.sleep(0.5)  # the large producer is streaming before the first probe
        loaded = probe_latencies(bootstrap, topic, probes)
    finally:
        running.clear()
        writer.join()
    return alone, loaded


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98]


def measure(settings: dict, total_bytes: int, probes: int) -> dict:
    with tempfile.TemporaryDirectory() as directory:
        broker = EmbeddedBroker(os.path.join(directory, "log"), {"num.partitions": str(PARTITIONS), **settings}).start()
        try:
            result = {
                f"produce_{n}_mb_s": throughput(broker.bootstrap, f"throughput-{n}", n, total_bytes) for n in (1, 8)
            }
            alone, loaded = latency_under_load(broker.bootstrap, "latency", probes)
        finally:
            broker.stop()
    result.update(p99_alone_ms=p99(alone), p99_loaded_ms=p99(loaded), median_loaded_ms=statistics.median(loaded))
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64, help="MiB produced per throughput figure")
    parser.add_argument("--probes", type=int, default=300, help="records sent one at a time per latency figure")
    args = parser.parse_args(argv)
    results = {
        "default flush": measure({}, args.mib * MIB, args.probes),
        "flush.messages=1": measure(FLUSH_EVERY_MESSAGE, args.mib * MIB, args.probes),
    }
    print(f"confluent-kafka, 1 KiB values, acks=1, {args.mib} MiB per throughput figure, {args.probes} probes:")
    print(
        f"  {'':18s} {'1 producer':>11s} {'8 producers':>12s} {'ratio':>6s} "
        f"{'probe p99 alone':>16s} {'p99 beside a large producer':>28s} {'ratio':>6s}"
    )
    for name, r in results.items():
        print(
            f"  {name:18s} {r['produce_1_mb_s']:8.0f} MB/s {r['produce_8_mb_s']:7.0f} MB/s "
            f"{r['produce_8_mb_s'] / r['produce_1_mb_s']:6.2f} {r['p99_alone_ms']:13.1f} ms "
            f"{r['p99_loaded_ms']:25.1f} ms {r['p99_loaded_ms'] / r['p99_alone_ms']:6.1f}"
        )
    return results


if __name__ == "__main__":
    main()
