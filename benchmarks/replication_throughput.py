"""Produce throughput with acks=all at replication factor 3 vs acks=1 at replication factor 1 on the
same 3-broker cluster, and the time from a leader's kill until its partition is led again.

One ``EmbeddedCluster`` (ZooKeeper and 3 broker processes on this machine): the confluent-kafka
producer of ``broker_throughput`` (uncompressed, ~1 MiB batches) writes 1 KiB values round-robin
into a topic of 6 partitions at replication factor 1 with acks=1, then into one at replication
factor 3 with acks=all (each record answered once both followers fetched it), alternating, for
``--rounds`` rounds. The figure is the ratio of the two. The brokers, ZooKeeper and the client share
this machine's cores, so followers compete with their leader for them.

Then the leader of a replicated partition is killed (SIGKILL): the fail-over time runs until the
surviving brokers' Metadata names a new leader, which the controller elects once the dead broker's
ZooKeeper session expires (``zookeeper.session.timeout.ms``, 6000 in ``EmbeddedCluster``).

    .venv/bin/python -m benchmarks.replication_throughput [--mib 64] [--rounds 2]
"""

import argparse
import tempfile
import time

from confluent_kafka.admin import AdminClient, NewTopic

from broker.embedded_cluster import SESSION_TIMEOUT_MS, EmbeddedCluster

from .broker_throughput import MIB, produce

PARTITIONS = 6
VALUE_BYTES = 1024
FAILOVER_TIMEOUT = 120


def create_topic(bootstrap: str, topic: str, replication_factor: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, replication_factor)], operation_timeout=30)[topic].result(60)


def produce_mb_s(bootstrap: str, topic: str, total_bytes: int, acks: str) -> float:
    seconds, records = produce(bootstrap, topic, VALUE_BYTES, total_bytes, PARTITIONS, {"acks": acks})
    return records * VALUE_BYTES / seconds / 1e6


def leader_of(bootstrap: str, topic: str) -> int:
    return (
        AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics[topic].partitions[0].leader
    )


def fail_over(cluster: EmbeddedCluster, topic: str) -> float:
    """Kill the leader of ``topic``-0; seconds until the survivors' Metadata names another leader."""
    old = leader_of(cluster.bootstrap, topic)
    survivors = ",".join(b.bootstrap for i, b in cluster.brokers.items() if i != old)
    started = time.perf_counter()
    cluster.brokers[old].kill()
    while time.perf_counter() - started < FAILOVER_TIMEOUT:
        if leader_of(survivors, topic) not in (old, -1):
            return time.perf_counter() - started
        time.sleep(0.05)
    raise RuntimeError(f"no new leader of {topic}-0 within {FAILOVER_TIMEOUT} s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64, help="MiB produced per measurement")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="replication-bench-") as data_dir, EmbeddedCluster(data_dir) as cluster:
        for round_ in range(args.rounds):
            create_topic(cluster.bootstrap, f"rf1-{round_}", 1)
            create_topic(cluster.bootstrap, f"rf3-{round_}", 3)
            single = produce_mb_s(cluster.bootstrap, f"rf1-{round_}", args.mib * MIB, "1")
            replicated = produce_mb_s(cluster.bootstrap, f"rf3-{round_}", args.mib * MIB, "all")
            print(
                f"round {round_ + 1}: rf 1 acks=1 {single:.0f} MB/s, rf 3 acks=all {replicated:.0f} MB/s, "
                f"ratio {replicated / single:.2f}",
                flush=True,
            )
        seconds = fail_over(cluster, f"rf3-{args.rounds - 1}")
        print(f"fail-over: a new leader {seconds:.2f} s after the kill (session timeout {SESSION_TIMEOUT_MS} ms)")


if __name__ == "__main__":
    main()
