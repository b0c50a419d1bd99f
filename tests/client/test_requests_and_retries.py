"""What the client puts in its requests, and how it handles retriable errors and a bootstrap entry
that fails half-way, checked against ``FakeBroker`` (which records every request)."""

import random

import pytest

from broker.client import READ_COMMITTED, KafkaClient, KafkaError
from broker.protocol.apis import ApiKey
from broker.protocol.errors import ErrorCode
from broker.records import batch, record_set
from broker.records.batch import Record

from .fake_servers import FakeBroker, SilentListener

TOPIC = "t"


def _batches():
    return [batch.build([Record(i, 1_700_000_000_000 + i, b"k%d" % i, b"v%d" % i) for i in range(4)])]


def _bodies(fake, api_key):
    return [body for key, _, body in fake.requests if key == api_key]


def test_request_fields():
    with FakeBroker(TOPIC, _batches()) as fake:
        with KafkaClient(
            fake.bootstrap, timeout=5, retries=0, client_id="my-reader", isolation_level=READ_COMMITTED
        ) as client:
            client.fetch(TOPIC, 0, 2, 12345, max_wait_ms=7)
            client.list_offsets({(TOPIC, 0): 1_700_000_000_001})
            client.topics()
    assert set(fake.client_ids) == {"my-reader"}
    (fetch,) = _bodies(fake, ApiKey.FETCH)
    assert (fetch["replica_id"], fetch["isolation_level"], fetch["max_wait_ms"], fetch["max_bytes"]) == (
        -1,
        READ_COMMITTED,
        7,
        12345,
    )
    (wanted,) = fetch["topics"][0]["partitions"]
    assert (
        fetch["topics"][0]["topic"],
        wanted["partition"],
        wanted["fetch_offset"],
        wanted["partition_max_bytes"],
    ) == (TOPIC, 0, 2, 12345)
    (list_offsets,) = _bodies(fake, ApiKey.LIST_OFFSETS)
    assert (list_offsets["replica_id"], list_offsets["isolation_level"]) == (-1, READ_COMMITTED)
    assert list_offsets["topics"][0]["partitions"][0]["timestamp"] == 1_700_000_000_001
    metadata = _bodies(fake, ApiKey.METADATA)
    assert all(body["allow_auto_topic_creation"] is False for body in metadata)
    assert metadata[-1]["topics"] is None  # topics(): all topics


@pytest.mark.parametrize(
    "code", [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.UNKNOWN_LEADER_EPOCH]
)
def test_retriable_fetch_error_refreshes_metadata_and_retries(code):
    with FakeBroker(TOPIC, _batches(), fetch_errors=[code, code]) as fake:
        with KafkaClient(fake.bootstrap, timeout=5, retries=2, retry_backoff_ms=10) as client:
            result = client.fetch(TOPIC, 0, 0, 1 << 16)
        assert len(_bodies(fake, ApiKey.FETCH)) == 3
        assert len(_bodies(fake, ApiKey.METADATA)) == 3  # a refresh before each retry
    assert [r.offset for _, r in record_set.iter_user_records(result.records)] == [0, 1, 2, 3]


def test_retriable_fetch_error_without_retries_keeps_its_code():
    with FakeBroker(TOPIC, _batches(), fetch_errors=[ErrorCode.NOT_LEADER_OR_FOLLOWER]) as fake:
        with KafkaClient(fake.bootstrap, timeout=5, retries=0) as client:
            with pytest.raises(KafkaError, match="after 1 attempt") as info:
                client.fetch(TOPIC, 0, 0, 1 << 16)
    assert info.value.code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_leader_not_available_in_metadata_is_retried():
    with FakeBroker(TOPIC, _batches(), metadata_errors=[ErrorCode.LEADER_NOT_AVAILABLE]) as fake:
        with KafkaClient(fake.bootstrap, timeout=5, retries=1, retry_backoff_ms=10) as client:
            assert client.partitions_of(TOPIC) == [0]


def test_non_retriable_fetch_error_is_named():
    with FakeBroker(TOPIC, _batches(), fetch_errors=[ErrorCode.CORRUPT_MESSAGE]) as fake:
        with KafkaClient(fake.bootstrap, timeout=5, retries=3) as client:
            with pytest.raises(KafkaError, match="CORRUPT_MESSAGE") as info:
                client.fetch(TOPIC, 0, 0, 1 << 16)
        assert len(_bodies(fake, ApiKey.FETCH)) == 1
    assert info.value.code == ErrorCode.CORRUPT_MESSAGE


@pytest.fixture
def in_given_order(monkeypatch):
    monkeypatch.setattr(random, "sample", lambda seq, k: list(seq)[:k])


def test_a_silent_bootstrap_entry_costs_one_timeout_then_the_next_is_used(in_given_order):
    with SilentListener() as silent, FakeBroker(TOPIC, _batches()) as fake:
        with KafkaClient(f"{silent.bootstrap},{fake.bootstrap}", timeout=0.5, retries=0) as client:
            assert client.partitions_of(TOPIC) == [0]
        assert silent.connections_accepted == 1 and silent.frames_received == 1  # tried once, then left


def test_a_bootstrap_entry_that_fails_during_metadata_falls_through_to_the_next(in_given_order):
    """The first entry answers ApiVersions, then drops the connection on Metadata (a broker going
    down): like an unreachable entry, the client should go on to the next one in the same attempt."""
    with FakeBroker(TOPIC, _batches(), close_on=[ApiKey.METADATA]) as dying, FakeBroker(TOPIC, _batches()) as fake:
        with KafkaClient(f"{dying.bootstrap},{fake.bootstrap}", timeout=5, retries=0) as client:
            assert client.partitions_of(TOPIC) == [0]
