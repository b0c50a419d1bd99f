"""Retention deletes records between two runs of ``kafkalog load``: with ``--fail-on-data-loss true``
(the default) the next run fails (exit 1, one line naming the partition and the offsets lost) and
commits nothing; with ``false`` it loads what is left, from the log start, and says so. Records
deleted with ``kafkalog delete-records`` (inside a batch, unlike retention) fail the run the same way.

The topic rolls a segment per batch (``segment.bytes`` 2000, batches of 5 records of ~1.2 KB) and
keeps ~3000 bytes (``retention.bytes``); the session broker checks retention every 200 ms.
"""

import subprocess
import sys
import time

import pytest

from tests.spark.feed import create_topic, log_start, messages, produce
from tests.waiting import wait_for

from .loads import (
    assert_exactly_once,
    assert_report,
    load_args,
    ok,
    printed_report,
    report_json,
    run_dir,
    run_load,
    tree,
)

pytestmark = pytest.mark.timeout(300)

RECORDS_PER_BATCH = 5


def batch(bootstrap: str, topic: str, tag: str) -> list:
    """One batch of 5 records (~1.2 KB: one segment each) to partition 0."""
    msgs = messages(RECORDS_PER_BATCH, partitions=(0,), tag=tag, value_size=200)
    return produce(bootstrap, topic, msgs, flush_every=RECORDS_PER_BATCH)


def log_start_past(bootstrap: str, topic: str, offset: int, tag: str) -> tuple[list, int]:
    """Produce batches to partition 0 until retention moves its log start past ``offset`` and the
    log start stays put for a second; the records produced and that log start."""
    produced = []
    for step in range(10):
        produced += batch(bootstrap, topic, f"{tag}{step}")
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and log_start(bootstrap, topic, 0) <= offset:
            time.sleep(0.1)
        if log_start(bootstrap, topic, 0) > offset:
            seen = []

            def settled(seen=seen):
                seen.append(log_start(bootstrap, topic, 0))
                return len(seen) >= 6 and len(set(seen[-6:])) == 1

            wait_for(settled, 20, interval=0.2, what="the log start settling")
            return produced, seen[-1]
    raise AssertionError(f"retention did not move the log start of {topic}-0 past {offset}")


def test_retention_between_runs_fails_the_run_or_loads_what_is_left(jobs_broker, spark, tmp_path):
    bootstrap, topic = jobs_broker.bootstrap, "retained"
    create_topic(bootstrap, topic, 2, {"segment.bytes": "2000", "retention.bytes": "3000"})
    output = tmp_path / "output"
    recs = batch(bootstrap, topic, "first") + batch(bootstrap, topic, "second")
    recs += produce(bootstrap, topic, messages(3, partitions=(1,), tag="intact"))
    assert log_start(bootstrap, topic, 0) == 0
    ok(run_load(load_args(bootstrap, topic, output), tmp_path))
    assert report_json(output, 1)["total"]["records"] == 13

    gone, start = log_start_past(bootstrap, topic, 10, "later")
    recs += gone
    recs += produce(bootstrap, topic, messages(2, partitions=(1,), tag="more"))
    before = tree(output)

    failed = run_load(load_args(bootstrap, topic, output), tmp_path)
    assert failed.code == 1, failed
    line = failed.one_error()
    assert (
        f"{topic}-0: the read starts at offset 10, but the earliest offset still available is {start}: "
        f"offsets [10, {start}) are gone" in line
    ), line
    assert line.endswith("Run it with --fail-on-data-loss false to go on with what is left instead of failing."), line
    assert tree(output) == before, "the failed run changed the output or the checkpoint"
    assert not run_dir(output, 2).exists()

    result = ok(run_load(load_args(bootstrap, topic, output, "--fail-on-data-loss", "false"), tmp_path))
    latest = max(r.offset for r in recs if r.partition == 0) + 1
    assert (
        f"{topic}-0: the read starts at offset 10, but the earliest offset still available is {start}: offsets "
        f"[10, {start}) are gone; failOnDataLoss=false, so the read skips it" in result.stderr
    )
    report = report_json(output, 2)  # partition 0 read from the log start: what is left
    assert_report(
        report, recs, {(topic, 0): (start, latest), (topic, 1): (3, 5)}, printed=printed_report(result.stdout)
    )
    assert {(p["partition"], p["lost"]) for p in report["partitions"]} == {(0, start - 10), (1, 0)}
    assert report["total"]["lost"] == start - 10
    # what is left, and nothing else: [0, 10) from run 1, [start, latest) from run 2
    assert_exactly_once(output, [r for r in recs if r.partition == 1 or r.offset < 10 or r.offset >= start])


def test_delete_records_between_runs_fails_the_next_run_exactly_as_retention(jobs_broker, spark, tmp_path):
    bootstrap, topic = jobs_broker.bootstrap, "deleted-records"
    create_topic(bootstrap, topic, 2)
    output = tmp_path / "output"
    batch(bootstrap, topic, "first")  # offsets 0-4
    produce(bootstrap, topic, messages(3, partitions=(1,), tag="intact"))
    ok(run_load(load_args(bootstrap, topic, output), tmp_path))
    batch(bootstrap, topic, "second")  # offsets 5-9: the next run starts at 5
    batch(bootstrap, topic, "third")
    deleted = subprocess.run(
        [
            sys.executable,
            "-m",
            "broker.cli",
            "delete-records",
            topic,
            "--before",
            "0:8",
            "--bootstrap-server",
            bootstrap,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert deleted.returncode == 0, deleted.stderr
    before = tree(output)

    failed = run_load(load_args(bootstrap, topic, output), tmp_path)
    assert failed.code == 1, failed
    line = failed.one_error()
    assert (
        f"{topic}-0: the read starts at offset 5, but the earliest offset still available is 8: "
        f"offsets [5, 8) are gone" in line
    ), line
    assert tree(output) == before, "the failed run changed the output or the checkpoint"
    # with --fail-on-data-loss false the run reads from the new log start: the same code path as
    # after retention (tested above); the Spark source's own test reads what DeleteRecords left
