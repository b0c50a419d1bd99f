"""The group coordinator side by side with librdkafka's mock cluster (which has one): OffsetCommit and
OffsetFetch round trips per second, and how long a group of 3 confluent-kafka members takes from
``subscribe()`` to every member holding its partitions.

Commits go one at a time through the project's group client (``GroupClient.commit``, one
partition, with metadata), so each is a full round trip: this broker appends each to
``__consumer_offsets`` before answering (with the default flush policy, and once more with
``log.flush.interval.messages=1``: an fsync per commit); the mock keeps offsets in memory. The
rebalance is timed from the three ``subscribe()`` calls to the last member's assignment, with
``group.initial.rebalance.delay.ms=0`` here (the mock has no such delay) and the members' default
timeouts; librdkafka's members join one after the other, so it is two or three rebalances.

    .venv/bin/python -m benchmarks.group_coordinator [--commits 2000] [--rebalances 3]
"""

import argparse
import statistics
import time

from confluent_kafka import Consumer, Producer

from broker.client import GroupClient, KafkaClient
from broker.embedded import EmbeddedBroker

TOPIC = "bench-groups"
PARTITIONS = 4
FAST_FIRST_REBALANCE = {"group.initial.rebalance.delay.ms": "0", "num.partitions": str(PARTITIONS)}


def create_topic(bootstrap: str) -> None:
    """Auto-created by a producer: 4 partitions on both (the mock's default, ``num.partitions`` here)."""
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition in range(PARTITIONS):
        producer.produce(TOPIC, b"v", partition=partition)
    producer.flush(30)


def round_trips(bootstrap: str, count: int) -> tuple[float, float]:
    """(commits/s, fetches/s), one request at a time."""
    with KafkaClient(bootstrap, timeout=30) as client:
        groups = GroupClient(client)
        groups.commit("bench", {(TOPIC, 0): 0}, metadata="warm-up")
        started = time.perf_counter()
        for i in range(count):
            groups.commit("bench", {(TOPIC, i % PARTITIONS): i}, metadata="bench")
        commits = count / (time.perf_counter() - started)
        started = time.perf_counter()
        for i in range(count):
            groups.committed("bench", {TOPIC: [i % PARTITIONS]})
        fetches = count / (time.perf_counter() - started)
    return commits, fetches


def rebalance_seconds(bootstrap: str, group: str) -> float:
    """Seconds from three subscribe() calls until every member has partitions and they cover the topic."""
    members = [
        Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 3, "enable.auto.commit": False})
        for _ in range(3)
    ]
    try:
        started = time.perf_counter()
        for member in members:
            member.subscribe([TOPIC])
        deadline = started + 120
        while time.perf_counter() < deadline:
            for member in members:
                member.poll(0.01)
            owned = [tp.partition for member in members for tp in member.assignment()]
            if all(member.assignment() for member in members) and sorted(owned) == list(range(PARTITIONS)):
                return time.perf_counter() - started
        raise RuntimeError("the group did not settle in 120 s")
    finally:
        for member in members:
            member.close()


def measure(bootstrap: str, commits: int, rebalances: int, label: str) -> dict:
    create_topic(bootstrap)
    commit_rate, fetch_rate = round_trips(bootstrap, commits)
    times = [rebalance_seconds(bootstrap, f"bench-rebalance-{label}-{i}") for i in range(rebalances)]
    return {"commits": commit_rate, "fetches": fetch_rate, "rebalance": statistics.median(times)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=2000)
    parser.add_argument("--rebalances", type=int, default=3)
    args = parser.parse_args(argv)
    mock = Producer({"test.mock.num.brokers": 1, "log_level": 3})
    [broker] = mock.list_topics(timeout=10).brokers.values()
    results = {"librdkafka mock": measure(f"{broker.host}:{broker.port}", args.commits, args.rebalances, "mock")}
    with EmbeddedBroker(settings=FAST_FIRST_REBALANCE) as ours:
        results["kafkalog broker"] = measure(ours.bootstrap, args.commits, args.rebalances, "ours")
    with EmbeddedBroker(settings={**FAST_FIRST_REBALANCE, "log.flush.interval.messages": "1"}) as ours:
        results["kafkalog, fsync per commit"] = measure(ours.bootstrap, args.commits, 1, "fsync")
    reference = results["librdkafka mock"]
    print(f"{'':28} {'commits/s':>10} {'fetches/s':>10} {'3-member rebalance':>19}")
    for name, r in results.items():
        print(
            f"{name:28} {r['commits']:10.0f} {r['fetches']:10.0f} {r['rebalance']:17.2f} s"
            f"   ({r['commits'] / reference['commits']:.2f} x, {r['fetches'] / reference['fetches']:.2f} x, "
            f"{r['rebalance'] / reference['rebalance']:.2f} x the mock's)"
        )


if __name__ == "__main__":
    main()
