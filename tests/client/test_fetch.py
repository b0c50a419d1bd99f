"""Fetch against both brokers: from the start, from offsets inside a batch, at the end, out of range
(below the log start and above the high watermark), with a size smaller than one batch, and
long-polling at the end with ``max_wait_ms``."""

import random
import time
import uuid

import pytest

from broker.client import EARLIEST, KafkaClient, KafkaError, OffsetOutOfRangeError
from broker.protocol.errors import ErrorCode
from broker.records import record_set
from broker.records.batch import Record

from ..waiting import wait_for
from .support import Msg, expected_by_partition, produce, read_partition, stored_batches, topic_for

SMALL = 0  # partition with 30 small records, produced in 3 groups of 10 (so about 3 batches)
LARGE = 1  # partition with 20 records of 1000 bytes produced together (about one batch)
END = 30


@pytest.fixture(scope="module")
def loaded(cluster):
    """A topic with known batch boundaries on SMALL and one ~20 KB batch on LARGE."""
    topic = f"fetch-{cluster.name}-{uuid.uuid4().hex[:8]}"
    rng = random.Random(7)
    groups = [
        [
            Msg(
                SMALL,
                b"key-%02d" % (10 * g + i),
                b"value-%02d-" % (10 * g + i) * 8,
                (("batch", str(g).encode()), ("i", str(i).encode())),
                1_700_000_000_000 + 10 * g + i,
            )
            for i in range(10)
        ]
        for g in range(3)
    ]
    groups[0] += [Msg(LARGE, b"big-%d" % i, rng.randbytes(1000), (), 1_700_000_000_000 + i) for i in range(20)]
    expected = expected_by_partition(produce(cluster.bootstrap, topic, groups))
    with KafkaClient(cluster.bootstrap, timeout=10) as client:
        boundaries = {p: stored_batches(client, topic, p) for p in (SMALL, LARGE)}
    assert any(last > base for base, last in boundaries[SMALL]), f"no multi-record batch: {boundaries}"
    return topic, expected, boundaries


@pytest.fixture
def client(cluster):
    with KafkaClient(cluster.bootstrap, timeout=10, retries=2, retry_backoff_ms=20) as c:
        yield c


def _batches(result):
    return list(record_set.iter_batches(result.records))


def _containing(boundaries, offset) -> int:
    return next(i for i, (base, last) in enumerate(boundaries) if base <= offset <= last)


def test_from_the_start(cluster, loaded, client):
    topic, expected, stored = loaded
    result = client.fetch(topic, SMALL, 0, 1 << 20)
    batches = _batches(result)
    boundaries = [(b.base_offset, b.last_offset) for b in batches]
    # our broker fills max_bytes with whole batches; the mock answers one batch per fetch
    assert boundaries == (stored[SMALL] if cluster.name == "kafkalog" else stored[SMALL][:1])
    assert [r for b in batches for r in b.records] == expected[SMALL][: boundaries[-1][1] + 1]
    assert (result.high_watermark, result.log_start_offset, result.last_stable_offset) == (END, 0, END)


def test_reading_a_whole_partition_in_small_steps(loaded, client):
    topic, expected, _ = loaded
    for partition in (SMALL, LARGE):
        assert read_partition(client, topic, partition, max_bytes=1) == expected[partition]


@pytest.mark.parametrize("offset", range(END))
def test_from_any_offset_returns_the_batch_holding_it(loaded, client, offset):
    """Offsets at the start, inside and at the end of batches (the fixture checks that some
    batch holds several records, so some offsets are strictly inside one)."""
    topic, expected, stored = loaded
    batches = _batches(client.fetch(topic, SMALL, offset, 1 << 20))
    holding = stored[SMALL][_containing(stored[SMALL], offset)]
    assert batches and (batches[0].base_offset, batches[0].last_offset) == holding
    assert all(b.base_offset == a.last_offset + 1 for a, b in zip(batches, batches[1:], strict=False))
    records = [r for b in batches for r in b.records if r.offset >= offset]
    assert records == expected[SMALL][offset : batches[-1].last_offset + 1]


def test_at_the_end_is_empty(loaded, client):
    topic, _, _ = loaded
    result = client.fetch(topic, SMALL, END, 1 << 20)
    assert len(result.records) == 0
    assert (result.high_watermark, result.log_start_offset) == (END, 0)


