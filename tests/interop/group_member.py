"""One consumer-group member, run as its own process by ``test_groups``: an unmodified confluent-kafka,
kafka-python or aiokafka consumer that ``subscribe()``s, commits each record synchronously (with
metadata) before reporting it, and reports its assignment whenever it changes.

    python -m tests.interop.group_member CLIENT BOOTSTRAP GROUP TOPIC [--instance-id ID] [--strategy S]
                                         [--session-ms MS] [--pause-ms MS]

Lines on stdout: ``assigned [partitions]``; ``record P O`` once a commit of this member covers
offset O of partition P; ``commit-failed P O`` when the commit was refused (a rebalance). A refused
record is covered by the member's next successful commit of a later offset of that partition
(commits are cumulative: a cooperative member keeps its partition and goes on); it is left to the
next owner when the partition was taken away, and is read again when the position went back.
SIGTERM closes the consumer (it leaves the group) and prints ``closed``;
SIGKILL is the crash the session timeout must notice.
"""

import argparse
import asyncio
import logging
import signal
import sys
import time

METADATA = "committed-by-test"
stopping = False


def say(*words) -> None:
    print(*words, flush=True)


def heartbeat_ms(args) -> int:
    return max(args.session_ms // 10, 10)


class Commits:
    """What this member's commits cover, said once per record."""

    def __init__(self):
        self.assigned: list[int] = []
        self.refused: dict[int, set[int]] = {}  # a record read again may be refused again

    def report(self, assignment) -> None:
        partitions = sorted(assignment)
        if partitions != self.assigned:
            self.assigned = partitions
            self.refused = {p: offsets for p, offsets in self.refused.items() if p in partitions}
            say("assigned", partitions)

    def committed(self, partition: int, offset: int) -> None:
        for earlier in sorted(self.refused.pop(partition, ())):
            if earlier < offset:
                say("record", partition, earlier)
        say("record", partition, offset)

    def failed(self, partition: int, offset: int) -> None:
        self.refused.setdefault(partition, set()).add(offset)
        say("commit-failed", partition, offset)


def run_confluent(args) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    settings = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": args.session_ms,
        "heartbeat.interval.ms": heartbeat_ms(args),
        "partition.assignment.strategy": args.strategy,
        "log_level": 3,
    }
    if args.instance_id:
        settings["group.instance.id"] = args.instance_id
    consumer = Consumer(settings)
    consumer.subscribe([args.topic])
    commits = Commits()
    while not stopping:
        message = consumer.poll(0.05)
        commits.report(tp.partition for tp in consumer.assignment())
        if message is None or message.error():
            continue
        try:  # a partition's own error (ILLEGAL_GENERATION...) is in the result, not raised
            [result] = consumer.commit(
                offsets=[TopicPartition(args.topic, message.partition(), message.offset() + 1, metadata=METADATA)],
                asynchronous=False,
            )
            refused = result.error is not None
        except KafkaException:
            refused = True
        (commits.failed if refused else commits.committed)(message.partition(), message.offset())
        time.sleep(args.pause_ms / 1000)
    consumer.close()


# kafka-python 3.0.12 loses a rebalance when a poll's timeout expires while its JoinGroup is in flight:
# the next poll finds the join task done and sends a new JoinGroup instead of taking its result
# (``join_group_async`` reschedules a task that ``is_done``). The completed generation's assignment is
# never applied, so the member either waits forever with no partitions or keeps positions of partitions
# it owned generations ago and reads records another member has committed. A poll long enough for a
# whole rebalance (the coordinator holds JoinGroup until every member rejoined) avoids the race;
# records still return at once, and SIGTERM is noticed within one poll.
KAFKA_PYTHON_POLL_MS = 5000


def run_kafka_python(args) -> None:
    from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition
    from kafka.errors import CommitFailedError, KafkaError

    consumer = KafkaConsumer(
        args.topic,
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=heartbeat_ms(args),
        group_instance_id=args.instance_id,
    )
    commits = Commits()
    while not stopping:
        batches = consumer.poll(timeout_ms=KAFKA_PYTHON_POLL_MS, max_records=1)
        commits.report(tp.partition for tp in consumer.assignment())
        for records in batches.values():
            for record in records:
                try:
                    consumer.commit(
                        {
                            TopicPartition(args.topic, record.partition): OffsetAndMetadata(
                                record.offset + 1, METADATA, -1
                            )
                        }
                    )
                    commits.committed(record.partition, record.offset)
                except (CommitFailedError, KafkaError):
                    commits.failed(record.partition, record.offset)
                time.sleep(args.pause_ms / 1000)
    consumer.close()


async def run_aiokafka(args) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.errors import CommitFailedError, KafkaError
    from aiokafka.structs import OffsetAndMetadata

    consumer = AIOKafkaConsumer(
        args.topic,
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=heartbeat_ms(args),
        group_instance_id=args.instance_id,
    )
    await consumer.start()
    commits = Commits()
    while not stopping:
        batches = await consumer.getmany(timeout_ms=50, max_records=1)
        commits.report(tp.partition for tp in consumer.assignment())
        for records in batches.values():
            for record in records:
                try:
                    await consumer.commit(
                        {TopicPartition(args.topic, record.partition): OffsetAndMetadata(record.offset + 1, METADATA)}
                    )
                    commits.committed(record.partition, record.offset)
                except (CommitFailedError, KafkaError):
                    commits.failed(record.partition, record.offset)
                await asyncio.sleep(args.pause_ms / 1000)
    await consumer.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("client", choices=["confluent", "kafka-python", "aiokafka"])
    parser.add_argument("bootstrap")
    parser.add_argument("group")
    parser.add_argument("topic")
    parser.add_argument("--instance-id")
    parser.add_argument("--strategy", default="range,roundrobin")
    parser.add_argument("--session-ms", type=int, default=6000)  # kafka-python misses 100 ms heartbeats at load 12
    parser.add_argument("--pause-ms", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)  # the client's own warnings, for a failing test

    def stop(*_):
        global stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    if args.client == "confluent":
        run_confluent(args)
    elif args.client == "kafka-python":
        run_kafka_python(args)
    else:
        asyncio.run(run_aiokafka(args))
    say("closed")
    sys.exit(0)


if __name__ == "__main__":
    main()
