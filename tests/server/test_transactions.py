"""Transactions against a real broker process: confluent-kafka's transactional producer (commit,
abort, offsets sent to a transaction, fencing of a zombie, the broker aborting a transaction past
its timeout, a SIGKILL mid-transaction), and the transaction APIs on the wire (FindCoordinator key
type 1, the errors old versions expect). The markers are checked in the partitions' log files."""

import glob
import os
import struct

import pytest
from confluent_kafka import KafkaException, Producer

from broker.coordinator.transaction_coordinator import TRANSACTION_STATE_TOPIC, replay
from broker.coordinator.transaction_metadata import TxnState, partition_for
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.records import record_set

from ..waiting import wait_for
from .wire import connect

# one partition of __transaction_state keeps the broker's start small; the timer checks often
SETTINGS = {
    "num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200",
}
COMMIT, ABORT = 1, 0


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory):
    from broker.embedded import EmbeddedBroker

    process = EmbeddedBroker(tmp_path_factory.mktemp("txn") / "log", SETTINGS).start()
    yield process
    process.kill()


def batches(log_dir, topic, partition=0):
    found = []
    for path in sorted(glob.glob(os.path.join(log_dir, f"{topic}-{partition}", "*.log"))):
        with open(path, "rb") as f:
            found.extend(record_set.iter_batches(f.read()))
    return found


def markers(log_dir, topic, partition=0):
    """``(producer id, epoch, COMMIT/ABORT)`` of each control batch."""
    found = []
    for path in sorted(glob.glob(os.path.join(log_dir, f"{topic}-{partition}", "*.log"))):
        with open(path, "rb") as f:
            data = f.read()
        for position, header in record_set.iter_entries(data):
            if header.is_control:
                (decoded,) = record_set.iter_batches(data[position : position + header.size])
                kind = struct.unpack(">hh", bytes(decoded.records[0].key))[1]
                found.append((header.producer_id, header.producer_epoch, kind))
    return found


def data_values(log_dir, topic, producer_id):
    return [
        r.value for b in batches(log_dir, topic) if not b.is_control and b.producer_id == producer_id for r in b.records
    ]


def transaction_states(log_dir):
    records = [(r.key, r.value) for b in batches(log_dir, TRANSACTION_STATE_TOPIC) for r in b.records]
    return {tid: m.state for tid, m in replay(records).items()}


def producer(bootstrap, transactional_id, **settings):
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "log_level": 2, **settings})


def test_commit_and_abort(txn_broker):
    p = producer(txn_broker.bootstrap, "commit-abort")
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(3):
        p.produce("ca", value=b"kept%d" % i)
    p.commit_transaction(30)
    p.begin_transaction()
    p.produce("ca", value=b"dropped")
    p.flush(10)  # written, then aborted (unsent messages an abort just purges)
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce("ca", value=b"kept3")
    p.commit_transaction(30)

    log_dir = txn_broker.log_dir  # EndTxn is answered before the markers are written: wait for them
    wait_for(lambda: len(markers(log_dir, "ca")) == 3, 10, what="three markers")
    found = markers(log_dir, "ca")
    assert [kind for _, _, kind in found] == [COMMIT, ABORT, COMMIT]
    (pid,) = {producer_id for producer_id, _, _ in found}
    assert data_values(log_dir, "ca", pid) == [b"kept0", b"kept1", b"kept2", b"dropped", b"kept3"]
    assert all(b.is_transactional for b in batches(log_dir, "ca"))
    wait_for(lambda: transaction_states(log_dir).get("commit-abort") is TxnState.COMPLETE_COMMIT, 10)


