"""Replication on 3 real brokers and a real ZooKeeper: topics with replicas placed as Kafka places
them, each partition's state node (leader, leader epoch, in-sync replicas) written by the
controller, Metadata and ``kafkalog topics describe`` naming the replicas and the ISR; followers'
byte-identical copies, the high watermark consumers never read past, the ISR shrinking and
growing as a follower is paused and resumed, acks=all with min.insync.replicas, and a leader kill
under idempotent producers of two client libraries."""

import contextlib
import json
import os
import signal
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from kafka import KafkaProducer

from broker.client import GroupClient, KafkaClient
from broker.cluster.controller import initial_leader_and_isr, next_leader_and_isr
from broker.common.java import java_executable
from broker.coordinator.group_partition import partition_for
from broker.coordinator.offset_manager import OFFSETS_TOPIC
from broker.embedded_cluster import EmbeddedCluster
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.records import batch, record_set
from tests.cli.support import kafkalog
from tests.waiting import wait_for

from .test_cluster_topics import request


@contextlib.contextmanager
def replicating_cluster(directory, brokers: int, settings: dict[str, str]) -> Iterator[EmbeddedCluster]:
    """``brokers`` real broker processes on their own ZooKeeper, each seeing all the others before
    it is used (a broker learns of the others through its watch, and a create that needs them all
    is refused before)."""
    if java_executable() is None:
        pytest.skip("no Java: the ZooKeeper server of PySpark's jars needs Java 17+")
    with EmbeddedCluster(directory, brokers=brokers, settings=settings) as running:
        for broker in running.brokers.values():
            wait_for(
                lambda broker=broker: len(request(broker, ApiKey.METADATA, {"topics": []})["brokers"]) == brokers,
                timeout=30,
                what=f"every broker to see the {brokers}",
            )
        yield running


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # a session longer than the lag: a paused follower leaves the ISR through its leader's check
    # (replica.lag.time.max.ms) before its ZooKeeper session ends
    settings = {"zookeeper.session.timeout.ms": "8000", "replica.lag.time.max.ms": "2500"}
    with replicating_cluster(tmp_path_factory.mktemp("replicated"), 3, settings) as running:
        yield running


@pytest.fixture(scope="module")
def kazoo(cluster_kazoo):  # of this module's cluster
    return cluster_kazoo


def create(
    broker, name: str, partitions: int, factor: int, assignments: list | None = None, configs: dict | None = None
) -> dict:
    topic = {
        "name": name,
        "num_partitions": -1 if assignments else partitions,
        "replication_factor": -1 if assignments else factor,
        "assignments": [{"partition_index": p, "broker_ids": ids} for p, ids in enumerate(assignments or [])],
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
    }
    response = request(broker, ApiKey.CREATE_TOPICS, {"topics": [topic], "timeout_ms": 30000, "validate_only": False})
    return response["topics"][0]


def state_node(kazoo, name: str, partition: int) -> dict:
    return json.loads(kazoo.get(f"/brokers/topics/{name}/partitions/{partition}/state")[0])


def partitions_everywhere(cluster, name: str, count: int) -> list[dict]:
    """The topic's partitions as every broker's Metadata names them, once all agree."""
    seen = {}
    for broker_id, broker in cluster.brokers.items():

        def known(broker=broker):
            response = request(
                broker, ApiKey.METADATA, {"topics": [{"name": name}], "allow_auto_topic_creation": False}
            )
            partitions = sorted(response["topics"][0]["partitions"], key=lambda p: p["partition_index"])
            return len(partitions) == count and all(p["leader_id"] >= 0 for p in partitions) and partitions

        seen[broker_id] = wait_for(known, timeout=30, what=f"broker {broker_id} to know {name}")
    views = [[(p["leader_id"], p["replica_nodes"], p["isr_nodes"]) for p in s] for s in seen.values()]
    assert all(view == views[0] for view in views)
    return seen[1]


