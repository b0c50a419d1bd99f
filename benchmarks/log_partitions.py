"""Broker start-up with many partitions: time, resident memory and open descriptors.

For each partition count, a broker creates topics with that many partitions in all and gets
one record in each; then it is stopped with SIGTERM and started again (a clean start: no recovery),
and killed with SIGKILL and started again (every active segment is recovered). The reference,
in the same run, is the same broker starting on an empty log directory. Start-up time is from
the process start to its "listening on" line; memory (VmRSS) and descriptors (/proc/PID/fd) are
read right after it.

    .venv/bin/python -m benchmarks.log_partitions [--partitions 1000 20000] [--dir DIR]
"""

import argparse
import os
import shutil
import tempfile
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from broker import embedded
from broker.embedded import EmbeddedBroker

TOPIC = "many"
TOPIC_PARTITIONS = 1000
embedded.START_TIMEOUT = 900  # recovering 20,000 logs after SIGKILL takes longer than a test's start


def process_figures(broker: EmbeddedBroker, seconds: float) -> dict:
    pid = broker.pid()
    with open(f"/proc/{pid}/status") as status:
        rss_kib = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return {"start_s": seconds, "rss_mib": rss_kib / 1024, "descriptors": len(os.listdir(f"/proc/{pid}/fd"))}


def timed_start(broker: EmbeddedBroker) -> dict:
    started = time.perf_counter()
    broker.start()
    return process_figures(broker, time.perf_counter() - started)


def fill(broker: EmbeddedBroker, partitions: int) -> None:
    """Topics of up to TOPIC_PARTITIONS partitions (the broker's cap per request is higher), one record in each."""
    sizes = {
        f"{TOPIC}-{i}": min(TOPIC_PARTITIONS, partitions - i * TOPIC_PARTITIONS)
        for i in range(-(-partitions // TOPIC_PARTITIONS))
    }
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "socket.timeout.ms": 300_000})
    for topic, size in sizes.items():
        admin.create_topics([NewTopic(topic, size, 1)], request_timeout=600)[topic].result(timeout=600)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 50})
    for topic, size in sizes.items():
        for partition in range(size):
            producer.produce(topic, b"record in partition %d" % partition, partition=partition)
            producer.poll(0)
    if producer.flush(300):
        raise RuntimeError("records still in flight after 300 s")


def measure(directory: str, partitions: int) -> dict:
    log_dir = os.path.join(directory, f"log-{partitions}")
    broker = EmbeddedBroker(log_dir)
    try:
        broker.start()
        fill(broker, partitions)
        if broker.stop(timeout=1800) != 0:  # 20,000 logs flush for minutes here
            raise RuntimeError(f"the broker did not stop cleanly:\n{broker.stderr_tail()}")
        clean = timed_start(broker)
        broker.kill()
        after_kill = timed_start(broker)
    finally:
        broker.kill()
        shutil.rmtree(log_dir, ignore_errors=True)
    return {"clean": clean, "after_sigkill": after_kill}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, nargs="+", default=[1000, 20000])
    parser.add_argument("--dir", default=None)
    args = parser.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        empty = EmbeddedBroker(os.path.join(directory, "empty"))
        try:
            results[0] = {"clean": timed_start(empty)}
        finally:
            empty.kill()
        for partitions in args.partitions:
            results[partitions] = measure(directory, partitions)
    reference = results[0]["clean"]
    print(
        f"broker start-up (reference: an empty log directory, {reference['start_s']:.2f} s, "
        f"{reference['rss_mib']:.0f} MiB, {reference['descriptors']} descriptors)"
    )
    for partitions in args.partitions:
        for kind, figures in results[partitions].items():
            print(
                f"  {partitions:6d} partitions, {kind:13s} {figures['start_s']:7.2f} s "
                f"({figures['start_s'] / reference['start_s']:5.1f}x)  {figures['rss_mib']:6.0f} MiB  "
                f"{figures['descriptors']:6d} descriptors"
            )
    return results


if __name__ == "__main__":
    main()
