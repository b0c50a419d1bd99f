"""The group coordinator on the wire, in a real broker process: commits survive a clean restart and
a SIGKILL (with ``log.flush.interval.messages=1``) and are stored in ``__consumer_offsets`` in
Kafka's formats (an internal topic in Metadata); group metadata comes back after a restart; bad
input gets Kafka's error codes (unknown group or member, wrong generation, oversized metadata, a
client asking for thousands of members, a commit to a topic that does not exist, a transaction
coordinator) and never a closed connection; clients cannot create or write ``__consumer_offsets``."""

import json
import subprocess

import pytest

from broker.coordinator.config import MAX_MEMBER_METADATA_BYTES
from broker.coordinator.group_partition import partition_for
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.records import batch

from ..conftest import FAST_GROUPS
from ..interop.common import KAFKALOG
from ..waiting import wait_for
from .wire import connect_to, create_topics_body, produce_body

TOPIC = "orders"


def commit_body(group: str, offsets: dict, generation: int = -1, member: str = "", metadata: str = "m") -> dict:
    return {
        "group_id": group,
        "generation_id_or_member_epoch": generation,
        "member_id": member,
        "group_instance_id": None,
        "retention_time_ms": -1,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": p,
                        "committed_offset": o,
                        "committed_leader_epoch": 0,
                        "commit_timestamp": -1,
                        "committed_metadata": metadata,
                    }
                    for (t, p), o in offsets.items()
                    if t == topic
                ],
            }
            for topic in sorted({t for t, _ in offsets})
        ],
    }


def fetched(client, group: str, version: int = 5) -> dict:
    body = client.call(ApiKey.OFFSET_FETCH, version, {"group_id": group, "topics": None})
    assert body["error_code"] == ErrorCode.NONE
    return {
        (t["name"], p["partition_index"]): (p["committed_offset"], p["metadata"], p["committed_leader_epoch"])
        for t in body["topics"]
        for p in t["partitions"]
    }


def commit(client, group: str, offsets: dict, **kwargs) -> list:
    body = client.call(ApiKey.OFFSET_COMMIT, 7, commit_body(group, offsets, **kwargs))
    return [p["error_code"] for t in body["topics"] for p in t["partitions"]]


def join_body(
    group: str, member: str = "", session_ms: int = 6000, protocols=(("range", b"meta"),), instance: str | None = None
) -> dict:
    return {
        "group_id": group,
        "session_timeout_ms": session_ms,
        "rebalance_timeout_ms": 10_000,
        "member_id": member,
        "group_instance_id": instance,
        "protocol_type": "consumer",
        "protocols": [{"name": n, "metadata": m} for n, m in protocols],
    }


def find_coordinator(client, group: str) -> None:
    """FindCoordinator, as clients start: it creates ``__consumer_offsets``, whose partitions this broker
    then leads (before it, no broker coordinates any group: NOT_COORDINATOR, as in Kafka)."""
    assert client.call(ApiKey.FIND_COORDINATOR, 2, {"key": group, "key_type": 0})["error_code"] == ErrorCode.NONE


def wait_for_load(client, group: str) -> None:
    """Until the group's partition of ``__consumer_offsets`` is replayed after a start (as clients retry)."""
    wait_for(
        lambda: (
            client.call(ApiKey.OFFSET_FETCH, 5, {"group_id": group, "topics": None})["error_code"]
            != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        ),
        what=f"group {group!r} loaded",
    )


@pytest.fixture
def durable_broker(start_broker):
    broker = start_broker({"log.flush.interval.messages": "1", "offsets.topic.num.partitions": "5", **FAST_GROUPS})
    with connect_to(broker) as client:
        assert (
            client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body(TOPIC, partitions=3))["topics"][0]["error_code"]
            == ErrorCode.NONE
        )
        find_coordinator(client, "any")
    return broker


@pytest.mark.parametrize("stop", ["clean", "SIGKILL"])
def test_commits_and_group_metadata_survive_a_restart(durable_broker, stop):
    broker = durable_broker
    with connect_to(broker) as client:
        for i in range(20):  # every acknowledged commit, the last one of each partition wins
            assert commit(client, "loads", {(TOPIC, i % 3): i}, metadata=f"run {i}") == [ErrorCode.NONE]
        member = client.call(ApiKey.JOIN_GROUP, 3, join_body("members"))  # v3: no MEMBER_ID_REQUIRED
        assert member["error_code"] == ErrorCode.NONE and member["generation_id"] == 1
        synced = client.call(
            ApiKey.SYNC_GROUP,
            2,
            {
                "group_id": "members",
                "generation_id": 1,
                "member_id": member["member_id"],
                "assignments": [{"member_id": member["member_id"], "assignment": b"mine"}],
            },
        )
        assert synced == {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "assignment": b"mine"}
        before = fetched(client, "loads")
    assert before == {(TOPIC, i % 3): (i, f"run {i}", 0) for i in range(20)}  # the last commit of each
    if stop == "clean":
        assert broker.stop() == 0
    else:
        broker.kill()
    broker.start()
    with connect_to(broker) as client:
        for group_id in ("loads", "members"):
            wait_for_load(client, group_id)
        assert fetched(client, "loads") == before
        described = client.call(
            ApiKey.DESCRIBE_GROUPS, 4, {"groups": ["members"], "include_authorized_operations": False}
        )
        [group] = described["groups"]
        assert (group["group_state"], group["protocol_data"]) == ("Stable", "range")
        assert [(m["member_id"], m["member_assignment"]) for m in group["members"]] == [(member["member_id"], b"mine")]
        heartbeat = {
            "group_id": "members",
            "generation_id": 1,
            "member_id": member["member_id"],
            "group_instance_id": None,
        }
        assert client.call(ApiKey.HEARTBEAT, 3, heartbeat)["error_code"] == ErrorCode.NONE
        metadata = client.call(ApiKey.METADATA, 1, {"topics": [{"name": "__consumer_offsets"}]})
        assert metadata["topics"][0]["is_internal"] and len(metadata["topics"][0]["partitions"]) == 5


