"""Cutting offset ranges into tasks with the rules of Spark's KafkaOffsetRangeCalculator."""

from hypothesis import given, settings
from hypothesis import strategies as st

from spark_kafka_source.planning import OffsetRange, split


def r(topic, partition, start, end):
    return OffsetRange(topic, partition, start, end)


def test_without_options_one_task_per_non_empty_partition():
    ranges = [r("t", 0, 0, 10), r("t", 1, 5, 5), r("t", 2, 3, 100)]
    assert split(ranges, None, None) == [r("t", 0, 0, 10), r("t", 2, 3, 100)]


def test_min_partitions_not_above_the_partition_count_splits_nothing():
    ranges = [r("t", 0, 0, 10), r("t", 1, 0, 1000)]
    assert split(ranges, 2, None) == ranges
    assert split(ranges, 1, None) == ranges


def test_one_partition_into_three_and_four_equal_parts():
    assert split([r("t", 0, 1, 10_000)], 3, None) == [
        r("t", 0, 1, 3334),
        r("t", 0, 3334, 6667),
        r("t", 0, 6667, 10_000),
    ]
    assert split([r("t", 0, 1, 10_000)], 4, None) == [
        r("t", 0, 1, 2500),
        r("t", 0, 2500, 5000),
        r("t", 0, 5000, 7500),
        r("t", 0, 7500, 10_000),
    ]


def test_small_ranges_stay_whole_and_leave_the_proportion():
    # SPARK-36576: one large partition and many small ones; the small ones keep one task each
    ranges = [r("big", 0, 0, 10_000)] + [r("small", p, 0, 10) for p in range(10)]
    out = split(ranges, 20, None)
    assert [x for x in out if x.topic == "small"] == ranges[1:]
    big = [x for x in out if x.topic == "big"]
    assert len(big) == 10 and big[0].start == 0 and big[-1].end == 10_000
    assert all(a.end == b.start for a, b in zip(big, big[1:], strict=False))


def test_max_records_per_partition_cuts_large_ranges():
    assert split([r("t", 0, 1, 6)], None, 3) == [r("t", 0, 1, 3), r("t", 0, 3, 6)]  # Spark's own example
    assert split([r("t", 0, 0, 10), r("t", 1, 0, 2)], None, 4) == [
        r("t", 0, 0, 3),
        r("t", 0, 3, 6),
        r("t", 0, 6, 10),
        r("t", 1, 0, 2),
    ]


def test_both_options_on_one_range():
    # pieces of 50, then minPartitions 10 over 2 pieces: 5 parts each
    assert len(split([r("t", 0, 0, 100)], 10, 50)) == 10
    # 10 pieces of 10 are already at least minPartitions 2: nothing more
    assert len(split([r("t", 0, 0, 100)], 2, 10)) == 10


def test_max_records_first_then_min_partitions_over_the_pieces():
    # Spark 4 (SPARK-49259): 100 -> pieces 50, 50 (ceil(100 / 60) = 2), 10 stays one piece; 3 pieces < 4:
    # the 10 gets round(10 / 110 * 4) = 0 -> 1 part and leaves the proportion; the 50s share 4 - 1 = 3:
    # round(50 / 100 * 3) = round(1.5) = 2 parts each. Five tasks; minPartitions first would give four.
    ranges = [r("t", 0, 0, 100), r("t", 1, 0, 10)]
    assert split(ranges, 4, 60) == [
        r("t", 0, 0, 25),
        r("t", 0, 25, 50),
        r("t", 0, 50, 75),
        r("t", 0, 75, 100),
        r("t", 1, 0, 10),
    ]


def test_min_partitions_cuts_uneven_pieces_further():
    # pieces 50, 50, 10; minPartitions 8: the 10 stays whole (round(10 / 110 * 8) = 1), the 50s share 7:
    # round(50 / 100 * 7) = round(3.5) = 4 parts each (half up), so 9 tasks of 12, 12, 13, 13 and the 10
    ranges = [r("t", 0, 1000, 1100), r("u", 3, 7, 17)]
    assert split(ranges, 8, 60) == [
        r("t", 0, 1000, 1012),
        r("t", 0, 1012, 1024),
        r("t", 0, 1024, 1037),
        r("t", 0, 1037, 1050),
        r("t", 0, 1050, 1062),
        r("t", 0, 1062, 1074),
        r("t", 0, 1074, 1087),
        r("t", 0, 1087, 1100),
        r("u", 3, 7, 17),
    ]
    # the same without maxRecordsPerPartition: the 100 gets round(100 / 100 * 7) = 7 parts, 8 tasks
    assert len(split(ranges, 8, None)) == 8


def test_min_partitions_not_above_the_piece_count_leaves_the_pieces():
    # 130 -> pieces 43, 43, 44; 25 -> 25; 4 pieces: minPartitions 4 (and 3) adds nothing
    ranges = [r("t", 0, 0, 130), r("t", 1, 0, 25)]
    pieces = [r("t", 0, 0, 43), r("t", 0, 43, 86), r("t", 0, 86, 130), r("t", 1, 0, 25)]
    assert split(ranges, None, 50) == pieces
    assert split(ranges, 4, 50) == pieces
    assert split(ranges, 3, 50) == pieces
    # minPartitions 6 over those four: 25 / 155 * 6 = 0.97 -> 1 part, left whole; the others share 5
    # (43 / 130 * 5 = 1.65 -> 2 parts, 44 / 130 * 5 = 1.69 -> 2 parts): 7 tasks
    assert [x.size for x in split(ranges, 6, 50)] == [21, 22, 21, 22, 22, 22, 25]


def test_half_rounds_up_like_java():
    # 1/4 of 2 partitions is 0.5: Java's Math.round gives 1, Python's round would give 0
    ranges = [r("t", 0, 0, 25), r("t", 1, 0, 75)]
    assert [x.partition for x in split(ranges, 3, None)].count(0) == 1


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 5000), min_size=1, max_size=8),
    min_partitions=st.none() | st.integers(1, 40),
    max_records=st.none() | st.integers(1, 2000),
)
def test_splitting_covers_every_offset_exactly_once(sizes, min_partitions, max_records):
    ranges = [r("t", p, 1000 * p, 1000 * p + size) for p, size in enumerate(sizes)]
    out = split(ranges, min_partitions, max_records)
    covered = sorted((x.partition, offset) for x in out for offset in range(x.start, x.end))
    assert covered == sorted((x.partition, offset) for x in ranges for offset in range(x.start, x.end))
    assert all(x.size > 0 for x in out)
    if max_records:
        assert all(x.size <= max_records for x in out)
    if min_partitions and max_records:
        # maxRecordsPerPartition first, then minPartitions over its pieces
        assert out == split(split(ranges, None, max_records), min_partitions, None)
