"""Does a decompression bomb stall the other clients? A probe's round-trip latency (ApiVersions
on a connection of its own) while another connection produces bombs of each codec: batches of
small compressed size whose records decompress to ``--mib`` MiB (the broker decompresses every
batch to check its records, as Kafka's LogValidator does).

The reference is the same probe against the same broker with nobody else sending (same run).
``--before REV`` runs the same probes, in the same run, against a broker started from the
sources of git revision ``REV`` (this checkout's compiled extensions copied in), for a before/after.

    .venv/bin/python -m benchmarks.decompression_stall [--mib 200] [--bombs 3] [--before REV]
"""

import argparse
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from broker.client import BrokerConnection
from broker.embedded import EmbeddedBroker
from broker.protocol.apis import ApiKey
from broker.records import batch, recompress
from broker.records.compression import Codec

MIB = 1024 * 1024
VALUE = bytes(1024)
TOPIC = "bombs"
SOURCES = Path(__file__).resolve().parent.parent
BROKER_SETTINGS = {"num.partitions": "1", "message.max.bytes": str(16 * MIB), "socket.request.max.bytes": str(32 * MIB)}


class BrokerFromSources(EmbeddedBroker):
    """The broker of another source tree (``python -m broker`` run in that tree, so it comes first on the path)."""

    def __init__(self, sources: str, *args: Any, **kwargs: Any) -> None:  # EmbeddedBroker's arguments
        super().__init__(*args, **kwargs)
        self.sources = sources

    def command(self) -> list:
        return ["env", "--chdir", self.sources, f"PYTHONPATH={self.sources}"] + super().command()


def bombs(mib: int) -> dict[str, bytes]:
    """One valid v2 batch per codec whose records take ``mib`` MiB once decompressed."""
    count = mib * MIB // (len(VALUE) + 8)
    plain = batch.build([batch.Record(offset=i, timestamp=0, key=None, value=VALUE, headers=()) for i in range(count)])
    return {
        codec.name.lower(): bytes(recompress.with_codec(plain, codec))
        for codec in (Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD)
    }


def produce_body(records: bytes) -> dict:
    return {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 60_000,
        "topics": [{"name": TOPIC, "partitions": [{"index": 0, "records": records}]}],
    }


def probe(port: int, keep_going: Callable[[], bool]) -> list[float]:
    """ApiVersions round trips (seconds) on a connection of its own while ``keep_going()``."""
    connection = BrokerConnection("127.0.0.1", port, timeout=120)
    latencies = []
    try:
        while keep_going():
            started = time.perf_counter()
            connection.request(ApiKey.API_VERSIONS, {})
            latencies.append(time.perf_counter() - started)
            time.sleep(0.005)  # a heartbeat-like client, not a flood
    finally:
        connection.close()
    return latencies


def probe_during(port: int, bomb: bytes | None, count: int, idle_seconds: float) -> list[float]:
    """Probe latencies while ``count`` bombs are produced one after another (or for ``idle_seconds``)."""
    done = threading.Event()
    result = []
    thread = threading.Thread(target=lambda: result.extend(probe(port, lambda: not done.is_set())))
    thread.start()
    try:
        if bomb is None:
            time.sleep(idle_seconds)
        else:
            connection = BrokerConnection("127.0.0.1", port, timeout=300)
            try:
                for _ in range(count):
                    partition = connection.request(ApiKey.PRODUCE, produce_body(bomb))["responses"][0]["partitions"][0]
                    if partition["error_code"]:
                        raise RuntimeError(f"a bomb was refused with error {partition['error_code']}")
            finally:
                connection.close()
    finally:
        done.set()
        thread.join(300)
    return result


def quantile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def measure(broker: EmbeddedBroker, bombs_by_codec: dict, count: int) -> dict:
    """``{label: latencies}``: the probe alone, then beside each codec's bombs."""
    with broker:
        connection = BrokerConnection("127.0.0.1", broker.port)
        connection.request(ApiKey.METADATA, {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": True})
        connection.close()
        results: dict[str, list[float] | float] = {}
        for codec, bomb in bombs_by_codec.items():
            started = time.perf_counter()
            results[codec] = probe_during(broker.port, bomb, count, 0)
            results[f"{codec} (s)"] = time.perf_counter() - started
        results["alone"] = probe_during(broker.port, None, 0, 3.0)
    return results


def report(name: str, results: dict) -> None:
    for label, latencies in results.items():
        if label.endswith("(s)"):
            continue
        took = results.get(f"{label} (s)")
        during = f", bombs took {took:5.2f} s" if took is not None else ""
        print(
            f"{name:>7} {label:>7}: {len(latencies):5d} probes, p50 {quantile(latencies, 50) * 1000:7.1f} ms, "
            f"p99 {quantile(latencies, 99) * 1000:7.1f} ms, max {max(latencies) * 1000:7.1f} ms{during}"
        )


def sources_of(revision: str, into: str) -> str:
    """The tree of ``revision`` extracted into ``into``, with this checkout's built extensions."""
    archive = subprocess.run(["git", "-C", str(SOURCES), "archive", revision], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", into], input=archive.stdout, check=True)
    for extension in SOURCES.glob("broker/records/*.so"):
        shutil.copy(extension, Path(into) / extension.relative_to(SOURCES))
    return into


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=200, help="decompressed MiB per bomb (default 200)")
    parser.add_argument("--bombs", type=int, default=3, help="bombs per codec (default 3)")
    parser.add_argument("--before", metavar="REV", help="also measure the broker of git revision REV")
    args = parser.parse_args(argv)
    bombs_by_codec = bombs(args.mib)
    for codec, bomb in bombs_by_codec.items():
        print(f"{codec} bomb: {len(bomb):,} bytes on the wire, {args.mib} MiB of records")
    with tempfile.TemporaryDirectory() as directory:
        brokers = {"now": EmbeddedBroker(f"{directory}/now", BROKER_SETTINGS)}
        if args.before:
            old = sources_of(args.before, tempfile.mkdtemp(dir=directory))
            brokers[args.before[:7]] = BrokerFromSources(old, f"{directory}/before", BROKER_SETTINGS)
        for name, broker in brokers.items():
            report(name, measure(broker, bombs_by_codec, args.bombs))


if __name__ == "__main__":
    main()
