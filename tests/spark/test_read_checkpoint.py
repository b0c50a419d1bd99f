"""The two options of the kafkalog source for loads that checkpoint, through Spark, on a real broker.

* ``startingOffsetsFromCheckpoint``: each partition starts at the end of the last committed, not
  superseded run of a load checkpoint (written here with ``CheckpointStore``); pending and
  superseded runs do not count; partitions the checkpoint does not know start at
  ``startingOffsets`` (earliest, or latest); ending options still apply; it cannot be combined with
  the other starting options; an unreadable checkpoint fails the query naming the file.
* ``taskCheckpointLocation``: every task writes one JSON file when it has read its slice (node,
  topic, partition, start, until, records, key+value bytes, first and last timestamps, seconds),
  checked against the records produced; with ``maxRecordsPerPartition`` the slices of a partition
  tile its range.
"""

import json

import pytest
from pyspark.errors import AnalysisException

from spark_kafka_source.checkpoint import CheckpointStore, PartitionPlan, TaskCheckpoint, open_location
from spark_kafka_source.options import OptionError, parse

from .feed import assert_rows, create_topic, in_range, load, messages, produce, rows, without_headers

pytestmark = pytest.mark.timeout(120)

TOPIC = "ckpt-main"  # 3 partitions, offsets 0..9 each
MORE = "ckpt-more"  # 2 partitions, offsets 0..1 each: never in the checkpoints below
SIZE = 10


@pytest.fixture(scope="module")
def data(broker):
    create_topic(broker.bootstrap, TOPIC, 3)
    create_topic(broker.bootstrap, MORE, 2)
    recs = produce(broker.bootstrap, TOPIC, messages(3 * SIZE, partitions=(0, 1, 2), tag="ck"))
    recs += produce(broker.bootstrap, MORE, messages(4, partitions=(0, 1), tag="more"))
    return without_headers(recs)


def checkpoint(path, *runs) -> CheckpointStore:
    """A load checkpoint with ``runs``: (state, {partition of TOPIC: (start, end)}), numbered from 1;
    state is committed, pending, or superseded (committed, then superseded by a rewind)."""
    store = CheckpointStore(str(path))
    for number, (state, ranges) in enumerate(runs, start=1):
        store.write_plan(
            number,
            [PartitionPlan(TOPIC, p, s, e, 0, "127.0.0.1:1") for p, (s, e) in ranges.items()],
            {"output": "/tmp/out"},
        )
        if state in ("committed", "superseded"):
            store.commit(number, {})
        if state == "superseded":
            store.supersede(number, {"rewind": {"kind": "run", "value": number}})
    return store


def expected(data, starts: dict, topics=(TOPIC, MORE)) -> list:
    """The records from ``starts[(topic, partition)]`` (0 when absent) to the end of each partition."""
    return [r for r in data if r.topic in topics and r.offset >= starts.get((r.topic, r.partition), 0)]


def read(spark, broker, **options):
    return rows(load(spark, broker.bootstrap, **options))


# -- startingOffsetsFromCheckpoint -----------------------------------------------------------------


def test_each_partition_starts_where_the_committed_runs_ended(spark, broker, data, tmp_path):
    checkpoint(tmp_path / "ck", ("committed", {0: (0, 4), 1: (0, 6)}), ("committed", {0: (4, 7)}))
    got = read(spark, broker, subscribe=f"{TOPIC},{MORE}", startingOffsetsFromCheckpoint=str(tmp_path / "ck"))
    # 0 and 1 continue at the committed ends; 2 and the other topic are unknown to the checkpoint: earliest
    assert_rows(got, expected(data, {(TOPIC, 0): 7, (TOPIC, 1): 6}))


def test_pending_and_superseded_runs_are_ignored(spark, broker, data, tmp_path):
    store = checkpoint(
        tmp_path / "ck",
        ("committed", {0: (0, 3), 1: (0, 3), 2: (0, 3)}),
        ("superseded", {0: (3, 8), 1: (3, 8), 2: (3, 8)}),
        ("committed", {1: (3, 5)}),
        ("pending", {0: (3, 9), 1: (5, 9), 2: (3, 9)}),
    )
    assert store.pending_run().number == 4
    got = read(spark, broker, subscribe=TOPIC, startingOffsetsFromCheckpoint=store.uri)  # a file:// URI
    assert_rows(got, expected(data, {(TOPIC, 0): 3, (TOPIC, 1): 5, (TOPIC, 2): 3}, topics=(TOPIC,)))


