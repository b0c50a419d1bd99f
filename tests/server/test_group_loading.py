"""Unmodified clients (confluent-kafka, kafka-python, aiokafka) retry through
COORDINATOR_LOAD_IN_PROGRESS while the coordinator replays ``__consumer_offsets`` after a restart.

The broker runs in this process, and the replay of its one ``__consumer_offsets`` partition is held
until the test lets it go: a deterministic stand-in for a large topic that takes long to load. The
test waits until the client has been answered COORDINATOR_LOAD_IN_PROGRESS at least once, then lets
the load finish; the client's ``committed()`` then returns the offsets committed before the restart.
"""

import asyncio
import threading

import aiokafka
import confluent_kafka
import kafka
import pytest

from broker.coordinator.group_coordinator import GroupCoordinator
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.server.group_runtime import GroupRuntime

from ..conftest import FAST_GROUPS
from ..waiting import wait_for
from .in_process import broker_in_this_process
from .test_group_coordinator import commit, fetched, find_coordinator
from .wire import connect, create_topics_body

TIMEOUT = 30
TOPIC = "loading"
GROUP = "waits-for-the-load"
SETTINGS = {"offsets.topic.num.partitions": "1", **FAST_GROUPS}
COMMITTED = {(TOPIC, 0): 7, (TOPIC, 1): 11}


def confluent_committed(bootstrap: str) -> dict:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                                         "enable.auto.commit": False})
    try:
        found = consumer.committed([confluent_kafka.TopicPartition(TOPIC, p) for p in (0, 1)], timeout=TIMEOUT)
        return {(tp.topic, tp.partition): tp.offset for tp in found}
    finally:
        consumer.close()


def kafka_python_committed(bootstrap: str) -> dict:
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False)
    try:
        return {(TOPIC, p): consumer.committed(kafka.TopicPartition(TOPIC, p)) for p in (0, 1)}
    finally:
        consumer.close()


def aiokafka_committed(bootstrap: str) -> dict:
    async def read() -> dict:
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False)
        await consumer.start()
        try:
            return {(TOPIC, p): await consumer.committed(aiokafka.TopicPartition(TOPIC, p)) for p in (0, 1)}
        finally:
            await consumer.stop()

    return asyncio.run(read())


@pytest.fixture
def load_answers(monkeypatch) -> list:
    """The groups the coordinator tells COORDINATOR_LOAD_IN_PROGRESS, one entry per answer."""
    answered, real_error = [], GroupCoordinator._group_error

    def group_error(coordinator, group_id):
        error = real_error(coordinator, group_id)
        if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            answered.append(group_id)
        return error

    monkeypatch.setattr(GroupCoordinator, "_group_error", group_error)
    return answered


def hold_the_load(monkeypatch) -> tuple[threading.Event, threading.Event]:
    """``(entered, release)``: from now on, replaying a partition of ``__consumer_offsets`` sets
    ``entered`` and waits for ``release``."""
    entered, release, real_read = threading.Event(), threading.Event(), GroupRuntime._read_partition

    def read_partition(runtime, partition):
        entered.set()
        release.wait(TIMEOUT)
        return real_read(runtime, partition)

    monkeypatch.setattr(GroupRuntime, "_read_partition", read_partition)
    return entered, release


@pytest.mark.timeout(120)
@pytest.mark.parametrize("committed", [confluent_committed, kafka_python_committed, aiokafka_committed],
                         ids=["confluent", "kafka-python", "aiokafka"])
def test_a_client_retries_through_the_load_and_reads_the_offsets_committed_before_the_restart(tmp_path, monkeypatch,
                                                                                               load_answers, committed):
    with broker_in_this_process(tmp_path / "log", SETTINGS) as port, connect("127.0.0.1", port, TIMEOUT) as client:
        assert client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body(TOPIC, partitions=2))["topics"][0][
            "error_code"] == ErrorCode.NONE
        find_coordinator(client, GROUP)
        assert commit(client, GROUP, COMMITTED) == [ErrorCode.NONE, ErrorCode.NONE]

    entered, release = hold_the_load(monkeypatch)
    result = {}
    with broker_in_this_process(tmp_path / "log", SETTINGS) as port:
        reader = threading.Thread(target=lambda: result.update(committed(f"127.0.0.1:{port}")))
        try:
            assert entered.wait(TIMEOUT), "the restarted broker never began to load __consumer_offsets"
            reader.start()
            wait_for(lambda: GROUP in load_answers, TIMEOUT, what="the client told COORDINATOR_LOAD_IN_PROGRESS")
        finally:
            release.set()
        reader.join(TIMEOUT)
        assert not reader.is_alive(), "the client did not return once the load finished"
        with connect("127.0.0.1", port, TIMEOUT) as client:
            assert {tp: offset for tp, (offset, _, _) in fetched(client, GROUP).items()} == COMMITTED
    assert result == COMMITTED
