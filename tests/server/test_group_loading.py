"""Unmodified clients (confluent-kafka, kafka-python, aiokafka) retry through
COORDINATOR_LOAD_IN_PROGRESS while the coordinator replays ``__consumer_offsets`` after a restart.

The broker runs in this process, and the replay of its one ``__consumer_offsets`` partition is held
until the test lets it go: a deterministic stand-in for a large topic that takes long to load. The
test waits until the client has been answered COORDINATOR_LOAD_IN_PROGRESS at least once, then lets
the load finish; the client's ``committed()`` then returns the offsets committed before the restart.
While a group loads every group API answers as Kafka's GroupCoordinator does (a table below).
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
from .test_group_coordinator import commit, commit_body, fetched, find_coordinator, join_body
from .wire import connect, create_topics_body

TIMEOUT = 30
TOPIC = "loading"
GROUP = "waits-for-the-load"
SETTINGS = {"offsets.topic.num.partitions": "1", **FAST_GROUPS}
COMMITTED = {(TOPIC, 0): 7, (TOPIC, 1): 11}


def confluent_committed(bootstrap: str) -> dict:
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False}
    )
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


def commit_then_hold_the_next_load(log_dir, monkeypatch) -> tuple[threading.Event, threading.Event]:
    """A broker on ``log_dir`` stores ``COMMITTED`` for ``GROUP`` and stops; then ``hold_the_load``."""
    with broker_in_this_process(log_dir / "log", SETTINGS) as port, connect("127.0.0.1", port, TIMEOUT) as client:
        assert (
            client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body(TOPIC, partitions=2))["topics"][0]["error_code"]
            == ErrorCode.NONE
        )
        find_coordinator(client, GROUP)
        assert commit(client, GROUP, COMMITTED) == [ErrorCode.NONE, ErrorCode.NONE]
    return hold_the_load(monkeypatch)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "committed",
    [confluent_committed, kafka_python_committed, aiokafka_committed],
    ids=["confluent", "kafka-python", "aiokafka"],
)
def test_a_client_retries_through_the_load_and_reads_the_offsets_committed_before_the_restart(
    tmp_path, monkeypatch, load_answers, committed
):
    entered, release = commit_then_hold_the_next_load(tmp_path, monkeypatch)
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


def _member(**fields) -> dict:
    return {"group_id": GROUP, "generation_id": 1, "member_id": "m", "group_instance_id": None, **fields}


# (API, version, request, where the error is in the answer, what Kafka answers while the group loads)
WHILE_LOADING = [
    (ApiKey.JOIN_GROUP, 5, join_body(GROUP), lambda r: r["error_code"], ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
    (ApiKey.SYNC_GROUP, 3, _member(assignments=[]), lambda r: r["error_code"], ErrorCode.REBALANCE_IN_PROGRESS),
    (ApiKey.HEARTBEAT, 3, _member(), lambda r: r["error_code"], ErrorCode.NONE),
    (
        ApiKey.LEAVE_GROUP,
        3,
        {"group_id": GROUP, "members": [{"member_id": "m", "group_instance_id": None}]},
        lambda r: r["error_code"],
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ),
    (
        ApiKey.OFFSET_COMMIT,
        7,
        commit_body(GROUP, {(TOPIC, 0): 1}),
        lambda r: r["topics"][0]["partitions"][0]["error_code"],
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ),
    (
        ApiKey.OFFSET_FETCH,
        5,
        {"group_id": GROUP, "topics": None},
        lambda r: r["error_code"],
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ),
    (
        ApiKey.DESCRIBE_GROUPS,
        4,
        {"groups": [GROUP], "include_authorized_operations": False},
        lambda r: r["groups"][0]["error_code"],
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ),
    (ApiKey.LIST_GROUPS, 2, {}, lambda r: r["error_code"], ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
    (
        ApiKey.DELETE_GROUPS,
        1,
        {"groups_names": [GROUP]},
        lambda r: r["results"][0]["error_code"],
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ),
    (
        ApiKey.OFFSET_DELETE,
        0,
        {"group_id": GROUP, "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0}]}]},
        lambda r: r["error_code"],
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ),
]


@pytest.mark.timeout(60)
def test_every_group_api_answers_as_kafka_while_the_group_loads(tmp_path, monkeypatch):
    entered, release = commit_then_hold_the_next_load(tmp_path, monkeypatch)
    with broker_in_this_process(tmp_path / "log", SETTINGS) as port, connect("127.0.0.1", port, TIMEOUT) as client:
        try:
            assert entered.wait(TIMEOUT), "the restarted broker never began to load __consumer_offsets"
            answers = {
                api.name: error_of(client.call(api, version, body)) for api, version, body, error_of, _ in WHILE_LOADING
            }
        finally:
            release.set()
        assert answers == {api.name: expected for api, _, _, _, expected in WHILE_LOADING}
