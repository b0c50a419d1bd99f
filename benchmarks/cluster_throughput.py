"""Produce and fetch throughput of a 3-broker cluster vs one broker, and the controller's fail-over time.

Both run on this machine in one run: the cluster (``EmbeddedCluster``: ZooKeeper and 3 broker
processes, replication factor 1) and a standalone broker (no ZooKeeper). The same confluent-kafka
producer settings as ``broker_throughput`` (acks=1, uncompressed, ~1 MiB batches) write 1 KiB
values round-robin into a topic of 6 partitions (2 led by each broker of the cluster), then a
consumer reads the topic whole (``fetch.queue.backoff.ms`` 10, see ``CONSUMER_SETTINGS``). The
figure is the cluster's throughput as a ratio of the single broker's. On a machine with few cores
the three brokers share them, so the ratio shows the cost of the cluster's spread more than its
capacity.

Then the controller broker is killed (SIGKILL): the fail-over time is from the kill until another
broker holds ``/controller`` in ZooKeeper, until the surviving brokers' Metadata names it (what a
client asks before sending CreateTopics to the controller), and until a new topic of 6 partitions
is created through them (a fresh admin client, so none keeps the dead controller in its cache).
The dead controller's ZooKeeper session must expire first (``zookeeper.session.timeout.ms``, 6000
in ``EmbeddedCluster``), so that bounds it.

    .venv/bin/python -m benchmarks.cluster_throughput [--mib 256]
"""

import argparse
import os
import tempfile
import time

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from broker.cluster.zookeeper_data import CONTROLLER_PATH, parse_controller
from broker.embedded import EmbeddedBroker
from broker.embedded_cluster import SESSION_TIMEOUT_MS, EmbeddedCluster

from .broker_throughput import MIB, consume, produce, watermarks

BROKERS = 3
PARTITIONS = 6
VALUE_BYTES = 1024
FAILOVER_TIMEOUT = 120
# librdkafka stops fetching a partition for fetch.queue.backoff.ms (1 s by default) when its queue
# is over the thresholds; three brokers fill it faster than this Python loop drains it, so the
# default measures those pauses (fetch ratio 0.29 with it), not the brokers
CONSUMER_SETTINGS = {"fetch.queue.backoff.ms": 10}


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=30)[topic].result(60)


def measure(bootstrap: str, total_bytes: int) -> dict:
    create_topic(bootstrap, "throughput", PARTITIONS)
    seconds, records = produce(bootstrap, "throughput", VALUE_BYTES, total_bytes, PARTITIONS)
    produce_mb_s = records * VALUE_BYTES / seconds / 1e6
    seconds, size = consume(bootstrap, "throughput", watermarks(bootstrap, "throughput", PARTITIONS), CONSUMER_SETTINGS)
    return {"produce_mb_s": produce_mb_s, "fetch_mb_s": size / seconds / 1e6}


def controller(zookeeper: KazooClient) -> int | None:
    try:
        return parse_controller(zookeeper.get(CONTROLLER_PATH)[0])
    except NoNodeError:
        return None


def fail_over(cluster: EmbeddedCluster) -> dict:
    """Kill the controller; seconds until another broker holds /controller, until the surviving brokers'
    Metadata names it, and until a topic is created through them."""
    zookeeper = KazooClient(hosts=cluster.zookeeper.connect)
    zookeeper.start(timeout=30)
    try:
        old = controller(zookeeper)
        if old not in cluster.brokers:
            raise RuntimeError(f"no controller among the brokers: /controller names {old}")
        survivors = ",".join(b.bootstrap for i, b in cluster.brokers.items() if i != old)
        started = time.perf_counter()
        deadline = started + FAILOVER_TIMEOUT
        cluster.brokers[old].kill()
        while (new := controller(zookeeper)) in (old, None):
            if time.perf_counter() > deadline:
                raise RuntimeError(f"no new controller within {FAILOVER_TIMEOUT}s")
            time.sleep(0.01)
        elected = time.perf_counter() - started
    finally:
        zookeeper.stop()
        zookeeper.close()
    admin = AdminClient({"bootstrap.servers": survivors})
    while admin.list_topics(timeout=30).controller_id != new:  # a client asks for the controller first
        if time.perf_counter() > deadline:
            raise RuntimeError(f"the surviving brokers did not name controller {new} within {FAILOVER_TIMEOUT}s")
        time.sleep(0.01)
    known = time.perf_counter() - started
    while True:
        try:
            create_topic(survivors, "after-failover", PARTITIONS)
            break
        except KafkaException:
            if time.perf_counter() > deadline:
                raise
            time.sleep(0.05)
    return {"old": old, "new": new, "elected_s": elected, "known_s": known, "created_s": time.perf_counter() - started}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256, help="MiB produced, then fetched, on each side")
    args = parser.parse_args(argv)
    total_bytes = args.mib * MIB
    with tempfile.TemporaryDirectory() as directory:
        with EmbeddedBroker(os.path.join(directory, "single")) as broker:
            single = measure(broker.bootstrap, total_bytes)
        with EmbeddedCluster(os.path.join(directory, "cluster"), brokers=BROKERS) as cluster:
            spread = measure(cluster.bootstrap, total_bytes)
            failover = fail_over(cluster)

    print(
        f"confluent-kafka client; {args.mib} MiB of 1 KiB values in {PARTITIONS} partitions, produced then "
        f"fetched; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores:"
    )
    print(f"  {'':18s} {f'{BROKERS} brokers':>10s} {'1 broker':>10s} {'ratio':>7s}")
    for key, label in [("produce_mb_s", "produce MB/s"), ("fetch_mb_s", "fetch MB/s")]:
        print(f"  {label:18s} {spread[key]:10,.1f} {single[key]:10,.1f} {spread[key] / single[key]:7.2f}")
    print(
        f"controller {failover['old']} killed: broker {failover['new']} holds /controller after "
        f"{failover['elected_s']:.2f} s, the survivors' Metadata names it after {failover['known_s']:.2f} s, "
        f"a new topic created after {failover['created_s']:.2f} s "
        f"(ZooKeeper session timeout {SESSION_TIMEOUT_MS / 1000:.0f} s)"
    )
    return {"cluster": spread, "single": single, "failover": failover}


if __name__ == "__main__":
    main()
