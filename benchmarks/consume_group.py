"""Consumer groups from this project's side, against librdkafka's in-process mock cluster (a real
group coordinator), side by side in one run:

* ``kafkalog consume T --group G`` against ``kafkalog consume T`` (assign, no commits): records per
  second from the first printed line to the exit, so the join (the mock's rebalance delay) is not
  counted; output to /dev/null;
* OffsetCommit and OffsetFetch round trips per second of ``GroupMember.commit`` / ``committed``
  against confluent-kafka's ``commit(asynchronous=False)`` / ``committed()`` on the same group;
* the time three members take to join one group and get their partitions: three ``GroupMember``s
  against three confluent-kafka consumers (the mock's own rebalance delays dominate both).

    .venv/bin/python -m benchmarks.consume_group [--records-per-partition 25000] [--rounds 3]
"""

import argparse
import statistics
import subprocess
import sys
import threading
import time

import confluent_kafka

from broker.client import GroupMember, KafkaClient

PARTITIONS = 4  # the mock's default for an auto-created topic
VALUE = b"x" * 100


def _mock():
    handle = confluent_kafka.Producer({"test.mock.num.brokers": 3, "log_level": 3})
    brokers = handle.list_topics(timeout=10).brokers.values()
    return handle, ",".join(f"{b.host}:{b.port}" for b in brokers)


def _fill(bootstrap: str, topic: str, per_partition: int) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20})
    for _ in range(per_partition):
        for p in range(PARTITIONS):
            while True:
                try:
                    producer.produce(topic, VALUE, partition=p)
                    break
                except BufferError:
                    producer.poll(0.05)
    assert producer.flush(60) == 0


def _consume_rate(bootstrap: str, topic: str, extra: list[str], records: int) -> float:
    """Records per second of one ``kafkalog consume`` process, first line to exit."""
    process = subprocess.Popen(
        [sys.executable, "-m", "broker.cli", "consume", topic, "--bootstrap-server", bootstrap, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdout is not None  # stdout=PIPE
    first = process.stdout.readline()
    started = time.perf_counter()
    count = 1 if first else 0
    for _ in process.stdout:
        count += 1
    process.wait(120)
    elapsed = time.perf_counter() - started
    assert count == records, f"{count} lines, expected {records}"
    return (count - 1) / elapsed


def consume_throughput(bootstrap: str, per_partition: int, rounds: int) -> None:
    topic = "bench-consume-group"
    _fill(bootstrap, topic, per_partition)
    records = per_partition * PARTITIONS
    assigned, grouped = [], []
    for r in range(rounds):  # alternating, so the machine's load falls on both alike
        assigned.append(_consume_rate(bootstrap, topic, [], records))
        grouped.append(
            _consume_rate(bootstrap, topic, ["--group", f"bench-{r}", "--session-timeout-ms", "6000"], records)
        )
    a, g = statistics.median(assigned), statistics.median(grouped)
    print(
        f"consume {records:,} records of 100 B: --group {g:,.0f} records/s, assign {a:,.0f} records/s, "
        f"ratio {g / a:.2f} (medians of {rounds})"
    )


def commit_round_trips(bootstrap: str, seconds: float = 3.0) -> None:
    topic, group = "bench-commits", "bench-commits"
    _fill(bootstrap, topic, 1)
    with KafkaClient(bootstrap) as client:
        member = GroupMember(client, group, [topic])
        member.join()
        ours_commit = _rate(lambda i: member.commit({(topic, 0): i}), seconds)
        ours_fetch = _rate(lambda i: member.committed({topic: [0]}), seconds)
        member.leave()
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group + "-rd", "enable.auto.commit": False, "log_level": 3}
    )
    try:
        partition = [confluent_kafka.TopicPartition(topic, 0)]
        consumer.assign(partition)
        theirs_commit = _rate(
            lambda i: consumer.commit(offsets=[confluent_kafka.TopicPartition(topic, 0, i + 1)], asynchronous=False),
            seconds,
        )
        theirs_fetch = _rate(lambda i: consumer.committed(partition, timeout=10), seconds)
    finally:
        consumer.close()
    print(
        f"OffsetCommit: GroupMember {ours_commit:,.0f}/s, confluent-kafka {theirs_commit:,.0f}/s, "
        f"ratio {ours_commit / theirs_commit:.2f}"
    )
    print(
        f"OffsetFetch: GroupMember {ours_fetch:,.0f}/s, confluent-kafka {theirs_fetch:,.0f}/s, "
        f"ratio {ours_fetch / theirs_fetch:.2f}"
    )


def _rate(call, seconds: float) -> float:
    count, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        call(count)
        count += 1
    return count / (time.perf_counter() - started)


def three_member_join(bootstrap: str) -> None:
    topic = "bench-join"
    _fill(bootstrap, topic, 1)
    clients = [KafkaClient(bootstrap) for _ in range(3)]
    members = [GroupMember(c, "bench-join-ours", [topic], session_timeout_ms=6000) for c in clients]
    started = time.perf_counter()
    assignments = []
    threads = [threading.Thread(target=lambda m=m: assignments.append(m.join())) for m in members]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    ours = time.perf_counter() - started
    assert len({m.generation for m in members}) == 1 and sum(len(a.get(topic, [])) for a in assignments) == PARTITIONS
    for member, client in zip(members, clients, strict=True):
        member.leave()
        client.close()

    consumers = [
        confluent_kafka.Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "bench-join-theirs",
                "session.timeout.ms": 6000,
                "log_level": 3,
            }
        )
        for _ in range(3)
    ]
    started = time.perf_counter()
    for c in consumers:
        c.subscribe([topic])
    while not (sum(len(c.assignment()) for c in consumers) == PARTITIONS and all(c.assignment() for c in consumers)):
        for c in consumers:
            c.poll(0.01)
        if time.perf_counter() - started > 120:
            raise AssertionError("confluent-kafka's members never got every partition")
    theirs = time.perf_counter() - started
    for c in consumers:
        c.close()
    print(
        f"three members joining one group: GroupMember {ours:.1f} s, confluent-kafka {theirs:.1f} s, "
        f"ratio {ours / theirs:.2f}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records-per-partition", type=int, default=25_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    handle, bootstrap = _mock()
    consume_throughput(bootstrap, args.records_per_partition, args.rounds)
    commit_round_trips(bootstrap)
    three_member_join(bootstrap)
    handle.flush(5)


if __name__ == "__main__":
    main()
