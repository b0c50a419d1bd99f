"""OffsetForLeaderEpoch (v0-3) against a real broker process: raw requests at each version, the
epochs a partition's log holds (written by the broker before it started, with the epochs a
cluster's leaders would have stamped), the errors per partition, the ACLs (Describe on the topic
or ClusterAction), and the project's client call that followers use."""

import uuid

import pytest

from broker.client import KafkaClient
from broker.log.config import LogConfig
from broker.log.partition_log import PartitionLog
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.protocol.leader_epochs import EpochEndOffset, EpochQuery
from broker.records import batch
from broker.records.batch import Record

from .wire import connect_to, create_topics_body, produce_body

UNDEFINED = (-1, -1)


def records(count: int) -> bytes:
    return batch.build([Record(i, 1_700_000_000_000 + i, b"k", b"v") for i in range(count)])


def ask(client, version: int, topic: str, *queries: tuple[int, int, int], replica_id: int = -1) -> list[dict]:
    """The partitions' answers for ``(partition, current_leader_epoch, leader_epoch)`` queries."""
    body = {
        "replica_id": replica_id,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {"partition": p, "current_leader_epoch": current, "leader_epoch": epoch}
                    for p, current, epoch in queries
                ],
            }
        ],
    }
    answer = client.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, version, body)
    assert [t["topic"] for t in answer["topics"]] == [topic]
    return answer["topics"][0]["partitions"]


@pytest.fixture(scope="module")
def topic_with_records(broker):
    topic = f"epochs-{uuid.uuid4().hex[:8]}"
    with connect_to(broker) as client:
        assert client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body(topic, 2))["topics"][0]["error_code"] == 0
        for _ in range(3):
            produced = client.call(ApiKey.PRODUCE, 8, produce_body(topic, 0, records(4)))
            assert produced["responses"][0]["partitions"][0]["error_code"] == 0
    return topic


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_each_version_answers_the_end_of_the_epoch_asked(broker, topic_with_records, version):
    with connect_to(broker) as client:
        answers = ask(client, version, topic_with_records, (0, -1, 0), (1, -1, 0), (0, -1, -1), (0, -1, 3))
    got = [(a["error_code"], a["partition"], a["leader_epoch"], a["end_offset"]) for a in answers]
    epoch = 0 if version >= 1 else -1  # v0 answers carry no leader_epoch: the decoder's default
    assert got == [
        (0, 0, epoch, 12),  # the single broker leads at epoch 0: its latest epoch ends at the log end
        (0, 1, epoch, 0),  # an empty partition: its leader recorded the epoch at offset 0
        (0, 0, -1, -1),  # no epoch asked
        (0, 0, -1, -1),  # an epoch the log never had after any it knows
    ]


def test_current_leader_epoch_fences_a_requester_ahead_of_the_broker(broker, topic_with_records):
    with connect_to(broker) as client:
        for version in (2, 3):
            answers = ask(client, version, topic_with_records, (0, 0, 0), (0, 1, 0), (0, -1, 0))
            assert [a["error_code"] for a in answers] == [
                ErrorCode.NONE,
                ErrorCode.UNKNOWN_LEADER_EPOCH,
                ErrorCode.NONE,
            ]
            assert [(a["leader_epoch"], a["end_offset"]) for a in answers[1:2]] == [UNDEFINED]
        # before v2 the field is not sent: nothing is checked
        assert [a["error_code"] for a in ask(client, 1, topic_with_records, (0, 7, 0))] == [ErrorCode.NONE]


def test_unknown_topics_and_partitions(broker, topic_with_records):
    with connect_to(broker) as client:
        assert [a["error_code"] for a in ask(client, 3, "no-such-topic", (0, -1, 0))] == [
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        ]
        answers = ask(client, 3, topic_with_records, (2, -1, 0), (-1, -1, 0), (0, -1, 0))
        assert [a["error_code"] for a in answers] == [
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ErrorCode.NONE,
        ]