def test_offsets_are_stored_in_kafkas_formats(durable_broker):
    with connect_to(durable_broker) as client:
        assert commit(client, "formats", {(TOPIC, 1): 77}, metadata="kafka tools read this") == [ErrorCode.NONE]
    done = subprocess.run(
        [
            KAFKALOG,
            "dump-log",
            "--offsets-decoder",
            "--json",
            f"{durable_broker.log_dir}/__consumer_offsets-{partition_for('formats', 5)}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    found = [json.loads(line) for line in done.stdout.splitlines() if '"formats"' in line]
    assert len(found) == 1
    assert "kafka tools read this" in json.dumps(found[0]) and "77" in json.dumps(found[0])


def test_bad_group_requests_get_kafkas_errors(broker):
    with connect_to(broker) as client:
        assert client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body(TOPIC))["topics"][0]["error_code"] in (
            ErrorCode.NONE,
            ErrorCode.TOPIC_ALREADY_EXISTS,
        )
        find_coordinator(client, "nobody-here")
        heartbeat = {"group_id": "nobody-here", "generation_id": 1, "member_id": "m", "group_instance_id": None}
        assert client.call(ApiKey.HEARTBEAT, 3, heartbeat)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
        sync = {
            "group_id": "nobody-here",
            "generation_id": 1,
            "member_id": "m",
            "group_instance_id": None,
            "assignments": [],
        }
        assert client.call(ApiKey.SYNC_GROUP, 3, sync)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
        assert (
            client.call(ApiKey.JOIN_GROUP, 5, join_body("bad", session_ms=10))["error_code"]
            == ErrorCode.INVALID_SESSION_TIMEOUT
        )
        huge = join_body("bad", protocols=[("range", b"x" * (MAX_MEMBER_METADATA_BYTES + 1))])
        assert client.call(ApiKey.JOIN_GROUP, 5, huge)["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        assert client.call(ApiKey.JOIN_GROUP, 5, join_body(""))["error_code"] == ErrorCode.INVALID_GROUP_ID
        first = client.call(ApiKey.JOIN_GROUP, 4, join_body("bad"))
        assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED and first["member_id"]
        joined = client.call(ApiKey.JOIN_GROUP, 4, join_body("bad", member=first["member_id"]))
        assert joined["error_code"] == ErrorCode.NONE and joined["leader"] == first["member_id"]
        heartbeat = {
            "group_id": "bad",
            "generation_id": joined["generation_id"] + 5,
            "member_id": first["member_id"],
            "group_instance_id": None,
        }
        assert client.call(ApiKey.HEARTBEAT, 3, heartbeat)["error_code"] == ErrorCode.ILLEGAL_GENERATION
        assert commit(client, "bad", {(TOPIC, 0): 1}) == [ErrorCode.REBALANCE_IN_PROGRESS]  # awaiting the sync
        assert commit(
            client,
            "bad",
            {("no-such-topic", 0): 1, (TOPIC, 0): 1},
            generation=joined["generation_id"],
            member=first["member_id"],
        ) == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.REBALANCE_IN_PROGRESS]
        assert commit(client, "simple", {("no-such-topic", 0): 1}) == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
        leave = {
            "group_id": "bad",
            "members": [
                {"member_id": first["member_id"], "group_instance_id": None},
                {"member_id": "ghost", "group_instance_id": None},
            ],
        }
        left = client.call(ApiKey.LEAVE_GROUP, 3, leave)
        assert [m["error_code"] for m in left["members"]] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
        unknown_type = client.call(ApiKey.FIND_COORDINATOR, 2, {"key": "tx", "key_type": 9})
        assert unknown_type["error_code"] == ErrorCode.INVALID_REQUEST
        assert "key type 9" in unknown_type["error_message"]


def test_a_commit_kept_for_the_longest_retention_is_stored_until_then(broker):
    """OffsetCommit v2-4 carry a retention time: INT64's largest does not overflow the expiry."""
    with connect_to(broker) as client:
        assert client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body(TOPIC))["topics"][0]["error_code"] in (
            ErrorCode.NONE,
            ErrorCode.TOPIC_ALREADY_EXISTS,
        )
        find_coordinator(client, "kept")
        body = {**commit_body("kept", {(TOPIC, 0): 5}), "retention_time_ms": 2**63 - 1}
        answer = client.call(ApiKey.OFFSET_COMMIT, 2, body)
        assert answer["topics"][0]["partitions"][0]["error_code"] == ErrorCode.NONE
        assert fetched(client, "kept") == {(TOPIC, 0): (5, "m", -1)}


