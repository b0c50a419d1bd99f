"""Leader epochs in a 3-broker cluster: a broker that leads a partition again after its death (at
a new leader epoch, the controller's) records that epoch at its log end, stamps the batches it
appends with it, and answers OffsetForLeaderEpoch with it, fencing requesters at the old epoch."""

import os

from broker.log.leader_epoch_cache import CHECKPOINT_FILE
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.records import batch
from broker.records.batch import Record
from tests.server.wire import connect_to, produce_body
from tests.waiting import wait_for

from .test_cluster_topics import created_everywhere, metadata

TOPIC = "epochs"


def leader_and_epoch(broker, partition: int) -> tuple[int, int]:
    [found] = metadata(broker, [TOPIC])["topics"]
    state = next(p for p in found["partitions"] if p["partition_index"] == partition)
    return state["leader_id"], state["leader_epoch"]


def produce(broker, partition: int, count: int) -> None:
    records = batch.build([Record(i, 1_700_000_000_000 + i, b"k", b"v") for i in range(count)])
    with connect_to(broker) as client:
        answer = client.call(ApiKey.PRODUCE, 8, produce_body(TOPIC, partition, records, acks=-1))
    assert answer["responses"][0]["partitions"][0]["error_code"] == ErrorCode.NONE


def end_of(broker, partition: int, current: int, epoch: int) -> tuple[int, int, int]:
    body = {
        "replica_id": -1,
        "topics": [
            {
                "topic": TOPIC,
                "partitions": [{"partition": partition, "current_leader_epoch": current, "leader_epoch": epoch}],
            }
        ],
    }
    with connect_to(broker) as client:
        [answer] = client.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, body)["topics"][0]["partitions"]
    return answer["error_code"], answer["leader_epoch"], answer["end_offset"]


def test_a_returning_leader_answers_for_its_new_epoch_and_fences_the_old_one(cluster):
    leaders = created_everywhere(cluster, 1, TOPIC, 3)
    partition = 0
    victim = leaders[partition]
    other = cluster.brokers[next(i for i in cluster.brokers if i != victim)]
    produce(cluster.brokers[victim], partition, 5)
    assert end_of(cluster.brokers[victim], partition, 0, 0) == (ErrorCode.NONE, 0, 5)
    assert end_of(other, partition, -1, 0)[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER

    cluster.brokers[victim].kill()
    wait_for(lambda: leader_and_epoch(other, partition)[0] == -1, timeout=60, what="the partition to lose its leader")
    cluster.restart(victim)
    returned = cluster.brokers[victim]
    wait_for(lambda: leader_and_epoch(returned, partition) == (victim, 2), timeout=60, what="the leader's return")

    # the new epoch starts at the log end before anything is written in it
    assert end_of(returned, partition, 2, 2) == (ErrorCode.NONE, 2, 5)
    assert end_of(returned, partition, 2, 0) == (ErrorCode.NONE, 0, 5)
    assert end_of(returned, partition, 2, 1) == (ErrorCode.NONE, 0, 5)  # no one wrote at epoch 1
    assert end_of(returned, partition, 0, 0)[0] == ErrorCode.FENCED_LEADER_EPOCH
    assert end_of(returned, partition, 3, 0)[0] == ErrorCode.UNKNOWN_LEADER_EPOCH

    produce(returned, partition, 3)
    assert end_of(returned, partition, 2, 2) == (ErrorCode.NONE, 2, 8)
    assert end_of(returned, partition, -1, 0) == (ErrorCode.NONE, 0, 5)
    directory = os.path.join(returned.log_dir, f"{TOPIC}-{partition}")
    with open(os.path.join(directory, CHECKPOINT_FILE)) as f:
        assert f.read() == "0\n2\n0 0\n2 5\n"
    with open(os.path.join(directory, f"{0:020d}.log"), "rb") as f:
        data = f.read()
    stamped = []
    while data:
        header = batch.parse_header(data)
        stamped.append((header.base_offset, header.partition_leader_epoch))
        data = data[header.size :]
    assert stamped == [(0, 0), (5, 2)]
