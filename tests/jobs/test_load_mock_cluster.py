"""The load job against another Kafka implementation: librdkafka's three-broker mock cluster.

Partitions are led by different brokers, so the plan must name each partition's own leader and
every task must fetch from it; two runs with records produced in between must load every offset
exactly once. The mock lives inside this process, so the runs use ``jobs.runner.load`` with the
shared SparkSession instead of a ``kafkalog load`` subprocess.
"""

import pyarrow.dataset as ds
import pytest

from jobs.runner import LoadSettings, load
from spark_kafka_source.checkpoint import CheckpointStore
from tests.spark.feed import messages, produce, topic_led_by_several_brokers

pytestmark = pytest.mark.timeout(180)


def loaded_offsets(output) -> list:
    table = ds.dataset(str(output), format="parquet", partitioning="hive").to_table(columns=["partition", "offset"])
    return sorted(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist(), strict=True))


def test_two_runs_fetch_each_partition_from_its_own_leader_and_load_each_offset_once(spark, mock, tmp_path):
    bootstrap, _ = mock
    topic, led_by = topic_led_by_several_brokers(bootstrap, "mock-load")
    first = produce(bootstrap, topic, messages(24, partitions=(0, 1, 2, 3), tag="first"))
    settings = LoadSettings(
        bootstrap_servers=bootstrap,
        topics=[topic],
        output=str(tmp_path / "out"),
        checkpoint=str(tmp_path / "ckpt"),
        progress=False,
    )
    assert load(spark, settings, say=lambda line: None)["total"]["records"] == 24
    second = produce(bootstrap, topic, messages(12, partitions=(0, 1, 2, 3), tag="second"))
    report = load(spark, settings, say=lambda line: None)
    assert report["total"]["records"] == 12 and report["total"]["lag"] == 0

    store = CheckpointStore(settings.checkpoint)
    for run in store.runs():
        assert {p.partition: p.leader_id for p in run.plan} == led_by
        nodes = {t.partition: t.node for t in store.tasks(run.number)}
        assert {p.partition: p.leader for p in run.plan if p.end > p.start} == nodes
    assert loaded_offsets(tmp_path / "out") == sorted((r.partition, r.offset) for r in first + second)