def test_a_client_asking_for_thousands_of_members_is_bounded(start_broker):
    broker = start_broker({**FAST_GROUPS, "group.max.size": "50"})
    with connect_to(broker) as client:
        find_coordinator(client, "hostile")
        hostile = join_body("hostile", session_ms=300_000)  # pending members are held that long
        errors = [client.call(ApiKey.JOIN_GROUP, 4, hostile)["error_code"] for _ in range(2000)]
        assert errors.count(ErrorCode.MEMBER_ID_REQUIRED) == 50
        assert errors.count(ErrorCode.GROUP_MAX_SIZE_REACHED) == 1950
        described = client.call(
            ApiKey.DESCRIBE_GROUPS, 4, {"groups": ["hostile"], "include_authorized_operations": False}
        )
        assert described["groups"][0]["error_code"] == ErrorCode.NONE


def test_consumer_offsets_is_the_coordinators_alone(start_broker):
    broker = start_broker({"auto.create.topics.enable": "false", "offsets.topic.num.partitions": "3"})
    with connect_to(broker) as client:
        metadata = client.call(
            ApiKey.METADATA, 4, {"topics": [{"name": "__consumer_offsets"}], "allow_auto_topic_creation": False}
        )
        [topic] = metadata["topics"]  # created all the same, as the coordinator wants it
        assert topic["error_code"] == ErrorCode.NONE and topic["is_internal"] and len(topic["partitions"]) == 3
        created = client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body("__consumer_offsets", partitions=7))
        assert created["topics"][0]["error_code"] == ErrorCode.INVALID_REQUEST
        produced = client.call(
            ApiKey.PRODUCE,
            8,
            produce_body("__consumer_offsets", 0, batch.build([batch.Record(0, 0, b"not a key", b"garbage")])),
        )
        assert produced["responses"][0]["partitions"][0]["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    with open(f"{broker.log_dir}/topics.json", encoding="utf-8") as f:
        configs = json.load(f)["topics"]["__consumer_offsets"]["configs"]
    assert configs["cleanup.policy"] == "compact"


def test_an_existing_consumer_offsets_keeps_its_partition_count(durable_broker):
    """A group's partition depends on the count: a changed ``offsets.topic.num.partitions`` must not
    move groups away from their records."""
    broker = durable_broker  # 5 partitions
    with connect_to(broker) as client:
        assert commit(client, "kept", {(TOPIC, 2): 42}) == [ErrorCode.NONE]
    assert broker.stop() == 0
    broker.settings["offsets.topic.num.partitions"] = "7"
    broker.start()
    with connect_to(broker) as client:
        wait_for_load(client, "kept")
        assert fetched(client, "kept") == {(TOPIC, 2): (42, "m", 0)}
        metadata = client.call(ApiKey.METADATA, 1, {"topics": [{"name": "__consumer_offsets"}]})
        assert len(metadata["topics"][0]["partitions"]) == 5


def test_consumer_offsets_is_compacted_to_each_partitions_last_commit(start_broker):
    """The cleaner keeps the latest commit of each group/partition in ``__consumer_offsets``: 300
    commits of one partition shrink to the few in the active segment plus one, and the offset read
    back after a restart is the last one committed."""
    broker = start_broker(
        {
            "offsets.topic.num.partitions": "1",
            "offsets.topic.segment.bytes": "2048",
            "log.cleaner.backoff.ms": "50",
            "log.cleaner.min.cleanable.ratio": "0.01",
            **FAST_GROUPS,
        }
    )
    with connect_to(broker) as client:
        assert (
            client.call(ApiKey.CREATE_TOPICS, 4, create_topics_body(TOPIC, partitions=1))["topics"][0]["error_code"]
            == ErrorCode.NONE
        )
        find_coordinator(client, "compacted")
        for i in range(300):
            assert commit(client, "compacted", {(TOPIC, 0): i}, metadata=f"commit {i}") == [ErrorCode.NONE]

    def commits_stored() -> int:
        done = subprocess.run(
            [KAFKALOG, "dump-log", "--offsets-decoder", "--json", f"{broker.log_dir}/__consumer_offsets-0"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return sum('"compacted"' in line for line in done.stdout.splitlines())

    wait_for(lambda: commits_stored() <= 40, timeout=60, interval=0.5, what="at most 40 of the 300 commits stored")
    assert broker.stop() == 0
    broker.start()
    with connect_to(broker) as client:
        wait_for_load(client, "compacted")
        assert fetched(client, "compacted") == {(TOPIC, 0): (299, "commit 299", 0)}