def test_a_log_with_several_epochs_answers_as_kafka(start_broker, tmp_path):
    """A partition a cluster's leaders wrote at epochs 0, 2 and 5, served by a single broker (leader
    epoch 0 for it, as single brokers are): what a follower would learn for each epoch."""
    log_dir = tmp_path / "log"
    seeded = start_broker(log_dir=log_dir)
    with connect_to(seeded) as client:
        assert client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body("seeded", 1))["topics"][0]["error_code"] == 0
    seeded.kill()
    log = PartitionLog.open(str(log_dir / "seeded-0"), LogConfig())
    for epoch in (0, 2, 2, 5):
        log.append(records(3), leader_epoch=epoch)
    log.flush()
    log.close()
    # the broker comes back as the leader of epoch 0 over data of epoch 5: its single-broker epoch
    # is older than the data's, so like a Kafka broker elected with a stale epoch, it keeps its cache
    restarted = start_broker(log_dir=log_dir)
    with connect_to(restarted) as client:
        answers = ask(client, 3, "seeded", (0, -1, 0), (0, -1, 1), (0, -1, 2), (0, -1, 4), (0, -1, 5))
    assert [(a["error_code"], a["leader_epoch"], a["end_offset"]) for a in answers] == [
        (0, 0, 3),
        (0, 0, 3),  # an epoch between two known ones: the one below it, ending where the next starts
        (0, 2, 9),
        (0, 2, 9),
        (0, 5, 12),  # the latest epoch ends at the log end
    ]


def test_describe_on_the_topic_or_cluster_action_allows_it_through_the_projects_client(start_broker):
    from broker.client import AclClient, NewTopic, from_settings
    from broker.security.acls import CLUSTER_NAME, Operation, ResourceType

    from ..security.test_authorization import PLAIN_USERS, SASL_PLAINTEXT, acl, user

    secured = start_broker(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.jaas.config": PLAIN_USERS,
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:admin",
        }
    )

    def client_of(name: str) -> KafkaClient:
        return KafkaClient(secured.bootstrap_of(SASL_PLAINTEXT), timeout=20, security=from_settings(user(name)))

    wanted = {("open", 0): EpochQuery(0), ("closed", 0): EpochQuery(0, current_leader_epoch=0)}
    with client_of("admin") as admin:
        assert admin.create_topics([NewTopic("open", 1), NewTopic("closed", 1)]) == {"open": None, "closed": None}
        admin.produce("open", 0, [(b"k", b"v")] * 3)
        AclClient(admin).create([acl(ResourceType.TOPIC, "open", Operation.DESCRIBE)])  # for alice
        AclClient(admin).create([acl(ResourceType.CLUSTER, CLUSTER_NAME, Operation.CLUSTER_ACTION, "User:bob")])
        assert admin.offsets_for_leader_epochs(0, wanted) == {
            ("open", 0): EpochEndOffset(ErrorCode.NONE, 0, 3),
            ("closed", 0): EpochEndOffset(ErrorCode.NONE, 0, 0),
        }
    with client_of("alice") as alice:
        assert alice.offsets_for_leader_epochs(0, wanted) == {
            ("open", 0): EpochEndOffset(ErrorCode.NONE, 0, 3),
            ("closed", 0): EpochEndOffset(ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1),
        }
        # a consumer posing as a follower learns nothing more: the same rule whatever the replica id
        assert alice.offsets_for_leader_epochs(0, wanted, replica_id=1)[("closed", 0)].error_code == (
            ErrorCode.TOPIC_AUTHORIZATION_FAILED
        )
    with client_of("bob") as bob:  # a broker's principal: ClusterAction covers every topic
        assert bob.offsets_for_leader_epochs(0, wanted, replica_id=1) == {
            ("open", 0): EpochEndOffset(ErrorCode.NONE, 0, 3),
            ("closed", 0): EpochEndOffset(ErrorCode.NONE, 0, 0),
        }
