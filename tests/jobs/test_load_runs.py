"""Scheduled runs of ``kafkalog load`` against a real broker: each run loads from where the last commit ended, writes
``run=N/topic=T/date=YYYY-MM-DD/hour=HH/`` once per offset, commits and reports; ``--history``;
corrupt checkpoint files; usage errors.

The runs themselves are the session fixture ``history`` (three runs, each after a batch of records
with known timestamps); the tests here check what they left, or carry on from a copy of it.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from broker.client import LATEST
from jobs.load import parser as load_parser
from jobs.load import settings_from, spark_session
from jobs.output import output_schema, read_output
from jobs.runner import load
from tests.spark.feed import client, create_topic, messages, produce

from .loads import (
    RUN_TIMEOUT,
    SPARK_CONF,
    assert_exactly_once,
    assert_report,
    load_args,
    output_rows,
    printed_report,
    report_json,
    run_dir,
    run_load,
    tree,
    utc_date_hour,
)

pytestmark = pytest.mark.timeout(300)


def test_runs_load_from_the_last_commit_write_each_offset_once_and_report(history, spark):
    topic, output = history.topic, history.output
    with client(history.bootstrap) as c:
        latest = {tp: o for tp, (o, _) in c.list_offsets({tp: LATEST for tp in history.ends[-1]}).items()}
    assert latest == history.ends[-1]

    # each run's report, printed and in report.json: from the last commit's end to the latest offset
    for number, result in enumerate(history.results, 1):
        report = report_json(output, number)
        assert report["run"] == number and report["executed_again"] is False and report["superseded"] == []
        assert report["output"] == output.as_uri()
        assert_report(report, history.recs, history.ranges(number), printed=printed_report(result.stdout))
        assert "tasks done" not in result.stderr  # --quiet: no progress line
        entries = sorted(p.name for p in run_dir(output, number).iterdir())
        assert [e for e in entries if e.endswith(".json")] == ["commit.json", "plan.json", "report.json"]
    assert history.ranges(1) == {(topic, 0): (0, 6), (topic, 1): (0, 6)}
    assert history.ranges(2) == {(topic, 0): (6, 11), (topic, 1): (6, 11)}
    assert not (output / "_checkpoint" / "lock.json").exists()

    # every offset once, in the directory of the run that planned it and of its UTC date and hour
    rows = assert_exactly_once(output, history.recs)
    for row in rows:
        run, topic_dir, date_dir, hour_dir, name = Path(row.file).relative_to(output).parts
        assert (run, topic_dir, date_dir) == (f"run={row.run}", f"topic={topic}", f"date={row.date}")
        assert re.fullmatch(r"hour=\d+", hour_dir) and int(hour_dir[5:]) == row.hour
        assert name.startswith("part-") and name.endswith(".parquet")
        assert (row.date, row.hour) == utc_date_hour(row.timestamp)
        start, until = history.ranges(row.run)[(topic, row.partition)]
        assert start <= row.offset < until, row
    assert {r.hour for r in rows if r.run == 1} == {3, 4}  # run 1's records straddle an hour
    assert not (output / "_superseded").exists()
    assert not [p for p in (output / "_staging").glob("*")]

    # --history
    shown = run_load(["--output", str(output), "--history"], history.output.parent)
    assert shown.code == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"runs in {output.as_uri()}/_checkpoint:" and lines[1].split()[0] == "run"
    assert [line.split()[:1] + line.split()[2:] for line in lines[2:]] == [
        [str(n), "2", str(len(b)), str(len(b)), "committed"] for n, b in enumerate(history.batches, 1)
    ]

    # a dry run (here with --topic-pattern) finds nothing new and changes nothing
    before = tree(output)
    dry = run_load(
        ["--bootstrap-servers", history.bootstrap, "--topic-pattern", "hist.*", "--output", str(output), "--dry-run"],
        output.parent,
    )
    assert dry.code == 0, dry
    assert [line.split()[:4] for line in dry.stdout.splitlines()] == [
        ["would", "run", "4,", "reading"],
        [f"{topic}-0", "[15,", "15)", "0"],
        [f"{topic}-1", "[15,", "15)", "0"],
    ]
    assert tree(output) == before

    # the same output read by Spark, as users read it
    df = read_output(spark, str(output))
    assert df.schema == output_schema()
    read = df.select(
        "topic", "partition", "offset", "run", "key", "value", F.unix_millis("timestamp").alias("ms"), "hour"
    ).collect()
    assert sorted(
        (
            r["topic"],
            r["partition"],
            r["offset"],
            r["run"],
            bytes(r["key"]) if r["key"] is not None else None,
            bytes(r["value"]),
            r["ms"],
            r["hour"],
        )
        for r in read
    ) == sorted((r.topic, r.partition, r.offset, r.run, r.key, r.value, r.timestamp, r.hour) for r in rows)


def test_hour_directories_have_two_digits(history):
    hours = sorted({Path(r.file).parent.name for r in output_rows(history.output)})
    assert "hour=03" in hours and all(re.fullmatch(r"hour=\d\d", h) for h in hours), hours


def test_a_corrupt_or_truncated_checkpoint_file_fails_naming_it(history, tmp_path):
    """Never a silent restart from zero: the run stops with one line naming the file, exit 1, and
    changes nothing."""
    truncated = history.copy(tmp_path / "truncated")
    plan = run_dir(truncated, 2) / "plan.json"
    plan.write_bytes(plan.read_bytes()[: len(plan.read_bytes()) // 2])
    garbage = history.copy(tmp_path / "garbage")
    commit = run_dir(garbage, 3) / "commit.json"
    commit.write_bytes(b"\x00\xffnot json at all\x13")
    before = {o: tree(o) for o in (truncated, garbage)}

    results = [run_load(load_args(history.bootstrap, history.topic, o), tmp_path) for o in (truncated, garbage)]
    for result, output, broken in zip(results, (truncated, garbage), (plan, commit), strict=True):
        assert result.code == 1, result
        line = result.one_error()
        assert broken.as_uri() in line and "corrupt or truncated" in line, line
        assert tree(output) == before[output], "a failed run changed the output or the checkpoint"

    # the same for --dry-run (no Spark involved), and for other shapes of damage; --history shows
    # the other runs, marks the damaged one and names the file and the repair
    shapes = [
        (plan, b"", "corrupt or truncated"),
        (plan, b'{"version": 1}', "is corrupt (bad or missing field"),
        (plan, b"[1, 2]", "a JSON object was expected"),
        (commit, b"\x00\xff", "corrupt or truncated"),
    ]
    for broken, content, problem in shapes:
        broken.write_bytes(content)
        output = broken.parents[3]
        common = ["--bootstrap-servers", history.bootstrap, "--output", str(output)]
        result = run_load(common + ["--topics", history.topic, "--dry-run"], tmp_path)
        assert result.code == 1, (content, result)
        line = result.one_error()
        assert broken.as_uri() in line and problem in line and "--repair" in line, line
        shown = run_load(common + ["--history"], tmp_path)
        assert shown.code == 0, shown
        damaged = int(broken.parent.name)
        statuses = {int(row.split()[0]): row.split(None, 5)[-1] for row in shown.stdout.splitlines()[2:5]}
        assert statuses == {
            n: "damaged (see the problems below)" if n == damaged else "committed" for n in (1, 2, 3)
        }, shown.stdout
        assert broken.as_uri() in shown.stdout and problem in shown.stdout and "--repair" in shown.stdout, shown.stdout
        if broken == plan:
            plan.write_bytes(before[truncated]["_checkpoint/runs/00000002/plan.json"])


def test_usage_errors_exit_2(history, tmp_path):
    output = history.copy(tmp_path / "output")
    before = tree(output)
    common = ["--bootstrap-servers", history.bootstrap]
    cases = [
        (["--topics", history.topic], "the following arguments are required: --output"),
        (["--output", str(output)], "name the topics to load"),
        (["--output", str(output), "--topics", " , "], "name the topics to load"),
        (
            ["--output", str(output), "--topics", history.topic, "--rewind-to-offsets", "{not json"],
            "--rewind-to-offsets",
        ),
        (
            ["--output", str(output), "--topics", history.topic, "--rewind-to-offsets", '{"history": {"0": -1}}'],
            "offsets are integers >= 0",
        ),
        (
            ["--output", str(output), "--topics", history.topic, "--rewind-to-offsets", '{"history": 5}'],
            '{"events":{"0":1500}}',
        ),
        (["--output", str(output), "--topics", history.topic, "--rewind-to-offsets", "{}"], "--rewind-to-offsets"),
        (
            ["--output", str(output), "--topics", history.topic, "--rewind-to-time", "yesterday"],
            "argument --rewind-to-time: 'yesterday' is neither ISO-8601 nor epoch milliseconds",
        ),
        (
            ["--output", str(output), "--topics", history.topic, "--rewind-to-run", "0"],
            "argument --rewind-to-run: '0' is not a whole number >= 1",
        ),
        (
            ["--output", str(output), "--topics", history.topic, "--rewind-to-run", "1", "--rewind-to-time", "1"],
            "not allowed with argument",
        ),
        (
            ["--output", str(output), "--topics", history.topic, "--option", "novalue", "--dry-run"],
            "argument --option: 'novalue' is not KEY=VALUE",
        ),
        (
            ["--output", str(output), "--topics", history.topic, "--group-id", "", "--dry-run"],
            "argument --group-id: a consumer group id cannot be empty",
        ),
        (
            ["--output", str(output), "--topics", history.topic, "--group-id", "g", "--no-group-commit"],
            "argument --no-group-commit: not allowed with argument --group-id",
        ),
        (
            ["--output", str(output), "--topic-pattern", "(", "--dry-run"],
            "argument --topic-pattern: '(' is not a regular expression (missing ), unterminated subpattern",
        ),
        (["--output", str(output), "--history", "--repair"], "argument --repair: not allowed with argument --history"),
        (
            ["--output", str(output), "--dry-run", "--history"],
            "argument --history: not allowed with argument --dry-run",
        ),
        (
            ["--output", str(output), "--rewind-to-run", "1", "--repair"],
            "--repair cannot be combined with a rewind: it repairs the checkpoint and stops (--dry-run shows what the "
            "rewind would do)",
        ),
        (
            ["--output", str(output), "--topics", history.topic, "--rewind-to-run", "7", "--dry-run"],
            "--rewind-to-run 7: no such committed run in the history (committed runs not superseded: 1, 2, 3)",
        ),
    ]
    for args, message in cases:
        result = run_load(common + args, tmp_path)
        assert result.code == 2 and message in result.stderr, (args, result)
        assert "Traceback" not in result.stderr, result.stderr
    assert tree(output) == before

    empty = run_load(["--output", str(tmp_path / "nothing"), "--history"], tmp_path)
    assert empty.code == 0 and empty.stdout.startswith("no runs in "), empty
    nothing = run_load(["--output", str(tmp_path / "nothing"), "--repair"], tmp_path)
    assert nothing.code == 0 and nothing.stdout.startswith("nothing to repair: there is no checkpoint"), nothing
    assert not (tmp_path / "nothing").exists()
    agreeing = run_load(["--output", str(output), "--repair"], tmp_path)
    assert agreeing.code == 0 and agreeing.stdout.startswith("nothing to repair: "), agreeing
    assert tree(output) == before


def test_a_pattern_matching_no_topic_is_a_usage_error_unless_allowed_and_an_empty_run_needs_no_spark(history, tmp_path):
    """A typo in a scheduled pattern used to commit empty runs for ever (exit 0)."""
    output = tmp_path / "output"
    args = ["--bootstrap-servers", history.bootstrap, "--topic-pattern", "nothing-.*", "--output", str(output)]
    for extra in ([], ["--dry-run"]):
        result = run_load(args + extra, tmp_path)
        assert result.code == 2, result
        line = result.one_error()
        assert (
            f"--topic-pattern 'nothing-.*' matches no topic on {history.bootstrap}" in line
            and "--allow-empty" in line
            and "history" in line
        ), line
    assert not list(output.rglob("*.json")) and not list(output.glob("run=*"))

    def no_spark():
        raise AssertionError("a run with nothing to read started Spark")

    settings = settings_from(load_parser().parse_args(args + ["--allow-empty", "--quiet"]))
    report = load(no_spark, settings, say=lambda line: None)
    assert report["run"] == 1 and report["total"] == {
        "partitions": 0,
        "records": 0,
        "bytes": 0,
        "lag": 0,
        "offsets": 0,
        "lost": 0,
    }
    assert sorted(p.name for p in (output / "run=1").iterdir()) == ["_SUCCESS"]

    # a run of a topic with no new record: committed without Spark, read back as an empty run
    copied = history.copy(tmp_path / "copied")
    report = load(
        no_spark,
        settings_from(load_parser().parse_args(load_args(history.bootstrap, history.topic, copied))),
        say=lambda line: None,
    )
    assert report["run"] == 4 and report["total"]["records"] == 0 and report["total"]["offsets"] == 0
    assert_exactly_once(copied, history.recs)


def test_a_venvs_python_run_without_activating_it_gives_spark_workers_that_python(jobs_broker, tmp_path):
    """Spark's workers would run ``python3`` from PATH: here one without the package (the data
    source could not even be found). ``kafkalog load`` gives them the Python it runs in."""
    elsewhere = tmp_path / "bin"
    elsewhere.mkdir()
    system_python = shutil.which("python3", path="/usr/bin:/bin")
    if (
        system_python is None
        or subprocess.run([system_python, "-c", "import pyspark"], capture_output=True).returncode == 0
    ):
        pytest.skip("no python3 without pyspark to put first on PATH")
    (elsewhere / "python3").symlink_to(system_python)
    create_topic(jobs_broker.bootstrap, "worker-python", 1)
    recs = produce(jobs_broker.bootstrap, "worker-python", messages(5, tag="w"))
    output = tmp_path / "output"
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "VIRTUAL_ENV")}
    env["PATH"] = f"{elsewhere}{os.pathsep}{env.get('PATH', '')}"
    command = [
        str(Path(sys.executable).with_name("kafkalog")),
        "load",
        *load_args(jobs_broker.bootstrap, "worker-python", output),
        *SPARK_CONF,
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert_exactly_once(output, recs)


def test_the_workers_python_of_a_conf_setting_wins(spark, monkeypatch):
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)  # restored afterwards: the test session's workers use it
    spark_session("local[1]", [("spark.pyspark.python", "/opt/kafkalog/venv/bin/python")])
    assert os.environ["PYSPARK_PYTHON"] == "/opt/kafkalog/venv/bin/python"  # what Spark's JVM reads when it starts
