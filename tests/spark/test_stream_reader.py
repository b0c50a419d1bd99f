"""The stream reader driven as Spark's driver process drives it (``initialOffset``,
``prepareForTriggerAvailableNow``, ``latestOffset(start, limit)``, ``partitions``), against a real
broker but without Spark, so every rule costs milliseconds: offsets as Spark's Kafka source writes
them, the default start, rate limits, AvailableNow's target, new partitions, data loss."""

import json
import logging

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from broker.client import GroupClient, KafkaClient
from spark_kafka_source.options import OptionError, TriggerLimits, parse
from spark_kafka_source.planning import DataLossError
from spark_kafka_source.progress import offsets_behind_latest
from spark_kafka_source.streaming import KafkaLogStreamReader, limited_ends, offsets_json, offsets_of

from .feed import base_time, client, create_topic, delete_topic, messages, produce, topic_name

pytestmark = pytest.mark.timeout(60)


def stream_reader(bootstrap: str, **options) -> KafkaLogStreamReader:
    return KafkaLogStreamReader(parse({"kafka.bootstrap.servers": bootstrap, **options}, "stream"))


def fill(bootstrap: str, topic: str, counts: dict, tag: str = "s") -> None:
    """Produce ``counts[partition]`` records to each partition."""
    msgs = [
        m
        for partition, count in counts.items()
        for m in messages(count, partitions=(partition,), tag=f"{tag}{partition}")
    ]
    produce(bootstrap, topic, msgs)


def ranges(reader, start: dict, end: dict) -> list:
    return [(p.topic, p.partition, p.start, p.end) for p in reader.partitions(start, end)]


def test_offsets_are_written_as_spark_writes_them_sorted_by_topic_and_partition():
    offsets = {("b", 10): 5, ("b", 2): 7, ("a", 0): -2}
    assert json.dumps(offsets_json(offsets)) == '{"a": {"0": -2}, "b": {"2": 7, "10": 5}}'
    assert offsets_of(json.loads(json.dumps(offsets_json(offsets)))) == offsets


def test_max_offsets_per_trigger_is_split_by_backlog_small_shares_rounded_up():
    begins = {("t", 0): 0, ("t", 1): 100, ("t", 2): 0}
    available = {("t", 0): 1000, ("t", 1): 200, ("t", 2): 1}
    ends = limited_ends(begins, available, TriggerLimits(max_offsets=100))
    # shares 100 * 1000/1101 = 90.8 -> 90, 100 * 100/1101 = 9.08 -> 9, 100 * 1/1101 = 0.09 -> 1
    assert ends == {("t", 0): 90, ("t", 1): 109, ("t", 2): 1}
    assert limited_ends(begins, available, TriggerLimits(max_offsets=5000)) == available
    capped = limited_ends(begins, available, TriggerLimits(max_offsets=100, max_offsets_per_partition=20))
    # capped backlogs 20, 20, 1 (41 <= 100): the cap alone decides
    assert capped == {("t", 0): 20, ("t", 1): 120, ("t", 2): 1}


def test_stream_options_follow_spark_streaming_rules():
    base = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "t"}
    assert parse(base, "stream").starting.kind == "latest"
    assert parse(base).starting.kind == "earliest"
    assert parse({**base, "startingOffsets": '{"t":{"0":-1}}'}, "stream").starting.offsets == {("t", 0): -1}
    for name in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
        with pytest.raises(OptionError, match=f"option {name}: is not valid in a streaming query"):
            parse({**base, name: "latest" if name == "endingOffsets" else "1700000000000"}, "stream")
    limits = parse(
        {
            **base,
            "maxOffsetsPerTrigger": "100",
            "minOffsetsPerTrigger": "10",
            "maxTriggerDelay": "2m",
            "maxOffsetsPerPartitionPerTrigger": "7",
        },
        "stream",
    ).limits
    assert limits == TriggerLimits(100, 10, 120_000, 7)
    with pytest.raises(OptionError, match="option minOffsetsPerTrigger: 10 is above maxOffsetsPerTrigger 5"):
        parse({**base, "maxOffsetsPerTrigger": "5", "minOffsetsPerTrigger": "10"}, "stream")
    with pytest.raises(OptionError, match="option maxTriggerDelay: 'soon' is not a duration"):
        parse({**base, "maxTriggerDelay": "soon"}, "stream")
    assert parse({**base, "kafka.group.id": "g"}, "stream").commit_group == "g"
    with pytest.raises(OptionError, match="option commitOffsetsToGroup: names group 'a' but kafka.group.id is 'b'"):
        parse({**base, "kafka.group.id": "b", "commitOffsetsToGroup": "a"}, "stream")