def test_a_replicated_topic_is_placed_over_every_broker_and_described(cluster, kazoo):
    assert create(cluster.brokers[1], "placed", 6, 3)["error_code"] == ErrorCode.NONE
    partitions = partitions_everywhere(cluster, "placed", 6)
    for p in partitions:
        assert sorted(p["replica_nodes"]) == [1, 2, 3]
        assert p["leader_id"] == p["replica_nodes"][0]  # the preferred replica leads
        assert sorted(p["isr_nodes"]) == [1, 2, 3]
        node = state_node(kazoo, "placed", p["partition_index"])
        assert node == {
            "controller_epoch": node["controller_epoch"],
            "leader": p["leader_id"],
            "version": 1,
            "leader_epoch": 0,
            "isr": p["replica_nodes"],
        }
    assert {p["leader_id"] for p in partitions} == {1, 2, 3}  # leaders spread round-robin
    done = kafkalog("topics", "describe", "placed", "--format", "json", "--bootstrap-server", cluster.bootstrap)
    described = {p["partition"]: p for p in json.loads(done.stdout)["partitions"]}
    assert all(
        (described[p["partition_index"]]["replicas"], described[p["partition_index"]]["isr"])
        == (p["replica_nodes"], p["isr_nodes"])
        for p in partitions
    )
    plain = kafkalog("topics", "describe", "placed", "--bootstrap-server", cluster.bootstrap).stdout.splitlines()
    assert plain[3].split() == ["partition", "leader", "replicas", "isr", "earliest", "latest", "size"]


def test_a_manual_assignment_is_honoured_and_bad_ones_refused(cluster, kazoo):
    assert create(cluster.brokers[2], "assigned", 0, 0, [[3, 1], [2, 3]])["error_code"] == ErrorCode.NONE
    partitions = partitions_everywhere(cluster, "assigned", 2)
    assert [(p["leader_id"], p["replica_nodes"]) for p in partitions] == [(3, [3, 1]), (2, [2, 3])]
    refused = create(cluster.brokers[1], "twice", 0, 0, [[1, 1]])
    assert refused["error_code"] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert "names a broker twice" in refused["error_message"]
    refused = create(cluster.brokers[1], "too-many", 1, 4)
    assert refused["error_code"] == ErrorCode.INVALID_REPLICATION_FACTOR
    assert "replication factor 4 is larger than the 3 available broker(s)" in refused["error_message"]
    assert not kazoo.exists("/brokers/topics/too-many") and not kazoo.exists("/brokers/topics/twice")


