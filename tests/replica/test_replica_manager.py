"""The replica manager between handlers and logs, on a real log directory: which partitions this
broker serves from a cluster image, Kafka's error for each one it cannot serve, leader epochs
stamped on appended batches and checked against requests, the high watermark as the bound of
DeleteRecords, a partition whose log cannot be made (offline, not a crash), and the partition logs it
alone makes, deletes (renamed aside, freed or removed early) and hands new settings."""

import pytest

from broker.cluster.metadata_cache import NO_LEADER, BrokerEndpoint, ClusterImage, PartitionState
from broker.log.config import LogConfig
from broker.log.errors import OffsetOutOfRangeError
from broker.log.manager import LogManager
from broker.protocol.errors import ErrorCode
from broker.records import batch
from broker.replica.replica_manager import PartitionError, ReplicaManager
from tests.log.util import make_batch

HERE, OTHER = 1, 2


def state(leader: int, epoch: int = 0) -> PartitionState:
    replicas = () if leader == NO_LEADER else (leader,)
    return PartitionState(leader, epoch, replicas, replicas)


def image(topics: dict) -> ClusterImage:
    return ClusterImage.of("cluster-a", HERE, [BrokerEndpoint(HERE, "h1", 1), BrokerEndpoint(OTHER, "h2", 2)], topics)


@pytest.fixture
def replicas(tmp_path):
    with LogManager(str(tmp_path), broker_id=HERE) as log_manager:
        yield ReplicaManager(log_manager, HERE)


def error_of(replicas, topic: str, index: int, epoch: int = -1) -> tuple[ErrorCode, str]:
    with pytest.raises(PartitionError) as raised:
        replicas.leader_partition(topic, index, epoch)
    return raised.value.code, str(raised.value)