def test_a_new_stream_starts_at_latest_then_reads_in_limited_batches(broker, request):
    topic = topic_name(request)
    create_topic(broker.bootstrap, topic, 2)
    fill(broker.bootstrap, topic, {0: 4, 1: 2}, "old")
    reader = stream_reader(broker.bootstrap, subscribe=topic, maxOffsetsPerTrigger="6")
    start = reader.initialOffset()
    assert start == {topic: {"0": 4, "1": 2}}  # latest: the old records are not read
    fill(broker.bootstrap, topic, {0: 12, 1: 6})
    limit = reader.getDefaultReadLimit()
    end = reader.latestOffset(start, limit)
    assert end == {topic: {"0": 8, "1": 4}}  # 6 split 12:6 -> 4 and 2
    assert reader.reportLatestOffset() == {topic: {"0": 16, "1": 8}}
    assert ranges(reader, start, end) == [(topic, 0, 4, 8), (topic, 1, 2, 4)]
    assert reader.latestOffset(end, ReadAllAvailable()) == {topic: {"0": 16, "1": 8}}  # Trigger.Once


def test_starting_offsets_apply_to_a_new_stream(broker, request):
    topic = topic_name(request)
    create_topic(broker.bootstrap, topic, 2)
    fill(broker.bootstrap, topic, {0: 3, 1: 3})
    assert stream_reader(broker.bootstrap, subscribe=topic, startingOffsets="earliest").initialOffset() == {
        topic: {"0": 0, "1": 0}
    }
    chosen = stream_reader(broker.bootstrap, subscribe=topic, startingOffsets=json.dumps({topic: {"0": 1, "1": -1}}))
    assert chosen.initialOffset() == {topic: {"0": 1, "1": 3}}


def test_starting_timestamps_apply_to_a_new_stream_with_sparks_strategy(broker, request):
    topic = topic_name(request)
    create_topic(broker.bootstrap, topic, 2)
    base = base_time()
    # partition 0: base, base+2000, base+4000; partition 1: base+1000, base+3000, base+5000
    produce(broker.bootstrap, topic, messages(6, partitions=(0, 1), base_ts=base))
    at = stream_reader(broker.bootstrap, subscribe=topic, startingTimestamp=str(base + 2000))
    assert at.initialOffset() == {topic: {"0": 1, "1": 1}}  # the first record at or after the time
    by_partition = stream_reader(
        broker.bootstrap,
        subscribe=topic,
        startingOffsetsByTimestamp=json.dumps({topic: {"0": base + 4001, "1": base}}),
        startingOffsetsByTimestampStrategy="latest",
        startingOffsets="earliest",  # the timestamps win
    )
    assert by_partition.initialOffset() == {topic: {"0": 3, "1": 0}}  # no match in 0: its latest offset
    with pytest.raises(OptionError, match="option startingTimestamp: no record of .* has a timestamp at or after"):
        stream_reader(broker.bootstrap, subscribe=topic, startingTimestamp=str(base + 10_000)).initialOffset()


def test_available_now_reads_up_to_what_was_there_at_the_start_then_stops(broker, request):
    topic = topic_name(request)
    create_topic(broker.bootstrap, topic, 2)
    fill(broker.bootstrap, topic, {0: 5, 1: 3})
    reader = stream_reader(
        broker.bootstrap,
        subscribe=topic,
        startingOffsets="earliest",
        maxOffsetsPerTrigger="3",
        maxOffsetsPerPartitionPerTrigger="2",
        minOffsetsPerTrigger="3",
    )
    reader.prepareForTriggerAvailableNow()
    start = reader.initialOffset()
    fill(broker.bootstrap, topic, {0: 4, 1: 4}, "late")  # after the start: not read by this run
    seen, limit = [], reader.getDefaultReadLimit()
    for _ in range(10):
        end = reader.latestOffset(start, limit)
        if end == start:
            break
        seen += ranges(reader, start, end)
        start = end
    assert start == {topic: {"0": 5, "1": 3}}
    assert all(stop - begin <= 2 for _, _, begin, stop in seen)  # the per-partition cap
    per_partition = {}
    for _, partition, begin, stop in seen:
        assert per_partition.get(partition, 0) == begin  # contiguous, each offset once
        per_partition[partition] = stop
    assert per_partition == {0: 5, 1: 3}


def test_min_offsets_per_trigger_holds_a_batch_back_until_enough_records_wait(broker, request):
    topic = topic_name(request)
    create_topic(broker.bootstrap, topic, 1)
    reader = stream_reader(broker.bootstrap, subscribe=topic, minOffsetsPerTrigger="5", maxTriggerDelay="1h")
    limit = reader.getDefaultReadLimit()
    start = reader.initialOffset()
    assert reader.latestOffset(start, limit) == start  # the first batch of a run is not held: nothing to read
    fill(broker.bootstrap, topic, {0: 3})
    assert reader.latestOffset(start, limit) == start  # 3 < 5, and the delay has not passed
    fill(broker.bootstrap, topic, {0: 2}, "more")
    assert reader.latestOffset(start, limit) == {topic: {"0": 5}}
    no_delay = stream_reader(broker.bootstrap, subscribe=topic, minOffsetsPerTrigger="5", maxTriggerDelay="0s")
    assert no_delay.latestOffset({topic: {"0": 4}}, limit) == {topic: {"0": 5}}  # the delay passed: 1 record goes


