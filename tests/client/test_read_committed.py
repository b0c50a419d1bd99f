"""The client under read_committed, over the wire: ListOffsets LATEST is the last stable offset,
fetches carry the last stable offset and the aborted transactions, and a reader using the
client's ``read_filter`` gets exactly the committed records, whatever the fetch size; a broker too
old for isolation levels is refused under read_committed. The broker is the fake one serving
read_committed as Kafka does, with random logs (tests/jobs/test_transactional_topics.py reads
the real broker)."""

import pytest
from hypothesis import HealthCheck, given, settings

from broker.client import EARLIEST, LATEST, READ_COMMITTED, READ_UNCOMMITTED, KafkaClient
from broker.client.connection import UnsupportedVersionError
from broker.protocol.apis import APIS, ApiKey
from broker.records import record_set
from broker.records.committed import AbortedTransaction

from ..records.transactional_logs import EXAMPLE_EVENTS, TransactionalLog, build_log, transactional_logs
from .fake_servers import FakeBroker

TOPIC = "txn"


def _serve(log: TransactionalLog, **kwargs) -> FakeBroker:
    return FakeBroker(
        TOPIC,
        [b for b, _, _ in log.batches],
        truncate=False,
        aborted=tuple((a.producer_id, a.first_offset, a.last_offset) for a in log.aborted),
        last_stable_offset=log.open_from,
        **kwargs,
    )


def _read_all(client: KafkaClient, start: int, end: int, max_bytes: int) -> list[int]:
    """The offsets of the records a reader of ``[start, end)`` hands on."""
    read_filter = client.read_filter()
    offsets, position = [], start
    while position < end:
        fetched = client.fetch(TOPIC, 0, position, max_bytes)
        read_filter.add_aborted(fetched.aborted_transactions)
        for pos, header in record_set.iter_entries(fetched.records):
            entry = fetched.records[pos : pos + header.size]
            if read_filter.keeps(entry, header):
                offsets += [r.offset for r in record_set.decode_entry(entry).records if position <= r.offset < end]
            position = max(position, header.last_offset + 1)
    return offsets


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transactional_logs(max_events=25))
def test_read_committed_fetches_give_exactly_the_committed_records(log):
    with _serve(log) as fake, KafkaClient(fake.bootstrap, isolation_level=READ_COMMITTED, timeout=10) as client:
        start = client.list_offsets({(TOPIC, 0): EARLIEST})[(TOPIC, 0)].offset
        end = client.list_offsets({(TOPIC, 0): LATEST})[(TOPIC, 0)].offset
        assert _read_all(client, start, end, max_bytes=1) == log.committed  # one batch per fetch
        assert _read_all(client, start, end, max_bytes=1 << 20) == log.committed


def test_latest_is_the_last_stable_offset_and_fetches_stop_there():
    log = build_log(EXAMPLE_EVENTS)
    end = log.batches[-1][2] + 1
    assert log.open_from < end
    with _serve(log) as fake:
        with KafkaClient(fake.bootstrap, isolation_level=READ_COMMITTED, timeout=10) as client:
            assert client.list_offsets({(TOPIC, 0): LATEST})[(TOPIC, 0)].offset == log.open_from
            fetched = client.fetch(TOPIC, 0, 0, 1 << 20)
            assert (fetched.last_stable_offset, fetched.high_watermark) == (log.open_from, end)
            assert max(h.last_offset for _, h in record_set.iter_entries(fetched.records)) < log.open_from
            assert sorted(fetched.aborted_transactions) == [
                AbortedTransaction(a.producer_id, a.first_offset) for a in log.aborted
            ]
            assert _read_all(client, 0, log.open_from, 1 << 20) == log.committed
        with KafkaClient(fake.bootstrap, isolation_level=READ_UNCOMMITTED, timeout=10) as client:
            assert client.list_offsets({(TOPIC, 0): LATEST})[(TOPIC, 0)].offset == end
            assert client.fetch(TOPIC, 0, 0, 1 << 20).aborted_transactions == ()
            assert _read_all(client, 0, end, 1 << 20) == log.all_data


def test_a_list_offsets_without_isolation_level_is_refused_under_read_committed():
    advertised = {key: (api.min_version, api.max_version) for key, api in APIS.items()}
    advertised[ApiKey.LIST_OFFSETS] = (0, 1)
    with _serve(build_log(EXAMPLE_EVENTS), advertised=advertised) as fake:
        with KafkaClient(fake.bootstrap, isolation_level=READ_COMMITTED, timeout=10, retries=0) as client:
            with pytest.raises(UnsupportedVersionError, match="read_committed needs LIST_OFFSETS v2 or later; the "):
                client.list_offsets({(TOPIC, 0): LATEST})
        with KafkaClient(fake.bootstrap, isolation_level=READ_UNCOMMITTED, timeout=10) as client:
            assert client.list_offsets({(TOPIC, 0): LATEST})[(TOPIC, 0)].offset == fake.high_watermark