def test_a_checkpoint_without_committed_runs_starts_everything_at_earliest(spark, broker, data, tmp_path):
    checkpoint(tmp_path / "ck", ("pending", {0: (0, 9), 1: (0, 9), 2: (0, 9)}))
    got = read(spark, broker, subscribe=TOPIC, startingOffsetsFromCheckpoint=str(tmp_path / "ck"))
    assert_rows(got, expected(data, {}, topics=(TOPIC,)))


def test_partitions_unknown_to_the_checkpoint_start_at_latest_with_startingOffsets_latest(
    spark, broker, data, tmp_path
):
    checkpoint(tmp_path / "ck", ("committed", {0: (0, 5)}))
    got = read(
        spark,
        broker,
        subscribe=f"{TOPIC},{MORE}",
        startingOffsetsFromCheckpoint=str(tmp_path / "ck"),
        startingOffsets="latest",
    )
    assert_rows(got, in_range(data, TOPIC, 0, 5, SIZE))


def test_ending_offsets_still_apply_after_a_checkpoint_start(spark, broker, data, tmp_path):
    checkpoint(tmp_path / "ck", ("committed", {0: (0, 7), 1: (0, 1)}))
    got = read(
        spark,
        broker,
        subscribe=TOPIC,
        startingOffsetsFromCheckpoint=str(tmp_path / "ck"),
        endingOffsets=json.dumps({TOPIC: {"0": 8, "1": -1, "2": 2}}),
    )
    assert_rows(
        got, in_range(data, TOPIC, 0, 7, 8) + in_range(data, TOPIC, 1, 1, SIZE) + in_range(data, TOPIC, 2, 0, 2)
    )


def test_a_committed_end_beyond_the_log_is_data_loss(spark, broker, data, tmp_path):
    """The topic was re-created since the checkpoint's runs (its offsets started over)."""
    checkpoint(tmp_path / "ck", ("committed", {0: (0, 50), 1: (0, 3), 2: (0, 3)}))
    options = dict(subscribe=TOPIC, startingOffsetsFromCheckpoint=str(tmp_path / "ck"))
    with pytest.raises(
        AnalysisException, match=f"{TOPIC}-0: the read starts at offset 50 but the partition ends at {SIZE}"
    ):
        read(spark, broker, **options)
    got = read(spark, broker, failOnDataLoss="false", **options)
    assert_rows(got, in_range(data, TOPIC, 1, 3, SIZE) + in_range(data, TOPIC, 2, 3, SIZE))


