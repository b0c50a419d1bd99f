"""Where a kafkalog read starts and ends: offset JSON, timestamps, precedence, the strategy option.

* ``startingOffsets``/``endingOffsets`` JSON with explicit offsets, -2 and -1; the end is exclusive.
* Offsets in the middle of compressed batches (every codec the producers write compressed): the
  first batch read starts before the start offset and the last one extends past the end offset,
  and exactly ``[start, end)`` comes back.
* ``startingTimestamp``, ``endingTimestamp``, ``startingOffsetsByTimestamp``,
  ``endingOffsetsByTimestamp`` on records produced with explicit timestamps: a start resolves to the
  first offset whose timestamp is >= t (an end too, exclusive); an end without match is the latest
  offset; a start without match fails unless ``startingOffsetsByTimestampStrategy=latest``.
* Spark's precedence: the global timestamp over the per-partition JSON over the offsets.
"""

import json

import pytest

from .feed import assert_rows, create_topic, in_range, load, messages, produce, produce_kp, rows, stored_entries

pytestmark = pytest.mark.timeout(120)

TIMED = "offs-timed"  # 3 partitions, 10 records each, timestamps BASE + 1000 * i per partition
STEP = 1000


@pytest.fixture(scope="module")
def timed(broker):
    """Partition p holds 10 records with timestamps base + p * 100 + 1000 * i (i = offset)."""
    create_topic(broker.bootstrap, TIMED, 3)
    recs = []
    base = (messages(1)[0].timestamp // 100_000) * 100_000
    for p in range(3):
        recs += produce(broker.bootstrap, TIMED, messages(10, partitions=(p,), base_ts=base + 100 * p, tag=f"p{p}"))
    return base, recs


def ts(base: int, partition: int, offset: int) -> int:
    return base + 100 * partition + STEP * offset


def read(spark, broker, **options):
    return rows(load(spark, broker.bootstrap, subscribe=TIMED, includeHeaders="true", **options))


@pytest.mark.parametrize(
    "starting, ending, ranges",
    [
        ({"0": 0, "1": 0, "2": 0}, {"0": 10, "1": 10, "2": 10}, {0: (0, 10), 1: (0, 10), 2: (0, 10)}),
        ({"0": -2, "1": 3, "2": 9}, {"0": -1, "1": 4, "2": 10}, {0: (0, 10), 1: (3, 4), 2: (9, 10)}),
        ({"0": 4, "1": 0, "2": 5}, {"0": 4, "1": 1, "2": -1}, {0: (4, 4), 1: (0, 1), 2: (5, 10)}),  # 0: empty
        ({"0": 10, "1": -2, "2": 2}, {"0": -1, "1": 7, "2": 8}, {0: (10, 10), 1: (0, 7), 2: (2, 8)}),
    ],
    ids=["whole", "sentinels-and-single", "one-empty", "start-at-end"],
)
def test_offset_json_reads_exactly_start_to_exclusive_end(spark, broker, timed, starting, ending, ranges):
    _, recs = timed
    got = read(spark, broker, startingOffsets=json.dumps({TIMED: starting}), endingOffsets=json.dumps({TIMED: ending}))
    assert_rows(got, [r for p, (s, e) in ranges.items() for r in in_range(recs, TIMED, p, s, e)])


def test_start_equal_to_end_everywhere_gives_an_empty_dataframe(spark, broker, timed):
    offsets = json.dumps({TIMED: {"0": 3, "1": 10, "2": 0}})
    df = load(spark, broker.bootstrap, subscribe=TIMED, startingOffsets=offsets, endingOffsets=offsets)
    assert df.collect() == []


MID_READS = [  # per partition (start, end): batches hold offsets 0-9, 10-19, 20-29
    {0: (5, 25), 1: (3, 7), 2: (9, 11), 3: (10, 20)},
    {0: (0, 30), 1: (29, 30), 2: (12, 13), 3: (19, 21)},
]


@pytest.mark.parametrize(
    "producer, codec",
    [
        ("confluent", "gzip"),
        ("confluent", "snappy"),
        ("confluent", "zstd"),
        ("kafka-python", "gzip"),
        ("kafka-python", "lz4"),
        ("kafka-python", "zstd"),
    ],
)
def test_offsets_in_the_middle_of_compressed_batches(spark, broker, producer, codec):
    topic = f"offs-mid-{producer}-{codec}"
    create_topic(broker.bootstrap, topic, 4)
    msgs = [m for p in range(4) for m in messages(30, partitions=(p,), tag=f"mid{p}", value_size=50)]
    if producer == "confluent":
        recs = produce(broker.bootstrap, topic, msgs, flush_every=10, **{"compression.codec": codec})
    else:
        recs = produce_kp(broker.bootstrap, topic, msgs, flush_every=10, compression_type=codec)
    for p in range(4):
        entries = stored_entries(broker.bootstrap, topic, p)
        assert [(e.first, e.last) for e in entries] == [(0, 9), (10, 19), (20, 29)]
        assert all(e.codec != 0 for e in entries), f"batches were stored uncompressed: {entries}"
    for ranges in MID_READS:
        got = rows(
            load(
                spark,
                broker.bootstrap,
                includeHeaders="true",
                subscribe=topic,
                startingOffsets=json.dumps({topic: {str(p): s for p, (s, _) in ranges.items()}}),
                endingOffsets=json.dumps({topic: {str(p): e for p, (_, e) in ranges.items()}}),
            )
        )
        assert_rows(got, [r for p, (s, e) in ranges.items() for r in in_range(recs, topic, p, s, e)])


# -- timestamps ----------------------------------------------------------------------------


def test_starting_timestamp_is_the_first_record_at_or_after_it_in_each_partition(spark, broker, timed):
    base, recs = timed
    t = ts(base, 1, 4)  # exactly record 4 of partition 1; between records 4 and 5 of partition 0
    got = read(spark, broker, startingTimestamp=str(t))
    assert_rows(
        got, in_range(recs, TIMED, 0, 5, 10) + in_range(recs, TIMED, 1, 4, 10) + in_range(recs, TIMED, 2, 4, 10)
    )


def test_ending_timestamp_is_exclusive_and_without_match_means_latest(spark, broker, timed):
    base, recs = timed
    got = read(spark, broker, endingTimestamp=str(ts(base, 1, 6)))
    assert_rows(got, in_range(recs, TIMED, 0, 0, 7) + in_range(recs, TIMED, 1, 0, 6) + in_range(recs, TIMED, 2, 0, 6))
    after_all = ts(base, 2, 20)
    assert_rows(read(spark, broker, endingTimestamp=str(after_all)), recs)


def test_starting_and_ending_timestamp_together(spark, broker, timed):
    base, recs = timed
    got = read(spark, broker, startingTimestamp=str(ts(base, 0, 2)), endingTimestamp=str(ts(base, 0, 5) + 50))
    # partition 0: ts >= t0_2 from 2, end at first ts >= t0_5 + 50 -> 6; p1 (+100): 2..5; p2 (+200): 2..5
    assert_rows(got, in_range(recs, TIMED, 0, 2, 6) + in_range(recs, TIMED, 1, 2, 5) + in_range(recs, TIMED, 2, 2, 5))


def test_offsets_by_timestamp_per_partition(spark, broker, timed):
    base, recs = timed
    starting = {TIMED: {"0": ts(base, 0, 3), "1": ts(base, 1, 0) - 5000, "2": ts(base, 2, 8) - 1}}
    ending = {TIMED: {"0": ts(base, 0, 7), "1": ts(base, 1, 1), "2": ts(base, 2, 30)}}
    got = read(
        spark, broker, startingOffsetsByTimestamp=json.dumps(starting), endingOffsetsByTimestamp=json.dumps(ending)
    )
    assert_rows(got, in_range(recs, TIMED, 0, 3, 7) + in_range(recs, TIMED, 1, 0, 1) + in_range(recs, TIMED, 2, 8, 10))


def test_timestamps_combine_with_offsets_on_the_other_end(spark, broker, timed):
    base, recs = timed
    got = read(
        spark,
        broker,
        startingTimestamp=str(ts(base, 2, 6)),
        endingOffsets=json.dumps({TIMED: {"0": 8, "1": -1, "2": 9}}),
    )
    assert_rows(got, in_range(recs, TIMED, 0, 7, 8) + in_range(recs, TIMED, 1, 7, 10) + in_range(recs, TIMED, 2, 6, 9))
    got = read(
        spark,
        broker,
        startingOffsets=json.dumps({TIMED: {"0": 1, "1": -2, "2": 3}}),
        endingOffsetsByTimestamp=json.dumps(
            {TIMED: {"0": ts(base, 0, 2), "1": ts(base, 1, 9), "2": ts(base, 2, 9) + 1}}
        ),
    )
    assert_rows(got, in_range(recs, TIMED, 0, 1, 2) + in_range(recs, TIMED, 1, 0, 9) + in_range(recs, TIMED, 2, 3, 10))


@pytest.mark.parametrize("side", ["starting", "ending"])
def test_precedence_timestamp_over_by_timestamp_over_offsets(spark, broker, timed, side):
    base, recs = timed
    everywhere = {"0": 0, "1": 0, "2": 0} if side == "starting" else {"0": 10, "1": 10, "2": 10}
    offsets = json.dumps({TIMED: everywhere})
    by_ts = json.dumps({TIMED: {"0": ts(base, 0, 2), "1": ts(base, 1, 2), "2": ts(base, 2, 2)}})
    one_ts = str(ts(base, 0, 5))
    expected_by_ts = {p: 2 for p in range(3)}
    expected_one = {0: 5, 1: 5, 2: 5}  # p1, p2 have later timestamps than p0: still record 5 (>= t)
    all_three = read(
        spark, broker, **{f"{side}Timestamp": one_ts, f"{side}OffsetsByTimestamp": by_ts, f"{side}Offsets": offsets}
    )
    two = read(spark, broker, **{f"{side}OffsetsByTimestamp": by_ts, f"{side}Offsets": offsets})

    def expected(cut):
        if side == "starting":
            return [r for p, o in cut.items() for r in in_range(recs, TIMED, p, o, 10)]
        return [r for p, o in cut.items() for r in in_range(recs, TIMED, p, 0, o)]

    assert_rows(all_three, expected(expected_one))
    assert_rows(two, expected(expected_by_ts))


def test_start_without_matching_timestamp_fails_by_default(spark, broker, timed):
    base, _ = timed
    with pytest.raises(Exception) as raised:
        load(spark, broker.bootstrap, subscribe=TIMED, startingTimestamp=str(ts(base, 2, 10))).collect()
    message = str(raised.value)
    assert "startingTimestamp" in message and "startingOffsetsByTimestampStrategy=latest" in message
    assert f"{TIMED}-" in message


def test_start_by_timestamp_json_without_match_names_that_option(spark, broker, timed):
    base, _ = timed
    starting = json.dumps({TIMED: {"0": ts(base, 0, 1), "1": ts(base, 1, 50), "2": ts(base, 2, 1)}})
    with pytest.raises(Exception) as raised:
        load(spark, broker.bootstrap, subscribe=TIMED, startingOffsetsByTimestamp=starting).collect()
    message = str(raised.value)
    assert "option startingOffsetsByTimestamp" in message, message[:600]
    assert f"{TIMED}-1" in message


def test_strategy_latest_starts_unmatched_partitions_at_their_end(spark, broker, timed):
    base, recs = timed
    starting = json.dumps({TIMED: {"0": ts(base, 0, 7), "1": ts(base, 1, 50), "2": ts(base, 2, 0)}})
    got = read(spark, broker, startingOffsetsByTimestamp=starting, startingOffsetsByTimestampStrategy="latest")
    assert_rows(got, in_range(recs, TIMED, 0, 7, 10) + in_range(recs, TIMED, 2, 0, 10))


def test_strategy_latest_with_no_match_anywhere_reads_nothing(spark, broker, timed):
    base, _ = timed
    df = load(
        spark,
        broker.bootstrap,
        subscribe=TIMED,
        startingTimestamp=str(ts(base, 2, 99)),
        startingOffsetsByTimestampStrategy="LATEST",
    )
    assert df.collect() == []


@pytest.mark.parametrize(
    "options, tasks",
    [
        ({"maxRecordsPerPartition": "3"}, 30),  # ceil(28/3) + ceil(30/3) + ceil(20/3) + ceil(7/3) = 10 + 10 + 7 + 3
        ({"minPartitions": "7"}, 7),  # partition 3 (7 of 85 records) stays whole, the others get 2 tasks each
    ],
    ids=["maxRecordsPerPartition", "minPartitions"],
)
def test_split_tasks_start_and_end_inside_compressed_batches(spark, broker, options, tasks):
    topic = f"offs-split-{'-'.join(options)}"
    create_topic(broker.bootstrap, topic, 4)
    msgs = [m for p in range(4) for m in messages(30, partitions=(p,), tag=f"split{p}")]
    recs = produce_kp(broker.bootstrap, topic, msgs, flush_every=10, compression_type="zstd")
    starting = json.dumps({topic: {"0": 1, "1": 0, "2": 5, "3": 11}})
    ending = json.dumps({topic: {"0": 29, "1": -1, "2": 25, "3": 18}})  # sizes 28, 30, 20, 7 = 85
    df = load(
        spark,
        broker.bootstrap,
        options,
        subscribe=topic,
        includeHeaders="true",
        startingOffsets=starting,
        endingOffsets=ending,
    )
    assert df.rdd.getNumPartitions() == tasks
    got = rows(df)
    assert len(got) == len(set(got))
    assert_rows(
        got,
        in_range(recs, topic, 0, 1, 29)
        + in_range(recs, topic, 1, 0, 30)
        + in_range(recs, topic, 2, 5, 25)
        + in_range(recs, topic, 3, 11, 18),
    )
