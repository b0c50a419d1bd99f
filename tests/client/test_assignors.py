"""The leader's assignors: Kafka's range and round-robin rules, every subscribed partition assigned
to exactly one member that subscribes to its topic."""

import pytest

from broker.client.assignors import ASSIGNORS, assign_range, assign_round_robin


def test_range_gives_consecutive_runs_and_the_first_members_one_more():
    assigned = assign_range({"b": {"t"}, "a": {"t"}, "c": {"t"}}, {"t": [0, 1, 2, 3, 4, 5, 6]})
    assert assigned == {"a": {"t": [0, 1, 2]}, "b": {"t": [3, 4]}, "c": {"t": [5, 6]}}


def test_range_splits_each_topic_among_its_own_subscribers():
    assigned = assign_range({"a": {"t", "u"}, "b": {"t"}}, {"t": [0, 1], "u": [0, 1, 2]})
    assert assigned == {"a": {"t": [0], "u": [0, 1, 2]}, "b": {"t": [1]}}


def test_round_robin_deals_partitions_in_topic_order_skipping_members_not_subscribed():
    assigned = assign_round_robin({"a": {"t", "u"}, "b": {"t"}, "c": {"u"}}, {"t": [0, 1, 2], "u": [0, 1]})
    assert assigned == {"a": {"t": [0, 2], "u": [1]}, "b": {"t": [1]}, "c": {"u": [0]}}


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
def test_every_partition_goes_to_exactly_one_subscriber_and_every_member_is_named(name):
    subscriptions = {"m1": {"t"}, "m2": {"t", "u"}, "m3": {"u", "missing"}, "idle": set()}
    partitions = {"t": list(range(5)), "u": list(range(3)), "other": [0]}
    assigned = ASSIGNORS[name](subscriptions, partitions)
    assert set(assigned) == set(subscriptions)
    owned = [(t, p, m) for m, topics in assigned.items() for t, ps in topics.items() for p in ps]
    assert sorted((t, p) for t, p, _ in owned) == [("t", p) for p in range(5)] + [("u", p) for p in range(3)]
    assert all(t in subscriptions[m] for t, _, m in owned)
    assert assigned["idle"] == {}