def test_at_the_end_waits_up_to_max_wait_ms(loaded, client):
    topic, _, _ = loaded
    result = client.fetch(topic, SMALL, END, 1 << 20, max_wait_ms=600)
    assert len(result.records) == 0 and result.high_watermark == END  # nothing arrived within the wait


def test_max_wait_longer_than_the_request_timeout_still_returns(cluster, loaded):
    """A long poll is a normal answer: the client must not give up on it after ``timeout``
    (librdkafka adds fetch.wait.max.ms to the request timeout for the same reason)."""
    topic, _, _ = loaded
    with KafkaClient(cluster.bootstrap, timeout=1.0, retries=1, retry_backoff_ms=10) as slow_poll:
        result = slow_poll.fetch(topic, SMALL, END, 1 << 20, max_wait_ms=1500)
    assert len(result.records) == 0 and result.high_watermark == END


@pytest.mark.parametrize("offset", [END + 1, END + 1000, -1])
def test_out_of_range(loaded, client, offset):
    topic, _, _ = loaded
    with pytest.raises(OffsetOutOfRangeError) as info:
        client.fetch(topic, SMALL, offset, 1 << 20)
    error = info.value
    assert (error.topic, error.partition, error.offset) == (topic, SMALL, offset)
    assert (error.log_start_offset, error.high_watermark) == (0, END)
    assert error.code == ErrorCode.OFFSET_OUT_OF_RANGE and isinstance(error, KafkaError)
    assert f"[0, {END})" in str(error)


@pytest.mark.parametrize("max_bytes", [1, 64, 999])
@pytest.mark.parametrize("offset", [0, 7, 19])
def test_smaller_than_one_batch_still_returns_that_whole_batch(loaded, client, max_bytes, offset):
    topic, expected, stored = loaded
    base, last = stored[LARGE][_containing(stored[LARGE], offset)]
    result = client.fetch(topic, LARGE, offset, max_bytes)
    assert len(result.records) > max_bytes
    batches = _batches(result)
    assert batches and (batches[0].base_offset, batches[0].last_offset) == (base, last)
    assert batches[0].records == expected[LARGE][base : last + 1]


def _wait_for_log_start(client, topic, partition) -> int:
    return wait_for(lambda: client.list_offsets({(topic, partition): EARLIEST})[(topic, partition)][0], 15)


def _check_below_log_start(client, topic, partition, expected: list[Record], high_watermark: int):
    log_start = _wait_for_log_start(client, topic, partition)
    assert 0 < log_start < high_watermark
    for offset in (0, log_start - 1):
        with pytest.raises(OffsetOutOfRangeError) as info:
            client.fetch(topic, partition, offset, 1 << 16)
        assert (info.value.log_start_offset, info.value.high_watermark) == (log_start, high_watermark)
        assert f"[{log_start}, {high_watermark})" in str(info.value)
    assert read_partition(client, topic, partition, start=log_start, max_bytes=1 << 20) == expected[log_start:]


def test_below_the_log_start_on_our_broker(start_broker, request):
    process = start_broker(
        {
            "num.partitions": "1",
            "log.segment.bytes": "4096",
            "log.retention.bytes": "16384",
            "log.retention.check.interval.ms": "100",
        }
    )
    topic = topic_for(request)
    rng = random.Random(3)
    now = int(time.time() * 1000)  # recent: older records would all be past retention.ms (7 days)
    groups = [[Msg(0, b"k%d" % i, rng.randbytes(1000), (), now - 60_000 + i)] for i in range(40)]
    expected = [r for _, r in produce(process.bootstrap, topic, groups)]
    with KafkaClient(process.bootstrap, timeout=10, retries=1) as client:
        _check_below_log_start(client, topic, 0, expected, 40)


def test_below_the_log_start_on_the_mock(mock_cluster, request):
    """The mock keeps about 5 MiB per partition: 7 MB of incompressible values push the start up."""
    topic = topic_for(request)
    value = random.Random(5).randbytes(10_000)
    groups = [
        [Msg(0, b"k%d" % i, value, (), 1_700_000_000_000 + i) for i in range(j, j + 100)] for j in range(0, 700, 100)
    ]
    expected = [r for _, r in produce(mock_cluster.bootstrap, topic, groups)]
    with KafkaClient(mock_cluster.bootstrap, timeout=10, retries=1) as client:
        _check_below_log_start(client, topic, 0, expected, 700)
