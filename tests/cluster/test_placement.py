"""Placement rules: the replication factors and manual assignments a topic may ask for (live
brokers, each once), and Kafka's round-robin placement of new partitions and their followers."""

import pytest

from broker.cluster.placement import (
    PlacementError,
    assign_replicas,
    check_assignment,
    check_replication_factor,
    follow_assignment,
)


def test_replication_factor_must_fit_the_live_brokers():
    check_replication_factor(1, live_brokers=1)
    check_replication_factor(3, live_brokers=3)
    with pytest.raises(PlacementError, match="replication factor 3 is larger than the 1 available broker"):
        check_replication_factor(3, live_brokers=1)
    with pytest.raises(PlacementError, match="replication factor 40000 is above Kafka's limit"):
        check_replication_factor(40000)
    with pytest.raises(PlacementError, match="at least 1, got 0"):
        check_replication_factor(0)


def test_a_manual_assignment_names_live_brokers_once_each():
    check_assignment([2], live_broker_ids=[1, 2, 3])
    check_assignment([3, 1, 2], live_broker_ids=[1, 2, 3])
    with pytest.raises(PlacementError, match=r"replica list \[2, 2\] names a broker twice"):
        check_assignment([2, 2], live_broker_ids=[1, 2, 3])
    with pytest.raises(PlacementError, match=r"broker\(s\) \[7\] that are not live \(live: \[1, 2, 3\]\)"):
        check_assignment([7], live_broker_ids=[3, 1, 2])
    with pytest.raises(PlacementError, match="larger than the 1 available"):
        check_assignment([1, 1], live_broker_ids=[1])
    with pytest.raises(PlacementError, match="at least 1"):
        check_assignment([], live_broker_ids=[1])


def test_partitions_are_spread_round_robin_from_the_start_index():
    assert assign_replicas(0, 5, [3, 1, 2], start_index=1) == [[2], [3], [1], [2], [3]]
    assert assign_replicas(4, 2, [3, 1, 2], start_index=1) == [[3], [1]]  # continues where the topic ended
    assert assign_replicas(0, 2, [0]) == [[0], [0]]
    with pytest.raises(PlacementError, match="no broker"):
        assign_replicas(0, 1, [])


def test_followers_follow_the_first_replica_with_a_shift_that_grows_each_round():
    # Kafka's AdminUtils.assignReplicasToBrokers with 5 brokers, start index 0 and shift 0
    placed = assign_replicas(0, 10, [0, 1, 2, 3, 4], start_index=0, replication_factor=3, replica_shift=0)
    assert placed == [
        [0, 1, 2],
        [1, 2, 3],
        [2, 3, 4],
        [3, 4, 0],
        [4, 0, 1],
        [0, 2, 3],
        [1, 3, 4],
        [2, 4, 0],
        [3, 0, 1],
        [4, 1, 2],
    ]
    assert all(len(set(replicas)) == 3 for replicas in placed)
    with pytest.raises(PlacementError, match="replication factor 4 is larger than the 3 available"):
        assign_replicas(0, 1, [1, 2, 3], replication_factor=4)


def test_a_manual_assignment_is_followed_once_checked():
    assert follow_assignment([[3], [1], [3]], 3, live_broker_ids=[1, 2, 3]) == [[3], [1], [3]]
    with pytest.raises(PlacementError, match=r"2 replica list\(s\) given for 3 new partition\(s\)"):
        follow_assignment([[3], [1]], 3, live_broker_ids=[1, 2, 3])
    with pytest.raises(PlacementError, match=r"names broker\(s\) \[4\] that are not live"):
        follow_assignment([[3], [4]], 2, live_broker_ids=[1, 2, 3])
