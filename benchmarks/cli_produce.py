"""``kafkalog produce`` from a file, side by side with confluent-kafka producing the same lines.

One broker, one run: a file of short lines (100 bytes each) is sent by ``kafkalog produce --file``
(plain lines, then the same records as JSON lines with a header each) and, as the reference, by a
Python loop over the same lines into confluent-kafka's producer (librdkafka batches and sends in C
threads; acks=1, no compression for both). Each topic has one partition. The figure is lines per
second, and the ratio to the reference.

    .venv/bin/python -m benchmarks.cli_produce [--lines 300000]
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from broker.client import KafkaClient, NewTopic
from broker.embedded import EmbeddedBroker

VALUE_BYTES = 100


def kafkalog_produce(bootstrap: str, topic: str, path: Path, *args: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "broker.cli",
            "produce",
            topic,
            "--file",
            str(path),
            "--bootstrap-server",
            bootstrap,
            *args,
        ],
        check=True,
    )
    return time.perf_counter() - started


def confluent_produce(bootstrap: str, topic: str, path: Path) -> float:
    started = time.perf_counter()
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 50, "queue.buffering.max.messages": 10_000_000}
    )
    with open(path, "rb") as lines:
        send_all(producer, topic, ((None, line.rstrip(b"\n")) for line in lines), partition=0)
    return time.perf_counter() - started


def send_all(
    producer: Producer, topic: str, records: Iterable[Sequence[bytes | None]], **where: Any
) -> None:  # where: Producer.produce's partition
    """Produce every ``(key, value)`` of ``records`` (waiting for room in the queue), then flush."""
    for key, value in records:
        while True:
            try:
                producer.produce(topic, value, key=key, **where)
                break
            except BufferError:
                producer.poll(0.001)
    if producer.flush(300):
        raise RuntimeError("records not delivered")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=300_000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work, EmbeddedBroker(Path(work) / "log") as broker:
        plain, as_json = Path(work) / "lines.txt", Path(work) / "lines.jsonl"
        values = [f"{i:09d} ".ljust(VALUE_BYTES, "v") for i in range(args.lines)]
        plain.write_text("".join(v + "\n" for v in values))
        as_json.write_text("".join(json.dumps({"value": v, "headers": {"source": "bench"}}) + "\n" for v in values))
        with KafkaClient(broker.bootstrap) as client:
            client.create_topics([NewTopic(name, 1) for name in ("reference", "plain", "json")])
        reference = confluent_produce(broker.bootstrap, "reference", plain)
        runs = {
            "kafkalog produce (plain lines)": kafkalog_produce(broker.bootstrap, "plain", plain),
            "kafkalog produce --format json (a header each)": kafkalog_produce(
                broker.bootstrap, "json", as_json, "--format", "json"
            ),
        }
        print(f"{args.lines:,} lines of {VALUE_BYTES} bytes, acks=1, no compression, one partition")
        print(f"  confluent-kafka (reference): {args.lines / reference:,.0f} lines/s")
        for name, seconds in runs.items():
            print(f"  {name}: {args.lines / seconds:,.0f} lines/s ({reference / seconds:.2f} of the reference)")


if __name__ == "__main__":
    main()
