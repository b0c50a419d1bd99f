"""The client's one retry policy: which failures are retried, how often, how long it waits, and
what each failure makes stale in the cluster metadata (only that is fetched again)."""

import pytest

from broker.client import BrokerConnectionError, BrokerUnavailableError, KafkaClient, KafkaError, NewTopic
from broker.client.metadata import Broker, ClusterMetadata, Metadata
from broker.client.retry import RetriableError, RetryPolicy, raise_for_partition
from broker.protocol.errors import ErrorCode

from .support import topic_for


def _failing(failures):
    def action():
        if failures:
            raise failures.pop(0)
        return "done"

    return action


def test_transient_failures_are_retried_and_each_is_handed_to_on_retry():
    failures = [
        BrokerConnectionError("reset"),
        RetriableError("t-0: error 6", ErrorCode.NOT_LEADER_OR_FOLLOWER, (("t", 0),)),
    ]
    handed = []
    assert RetryPolicy(retries=2, retry_backoff_ms=0).run(_failing(list(failures)), "fetch", handed.append) == "done"
    assert handed == failures


def test_a_connection_failing_every_time_ends_as_broker_unavailable():
    failures = [BrokerConnectionError("reset")] * 3
    with pytest.raises(BrokerUnavailableError, match="fetch failed after 3 attempts: reset"):
        RetryPolicy(retries=2, retry_backoff_ms=0).run(_failing(failures), "fetch", lambda failure: None)


def test_a_transient_error_code_that_persists_ends_as_a_kafka_error_with_that_code():
    failures = [RetriableError("t-0: error 5", ErrorCode.LEADER_NOT_AVAILABLE)] * 2
    with pytest.raises(KafkaError, match="list offsets failed after 2 attempts") as info:
        RetryPolicy(retries=1, retry_backoff_ms=0).run(_failing(failures), "list offsets", lambda failure: None)
    assert info.value.code == ErrorCode.LEADER_NOT_AVAILABLE


def test_a_final_error_is_raised_at_once():
    handed = []
    with pytest.raises(KafkaError, match="denied"):
        RetryPolicy(retries=5, retry_backoff_ms=0).run(_failing([KafkaError("denied")]), "produce", handed.append)
    assert handed == []


def test_the_backoff_doubles_with_each_attempt_within_its_jitter():
    policy = RetryPolicy(retries=5, retry_backoff_ms=100)
    for attempt in range(5):
        nominal = 0.1 * 2**attempt
        assert 0.8 * nominal <= policy.backoff(attempt) <= 1.2 * nominal


def _cluster() -> ClusterMetadata:
    cluster = ClusterMetadata()
    cluster.current = Metadata(
        {1: Broker(1, "h1", 9092), 2: Broker(2, "h2", 9092)},
        {("t", 0): 1, ("t", 1): 2, ("u", 0): 1},
        {},
        controller_id=1,
    )
    return cluster


def test_a_partition_s_transient_error_forgets_only_that_partition_s_leader():
    cluster = _cluster()
    cluster.forget_after(RetriableError("t-0: error 6", ErrorCode.NOT_LEADER_OR_FOLLOWER, (("t", 0),)))
    assert cluster.current.leaders == {("t", 1): 2, ("u", 0): 1}
    assert set(cluster.current.brokers) == {1, 2} and cluster.current.controller_id == 1


@pytest.mark.parametrize("code", [ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND])
def test_too_few_in_sync_replicas_is_transient_as_in_kafka(code):
    with pytest.raises(RetriableError) as raised:
        raise_for_partition(code, "t", 3)
    assert raised.value.code == code and raised.value.partitions == (("t", 3),)


def test_a_transient_error_about_no_partition_forgets_nothing():
    cluster = _cluster()
    cluster.forget_after(RetriableError("group 'g': NOT_COORDINATOR", ErrorCode.NOT_COORDINATOR))
    assert cluster.current == _cluster().current


def test_a_broken_connection_forgets_everything_so_the_next_request_bootstraps_again():
    cluster = _cluster()
    cluster.forget_after(BrokerConnectionError("reset"))
    assert (cluster.current.brokers, cluster.current.leaders) == ({}, {})


def test_an_answer_about_some_topics_replaces_what_is_known_of_them_and_keeps_the_others():
    cluster = _cluster()
    answer = Metadata({2: Broker(2, "h2", 9092), 3: Broker(3, "h3", 9092)}, {("t", 0): 3}, {"gone": 3}, controller_id=3)
    cluster.update(answer, ["t", "gone"])
    assert cluster.current.leaders == {("t", 0): 3, ("u", 0): 1}  # t-1 no longer exists
    assert (set(cluster.current.brokers), cluster.current.controller_id) == ({2, 3}, 3)
    assert cluster.current.topic_errors == {"gone": 3}
    cluster.update(Metadata({2: Broker(2, "h2", 9092)}, {("v", 0): 2}, {}), None)
    assert cluster.current.leaders == {("v", 0): 2}  # an answer about every topic replaces all


def test_partitions_without_a_leader_are_named_together_and_made_stale():
    cluster = _cluster()
    cluster.current = cluster.current._replace(
        leaders={("t", 0): -1, ("t", 1): 2, ("u", 0): -1}, replicas={("t", 0): (3,), ("u", 0): (3,)}
    )
    with pytest.raises(RetriableError, match="t-0, u-0 have no leader .*broker 3, which holds them, is down") as info:
        cluster.leaders([("t", 0), ("t", 1), ("u", 0)])
    assert info.value.partitions == (("t", 0), ("u", 0))


def test_a_topic_created_after_the_metadata_was_fetched_is_found(broker, request):
    first, later = topic_for(request, "first"), topic_for(request, "later")
    with (
        KafkaClient(broker.bootstrap, timeout=10, retries=0) as client,
        KafkaClient(broker.bootstrap, timeout=10) as admin,
    ):
        assert admin.create_topics([NewTopic(first, 1)]) == {first: None}
        client.produce(first, 0, [(b"k", b"v")])
        assert admin.create_topics([NewTopic(later, 2)]) == {later: None}
        assert client.produce(later, 1, [(b"k", b"v")]) == 0  # its leader is looked up, without a retry
        assert client.list_offsets({(first, 0): -1, (later, 1): -1}) == {(first, 0): (1, -1), (later, 1): (1, -1)}