def test_new_partitions_and_newly_matching_topics_are_read_from_earliest(broker, request):
    prefix = topic_name(request)[-60:]
    create_topic(broker.bootstrap, f"{prefix}-a", 1)
    fill(broker.bootstrap, f"{prefix}-a", {0: 2})
    reader = stream_reader(broker.bootstrap, subscribePattern=f"{prefix}-.*")
    start = reader.initialOffset()
    assert start == {f"{prefix}-a": {"0": 2}}
    with client(broker.bootstrap) as c:
        c.create_partitions(f"{prefix}-a", 2)
    create_topic(broker.bootstrap, f"{prefix}-b", 1)
    fill(broker.bootstrap, f"{prefix}-a", {1: 3}, "added")
    fill(broker.bootstrap, f"{prefix}-b", {0: 2}, "new")
    end = reader.latestOffset(start, ReadAllAvailable())
    assert end == {f"{prefix}-a": {"0": 2, "1": 3}, f"{prefix}-b": {"0": 2}}
    assert ranges(reader, start, end) == [(f"{prefix}-a", 1, 0, 3), (f"{prefix}-b", 0, 0, 2)]


def test_a_deleted_topic_is_data_loss_or_left_out(broker, request, caplog):
    topic = topic_name(request)
    create_topic(broker.bootstrap, topic, 1)
    fill(broker.bootstrap, topic, {0: 2})
    strict = stream_reader(broker.bootstrap, subscribe=topic, startingOffsets="earliest")
    start = strict.initialOffset()
    end = strict.latestOffset(start, ReadAllAvailable())
    delete_topic(broker.bootstrap, topic)
    with pytest.raises(DataLossError, match=f"{topic}-0 is gone .* had read it up to offset 0"):
        strict.latestOffset(start, ReadAllAvailable())
    with pytest.raises(DataLossError, match=f"{topic}-0 is gone .* offsets up to 2 cannot be read"):
        strict.partitions(start, end)
    lenient = stream_reader(broker.bootstrap, subscribe=topic, failOnDataLoss="false")
    caplog.set_level(logging.WARNING)
    assert lenient.latestOffset(end, ReadAllAvailable()) == {}
    assert lenient.partitions(start, end) == []
    assert "is gone" in caplog.text


def test_a_checkpoint_ahead_of_the_log_or_behind_its_start_is_data_loss(broker, request):
    topic = topic_name(request)
    create_topic(broker.bootstrap, topic, 1)
    fill(broker.bootstrap, topic, {0: 4})
    strict = stream_reader(broker.bootstrap, subscribe=topic)
    with pytest.raises(
        DataLossError, match=f"{topic}-0: the stream's checkpoint is at offset 9, but the partition ends at 4"
    ):
        strict.latestOffset({topic: {"0": 9}}, ReadAllAvailable())
    with client(broker.bootstrap) as c:
        c.delete_records({(topic, 0): 3})
    with pytest.raises(DataLossError, match=r"offsets \[1, 3\) are gone"):
        strict.latestOffset({topic: {"0": 1}}, ReadAllAvailable())
    lenient = stream_reader(broker.bootstrap, subscribe=topic, failOnDataLoss="false")
    assert ranges(lenient, {topic: {"0": 9}}, lenient.latestOffset({topic: {"0": 9}}, ReadAllAvailable())) == [
        (topic, 0, 3, 4)
    ]  # read again from what is left
    assert ranges(lenient, {topic: {"0": 1}}, {topic: {"0": 4}}) == [(topic, 0, 3, 4)]


def test_offsets_behind_latest_follow_from_a_progress_report():
    source = {"endOffset": '{"t": {"0": 10, "1": 4}}', "latestOffset": {"t": {"0": 16, "1": 4}, "u": {"0": 3}}}
    assert offsets_behind_latest(source) == {
        "minOffsetsBehindLatest": 0,
        "maxOffsetsBehindLatest": 6,
        "avgOffsetsBehindLatest": 2.0,
    }  # u-0 is new: not counted behind yet
    assert offsets_behind_latest({"endOffset": None, "latestOffset": None}) is None


def test_the_streams_offsets_are_committed_to_our_brokers_coordinator(broker, request, caplog):
    topic = topic_name(request)
    create_topic(broker.bootstrap, topic, 1)
    reader = stream_reader(broker.bootstrap, subscribe=topic, startingOffsets="earliest", commitOffsetsToGroup="g")
    caplog.set_level(logging.WARNING)
    start = reader.initialOffset()
    fill(broker.bootstrap, topic, {0: 2})
    end = reader.latestOffset(start, ReadAllAvailable())
    reader.commit(end)
    assert reader.latestOffset(end, ReadAllAvailable()) == end
    with KafkaClient(broker.bootstrap, timeout=10) as client:
        committed = GroupClient(client).committed("g", {topic: [0]})
    assert committed[(topic, 0)].offset == 2
    assert not [r for r in caplog.records if "could not commit" in r.message], caplog.text