def test_offsets_sent_to_a_transaction_are_committed_with_it(txn_broker):
    from confluent_kafka import Consumer, TopicPartition

    p = producer(txn_broker.bootstrap, "offsets")
    p.init_transactions(30)
    consumer = Consumer({"bootstrap.servers": txn_broker.bootstrap, "group.id": "txn-group", "log_level": 2})
    try:
        for offset, commit, marker_count in ((5, False, 1), (7, True, 2)):
            p.begin_transaction()
            p.produce("offsets-out", value=b"x")
            p.send_offsets_to_transaction(
                [TopicPartition("offsets-out", 0, offset)], consumer.consumer_group_metadata(), 30
            )
            (p.commit_transaction if commit else p.abort_transaction)(30)
            wait_for(lambda count=marker_count: len(markers(txn_broker.log_dir, "__consumer_offsets")) == count, 10)

            def committed():
                return consumer.committed([TopicPartition("offsets-out", 0)], timeout=10)[0].offset

            if commit:  # stored as the marker is written
                wait_for(lambda: committed() == 7, 10, what="the offset committed with the transaction")
            else:
                assert committed() == -1001  # none: the aborted 5 never shows
    finally:
        consumer.close()
    assert [kind for _, _, kind in markers(txn_broker.log_dir, "__consumer_offsets")] == [ABORT, COMMIT]


def test_a_second_producer_fences_the_first(txn_broker):
    first = producer(txn_broker.bootstrap, "zombie")
    first.init_transactions(30)
    first.begin_transaction()
    first.produce("fence", value=b"zombie")
    first.flush(10)
    second = producer(txn_broker.bootstrap, "zombie")
    second.init_transactions(30)  # aborts the first one's transaction, bumps the epoch
    with pytest.raises(KafkaException) as raised:
        first.commit_transaction(10)
    assert raised.value.args[0].fatal() or raised.value.args[0].txn_requires_abort()
    second.begin_transaction()
    second.produce("fence", value=b"new")
    second.commit_transaction(30)
    wait_for(lambda: len(markers(txn_broker.log_dir, "fence")) == 2, 10, what="two markers")
    found = markers(txn_broker.log_dir, "fence")
    (pid,) = {producer_id for producer_id, _, _ in found}
    assert [(epoch, kind) for _, epoch, kind in found] == [(1, ABORT), (2, COMMIT)]
    assert data_values(txn_broker.log_dir, "fence", pid) == [b"zombie", b"new"]


def test_a_transaction_past_its_timeout_is_aborted(txn_broker):
    p = producer(txn_broker.bootstrap, "slow", **{"transaction.timeout.ms": 1000})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce("timeout", value=b"late")
    p.flush(10)
    wait_for(lambda: markers(txn_broker.log_dir, "timeout"), 20, what="the broker's abort marker")
    ((_, epoch, kind),) = markers(txn_broker.log_dir, "timeout")
    assert (epoch, kind) == (1, ABORT)  # the producer's epoch 0, fenced
    with pytest.raises(KafkaException):
        p.commit_transaction(10)


def test_sigkill_mid_transaction_then_restart_aborts_it(start_broker, tmp_path):
    settings = {**SETTINGS, "log.flush.interval.messages": "1"}
    first = start_broker(settings, log_dir=tmp_path / "log")
    p = producer(first.bootstrap, "killed", **{"transaction.timeout.ms": 2000})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce("killed", value=b"never")
    p.flush(10)
    first.kill()
    assert transaction_states(first.log_dir)["killed"] is TxnState.ONGOING
    restarted = start_broker(settings, log_dir=tmp_path / "log")
    wait_for(lambda: markers(restarted.log_dir, "killed"), 20, what="the abort marker after the restart")
    assert [kind for _, _, kind in markers(restarted.log_dir, "killed")] == [ABORT]
    wait_for(lambda: transaction_states(restarted.log_dir)["killed"] is TxnState.COMPLETE_ABORT, 10)


# -- the wire ------------------------------------------------------------------------------------