def test_serves_only_the_partitions_it_leads_and_says_why_not_for_the_others(replicas):
    replicas.apply(image({"t": [state(HERE), state(OTHER), state(NO_LEADER)]}))
    assert replicas.leader_partition("t", 0).log is not None
    assert [lg.name for lg in replicas.local_logs()] == ["t-0"]  # no log for partitions led elsewhere
    assert error_of(replicas, "t", 1) == (
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        "broker 1 does not lead t-1 (broker 2 does)",
    )
    assert error_of(replicas, "t", 2)[0] == ErrorCode.LEADER_NOT_AVAILABLE
    assert error_of(replicas, "t", 3)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert error_of(replicas, "missing", 0)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_a_new_image_keeps_unchanged_partitions_and_drops_those_no_longer_led(replicas):
    replicas.apply(image({"t": [state(HERE), state(HERE)]}))
    first = replicas.leader_partition("t", 0)
    replicas.apply(image({"t": [state(HERE), state(OTHER)]}))
    assert replicas.leader_partition("t", 0) is first
    assert error_of(replicas, "t", 1)[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    replicas.apply(image({}))
    assert error_of(replicas, "t", 0)[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_leader_epoch_is_stamped_on_appends_and_checked_against_requests(replicas):
    replicas.apply(image({"t": [state(HERE, epoch=3)]}))
    partition = replicas.leader_partition("t", 0, 3)
    partition.append_records(make_batch(2))
    stored = partition.read(0, 1 << 20, min_one_batch=True).read()
    assert batch.parse_header(stored).partition_leader_epoch == 3
    assert replicas.leader_partition("t", 0, -1) is partition  # no epoch named: no check
    assert error_of(replicas, "t", 0, 4)[0] == ErrorCode.UNKNOWN_LEADER_EPOCH  # the client knows a newer leader
    assert error_of(replicas, "t", 0, 2)[0] == ErrorCode.FENCED_LEADER_EPOCH  # the client is behind


def test_high_watermark_bounds_delete_records(replicas):
    replicas.apply(image({"t": [state(HERE)]}))
    partition = replicas.leader_partition("t", 0)
    partition.append_records(make_batch(3))
    assert partition.high_watermark == 3
    with pytest.raises(OffsetOutOfRangeError):
        partition.delete_records_before(4)
    assert partition.delete_records_before(3) == 3 == partition.log_start_offset


def test_a_partition_whose_log_cannot_be_made_is_offline_and_the_others_are_served(replicas, tmp_path):
    (tmp_path / "blocked-0").write_text("a file where the partition's directory belongs")
    replicas.apply(image({"blocked": [state(HERE)], "fine": [state(HERE)]}))
    code, message = error_of(replicas, "blocked", 0)
    assert code == ErrorCode.KAFKA_STORAGE_ERROR and "blocked-0 is offline" in message
    assert replicas.leader_partition("fine", 0).high_watermark == 0


def test_a_log_opened_anew_under_the_same_state_replaces_the_closed_one(replicas):
    """A deletion that failed reopens the log: the next image must serve the new log object."""
    replicas.apply(image({"t": [state(HERE)]}))
    closed = replicas.leader_partition("t", 0).log
    replicas.delete_partition("t", 0)
    replicas.make_partitions("t", [0])
    reopened = replicas.local_log("t", 0)
    replicas.apply(image({"t": [state(HERE)]}))
    assert replicas.leader_partition("t", 0).log is reopened is not closed


def test_partitions_are_made_then_deleted_aside_and_their_files_freed_then_removed(replicas, tmp_path):
    replicas.make_partitions("t", range(2))
    assert sorted(lg.name for lg in replicas.local_logs()) == ["t-0", "t-1"]
    assert replicas.delete_partition("t", 0) and replicas.delete_partition("t", 1)
    assert not replicas.delete_partition("t", 0)  # no such log any more
    assert replicas.local_logs() == []
    aside = sorted(path for path in tmp_path.iterdir() if path.name.endswith("-delete"))
    assert [path.name.split(".")[0] for path in aside] == ["t-0", "t-1"]  # removed later, in the background
    replicas.free_deleted("t", [0])
    assert aside[0].is_dir() and list(aside[0].iterdir()) == [] and list(aside[1].iterdir()) != []
    replicas.remove_deleted("t", [0, 1])
    assert not aside[0].exists() and not aside[1].exists()


def test_new_settings_reach_the_logs_of_the_topics_named_only(replicas):
    replicas.make_partitions("a", range(2))
    replicas.make_partitions("b", [0])
    replicas.reconfigure({"a": LogConfig.from_properties({"retention.ms": "1000"})})
    assert {lg.name: lg.config.retention_ms for lg in replicas.local_logs()} == {
        "a-0": 1000,
        "a-1": 1000,
        "b-0": LogConfig().retention_ms,
    }


def replicated(leader: int, epoch: int = 0) -> PartitionState:
    return PartitionState(leader, epoch, (HERE, OTHER), (HERE, OTHER))


def test_the_high_watermark_waits_for_the_followers_and_is_checkpointed_for_the_next_start(tmp_path):
    with LogManager(str(tmp_path), broker_id=HERE) as log_manager:
        replicas = ReplicaManager(log_manager, HERE)
        replicas.apply(image({"t": [replicated(HERE)]}))
        leader = replicas.leader_partition("t", 0)
        leader.append_records(make_batch(3))
        assert (leader.log_end_offset, leader.high_watermark) == (3, 0)  # the follower has not fetched yet
        assert leader.read(0, 10_000, True) is None  # nothing committed for consumers
        assert replicas.record_follower_fetch(leader, OTHER, 4) is False  # past the log end: not its log
        assert leader.high_watermark == 0
        assert replicas.record_follower_fetch(leader, OTHER, 3) is True
        assert leader.high_watermark == 3 and leader.read(0, 10_000, True) is not None
        with pytest.raises(PartitionError, match="broker 7 is not a replica of t-0"):
            replicas.record_follower_fetch(leader, 7, 3)
        leader.append_records(make_batch(2))
        replicas.write_high_watermarks()
        restarted = ReplicaManager(log_manager, HERE)
        restarted.apply(image({"t": [replicated(HERE, epoch=1)]}))
        assert restarted.leader_partition("t", 0).high_watermark == 3  # not 0, not the log end 5


def test_a_follower_takes_the_leaders_high_watermark_up_to_its_own_log_end(replicas):
    replicas.apply(image({"t": [replicated(OTHER)]}))
    [follower] = replicas.followed_by_leader()[OTHER]
    assert replicas.follower_partition("t", 0, 0) is follower and replicas.follower_partition("t", 0, 1) is None
    assert follower.append_as_follower(make_batch(4), leader_high_watermark=10, leader_log_start=0) == 4
    assert follower.high_watermark == 4  # never past what it has
    with pytest.raises(PartitionError):
        replicas.leader_partition("t", 0)  # a follower serves no clients


def test_a_new_follower_keeps_its_log_until_its_leader_says_where_to_cut(replicas):
    """Becoming a follower marks the partition for truncation and cuts nothing yet: where to cut is
    the leader's answer for the follower's latest epoch (then the high watermark follows the log
    end down), or the high watermark when the leader knows no such epoch."""
    replicas.apply(image({"t": [PartitionState(HERE, 1, (HERE, OTHER), (HERE,))]}))
    led = replicas.leader_partition("t", 0)
    led.append_records(make_batch(3))
    led.append_records(make_batch(2))
    assert (led.high_watermark, led.needs_truncation) == (5, False)  # alone in its ISR: all committed
    replicas.apply(image({"t": [replicated(OTHER, epoch=2)]}))
    [follower] = replicas.followed_by_leader()[OTHER]
    assert (follower.needs_truncation, follower.log_end_offset, follower.high_watermark) == (True, 5, 5)
    assert follower.log.leader_epoch_cache.latest_epoch == 1
    assert follower.truncation_for(-1, -1) == (5, True, -1)  # the leader knows no epoch 1: the high watermark
    assert follower.truncation_for(1, 3) == (3, True, -1)  # the new leader's epoch 1 ended at 3
    assert follower.truncation_for(0, 0) == (0, True, -1)  # the leader never had epoch 1; its epoch 0 ended at 0
    follower.truncate(3)
    assert (follower.needs_truncation, follower.log_end_offset, follower.high_watermark) == (False, 3, 3)
    follower.start_at(10)
    assert (follower.log_start_offset, follower.log_end_offset, follower.high_watermark) == (10, 10, 10)
    assert follower.log.leader_epoch_cache.latest_epoch == -1
    # the leader's log starts mid-batch (DeleteRecords): the empty log restarts at that batch
    assert follower.append_as_follower(make_batch(4, start=8), leader_high_watermark=12, leader_log_start=10) == 12
    assert (follower.log_start_offset, follower.high_watermark) == (10, 12)
    assert follower.log.read(10, 1 << 20, min_one_batch=True) is not None
