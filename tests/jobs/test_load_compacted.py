"""A compacted topic (offset gaps) read by ``spark.read.format("kafkalog")`` and loaded by
``kafkalog load``: neither fails nor reports the removed offsets as data loss, and both give
exactly the records the broker holds, ranges starting and ending inside gaps included."""

import json
import random

import pytest

from broker.embedded import EmbeddedBroker
from tests.compaction import active_segment_base, create_compacted, read_partition, wait_until_cleaned
from tests.spark.feed import client, load, rows

from .loads import load_args, ok, output_rows, report_json, run_load

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def compacting_broker(tmp_path_factory):
    process = EmbeddedBroker(
        tmp_path_factory.mktemp("compacting") / "log", {"num.partitions": "1", "log.cleaner.backoff.ms": "50"}
    ).start()
    yield process
    process.kill()


def produce_keyed(broker, topic: str, rounds: int, keys: int = 300) -> None:
    """``rounds`` batches of 100 records with keys drawn from ``keys`` (so the latest records of
    the keys are scattered: gaps everywhere), then wait until the cleaner is done."""
    rng = random.Random(topic)
    with client(broker.bootstrap) as producer:
        for round_ in range(rounds):
            producer.produce(
                topic, 0, [(f"k{rng.randrange(keys)}".encode(), f"r{round_}-{i}".encode()) for i in range(100)]
            )
    wait_until_cleaned(broker.log_dir, topic, active_segment_base(broker.log_dir, topic))


def held(broker, topic: str) -> list:
    with client(broker.bootstrap) as reader:
        return read_partition(reader, topic)


def test_spark_reads_a_compacted_topic_across_its_gaps(spark, compacting_broker, tmp_path):
    topic = "compacted-read"
    create_compacted(compacting_broker.bootstrap, topic)
    produce_keyed(compacting_broker, topic, rounds=20)
    records = held(compacting_broker, topic)
    offsets = [offset for offset, _, _ in records]
    assert offsets[-1] == 1999 and len(offsets) < 1000  # gaps

    got = rows(load(spark, compacting_broker.bootstrap, subscribe=topic))
    assert [(r.offset, r.key, r.value) for r in got] == records

    gaps = sorted(set(range(offsets[0], offsets[-1])) - set(offsets))
    start, end = gaps[0], gaps[len(gaps) // 2]  # both inside gaps: missing offsets, not lost data
    ranged = rows(
        load(
            spark,
            compacting_broker.bootstrap,
            assign=json.dumps({topic: [0]}),
            startingOffsets=json.dumps({topic: {"0": start}}),
            endingOffsets=json.dumps({topic: {"0": end}}),
        )
    )
    assert [r.offset for r in ranged] == [o for o in offsets if start <= o < end]


def test_loads_of_a_compacted_topic_commit_what_the_broker_holds(spark, compacting_broker, tmp_path):
    topic = "compacted-load"
    create_compacted(compacting_broker.bootstrap, topic)
    output = tmp_path / "out"
    produce_keyed(compacting_broker, topic, rounds=10)
    first = held(compacting_broker, topic)
    ok(run_load(load_args(compacting_broker.bootstrap, topic, output), tmp_path))
    produce_keyed(compacting_broker, topic, rounds=10)
    second = [r for r in held(compacting_broker, topic) if r[0] >= 1000]
    ok(run_load(load_args(compacting_broker.bootstrap, topic, output), tmp_path))
    loaded = sorted((r.offset, r.key, r.value, r.run) for r in output_rows(output))
    assert loaded == sorted([(*r, 1) for r in first] + [(*r, 2) for r in second])
    assert report_json(output, 1)["total"]["records"] == len(first)
    assert report_json(output, 2)["total"]["records"] == len(second)