def test_find_coordinator_for_a_transactional_id(txn_broker):
    with connect("127.0.0.1", txn_broker.port) as client:
        answer = client.call(ApiKey.FIND_COORDINATOR, 1, {"key": "tx", "key_type": 1})
        assert (answer["error_code"], answer["port"]) == (ErrorCode.NONE, txn_broker.port)
        assert client.call(ApiKey.FIND_COORDINATOR, 1, {"key": "", "key_type": 1})["error_code"] == (
            ErrorCode.INVALID_REQUEST
        )
        assert client.call(ApiKey.FIND_COORDINATOR, 1, {"key": "tx", "key_type": 2})["error_code"] == (
            ErrorCode.INVALID_REQUEST
        )
    assert partition_for("tx", 1) == 0


def test_old_versions_are_told_invalid_producer_epoch(txn_broker):
    with connect("127.0.0.1", txn_broker.port) as client:
        init = client.call(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": "wire", "transaction_timeout_ms": 60_000})
        assert init["error_code"] == ErrorCode.NONE
        stale = {"transactional_id": "wire", "producer_id": init["producer_id"], "producer_epoch": 99}
        for version, expected in ((0, ErrorCode.INVALID_PRODUCER_EPOCH), (2, ErrorCode.PRODUCER_FENCED)):
            added = client.call(
                ApiKey.ADD_PARTITIONS_TO_TXN, version, {**stale, "topics": [{"name": "ca", "partitions": [0]}]}
            )
            assert added["results_by_topic"][0]["results_by_partition"][0]["partition_error_code"] == expected
            ended = client.call(ApiKey.END_TXN, version, {**stale, "committed": True})
            assert ended["error_code"] == expected
        nothing = {**stale, "producer_epoch": init["producer_epoch"], "committed": True}
        assert client.call(ApiKey.END_TXN, 2, nothing)["error_code"] == ErrorCode.INVALID_TXN_STATE
        too_long = {"transactional_id": "wire", "transaction_timeout_ms": 900_001}
        assert client.call(ApiKey.INIT_PRODUCER_ID, 1, too_long)["error_code"] == ErrorCode.INVALID_TRANSACTION_TIMEOUT
        unknown = {**stale, "topics": [{"name": "no-such-topic", "partitions": [0]}, {"name": "ca", "partitions": [0]}]}
        codes = client.call(ApiKey.ADD_PARTITIONS_TO_TXN, 2, {**unknown, "producer_epoch": init["producer_epoch"]})
        assert [r["results_by_partition"][0]["partition_error_code"] for r in codes["results_by_topic"]] == [
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ErrorCode.OPERATION_NOT_ATTEMPTED,
        ]


# -- the project's client -------------------------------------------------------------------------


def test_the_clients_transactional_producer(txn_broker):
    from broker.client import KafkaClient, NewTopic
    from broker.client.transactions import ProducerFencedError, TransactionalProducer, TransactionStateError

    with KafkaClient(txn_broker.bootstrap, retry_backoff_ms=10) as client:
        client.create_topics([NewTopic("own", 1)])
        producer = TransactionalProducer(client, "own-client")
        with pytest.raises(TransactionStateError, match="init_transactions"):
            producer.begin()
        producer.init_transactions()
        producer.begin()
        assert producer.send("own", 0, [(None, b"a"), (None, b"b")]) == 0
        producer.send_offsets_to_transaction({("own", 0): 2}, "own-group")
        producer.commit()
        producer.begin()
        producer.send("own", 0, [(None, b"c")])
        producer.abort()
        producer.begin()
        producer.commit()  # nothing added: ended without EndTxn
        wait_for(lambda: len(markers(txn_broker.log_dir, "own")) == 2, 10, what="two markers")
        pid = producer.sequences.producer_id
        assert [(p, kind) for p, _, kind in markers(txn_broker.log_dir, "own")] == [(pid, COMMIT), (pid, ABORT)]
        assert data_values(txn_broker.log_dir, "own", pid) == [b"a", b"b", b"c"]

        newer = TransactionalProducer(client, "own-client")
        newer.init_transactions()
        producer.begin()
        with pytest.raises(ProducerFencedError, match="fenced"):
            producer.send("own", 0, [(None, b"zombie")])
        with pytest.raises(ValueError, match="non-empty"):
            TransactionalProducer(client, "")


# -- other libraries' transactional producers ----------------------------------------------------


def test_aiokafka_transactional_producer(txn_broker):
    import asyncio

    from aiokafka import AIOKafkaProducer

    async def produce() -> None:
        p = AIOKafkaProducer(bootstrap_servers=txn_broker.bootstrap, transactional_id="aiokafka-tx")
        await asyncio.wait_for(p.start(), 30)
        try:
            async with p.transaction():
                await p.send_and_wait("aio", b"kept", partition=0)
            await p.begin_transaction()
            await p.send_and_wait("aio", b"dropped", partition=0)
            await p.abort_transaction()
        finally:
            await p.stop()

    asyncio.run(asyncio.wait_for(produce(), 60))
    wait_for(lambda: len(markers(txn_broker.log_dir, "aio")) == 2, 10, what="two markers")
    found = markers(txn_broker.log_dir, "aio")
    assert [kind for _, _, kind in found] == [COMMIT, ABORT]
    assert data_values(txn_broker.log_dir, "aio", found[0][0]) == [b"kept", b"dropped"]


def test_kafka_python_transactional_producer(txn_broker):
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=txn_broker.bootstrap, transactional_id="kafka-python-tx")
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send("kp", b"kept", partition=0).get(30)
        p.commit_transaction()
        p.begin_transaction()
        p.send("kp", b"dropped", partition=0).get(30)
        p.abort_transaction()
    finally:
        p.close(10)
    wait_for(lambda: len(markers(txn_broker.log_dir, "kp")) == 2, 10, what="two markers")
    found = markers(txn_broker.log_dir, "kp")
    assert [kind for _, _, kind in found] == [COMMIT, ABORT]
    assert data_values(txn_broker.log_dir, "kp", found[0][0]) == [b"kept", b"dropped"]


