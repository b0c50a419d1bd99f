"""The size-doubling retry of ``KafkaClient.fetch``.

Both real brokers here return at least one whole batch whatever the requested size (KIP-74, Fetch
v3+), so the retry path never runs against them. A pre-KIP-74 broker cuts its answer at the
requested size, which can leave only part of the first batch: ``FakeBroker(truncate=True)``
reproduces exactly that fault, answering everything else correctly.
"""

import random

import pytest

from broker.client import KafkaClient, KafkaError
from broker.protocol.errors import ErrorCode
from broker.records import batch, record_set
from broker.records.batch import Record

from .fake_servers import FakeBroker

TOPIC = "doubling"


def _records(first: int, count: int, rng) -> list[Record]:
    return [
        Record(
            first + i,
            1_700_000_000_000 + first + i,
            b"k%d" % (first + i),
            rng.randbytes(1000),
            (("n", str(first + i).encode()),),
        )
        for i in range(count)
    ]


@pytest.fixture(scope="module")
def log():
    """Two ~5 KB batches: offsets [0, 5) and [5, 10)."""
    rng = random.Random(11)
    first, second = _records(0, 5, rng), _records(5, 5, rng)
    batches = [batch.build(first), batch.build(second, base_offset=5)]
    return batches, first + second


def _client(fake, **kwargs) -> KafkaClient:
    return KafkaClient(fake.bootstrap, timeout=5, retries=0, **kwargs)


def _doublings(start: int, needed: int, cap: int) -> list[int]:
    sizes = [start]
    while sizes[-1] < needed and sizes[-1] < cap:
        sizes.append(min(sizes[-1] * 2, cap))
    return sizes


@pytest.mark.parametrize("max_bytes", [10, 1000, 3000])
def test_doubles_until_the_first_batch_fits(log, max_bytes):
    batches, records = log
    with FakeBroker(TOPIC, batches) as fake, _client(fake) as client:
        result = client.fetch(TOPIC, 0, 0, max_bytes)
        sizes = fake.fetch_sizes()
    assert sizes == _doublings(max_bytes, len(batches[0]), 1 << 30)
    assert len(result.records) == sizes[-1] < len(batches[0]) * 2  # the whole first batch, part of the second
    decoded = list(record_set.iter_batches(result.records))
    assert [(b.base_offset, b.last_offset) for b in decoded] == [(0, 4)]
    assert decoded[0].records == records[:5]
    assert result.high_watermark == 10


def test_doubling_from_inside_the_second_batch(log):
    batches, records = log
    with FakeBroker(TOPIC, batches) as fake, _client(fake) as client:
        result = client.fetch(TOPIC, 0, 7, 1500)
        assert fake.fetch_sizes() == _doublings(1500, len(batches[1]), 1 << 30)
    assert [r for _, r in record_set.iter_user_records(result.records)] == records[5:]


def test_the_last_doubling_is_capped_at_max_fetch_bytes(log):
    batches, records = log
    cap = len(batches[0]) + 1  # not a power-of-two multiple of the start size
    with FakeBroker(TOPIC, batches) as fake, _client(fake, max_fetch_bytes=cap) as client:
        result = client.fetch(TOPIC, 0, 0, 1000)
        assert fake.fetch_sizes() == [1000, 2000, 4000, cap]
    assert [r for _, r in record_set.iter_user_records(result.records)] == records[:5]


def test_a_batch_larger_than_max_fetch_bytes_is_a_clear_error(log):
    batches, _ = log
    with FakeBroker(TOPIC, batches) as fake, _client(fake, max_fetch_bytes=3000) as client:
        with pytest.raises(KafkaError) as info:
            client.fetch(TOPIC, 0, 0, 1000)
        assert fake.fetch_sizes() == [1000, 2000, 3000]
    assert info.value.code == ErrorCode.MESSAGE_TOO_LARGE
    assert "max_fetch_bytes (3000)" in str(info.value) and f"{TOPIC}-0@0" in str(info.value)


def test_no_doubling_when_the_broker_sends_a_whole_batch(log):
    batches, records = log
    with FakeBroker(TOPIC, batches, truncate=False) as fake, _client(fake) as client:
        result = client.fetch(TOPIC, 0, 0, 100)
        assert fake.fetch_sizes() == [100]
    assert [r for _, r in record_set.iter_user_records(result.records)] == records[:5]


def test_no_doubling_when_the_first_batch_already_fits(log):
    batches, records = log
    with FakeBroker(TOPIC, batches) as fake, _client(fake) as client:
        result = client.fetch(TOPIC, 0, 0, len(batches[0]) + 100)
        assert fake.fetch_sizes() == [len(batches[0]) + 100]
    assert [r for _, r in record_set.iter_user_records(result.records)] == records[:5]


def test_no_doubling_at_the_end(log):
    batches, _ = log
    with FakeBroker(TOPIC, batches) as fake, _client(fake) as client:
        result = client.fetch(TOPIC, 0, 10, 100)
        assert fake.fetch_sizes() == [100]
    assert len(result.records) == 0 and result.high_watermark == 10
