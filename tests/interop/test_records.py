"""Records round-trip through the broker unchanged, for every client (the ``client`` fixture).

Produce with acks 0, 1 and all; the idempotent producer; every codec (checking in the broker's
``.log`` files that the stored batches really used it); null and empty keys, values and headers;
producer-clock and LogAppendTime timestamps; records larger than the fetch limits. On brokers of
their own: records at and over the broker's ``message.max.bytes`` (the client's limit raised, so
the broker enforces it) lose nothing else, with and without idempotence; an idempotent producer
and a consumer carry on across a clean and a crashed broker restart. Every consumed record is
compared field by field with what was produced.
"""

import pytest

from broker.protocol.errors import ErrorCode

from .client_api import EARLIEST, LOG_APPEND_TIME, Client
from .clients import ADAPTERS
from .common import (
    CODECS,
    PARTITIONS,
    Rec,
    assert_no_duplicates,
    assert_same_records,
    assert_sequences_continuous,
    compressible_records,
    make_records,
    now_ms,
    stored_batches,
    with_offsets,
)


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_produce_with_acks_then_consume_every_record(client, topic, acks):
    records = with_offsets(make_records(200))  # small batches: many requests in a row (no responses for acks=0)
    deliveries = client.produce(topic, records, acks=acks, idempotence=False, batch_bytes=512)
    if acks != 0:
        assert [(d.partition, d.offset) for d in deliveries] == [(r.partition, r.offset) for r in records]
    elif not client.invents_offsets_for_acks_0:
        assert all(d.offset is None for d in deliveries), "acks=0 cannot know offsets"
    assert_same_records(client.consume_all(topic, len(records)), records)


