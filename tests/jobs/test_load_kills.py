"""Exactly once through kills: a load SIGKILLed (with its Spark JVM, once it has one) at every step of a run, and at a
random moment of its Spark write, then run again, leaves every offset in the output exactly once;
a run holding the lock makes a concurrent run fail with exit status 3, and a killed run's stale
lock is taken over.

The runner's test hook ``KAFKALOG_LOAD_PAUSE_AT=planned|written|published|committed`` makes it
print ``paused at <step>`` and sleep there, so the SIGKILL lands exactly at that step.
"""

import json
import random
import time
from pathlib import Path

import pytest

import jobs.load
from broker.client import LATEST
from jobs.load import spark_settings
from tests.spark.feed import client, create_topic, messages, produce
from tests.waiting import wait_for

from .loads import (
    LoadProcess,
    assert_exactly_once,
    assert_report,
    load_args,
    ok,
    printed_report,
    report_json,
    run_dir,
    run_load,
)

pytestmark = pytest.mark.timeout(400)


def ends(recs) -> dict:
    found = {}
    for r in recs:
        found[(r.topic, r.partition)] = max(found.get((r.topic, r.partition), 0), r.offset + 1)
    return found


def paused_and_killed(args, tmp_path, step: str) -> LoadProcess:
    process = LoadProcess(args, tmp_path, pause_at=step)
    try:
        process.wait_for_stdout(f"paused at {step}")
    finally:
        process.kill()
    return process


def test_killed_at_every_step_and_during_the_write_each_offset_is_loaded_once(jobs_broker, spark, tmp_path):
    bootstrap, topic = jobs_broker.bootstrap, "kills"
    create_topic(bootstrap, topic, 2)
    output = tmp_path / "output"
    args = load_args(bootstrap, topic, output)
    checkpoint = output / "_checkpoint"
    run1 = run_dir(output, 1)
    recs = produce(bootstrap, topic, messages(20, partitions=(0, 1), tag="a"))

    # run 1 paused after planning, holding the lock: a concurrent run fails with exit status 3
    first = LoadProcess(args, tmp_path, pause_at="planned")
    try:
        first.wait_for_stdout("paused at planned")
        concurrent = run_load(args, tmp_path)
        assert concurrent.code == 3, concurrent
        line = concurrent.one_error()
        assert f"another run holds the lock of {checkpoint.as_uri()}: pid {first.process.pid}" in line, line
        shown = run_load(["--output", str(output), "--history"], tmp_path)
        assert shown.code == 0 and shown.stdout.splitlines()[-1].split()[-1] == "pending", shown
        dry = run_load(args + ["--dry-run"], tmp_path)
        assert dry.code == 0 and "would execute again the plan of pending run 1, reading 20 offsets" in dry.stdout, dry
    finally:
        first.kill()
    assert json.loads((checkpoint / "lock.json").read_text())["pid"] == first.process.pid  # stale now
    assert (run1 / "plan.json").exists() and not (run1 / "commit.json").exists()
    assert not (output / "run=1").exists()

    # records produced now are not in run 1's plan: the run executed again reads exactly its plan
    recs += produce(bootstrap, topic, messages(10, partitions=(0, 1), tag="b"))

    # killed after the Spark write, before publishing: the staging output is complete
    again = paused_and_killed(args, tmp_path, "written")
    assert "run 1 was planned but not committed: executing its plan again" in again.stdout()
    assert (output / "_staging" / "run=1" / "_SUCCESS").exists() and not (output / "run=1").exists()

    # killed after publishing, before the commit: run 1's output is there once, not committed
    paused_and_killed(args, tmp_path, "published")
    assert not (output / "_staging" / "run=1").exists() and not (run1 / "commit.json").exists()
    assert_exactly_once(output, recs[:20])

    # killed right after the commit: the report (written before) shows the lag of the records of "b"
    paused_and_killed(args, tmp_path, "committed")
    assert (run1 / "commit.json").exists()
    report = report_json(output, 1)
    assert report["executed_again"] is True
    ranges1 = {(topic, 0): (0, 10), (topic, 1): (0, 10)}
    assert_report(report, recs, ranges1, latest=ends(recs))
    assert report["total"]["lag"] == 10
    assert_exactly_once(output, recs[:20])

    # run 2 (with many tasks, so its write takes a while) killed at a random moment of its Spark write
    recs += produce(bootstrap, topic, messages(1200, partitions=(0, 1), tag="c", headers=False, value_size=100))
    split = ["--max-records-per-partition", "40"]
    writing = LoadProcess(args + split, tmp_path)
    try:
        wait_for(
            lambda: (output / "_staging" / "run=2").exists() or writing.process.poll() is not None,
            150,
            interval=0.01,
            what="run 2 starting its write",
        )
        assert writing.process.poll() is None, writing.wait()
        time.sleep(random.uniform(0.0, 0.3))  # a random moment of the write
    finally:
        writing.kill()
    assert (output / "_staging" / "run=2").exists()
    assert not (output / "_staging" / "run=2" / "_SUCCESS").exists(), "the kill landed after the write"
    assert not (output / "run=2").exists() and not (run_dir(output, 2) / "commit.json").exists()

    # run 2 again, to the end, as the scheduler runs it (a process of its own), with its progress line
    result = ok(run_load(load_args(bootstrap, topic, output, quiet=False) + split, tmp_path, process=True))
    assert "run 2 was planned but not committed: executing its plan again" in result.stdout
    printed = printed_report(result.stdout)
    assert printed["head"].startswith("run 2 (executed again): ")
    ranges2 = {(topic, 0): (10, 615), (topic, 1): (10, 615)}
    assert_report(report_json(output, 2), recs, ranges2, printed=printed)
    assert "run 2: " in result.stderr and " tasks done, " in result.stderr
    assert not (checkpoint / "lock.json").exists()

    rows = assert_exactly_once(output, recs)
    with client(bootstrap) as c:
        latest = {tp: o for tp, (o, _) in c.list_offsets({tp: LATEST for tp in ranges2}).items()}
    assert latest == ends(recs) == {tp: until for tp, (_, until) in ranges2.items()}
    assert {r.run for r in rows if r.offset < 10} == {1} and {r.run for r in rows if r.offset >= 10} == {2}


