"""Where consumers start and what they see from there, for every client.

``assign()`` from earliest, from latest and at explicit offsets (the end offset, offsets inside a
stored batch, plain and compressed, positions past the end with each reset policy); a fetch parked
by the broker and woken by a produce; watermarks; ``offsets_for_times`` before, at, between and
after the records. The broker has no group coordinator: consumers ``assign()`` and never commit.
"""

import pytest

from .client_api import EARLIEST, LATEST, OutOfRange
from .common import PARTITIONS, Rec, assert_same_records, make_records, now_ms, stored_batches, with_offsets

GROUPING_LINGER_MS = 5000  # records wait for the flush that closes their batch (aiokafka waits this out)


def test_watermarks_match_the_records_produced(client, topic):
    records = with_offsets(make_records(22, partitions=(0, 1, 2)))
    client.produce(topic, records)
    with client.consumer() as consumer:
        assert consumer.watermarks(topic, range(PARTITIONS)) == {
            p: (0, sum(1 for r in records if r.partition == p)) for p in range(PARTITIONS)
        }


def test_assign_from_earliest_reads_one_partition_from_offset_zero(client, topic):
    records = with_offsets(make_records(30))
    client.produce(topic, records)
    got = client.consume(topic, {2: EARLIEST}, 30 // PARTITIONS)
    assert_same_records(got, [r for r in records if r.partition == 2])


def test_assign_from_latest_sees_only_records_produced_afterwards(client, topic):
    client.produce(topic, with_offsets(make_records(20, tag="old")))
    new = with_offsets(make_records(12, tag="new"), start=dict.fromkeys(range(PARTITIONS), 5))
    with client.consumer() as consumer:
        consumer.assign(topic, dict.fromkeys(range(PARTITIONS), LATEST))
        assert consumer.positions(topic, range(PARTITIONS)) == dict.fromkeys(range(PARTITIONS), 5)
        client.produce(topic, new)
        assert_same_records(consumer.poll(len(new), grace=0.5), new)


def test_assign_at_the_end_offset_then_receives_new_records(client, topic):
    client.produce(topic, with_offsets(make_records(6, partitions=(3,))))
    second = with_offsets(make_records(4, partitions=(3,), tag="second"), start={3: 6})
    with client.consumer() as consumer:
        consumer.assign(topic, {3: 6})
        assert consumer.poll_for(0.5) == []
        client.produce(topic, second)
        assert_same_records(consumer.poll(len(second)), second)


def test_auto_offset_reset_latest_sees_only_new_records(client, topic):
    client.produce(topic, with_offsets(make_records(8, partitions=(3,), tag="old")))
    new = with_offsets(make_records(3, partitions=(3,), tag="new"), start={3: 8})
    with client.consumer(reset="latest") as consumer:
        consumer.assign(topic, {3: None})
        assert consumer.positions(topic, [3]) == {3: 8}
        client.produce(topic, new)
        assert_same_records(consumer.poll(len(new)), new)


def test_a_waiting_fetch_returns_as_soon_as_records_arrive(client, topic):
    """With a 12 s fetch wait the broker parks the fetch; a produce must wake it: the record arrives
    within a 5 s poll, which a fetch left waiting would outlast (the clients' request timeout is 15 s)."""
    with client.producer(linger_ms=0) as producer, client.consumer(fetch_wait_ms=12_000) as consumer:
        assert producer.partitions_for(topic) == list(range(PARTITIONS))  # creates the topic
        consumer.assign(topic, dict.fromkeys(range(PARTITIONS), LATEST))
        assert consumer.positions(topic, range(PARTITIONS)) == dict.fromkeys(range(PARTITIONS), 0)
        assert consumer.poll_for(0.5) == []  # a fetch is now waiting on the broker
        for partition in (3, 0):
            record = with_offsets([Rec(partition, None, b"k", b"wake up", (), now_ms())])
            [delivery] = producer.produce(topic, record)
            assert delivery.offset == 0, delivery
            assert_same_records(consumer.poll(1, seconds=5, grace=0), record)


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_assign_at_offsets_inside_a_stored_batch(broker, client, topic, codec):
    records = with_offsets(make_records(50, partitions=(0,)))
    client.produce(topic, records, linger_ms=200, batch_bytes=64 * 1024, compression=codec)
    batches = stored_batches(broker.log_dir, topic, 0)
    for offset in (1, 17, 49):
        containing = [b for b in batches if b["baseOffset"] <= offset <= b["lastOffset"]]
        assert containing, f"offset {offset} not stored"
        if offset == 17:
            assert containing[0]["baseOffset"] < 17 < containing[0]["lastOffset"], (
                f"offset 17 should be mid-batch; batches: {[(b['baseOffset'], b['lastOffset']) for b in batches]}"
            )
        assert_same_records(client.consume(topic, {0: offset}, len(records) - offset), records[offset:])


def test_offsets_for_times_before_at_between_and_after_the_records(broker, client, topic):
    base = now_ms() - 3_600_000
    records = with_offsets(
        [r._replace(timestamp=base + i * 10_000) for i, r in enumerate(make_records(20, partitions=(0,)))]
    )
    with client.producer(linger_ms=GROUPING_LINGER_MS) as producer:  # one batch per 6 records
        for start in range(0, len(records), 6):
            assert [d.offset for d in producer.produce(topic, records[start : start + 6])] == [
                r.offset for r in records[start : start + 6]
            ]
    assert [b["count"] for b in stored_batches(broker.log_dir, topic, 0)] == [6, 6, 6, 2]
    lookups = {
        base - 1_000_000: (0, base),  # before the first record: the first offset
        base: (0, base),
        base + 50_000: (5, base + 50_000),  # exactly record 5's timestamp
        base + 55_000: (6, base + 60_000),  # between records 5 and 6: the next one
        base + 190_000: (19, base + 190_000),  # the last record
        base + 190_001: None,  # after the last record: no offset
    }
    with client.consumer() as consumer:
        for timestamp, expected in lookups.items():
            if expected and not client.offsets_for_times_gives_timestamp:
                expected = (expected[0], None)
            assert consumer.offsets_for_times(topic, {0: timestamp}) == {0: expected}, timestamp - base
        assert consumer.offsets_for_times(topic, {1: base}) == {1: None}  # an empty partition
        # the offset found is a usable position: consuming from it gives exactly the later records
        [(start, _)] = consumer.offsets_for_times(topic, {0: base + 55_000}).values()
        consumer.assign(topic, {0: start})
        assert_same_records(consumer.poll(len(records) - 6), records[6:])


@pytest.mark.parametrize("reset", ["earliest", "latest", "none"])
def test_position_past_the_end_is_out_of_range(client, topic, reset):
    records = with_offsets(make_records(6, partitions=(2,)))
    client.produce(topic, records)
    with client.consumer(reset=reset) as consumer:
        consumer.assign(topic, {2: 1000})
        if reset == "earliest":
            assert_same_records(consumer.poll(len(records)), records)
        elif reset == "latest":
            assert consumer.poll_for(1.0) == []
            assert consumer.positions(topic, [2]) == {2: 6}
            later = with_offsets(make_records(2, partitions=(2,), tag="later"), start={2: 6})
            client.produce(topic, later)
            assert_same_records(consumer.poll(len(later)), later)
        else:
            with pytest.raises(OutOfRange):
                consumer.poll(1, seconds=10)
