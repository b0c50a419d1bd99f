"""The load's consumer-group commits: against librdkafka's mock cluster (a real group coordinator)
each committed run's end offsets land in the output's default group, or in ``group_id``, and
``kafkalog groups describe`` shows the lag of the load; a rewind commits the ends it reloaded to,
never the rewind point; ``group_commit=False`` commits nothing; a group with an active member
refuses the commit: one warning, and the run still commits. Against this project's broker (its
own group coordinator) each run's ends land in the group too, and ``--no-group-commit`` turns that off.
"""

import json
import logging
import subprocess
import sys

import confluent_kafka
import pytest

from broker.client import GroupClient, KafkaClient
from jobs.group_commit import default_group_id
from jobs.output import Output
from jobs.planner import Rewind
from jobs.runner import LoadSettings, load
from spark_kafka_source.checkpoint import CheckpointStore
from tests.spark.feed import create_topic, messages, produce
from tests.waiting import wait_for

from .loads import load_args, ok, run_load

pytestmark = pytest.mark.timeout(180)


def committed(bootstrap: str, group: str, topic: str, partitions=range(4)) -> dict:
    with KafkaClient(bootstrap, timeout=10) as client:
        found = GroupClient(client).committed(group, {topic: list(partitions)})
    return {p: c.offset for (_, p), c in found.items()}


def metadata(bootstrap: str, group: str, topic: str) -> set:
    with KafkaClient(bootstrap, timeout=10) as client:
        return {c.metadata for c in GroupClient(client).committed(group, {topic: [0, 1, 2, 3]}).values()}


def ends(recs) -> dict:
    found = {}
    for rec in recs:
        found[rec.partition] = max(found.get(rec.partition, 0), rec.offset + 1)
    return found


def test_each_run_commits_its_end_offsets_and_describe_shows_the_load_lag(spark, mock, tmp_path, caplog):
    bootstrap, _ = mock
    topic = f"group-commit-{tmp_path.name}"
    first = produce(bootstrap, topic, messages(12, partitions=(0, 1, 2, 3), tag="first"))
    settings = LoadSettings(
        bootstrap_servers=bootstrap,
        topics=[topic],
        output=str(tmp_path / "out"),
        checkpoint=str(tmp_path / "out" / "_checkpoint"),
        progress=False,
    )
    group = default_group_id(Output(settings.output).uri)
    assert group == f"kafkalog-load:{(tmp_path / 'out').as_uri()}"

    load(spark, settings, say=lambda line: None)
    assert committed(bootstrap, group, topic) == ends(first)
    assert metadata(bootstrap, group, topic) == {"kafkalog load run 1"}

    second = produce(bootstrap, topic, messages(8, partitions=(0, 1, 2, 3), tag="second"))
    shown = subprocess.run(
        [
            sys.executable,
            "-m",
            "broker.cli",
            "groups",
            "describe",
            group,
            "--format",
            "json",
            "--bootstrap-server",
            bootstrap,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    rows = json.loads(shown.stdout)["partitions"]
    assert {r["partition"]: r["lag"] for r in rows} == {p: 2 for p in range(4)}  # 8 new records, 2 per partition
    assert sum(r["lag"] for r in rows) == len(second)

    load(spark, settings, say=lambda line: None)
    assert committed(bootstrap, group, topic) == ends(first + second)

    # a rewind reloads from run 2's start: the group still says the output is complete up to the end
    report = load(spark, LoadSettings(**{**vars(settings), "rewind": Rewind("run", 2)}), say=lambda line: None)
    assert report["superseded"] == [2] and report["total"]["records"] == len(second)
    assert committed(bootstrap, group, topic) == ends(first + second)
    assert metadata(bootstrap, group, topic) == {"kafkalog load run 3"}

    # runs with nothing new to read (no Spark job) still commit their ends, to the group named
    nightly = f"nightly-{topic}"
    load(spark, LoadSettings(**{**vars(settings), "group_id": nightly}), say=lambda line: None)
    assert committed(bootstrap, nightly, topic) == ends(first + second)
    assert metadata(bootstrap, group, topic) == {"kafkalog load run 3"}  # the default group: untouched
    never = f"never-{topic}"
    load(spark, LoadSettings(**{**vars(settings), "group_id": never, "group_commit": False}), say=lambda line: None)
    assert committed(bootstrap, never, topic) == {}

    # a group with an active member refuses outside commits: one warning, and the run still commits
    busy = f"busy-{topic}"
    member = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": busy, "log_level": 3})
    try:
        member.subscribe([topic])
        wait_for(lambda: member.poll(0.1) is None and member.assignment(), 30, interval=0, what="the member's join")
        caplog.clear()
        report = load(spark, LoadSettings(**{**vars(settings), "group_id": busy}), say=lambda line: None)
    finally:
        member.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].startswith(
        f"kafkalog load warning: run {report['run']}'s end offsets not committed to consumer group {busy!r}"
    ), warnings
    assert CheckpointStore(settings.checkpoint).runs()[-1].number == report["run"] and report["total"]["lag"] == 0


def test_against_this_broker_each_run_commits_its_ends_to_the_group(jobs_broker, spark, tmp_path):
    topic = "group-commit-here"
    create_topic(jobs_broker.bootstrap, topic, 2)
    produce(jobs_broker.bootstrap, topic, messages(6, partitions=(0, 1), tag="x"))
    output = tmp_path / "output"
    result = ok(run_load(load_args(jobs_broker.bootstrap, topic, output), tmp_path))
    assert "consumer group" not in result.stderr and result.stdout.startswith("run 1: 6 records, "), result
    group = f"kafkalog-load:{output.as_uri()}"
    assert committed(jobs_broker.bootstrap, group, topic, partitions=(0, 1)) == {0: 3, 1: 3}

    produce(jobs_broker.bootstrap, topic, messages(2, partitions=(0, 1), tag="y"))
    result = ok(run_load(load_args(jobs_broker.bootstrap, topic, output, "--no-group-commit"), tmp_path))
    assert result.stdout.startswith("run 2: 2 records, "), result.stdout
    assert committed(jobs_broker.bootstrap, group, topic, partitions=(0, 1)) == {0: 3, 1: 3}  # left alone