def _writing_run_1(args: list[str], output, tmp_path) -> LoadProcess:
    """A load started with ``args``, once run 1 starts writing into ``output`` (or the load ended)."""
    loading = LoadProcess(args, tmp_path)
    wait_for(
        lambda: (output / "_staging" / "run=1").exists() or loading.process.poll() is not None,
        150,
        interval=0.01,
        what="run 1 starting its write",
    )
    return loading


def test_ctrl_c_during_the_spark_write_says_so_in_one_line_and_the_next_load_executes_the_plan_once(
    jobs_broker, tmp_path
):
    bootstrap, topic = jobs_broker.bootstrap, "interrupted"
    create_topic(bootstrap, topic, 2)
    recs = produce(bootstrap, topic, messages(1200, partitions=(0, 1), tag="i", headers=False, value_size=100))
    output = tmp_path / "output"
    args = load_args(bootstrap, topic, output, "--max-records-per-partition", "20")
    writing = _writing_run_1(args, output, tmp_path)
    writing.interrupt()
    interrupted = writing.wait()
    assert interrupted.code == 130, interrupted
    assert interrupted.errors() == [
        "kafkalog load: interrupted: run 1 was not committed; the next load executes its plan again"
    ], interrupted.stderr
    assert "Traceback" not in interrupted.stderr and len(interrupted.stderr.splitlines()) <= 3, interrupted.stderr
    assert not (output / "run=1").exists() and not (output / "_checkpoint" / "lock.json").exists()

    again = ok(run_load(args, tmp_path, process=True))
    assert "run 1 was planned but not committed: executing its plan again" in again.stdout
    assert_exactly_once(output, recs)


def test_a_broker_killed_mid_load_fails_the_run_with_one_line_and_no_spark_logs(start_broker, spark, tmp_path):
    """Spark logs a failed task's stack at ERROR, several times (~500 lines before the job's own
    error): the load keeps Spark's and Py4J's logs off unless --verbose, also when --conf passes
    other driver Java options (as SPARK_CONF does here)."""
    broker = start_broker({"num.partitions": "2"})
    topic = "broker-killed"
    create_topic(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, topic, messages(1200, partitions=(0, 1), tag="k", headers=False, value_size=100))
    output = tmp_path / "output"
    args = load_args(broker.bootstrap, topic, output, "--max-records-per-partition", "20", "--master", "local[1]")
    loading = _writing_run_1(args, output, tmp_path)
    broker.kill()
    result = loading.wait()
    assert result.code == 1, result
    assert not (output / "_staging" / "run=1" / "_SUCCESS").exists(), "the kill landed after the write"
    line = result.one_error()
    assert broker.bootstrap in line, line
    others = [x for x in result.stderr.splitlines() if not x.startswith(("kafkalog load:", "WARNING: Using incubator"))]
    assert not others, "\n".join(others[:40])
    assert not (output / "run=1").exists() and not (run_dir(output, 1) / "commit.json").exists()


def test_the_quiet_log_settings_come_first_and_verbose_leaves_spark_its_own():
    quiet = f"-Dlog4j2.configurationFile={Path(jobs.load.__file__).with_name('log4j2.properties')}"
    assert spark_settings([], False) == {"spark.driver.extraJavaOptions": quiet}
    assert spark_settings(
        [("spark.driver.extraJavaOptions", "-XX:+UseSerialGC"), ("spark.ui.enabled", "false")], False
    ) == {"spark.driver.extraJavaOptions": f"{quiet} -XX:+UseSerialGC", "spark.ui.enabled": "false"}
    assert spark_settings([("spark.driver.extraJavaOptions", "-XX:+UseSerialGC")], True) == {
        "spark.driver.extraJavaOptions": "-XX:+UseSerialGC"
    }