def test_a_restarted_coordinator_completes_a_prepared_commit(start_broker, tmp_path):
    """A broker killed between a transaction's PrepareCommit record and its markers: the record is
    added to ``__transaction_state`` by hand after the kill, and the restarted broker's coordinator
    writes the COMMIT marker and records CompleteCommit."""
    from broker.coordinator.transaction_log import encode_key, encode_value
    from broker.records import batch

    settings = {**SETTINGS, "log.flush.interval.messages": "1"}
    first = start_broker(settings, log_dir=tmp_path / "log")
    p = producer(first.bootstrap, "prepared")
    p.init_transactions(30)
    p.begin_transaction()
    p.produce("prepared", value=b"decided", partition=0)
    p.flush(10)
    first.kill()

    state_dir = os.path.join(first.log_dir, f"{TRANSACTION_STATE_TOPIC}-0")
    records = [(r.key, r.value) for b in batches(first.log_dir, TRANSACTION_STATE_TOPIC) for r in b.records]
    ongoing = replay(records)["prepared"]
    assert ongoing.state is TxnState.ONGOING and ongoing.partitions == {("prepared", 0)}
    ongoing.state = TxnState.PREPARE_COMMIT
    next_offset = batches(first.log_dir, TRANSACTION_STATE_TOPIC)[-1].last_offset + 1
    record = batch.Record(next_offset, ongoing.last_update_ms, encode_key("prepared"), encode_value(ongoing))
    with open(sorted(glob.glob(os.path.join(state_dir, "*.log")))[-1], "ab") as segment:
        segment.write(batch.build([record], base_offset=next_offset))

    restarted = start_broker(settings, log_dir=tmp_path / "log")
    wait_for(lambda: markers(restarted.log_dir, "prepared"), 20, what="the COMMIT marker after the restart")
    assert markers(restarted.log_dir, "prepared") == [(ongoing.producer_id, ongoing.producer_epoch, COMMIT)]
    wait_for(lambda: transaction_states(restarted.log_dir)["prepared"] is TxnState.COMPLETE_COMMIT, 10)