def base_options(**more) -> dict:
    return {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": TOPIC, **more}


@pytest.mark.parametrize(
    "other, value, problem",
    [
        ("startingTimestamp", "1700000000000", "cannot be combined with startingTimestamp"),
        (
            "startingOffsetsByTimestamp",
            json.dumps({TOPIC: {"0": 1700000000000}}),
            "cannot be combined with startingOffsetsByTimestamp",
        ),
        (
            "startingOffsets",
            json.dumps({TOPIC: {"0": 3, "1": 0, "2": 0}}),
            "with a checkpoint, startingOffsets may only say where partitions the checkpoint does not know start: "
            "earliest or latest",
        ),
        ("startingOffsets", "newest", "startingOffsets may only say"),
    ],
    ids=["timestamp", "by-timestamp", "offsets-json", "offsets-word"],
)
def test_other_starting_options_are_refused_naming_the_option(other, value, problem):
    with pytest.raises(OptionError) as raised:
        parse(base_options(startingOffsetsFromCheckpoint="/ck", **{other: value}))
    message = str(raised.value)
    assert message.startswith("option startingOffsetsFromCheckpoint: ") and problem in message, message
    assert 'for example .option("startingOffsetsFromCheckpoint", ' in message


def test_checkpoint_option_values(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    parsed = parse(base_options(STARTINGOFFSETSFROMCHECKPOINT=" loads/ck ", TaskCheckpointLocation="tasks/"))
    assert parsed.starting.kind == "checkpoint" and parsed.starting.otherwise == "earliest"
    assert parsed.starting.checkpoint == f"file://{tmp_path}/loads/ck"
    assert parsed.task_checkpoint_location == f"file://{tmp_path}/tasks"
    parsed = parse(
        base_options(
            startingOffsetsFromCheckpoint="hdfs://nn:8020/ck/",
            startingOffsets=" Latest ",
            endingTimestamp="1700000000000",
        )
    )
    assert (parsed.starting.checkpoint, parsed.starting.otherwise) == ("hdfs://nn:8020/ck", "latest")
    assert parsed.ending.kind == "timestamp"
    assert parse(base_options()).task_checkpoint_location is None
    for name in ("startingOffsetsFromCheckpoint", "taskCheckpointLocation"):
        with pytest.raises(OptionError, match=f"option {name}: the location is empty; for example"):
            parse(base_options(**{name: "  "}))


def test_a_refused_combination_surfaces_through_spark(spark, broker, data, tmp_path):
    with pytest.raises(AnalysisException) as raised:
        read(
            spark,
            broker,
            subscribe=TOPIC,
            startingOffsetsFromCheckpoint=str(tmp_path),
            startingTimestamp="1700000000000",
        )
    assert "option startingOffsetsFromCheckpoint: cannot be combined with startingTimestamp" in str(raised.value)


def _truncate_plan(store):
    path = f"{store.location.path}/runs/00000001/plan.json"
    data = open(path, "rb").read()
    open(path, "wb").write(data[:40])
    return "runs/00000001/plan.json is corrupt or truncated"


def _future_version(store):
    store.location.write_json("runs/00000002/commit.json", {"version": 2, "run": 2})
    return "runs/00000002/commit.json has format version 2; this version of kafkalog reads version 1"


def _lost_plan(store):
    store.location.delete("runs/00000001/plan.json")
    return "runs/00000001 has no plan.json, yet later runs exist"


def _plan_of_another_run(store):
    plan = store.location.read_json("runs/00000002/plan.json")
    store.location.write_json("runs/00000002/plan.json", {**plan, "run": 5})
    return "runs/00000002/plan.json belongs to run 5, not 2"


@pytest.mark.parametrize(
    "damage",
    [_truncate_plan, _future_version, _lost_plan, _plan_of_another_run],
    ids=["truncated-plan", "future-version", "lost-plan", "plan-of-another-run"],
)
def test_an_unreadable_checkpoint_fails_the_query_naming_the_file(spark, broker, data, tmp_path, damage):
    store = checkpoint(tmp_path / "ck", ("committed", {0: (0, 3)}), ("committed", {0: (3, 5)}))
    problem = damage(store)
    with pytest.raises(AnalysisException) as raised:
        read(spark, broker, subscribe=TOPIC, startingOffsetsFromCheckpoint=str(tmp_path / "ck"))
    message = str(raised.value)
    assert "PYTHON_DATA_SOURCE_ERROR" in message and f"{store.uri}/{problem}" in message, message[:1500]


# -- taskCheckpointLocation --------------------------------------------------------------------------


def task_files(uri: str) -> dict:
    """File name -> content of the task checkpoints under ``uri``."""
    location = open_location(uri)
    return {name: location.read_json(name) for name in location.names()}


def as_task(content: dict) -> TaskCheckpoint:
    return TaskCheckpoint(*(content[field] for field in TaskCheckpoint._fields))


def expected_task(data, node: str, topic: str, partition: int, start: int, until: int) -> TaskCheckpoint:
    """What a task reading ``[start, until)`` must report, from the records produced."""
    recs = in_range(data, topic, partition, start, until)
    return TaskCheckpoint(
        node,
        topic,
        partition,
        start,
        until,
        len(recs),
        sum(len(r.key or b"") + len(r.value or b"") for r in recs),
        recs[0].timestamp,
        recs[-1].timestamp,
        0.0,
    )


def check_tasks(data, broker, files: dict, slices: list) -> None:
    """``files`` hold exactly one checkpoint per (topic, partition, start, until) in ``slices``, with
    the counts, bytes and timestamps of the records produced there."""
    assert sorted(files) == sorted(f"{t}-{p}-{s}.json" for t, p, s, _ in slices)
    for topic, partition, start, until in slices:
        content = files[f"{topic}-{partition}-{start}.json"]
        assert content["version"] == 1 and content["written"].endswith("Z")
        task = as_task(content)
        assert isinstance(task.seconds, float) and 0 <= task.seconds < 60
        assert task._replace(seconds=0.0) == expected_task(data, broker.bootstrap, topic, partition, start, until)


def test_every_task_writes_what_it_read(spark, broker, data, tmp_path):
    tasks = tmp_path / "tasks"
    df = load(spark, broker.bootstrap, subscribe=f"{TOPIC},{MORE}", taskCheckpointLocation=str(tasks))
    assert_rows(rows(df), data)
    slices = [(TOPIC, p, 0, SIZE) for p in range(3)] + [(MORE, p, 0, 2) for p in range(2)]
    check_tasks(data, broker, task_files(str(tasks)), slices)
    # the records have null keys and empty values: the bytes are those of the keys and values present
    assert any(r.key is None for r in data) and any(r.value == b"" for r in data)
    df.count()  # a second action runs the tasks again: they rewrite their own files
    check_tasks(data, broker, task_files(str(tasks)), slices)


def test_tasks_of_a_checkpoint_start_and_empty_ranges(spark, broker, data, tmp_path):
    """Tasks start where the checkpoint ended; a partition read to its end gets no task, no file."""
    checkpoint(tmp_path / "ck", ("committed", {0: (0, SIZE), 1: (0, 8)}))
    tasks = CheckpointStore(str(tmp_path / "load")).tasks_uri(3)
    got = read(
        spark, broker, subscribe=TOPIC, startingOffsetsFromCheckpoint=str(tmp_path / "ck"), taskCheckpointLocation=tasks
    )
    assert_rows(got, in_range(data, TOPIC, 1, 8, SIZE) + in_range(data, TOPIC, 2, 0, SIZE))
    check_tasks(data, broker, task_files(tasks), [(TOPIC, 1, 8, SIZE), (TOPIC, 2, 0, SIZE)])
    assert [t._replace(seconds=0.0) for t in CheckpointStore(str(tmp_path / "load")).tasks(3)] == [
        expected_task(data, broker.bootstrap, TOPIC, 1, 8, SIZE),
        expected_task(data, broker.bootstrap, TOPIC, 2, 0, SIZE),
    ]


def test_slices_of_max_records_per_partition_tile_each_range(spark, broker, data, tmp_path):
    checkpoint(tmp_path / "ck", ("committed", {0: (0, 1), 1: (0, 4)}))
    tasks = tmp_path / "tasks"
    df = load(
        spark,
        broker.bootstrap,
        subscribe=TOPIC,
        startingOffsetsFromCheckpoint=str(tmp_path / "ck"),
        maxRecordsPerPartition="3",
        taskCheckpointLocation=f"file://{tasks}",
    )
    assert_rows(rows(df), expected(data, {(TOPIC, 0): 1, (TOPIC, 1): 4}, topics=(TOPIC,)))
    files = task_files(str(tasks))
    by_partition: dict = {}
    for content in files.values():
        by_partition.setdefault(content["partition"], []).append(as_task(content))
    starts = {0: 1, 1: 4, 2: 0}
    for partition, found in by_partition.items():
        found.sort(key=lambda t: t.start)
        size = SIZE - starts[partition]
        assert len(found) == -(-size // 3), found  # ceil(size / 3) slices
        assert found[0].start == starts[partition] and found[-1].until == SIZE
        assert all(a.until == b.start for a, b in zip(found, found[1:], strict=False)), found
    assert sorted(by_partition) == [0, 1, 2] and len(files) == df.rdd.getNumPartitions() == 3 + 2 + 4
    check_tasks(
        data, broker, files, [(TOPIC, t.partition, t.start, t.until) for found in by_partition.values() for t in found]
    )


def test_a_checkpoint_location_that_does_not_exist_is_refused_not_read_from_earliest(spark, broker, tmp_path):
    missing = tmp_path / "no-such-checkpoint"
    create_topic(broker.bootstrap, "ckpt-missing", 1)
    with pytest.raises(Exception, match="there is no checkpoint at file://.*no-such-checkpoint"):
        load(spark, broker.bootstrap, subscribe="ckpt-missing", startingOffsetsFromCheckpoint=str(missing)).count()