IDEMPOTENCE_CASES = [pytest.param(name, True, id=f"{name}-explicit") for name in ADAPTERS] + [
    pytest.param(name, None, id=f"{name}-default") for name, kind in ADAPTERS.items() if kind.idempotent_by_default
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("client, idempotence", IDEMPOTENCE_CASES, indirect=["client"])
def test_idempotent_producer_stores_each_record_once_in_order(broker, client, topic, idempotence):
    records = with_offsets(make_records(300, partitions=(0, 1)))
    client.produce(topic, records, idempotence=idempotence, batch_bytes=1024, linger_ms=1)
    got = client.consume_all(topic, len(records), partitions=(0, 1))
    assert_no_duplicates(got)
    assert_same_records(got, records)
    for partition in (0, 1):
        batches = stored_batches(broker.log_dir, topic, partition)
        assert len(batches) > 1
        assert_sequences_continuous(batches)


CODEC_CASES = [(name, codec) for name in ADAPTERS for codec in CODECS]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("client, codec", CODEC_CASES, indirect=["client"])
def test_codec_round_trip_and_batches_stored_with_that_codec(broker, client, topic, codec):
    records = with_offsets(compressible_records(400, partition=0, base_timestamp=now_ms() - 60_000))
    client.produce(topic, records, compression=codec, linger_ms=100, batch_bytes=64 * 1024)
    assert_same_records(client.consume(topic, {0: EARLIEST}, len(records)), records)
    batches = stored_batches(broker.log_dir, topic, 0)
    assert sum(b["count"] for b in batches) == len(records)
    assert {b["compression"] for b in batches} == {codec}, (
        f"{client.name} asked for {codec} but the broker stored {[b['compression'] for b in batches]}"
    )


def edge_case_records(client: Client, base_ts: int) -> list[Rec]:
    """Null, empty, binary and unicode keys, values and headers, explicit partitions; without the
    records the client refuses to send (see its flags)."""
    null_header = (("null", None),) if client.sends_null_header_values else ()
    records = [
        Rec(3, None, None, b"null key"),
        Rec(2, None, b"null value", None),
        Rec(1, None, b"", b""),  # empty key and empty value
        *([Rec(0, None, None, None)] if client.sends_null_key_and_value else []),
        Rec(0, None, b"k\x00\xff", b"\x00binary\xff" * 3, (("bin", b"\x00\x01\xff"),)),
        Rec(
            1,
            None,
            b"hdrs",
            b"v",
            null_header + (("empty", b""), ("dup", b"1"), ("dup", b"2"), ("unicode-\u00e9", "\u00e9t\u00e9".encode())),
        ),
        Rec(3, None, "cl\u00e9".encode(), "val\u00fce".encode()),
        Rec(2, None, b"big", b"x" * 100_000, (("size", b"100000"),)),
    ]
    return with_offsets([rec._replace(timestamp=base_ts + i) for i, rec in enumerate(records)])


def test_null_and_empty_keys_values_headers_and_explicit_partitions(client, topic):
    records = edge_case_records(client, now_ms() - 60_000)
    client.produce(topic, records)
    assert_same_records(client.consume_all(topic, len(records)), records)


def test_records_produced_without_a_timestamp_get_the_producer_clock(client, topic):
    before = now_ms()
    records = with_offsets(make_records(5, partitions=(1,), base_timestamp=None))
    client.produce(topic, records)
    after = now_ms()
    got = client.consume_all(topic, len(records), partitions=(1,))
    assert_same_records(got, records, compare_timestamps=False)
    assert all(before - 1000 <= r.timestamp <= after + 1000 for r in got), [r.timestamp for r in got]


def test_log_append_time_topic_stamps_records_with_the_broker_clock(client, topic):
    with client.admin() as admin:
        admin.create_topic(topic, 1, configs={"message.timestamp.type": "LogAppendTime"})
    records = with_offsets(compressible_records(100, partition=0, base_timestamp=1_000_000))
    before = now_ms()
    deliveries = client.produce(topic, records, compression="gzip", linger_ms=50, batch_bytes=64 * 1024)
    after = now_ms()
    got = client.consume(topic, {0: EARLIEST}, len(records), timestamp_type=LOG_APPEND_TIME)
    assert_same_records(got, records, compare_timestamps=False)
    assert all(before <= r.timestamp <= after for r in got), "not the broker's append time"
    reported_type = LOG_APPEND_TIME if client.delivery_reports_timestamp_type else None
    assert [(d.timestamp, d.timestamp_type) for d in deliveries] == [(r.timestamp, reported_type) for r in got], (
        "the produce response's log_append_time differs from the stored timestamps"
    )
    with client.consumer() as consumer:  # time lookups use the append time, not the producer's timestamps
        for timestamp, expected in ((1_000_050, 0), (got[0].timestamp, 0), (got[-1].timestamp + 1, None)):
            found = consumer.offsets_for_times(topic, {0: timestamp})[0]
            assert (found and found[0]) == expected, (timestamp, found)


def test_records_larger_than_the_fetch_limits_still_arrive(client, topic):
    base = now_ms() - 60_000
    records = with_offsets(
        [
            rec
            for p in range(PARTITIONS)
            for rec in (
                Rec(p, None, b"big", bytes([65 + p]) * 60_000, (), base),
                Rec(p, None, b"small", b"s", (), base + 1),
            )
        ]
    )
    client.produce(topic, records, linger_ms=0)
    got = client.consume_all(topic, len(records), partition_fetch_bytes=1024, fetch_bytes=2048)
    assert_same_records(got, records)


BROKER_LIMIT = 20_000
# One uncompressed record with a null key and no headers in a batch of its own: 61 bytes of batch
# header (12 of them offset and size) + 11 bytes of record framing (for values of this size) + value.
BATCH_OVERHEAD = 72


@pytest.mark.timeout(120)
@pytest.mark.parametrize("idempotence", [False, True])
def test_message_max_bytes_is_enforced_by_the_broker_and_nothing_else_is_lost(start_broker, client, topic, idempotence):
    small_broker = start_broker({"message.max.bytes": str(BROKER_LIMIT)})
    small = client.on(small_broker)
    base = now_ms() - 60_000
    before = Rec(0, None, b"before", b"small", (("h", b"1"),), base)
    at_limit = Rec(0, None, None, b"a" * (BROKER_LIMIT - BATCH_OVERHEAD), (), base + 1)
    over_limit = Rec(0, None, None, b"o" * (BROKER_LIMIT - BATCH_OVERHEAD + 1), (), base + 2)
    after = Rec(0, None, b"after", b"small", (), base + 3)
    options = dict(acks="all", idempotence=idempotence, linger_ms=0, max_request_bytes=1_000_000)

    producer = small.producer(**options)
    try:
        outcomes = [producer.produce(topic, [rec])[0] for rec in (before, at_limit, over_limit)]  # one request each
        if idempotence and not client.idempotent_producer_survives_rejected_batch:
            producer.close()
            producer = small.producer(**options)
        outcomes += producer.produce(topic, [after])
    finally:
        producer.close()
    assert [(d.offset, d.error_code) for d in outcomes] == [
        (0, 0),
        (1, 0),
        (None, ErrorCode.MESSAGE_TOO_LARGE),
        (2, 0),
    ], outcomes
    if client.broker_error_marker:
        assert client.broker_error_marker in outcomes[2].error_text, "expected the broker's error"
    expected = with_offsets([before, at_limit, after])
    assert_same_records(small.consume(topic, {0: EARLIEST}, len(expected)), expected)
    sizes = [b["size"] for b in stored_batches(small_broker.log_dir, topic, 0)]
    assert sizes[1] == BROKER_LIMIT, f"the at-limit batch should be exactly {BROKER_LIMIT} bytes: {sizes}"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["clean", "crash"])
def test_idempotent_producer_and_consumer_carry_on_across_a_broker_restart(start_broker, client, topic, how):
    restarting = start_broker({"num.partitions": "2"})
    first = with_offsets(make_records(10, partitions=(0, 1), tag="first"))
    second = with_offsets(make_records(10, partitions=(0, 1), tag="second"), start={0: 5, 1: 5})
    restarted = client.on(restarting)
    with restarted.producer(idempotence=True, linger_ms=0) as producer, restarted.consumer() as consumer:
        assert [(d.offset, d.error_code) for d in producer.produce(topic, first)] == [(r.offset, 0) for r in first]
        consumer.assign(topic, {0: EARLIEST, 1: EARLIEST})
        assert_same_records(consumer.poll(len(first), grace=0), first)
        if how == "clean":
            assert restarting.stop() == 0
        else:
            restarting.kill()
        restarting.start()
        assert [(d.offset, d.error_code) for d in producer.produce(topic, second)] == [(r.offset, 0) for r in second]
        assert_same_records(consumer.poll(len(second)), second)
    for partition in (0, 1):
        assert_sequences_continuous(stored_batches(restarting.log_dir, topic, partition))