def test_describe_and_list_transactions(txn_broker):
    """The flexible-only tools' APIs, over request header v2 and response header v1."""
    with connect("127.0.0.1", txn_broker.port) as client:
        init = client.call(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": "listed", "transaction_timeout_ms": 45_000})
        fields = {"transactional_id": "listed", "producer_id": init["producer_id"], "producer_epoch": 0}
        topics = [{"name": "listed", "partitions": [0]}]
        new_topic = {"name": "listed", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
        client.call(ApiKey.CREATE_TOPICS, 0, {"topics": [new_topic], "timeout_ms": 10_000})
        added = client.call(ApiKey.ADD_PARTITIONS_TO_TXN, 2, {**fields, "topics": topics})
        assert added["results_by_topic"][0]["results_by_partition"][0]["partition_error_code"] == ErrorCode.NONE
        described = client.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ["listed", "nobody"]})
        listed, nobody = described["transaction_states"]
        assert (listed["error_code"], listed["transaction_state"], listed["transaction_timeout_ms"]) == (
            ErrorCode.NONE,
            "Ongoing",
            45_000,
        )
        assert (listed["producer_id"], listed["topics"]) == (
            init["producer_id"],
            [{"topic": "listed", "partitions": [0]}],
        )
        assert nobody["error_code"] == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        filters = {"state_filters": ["Ongoing", "Sleeping"], "producer_id_filters": [], "duration_filter": -1}
        answer = client.call(ApiKey.LIST_TRANSACTIONS, 1, filters)
        assert answer["unknown_state_filters"] == ["Sleeping"]
        assert {"transactional_id": "listed", "producer_id": init["producer_id"], "transaction_state": "Ongoing"} in (
            answer["transaction_states"]
        )
        assert all(s["transaction_state"] == "Ongoing" for s in answer["transaction_states"])
        client.call(ApiKey.END_TXN, 2, {**fields, "committed": False})
        wait_for(
            lambda: (
                client.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ["listed"]})["transaction_states"][
                    0
                ]["transaction_state"]
                == "CompleteAbort"
            ),
            10,
        )
        by_pid = client.call(
            ApiKey.LIST_TRANSACTIONS,
            0,
            {"state_filters": [], "producer_id_filters": [init["producer_id"]], "duration_filter": -1},
        )
        assert [s["transaction_state"] for s in by_pid["transaction_states"]] == ["CompleteAbort"]


def test_transactional_ids_need_acls(start_broker):
    """With the authorizer and no ACL, User:ANONYMOUS may neither find, use nor describe a transactional id."""
    secured = start_broker({**SETTINGS, "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    denied = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    fields = {"transactional_id": "secret", "producer_id": 0, "producer_epoch": 0}
    with connect("127.0.0.1", secured.port) as client:
        assert client.call(ApiKey.FIND_COORDINATOR, 1, {"key": "secret", "key_type": 1})["error_code"] == denied
        init = {"transactional_id": "secret", "transaction_timeout_ms": 1000}
        assert client.call(ApiKey.INIT_PRODUCER_ID, 1, init)["error_code"] == denied
        assert client.call(ApiKey.END_TXN, 2, {**fields, "committed": True})["error_code"] == denied
        assert client.call(ApiKey.ADD_OFFSETS_TO_TXN, 2, {**fields, "group_id": "g"})["error_code"] == denied
        added = client.call(ApiKey.ADD_PARTITIONS_TO_TXN, 2, {**fields, "topics": [{"name": "t", "partitions": [0]}]})
        assert added["results_by_topic"][0]["results_by_partition"][0]["partition_error_code"] == denied
        described = client.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ["secret"]})
        assert described["transaction_states"][0]["error_code"] == denied