def test_topics_create_takes_a_replication_factor(cluster):
    done = kafkalog(
        "topics",
        "create",
        "by-cli",
        "--partitions",
        "2",
        "--replication-factor",
        "2",
        "--bootstrap-server",
        cluster.bootstrap,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert all(len(p["replica_nodes"]) == 2 for p in partitions_everywhere(cluster, "by-cli", 2))


def test_the_controller_elects_from_the_live_in_sync_replicas():
    assert initial_leader_and_isr([2, 3, 1], {1, 2, 3}) == (2, [2, 3, 1])
    assert initial_leader_and_isr([2, 3, 1], {1, 3}) == (3, [3, 1])
    assert initial_leader_and_isr([2], set()) == (-1, [2])
    assert next_leader_and_isr([1, 2, 3], 1, [1, 2, 3], {1, 2, 3}) is None  # nothing to change
    assert next_leader_and_isr([1, 2, 3], 1, [1, 2, 3], {1, 3}) == (1, [1, 3])  # a dead follower leaves the ISR
    assert next_leader_and_isr([1, 2, 3], 1, [1, 3], {2, 3}) == (3, [3])  # 2 is not in sync: never elected
    assert next_leader_and_isr([1, 2, 3], 1, [1], {2, 3}) == (-1, [1])  # no live in-sync replica: offline
    assert next_leader_and_isr([1, 2, 3], -1, [1], {2, 3}) is None  # still waiting for broker 1
    assert next_leader_and_isr([1, 2, 3], -1, [1], {1, 2}) == (1, [1])  # broker 1 is back and leads
    # unclean.leader.election.enable: a live replica out of the ISR leads alone rather than no one
    assert next_leader_and_isr([1, 2, 3], 1, [1], {2, 3}, unclean=True) == (2, [2])
    assert next_leader_and_isr([1, 2, 3], 1, [1, 3], {2, 3}, unclean=True) == (3, [3])  # the ISR first
    assert next_leader_and_isr([1, 2], -1, [1], set(), unclean=True) is None  # nobody to elect


def consumer_fetch(broker, topic: str, offset: int = 0) -> tuple[int, bytes]:
    """The high watermark and the records a consumer (replica_id -1) is given from ``offset``."""
    response = request(
        broker,
        ApiKey.FETCH,
        {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [{"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}],
                }
            ],
        },
    )
    [answer] = response["responses"][0]["partitions"]
    assert answer["error_code"] == ErrorCode.NONE
    return answer["high_watermark"], bytes(answer["records"] or b"")


def produce(broker, topic: str, values: list[bytes], acks: str) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": acks, "enable.idempotence": acks == "all"})
    failures = []
    for value in values:
        producer.produce(topic, value, partition=0, on_delivery=lambda err, msg: err and failures.append(err))
    assert producer.flush(30) == 0 and failures == []


def segment_bytes(broker, topic: str) -> bytes:
    with open(os.path.join(broker.log_dir, f"{topic}-0", "00000000000000000000.log"), "rb") as file:
        return file.read()


@contextlib.contextmanager
def paused(broker):
    os.kill(broker.pid(), signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(broker.pid(), signal.SIGCONT)


def test_followers_store_the_leaders_batches_byte_for_byte(cluster):
    assert create(cluster.brokers[1], "copied", 1, 3)["error_code"] == ErrorCode.NONE
    [partition] = partitions_everywhere(cluster, "copied", 1)
    leader = cluster.brokers[partition["leader_id"]]
    produce(leader, "copied", [b"record %d" % i for i in range(20)], acks="1")
    produce(leader, "copied", [b"idempotent %d" % i for i in range(5)], acks="all")
    stored = segment_bytes(leader, "copied")
    assert consumer_fetch(leader, "copied")[0] == 25  # acks=all answered: every in-sync replica has them
    for broker in cluster.brokers.values():
        wait_for(
            lambda broker=broker: segment_bytes(broker, "copied") == stored, timeout=30, what="a byte-identical copy"
        )


def test_consumers_never_see_past_the_high_watermark_and_the_isr_follows_the_followers(cluster, kazoo):
    assert create(cluster.brokers[1], "gated", 1, 3)["error_code"] == ErrorCode.NONE
    [partition] = partitions_everywhere(cluster, "gated", 1)
    leader_id, stopped_id, running_id = partition["replica_nodes"]
    leader, stopped = cluster.brokers[leader_id], cluster.brokers[stopped_id]
    produce(leader, "gated", [b"first"], acks="1")
    wait_for(lambda: consumer_fetch(leader, "gated")[0] == 1, timeout=30, what="the first record committed")
    with paused(stopped):
        produce(leader, "gated", [b"second"], acks="1")
        high_watermark, records = consumer_fetch(leader, "gated", 1)
        # the paused follower is still in the ISR (its lag is younger than replica.lag.time.max.ms)
        # unless the leader's check already dropped it: then the record is committed
        if stopped_id in state_node(kazoo, "gated", 0)["isr"]:
            assert (high_watermark, records) == (1, b"")
        wait_for(
            lambda: state_node(kazoo, "gated", 0)["isr"] == [leader_id, running_id],
            timeout=30,
            what="the paused follower to leave the ISR",
        )
        high_watermark, records = wait_for(
            lambda: (found := consumer_fetch(leader, "gated", 1))[0] == 2 and found, timeout=30, what="the commit"
        )
        assert b"second" in records
        assert state_node(kazoo, "gated", 0)["leader_epoch"] == 0  # the leader's ISR change keeps the epoch
        described = kafkalog(
            "cluster", "describe", "--topic", "gated", "--format", "json", "--bootstrap-server", leader.bootstrap
        )
        assert json.loads(described.stdout)["underReplicatedPartitions"] == [
            {"topic": "gated", "partition": 0, "replicas": partition["replica_nodes"], "isr": [leader_id, running_id]}
        ]
    wait_for(
        lambda: sorted(state_node(kazoo, "gated", 0)["isr"]) == sorted([leader_id, stopped_id, running_id]),
        timeout=30,
        what="the resumed follower to rejoin the ISR",
    )
    assert segment_bytes(stopped, "gated") == segment_bytes(leader, "gated")


def raw_produce(broker, topic: str, value: bytes, acks: int, timeout_ms: int) -> int:
    """The error code of one Produce of ``value`` to partition 0."""
    records = batch.build([batch.Record(0, 0, None, value)])
    response = request(
        broker,
        ApiKey.PRODUCE,
        {
            "transactional_id": None,
            "acks": acks,
            "timeout_ms": timeout_ms,
            "topics": [{"name": topic, "partitions": [{"index": 0, "records": records}]}],
        },
    )
    return response["responses"][0]["partitions"][0]["error_code"]


def test_acks_all_waits_for_the_isr_and_refuses_when_it_is_below_min_insync_replicas(cluster, kazoo):
    created = create(cluster.brokers[2], "guarded", 1, 3, configs={"min.insync.replicas": "2"})
    assert created["error_code"] == ErrorCode.NONE
    [partition] = partitions_everywhere(cluster, "guarded", 1)
    leader_id, *follower_ids = partition["replica_nodes"]
    leader = cluster.brokers[leader_id]
    assert raw_produce(leader, "guarded", b"replicated", -1, 30000) == ErrorCode.NONE
    assert consumer_fetch(leader, "guarded")[0] == 1
    with paused(cluster.brokers[follower_ids[0]]), paused(cluster.brokers[follower_ids[1]]):
        if len(state_node(kazoo, "guarded", 0)["isr"]) == 3:  # the followers' lag has not been noticed yet
            assert raw_produce(leader, "guarded", b"waits", -1, 200) == ErrorCode.REQUEST_TIMED_OUT
        # acknowledged only once replicated: the ISR shrinks to the leader alone instead
        assert raw_produce(leader, "guarded", b"alone", -1, 30000) == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        assert state_node(kazoo, "guarded", 0)["isr"] == [leader_id]
        assert raw_produce(leader, "guarded", b"refused", -1, 30000) == ErrorCode.NOT_ENOUGH_REPLICAS
        assert raw_produce(leader, "guarded", b"acks=1 still goes", 1, 30000) == ErrorCode.NONE
    wait_for(lambda: len(state_node(kazoo, "guarded", 0)["isr"]) == 3, timeout=30, what="the followers to rejoin")
    assert raw_produce(leader, "guarded", b"replicated again", -1, 30000) == ErrorCode.NONE
    high_watermark, records = consumer_fetch(leader, "guarded")
    assert b"refused" not in records and b"replicated again" in records


def committed_values(broker, topic: str) -> list[bytes]:
    """Every record value a consumer reads from ``broker`` (the leader), up to the high watermark."""
    values: list[bytes] = []
    offset = 0
    while True:
        high_watermark, records = consumer_fetch(broker, topic, offset)
        if offset >= high_watermark:
            return values
        for decoded in record_set.iter_batches(records):
            values += [r.value for r in decoded.records if r.offset >= offset]
            offset = decoded.last_offset + 1


def test_a_fetch_as_a_broker_that_is_no_replica_is_refused(cluster):
    assert create(cluster.brokers[1], "two-replicas", 0, 0, [[1, 2]])["error_code"] == ErrorCode.NONE
    partitions_everywhere(cluster, "two-replicas", 1)
    response = request(
        cluster.brokers[1],
        ApiKey.FETCH,
        {
            "replica_id": 3,  # a broker of the cluster, but no replica of two-replicas-0
            "max_wait_ms": 0,
            "min_bytes": 0,
            "topics": [
                {
                    "topic": "two-replicas",
                    "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1024}],
                }
            ],
        },
    )
    assert response["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER


def group_coordinated_by(client: KafkaClient, broker_id: int) -> str:
    """A group whose coordinator (the leader of its __consumer_offsets partition) is ``broker_id``."""
    leaders = client.metadata([OFFSETS_TOPIC]).leaders
    partitions = sum(1 for topic, _ in leaders if topic == OFFSETS_TOPIC)
    return next(
        group
        for group in (f"replicated-group-{i}" for i in range(1000))
        if leaders[(OFFSETS_TOPIC, partition_for(group, partitions))] == broker_id
    )


@pytest.mark.slow
def test_a_dead_leader_is_replaced_from_the_isr_and_no_acknowledged_record_is_lost(cluster, kazoo):
    """Kill the leader of a replicated partition while idempotent acks=all producers of two client
    libraries write to it: a new leader from the ISR at the next leader epoch has every record
    acknowledged, each once, and the dead broker rejoins as a follower with a byte-identical log.
    A group it coordinated keeps its committed offsets (``__consumer_offsets`` is replicated)."""
    created = create(cluster.brokers[1], "failover", 1, 3, configs={"min.insync.replicas": "2"})
    assert created["error_code"] == ErrorCode.NONE
    [partition] = partitions_everywhere(cluster, "failover", 1)
    old_leader = partition["leader_id"]
    with KafkaClient(cluster.bootstrap) as client:
        GroupClient(client).commit("first-group", {("failover", 0): 1})  # makes __consumer_offsets
        assert all(len(r) == 3 for (t, _), r in client.metadata([OFFSETS_TOPIC]).replicas.items() if t == OFFSETS_TOPIC)
        group = group_coordinated_by(client, old_leader)
        GroupClient(client).commit(group, {("failover", 0): 17})
    confluent = Producer(
        {"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True, "message.timeout.ms": 60000}
    )
    kafka_python = KafkaProducer(
        bootstrap_servers=cluster.bootstrap.split(","),
        acks="all",
        enable_idempotence=True,
        retries=100,
        request_timeout_ms=10000,
        delivery_timeout_ms=60000,
    )
    acknowledged: list[bytes] = []
    failures: list = []

    def delivered(err, msg):
        (failures if err else acknowledged).append(err or msg.value())

    def write(label: str, count: int) -> None:
        for i in range(count):
            confluent.produce("failover", b"confluent %s %d" % (label.encode(), i), partition=0, on_delivery=delivered)
            value = b"kafka-python %s %d" % (label.encode(), i)
            future = kafka_python.send("failover", value, partition=0)
            future.add_callback(lambda meta, value=value: acknowledged.append(value))
            future.add_errback(failures.append)

    try:
        write("before", 20)
        assert confluent.flush(60) == 0
        kafka_python.flush(60)
        cluster.brokers[old_leader].kill()
        write("during", 20)  # retried by both libraries until the new leader is elected
        state = wait_for(
            lambda: (node := state_node(kazoo, "failover", 0))["leader"] not in (old_leader, -1) and node,
            timeout=60,
            what="a new leader",
        )
        assert (
            state["leader_epoch"] == 1 and old_leader not in state["isr"] and state["leader"] in partition["isr_nodes"]
        )
        assert confluent.flush(60) == 0
        kafka_python.flush(60)
    finally:
        kafka_python.close(10)
    assert failures == [] and len(acknowledged) == 80
    leader = cluster.brokers[state["leader"]]
    values = wait_for(
        lambda: len(found := committed_values(leader, "failover")) >= 80 and found, timeout=30, what="every record"
    )
    assert sorted(values) == sorted(acknowledged)  # each acknowledged record once, nothing else
    with KafkaClient(",".join(b.bootstrap for i, b in cluster.brokers.items() if i != old_leader)) as client:
        committed = wait_for(
            lambda: _committed(client, group), timeout=60, what="the group's new coordinator to answer"
        )
        assert committed[("failover", 0)].offset == 17
    cluster.restart(old_leader)
    wait_for(lambda: len(state_node(kazoo, "failover", 0)["isr"]) == 3, timeout=60, what="the old leader to rejoin")
    assert segment_bytes(cluster.brokers[old_leader], "failover") == segment_bytes(leader, "failover")


def _committed(client: KafkaClient, group: str) -> dict | None:
    try:
        return GroupClient(client).committed(group, {"failover": [0]})
    except Exception:  # COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR while the leaders move
        return None
