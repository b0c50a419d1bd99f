"""``checkpoint.store``: the layout of numbered runs, their states, where the next run starts,
run numbering after a killed run, format versions, corrupt files, task checkpoints, retention.
Every test runs with both implementations of the checkpoint's Location (``open_dir``)."""

import json
import os

import pytest

from spark_kafka_source.checkpoint import (
    CheckpointError,
    CheckpointStore,
    PartitionPlan,
    TaskCheckpoint,
    write_task_checkpoint,
)
from spark_kafka_source.checkpoint.store import FORMAT_VERSION

pytestmark = pytest.mark.timeout(30)

LEADER = (0, "127.0.0.1:9092")


def part(topic: str, partition: int, start: int, end: int) -> PartitionPlan:
    return PartitionPlan(topic, partition, start, end, *LEADER)


def plan(ranges: dict) -> list[PartitionPlan]:
    """``{("t", 0): (0, 10)}`` -> the PartitionPlans."""
    return [part(t, p, s, e) for (t, p), (s, e) in ranges.items()]


@pytest.fixture
def store(tmp_path, open_dir) -> CheckpointStore:
    return CheckpointStore(open_dir(str(tmp_path / "ck")))


def add_run(store: CheckpointStore, number: int, ranges: dict, state: str = "committed"):
    """Write a run: ``state`` is pending, committed, superseded (committed, then superseded) or
    superseded-pending."""
    store.write_plan(number, plan(ranges), {"output": f"run={number}"})
    if state in ("committed", "superseded"):
        store.commit(number, {"output": f"run={number}"})
    if state.startswith("superseded"):
        store.supersede(number, {"rewind": {"kind": "run", "value": 1}})


def run_dir(store: CheckpointStore, number: int):
    return store.location.path + "/" + store.run_name(number)


def rewrite(store: CheckpointStore, name: str, change) -> None:
    """Load a checkpoint file as JSON, let ``change`` edit it, write it back as is."""
    path = f"{store.location.path}/{name}"
    with open(path) as f:
        value = json.load(f)
    change(value)
    with open(path, "w") as f:
        json.dump(value, f)


# -- runs and their states ------------------------------------------------------------------------


def test_an_empty_or_missing_checkpoint_has_no_runs(store):
    assert store.runs() == [] and store.effective_runs() == [] and store.pending_run() is None
    assert store.committed_ends() == {} and store.next_run_number() == 1
    assert store.uri.startswith("file://") and store.uri.endswith("/ck")


def test_a_run_round_trips_with_its_plan_details_and_markers(store):
    ranges = {("events", 0): (0, 10), ("events", 1): (5, 5), ("clicks", 3): (7, 100)}
    written = store.write_plan(1, plan(ranges), {"output": "/data/x", "format": "parquet"})
    [read] = store.runs()
    assert read.number == 1 and read.plan == plan(ranges) and read.details == {"output": "/data/x", "format": "parquet"}
    assert read.created == written.created and read.created.endswith("Z")
    assert read.pending and not read.committed and read.commit is None and read.superseded is None
    assert read.ranges() == {key: part(*key, *se) for key, se in ranges.items()}
    plan_file = json.loads(open(run_dir(store, 1) + "/plan.json").read())
    assert plan_file["version"] == FORMAT_VERSION and plan_file["run"] == 1
    assert plan_file["partitions"][0] == {
        "topic": "events",
        "partition": 0,
        "start": 0,
        "end": 10,
        "leader_id": 0,
        "leader": "127.0.0.1:9092",
    }
    store.commit(1, {"records": 98})
    [read] = store.runs()
    assert read.committed and not read.pending and read.commit["records"] == 98 and read.commit["run"] == 1
    store.supersede(1, {"rewind": "time"})
    [read] = store.runs()
    assert read.committed and not read.pending and read.superseded["rewind"] == "time"
    assert store.effective_runs() == []


def test_runs_are_in_numeric_order_whatever_order_they_were_written_in(store):
    for number in (12, 3, 100, 1, 9):
        add_run(store, number, {("t", 0): (number, number + 1)})
    assert [r.number for r in store.runs()] == [1, 3, 9, 12, 100]


def test_foreign_entries_under_runs_are_ignored(store):
    add_run(store, 1, {("t", 0): (0, 5)})
    for name in ("README", "1", "000000002", "0000000x", "00000003.json.abc.tmp"):
        store.location.write_bytes(f"runs/{name}", b"not a run")
    store.location.write_bytes("runs/00000001/plan.json.0123abcd.tmp", b'{"half": ')  # an interrupted rewrite
    assert [r.number for r in store.runs()] == [1] and store.next_run_number() == 2


def test_states_pending_committed_superseded(store):
    add_run(store, 1, {("t", 0): (0, 5)}, "committed")
    add_run(store, 2, {("t", 0): (5, 8)}, "superseded")
    add_run(store, 3, {("t", 0): (5, 9)}, "committed")
    add_run(store, 4, {("t", 0): (9, 12)}, "pending")
    runs = store.runs()
    assert [(r.number, r.committed, r.pending, r.superseded is not None) for r in runs] == [
        (1, True, False, False),
        (2, True, False, True),
        (3, True, False, False),
        (4, False, True, False),
    ]
    assert [r.number for r in store.effective_runs()] == [1, 3, 4]
    assert store.pending_run().number == 4
    store.commit(4, {})
    assert store.pending_run() is None


def test_a_superseded_pending_run_is_not_pending(store):
    add_run(store, 1, {("t", 0): (0, 5)}, "committed")
    add_run(store, 2, {("t", 0): (5, 8)}, "superseded-pending")
    [_, second] = store.runs()
    assert not second.pending and not second.committed
    assert store.pending_run() is None and store.next_run_number() == 3


# -- where the next run starts ------------------------------------------------------------------


def test_committed_ends_fold_the_committed_runs_in_order(store):
    add_run(store, 1, {("a", 0): (0, 10), ("a", 1): (0, 10), ("b", 0): (0, 4)})
    add_run(store, 2, {("a", 0): (10, 20), ("a", 1): (10, 10)})  # b-0 not planned: keeps run 1's end
    add_run(store, 3, {("a", 0): (20, 30), ("a", 1): (10, 30), ("b", 0): (4, 40)}, "superseded")
    add_run(store, 4, {("a", 1): (10, 12)})
    add_run(store, 5, {("a", 0): (20, 50), ("c", 7): (0, 3)}, "pending")
    assert store.committed_ends() == {("a", 0): 20, ("a", 1): 12, ("b", 0): 4}


def test_a_partition_keeps_the_end_of_the_last_run_that_planned_it_even_if_lower(store):
    add_run(store, 1, {("a", 0): (0, 100)})
    add_run(store, 2, {("a", 0): (0, 30)})  # e.g. the topic was re-created: the later run decides
    assert store.committed_ends() == {("a", 0): 30}


def test_committed_ends_of_a_given_list_of_runs(store):
    add_run(store, 1, {("a", 0): (0, 10)})
    add_run(store, 2, {("a", 0): (10, 20)})
    add_run(store, 3, {("a", 0): (20, 30)}, "pending")
    first, second, third = store.runs()
    assert store.committed_ends([first]) == {("a", 0): 10}
    assert store.committed_ends([first, third]) == {("a", 0): 10}  # the pending run does not count
    assert store.committed_ends([]) == {}


# -- run numbers after a killed run ---------------------------------------------------------------


def test_next_run_number_follows_the_newest_planned_run(store):
    add_run(store, 1, {("t", 0): (0, 1)})
    add_run(store, 2, {("t", 0): (1, 2)}, "superseded")
    assert store.next_run_number() == 3
    add_run(store, 3, {("t", 0): (1, 2)}, "pending")
    assert store.next_run_number() == 4


@pytest.mark.parametrize("content", [[], ["plan.json.5f3c.tmp"]], ids=["empty", "interrupted-plan"])
def test_a_newest_run_directory_without_plan_is_ignored_and_its_number_reused(store, content):
    add_run(store, 1, {("t", 0): (0, 1)})
    os.makedirs(run_dir(store, 2), exist_ok=True)
    for name in content:
        store.location.write_bytes(f"{store.run_name(2)}/{name}", b'{"version": 1')
    assert [r.number for r in store.runs()] == [1]
    assert store.next_run_number() == 2
    assert store.committed_ends() == {("t", 0): 1}


@pytest.mark.parametrize(
    "content", [["tasks/t-0-0.json"], ["commit.json", "report.json"]], ids=["tasks-only", "committed"]
)
def test_a_newest_run_directory_that_lost_its_plan_is_damage_not_a_number_to_reuse(store, content):
    """Tasks and commits are written after the plan: without it, the run's plan was lost."""
    add_run(store, 1, {("t", 0): (0, 1)})
    for name in content:
        store.location.write_bytes(f"{store.run_name(2)}/{name}", b'{"version": 1}')
    for call in (store.runs, store.next_run_number, store.committed_ends):
        with pytest.raises(CheckpointError, match="runs/00000002 has no plan.json"):
            call()
    assert [(e.number, e.run is None, len(e.damage)) for e in store.survey()] == [(1, False, 0), (2, True, 1)]


def test_the_only_run_directory_without_plan_is_reused(store):
    os.makedirs(run_dir(store, 1), exist_ok=True)
    assert store.runs() == [] and store.next_run_number() == 1


def test_a_run_directory_without_plan_followed_by_later_runs_is_an_error(store):
    add_run(store, 1, {("t", 0): (0, 1)})
    add_run(store, 3, {("t", 0): (1, 2)})
    os.makedirs(run_dir(store, 2), exist_ok=True)
    for call in (store.runs, store.next_run_number, store.committed_ends, store.pending_run):
        with pytest.raises(CheckpointError) as raised:
            call()
        message = str(raised.value)
        assert f"{store.uri}/runs/00000002 has no plan.json, yet later runs exist" in message


# -- versions and corrupt files -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["plan.json", "commit.json", "superseded.json"])
@pytest.mark.parametrize("version", [2, 0, None, "1"])
def test_another_format_version_is_an_error_naming_the_file(store, name, version):
    add_run(store, 1, {("t", 0): (0, 1)}, "superseded")

    def set_version(value):
        if version is None:
            del value["version"]
        else:
            value["version"] = version

    rewrite(store, f"runs/00000001/{name}", set_version)
    with pytest.raises(CheckpointError) as raised:
        store.runs()
    assert str(raised.value) == (
        f"{store.uri}/runs/00000001/{name} has format version {version!r}; this version "
        f"of kafkalog reads version {FORMAT_VERSION}"
    )


def _drop(key):
    return lambda value: value.pop(key)


def _edit_partition(key, new):
    def change(value):
        if new is KeyError:
            del value["partitions"][0][key]
        else:
            value["partitions"][0][key] = new

    return change


@pytest.mark.parametrize(
    "change, problem",
    [
        (_drop("partitions"), "is corrupt (bad or missing field 'partitions')"),
        (_drop("run"), "is corrupt (bad or missing field 'run')"),
        (_drop("created"), "is corrupt (bad or missing field 'created')"),
        (lambda v: v.update(partitions=7), "is corrupt (bad or missing field"),
        (lambda v: v.update(partitions=[[1, 2]]), "is corrupt (bad or missing field"),
        (lambda v: v.update(partitions={"t": 1}), "is corrupt (bad or missing field"),
        (_edit_partition("end", KeyError), "is corrupt (bad or missing field 'end')"),
        (_edit_partition("start", "ten"), "is corrupt (bad or missing field invalid literal for int()"),
        (_edit_partition("partition", None), "is corrupt (bad or missing field"),
        (_edit_partition("leader_id", KeyError), "is corrupt (bad or missing field 'leader_id')"),
        (lambda v: v.update(run=7), "belongs to run 7, not 1"),
    ],
    ids=[
        "no-partitions",
        "no-run",
        "no-created",
        "partitions-number",
        "partition-list",
        "partitions-object",
        "no-end",
        "start-text",
        "partition-null",
        "no-leader-id",
        "other-run",
    ],
)
def test_a_corrupt_plan_is_an_error_naming_the_file(store, change, problem):
    add_run(store, 1, {("t", 0): (0, 1)})
    rewrite(store, "runs/00000001/plan.json", change)
    with pytest.raises(CheckpointError) as raised:
        store.runs()
    message = str(raised.value)
    assert message.startswith(f"{store.uri}/runs/00000001/plan.json ") and problem in message, message


@pytest.mark.parametrize("name", ["plan.json", "commit.json", "superseded.json"])
def test_a_truncated_marker_is_an_error_naming_the_file(store, name):
    add_run(store, 1, {("t", 0): (0, 1)}, "superseded")
    path = f"{run_dir(store, 1)}/{name}"
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=f"{store.uri}/runs/00000001/{name} is corrupt or truncated"):
        store.runs()


# -- task checkpoints -----------------------------------------------------------------------------

TASKS = [
    TaskCheckpoint("127.0.0.1:9092", "events", 1, 50, 100, 50, 5000, 1_700_000_000_000, 1_700_000_049_000, 0.25),
    TaskCheckpoint("127.0.0.1:9092", "events", 0, 20, 40, 20, 1999, 1_700_000_000_500, 1_700_000_001_000, 1.5),
    TaskCheckpoint("127.0.0.1:9093", "events", 1, 0, 50, 50, 4000, 1_699_999_000_000, 1_700_000_000_000, 0.0),
    TaskCheckpoint("127.0.0.1:9092", "clicks", 10, 0, 5, 0, 0, None, None, 0.01),
]


def test_tasks_round_trip_sorted_by_partition_and_start(store):
    add_run(store, 1, {("events", 0): (0, 100)})
    for task in TASKS:
        write_task_checkpoint(store.tasks_uri(1), task)
    assert store.tasks_uri(1) == f"{store.uri}/runs/00000001/tasks"
    assert store.tasks(1) == sorted(TASKS, key=lambda t: (t.topic, t.partition, t.start))
    written = json.loads(open(f"{run_dir(store, 1)}/tasks/events-0-20.json").read())
    assert written["version"] == FORMAT_VERSION and written["written"].endswith("Z")
    assert {k: v for k, v in written.items() if k not in ("version", "written")} == TASKS[1]._asdict()


def test_a_retried_task_rewrites_its_own_file(store):
    write_task_checkpoint(store.tasks_uri(1), TASKS[0])
    write_task_checkpoint(store.tasks_uri(1), TASKS[0]._replace(seconds=9.0, node="127.0.0.1:9099"))
    assert store.tasks(1) == [TASKS[0]._replace(seconds=9.0, node="127.0.0.1:9099")]


def test_tasks_ignore_temporary_and_foreign_files(store):
    write_task_checkpoint(store.tasks_uri(1), TASKS[0])
    tasks = store.run_name(1) + "/tasks"
    store.location.write_bytes(f"{tasks}/events-0-20.json.9f8e7d6c.tmp", b'{"version": 1, "node": "12')
    store.location.write_bytes(f"{tasks}/_SUCCESS", b"")
    assert store.tasks(1) == [TASKS[0]]


def test_tasks_of_a_run_without_tasks_is_empty(store):
    add_run(store, 1, {("t", 0): (0, 1)})
    assert store.tasks(1) == [] and store.tasks(99) == []


@pytest.mark.parametrize(
    "change, problem",
    [
        (lambda v: v.pop("records"), "is corrupt (missing field 'records')"),
        (lambda v: v.update(version=3), "has format version 3"),
    ],
)
def test_a_corrupt_task_checkpoint_is_an_error_naming_the_file(store, change, problem):
    write_task_checkpoint(store.tasks_uri(1), TASKS[0])
    rewrite(store, "runs/00000001/tasks/events-1-50.json", change)
    with pytest.raises(CheckpointError) as raised:
        store.tasks(1)
    assert str(raised.value).startswith(f"{store.uri}/runs/00000001/tasks/events-1-50.json ")
    assert problem in str(raised.value)


def test_a_report_round_trips(store):
    add_run(store, 1, {("t", 0): (0, 1)})
    assert store.report(1) is None
    store.write_report(1, {"records": 12, "partitions": {"t-0": {"records": 12}}})
    assert store.report(1) == {"version": FORMAT_VERSION, "records": 12, "partitions": {"t-0": {"records": 12}}}


# -- retention ------------------------------------------------------------------------------------


def numbers(store) -> list[int]:
    return [r.number for r in store.runs()]


def test_retention_keeps_the_newest_runs(store):
    for number in range(1, 7):
        add_run(store, number, {("t", 0): (number * 10, number * 10 + 10)})
    ends = store.committed_ends()
    assert store.apply_retention(10) == [] and numbers(store) == [1, 2, 3, 4, 5, 6]
    assert store.apply_retention(2) == [1, 2, 3, 4] and numbers(store) == [5, 6]
    assert store.location.names("runs") == ["00000005", "00000006"]
    assert store.apply_retention(2) == []
    assert store.committed_ends() == ends and store.next_run_number() == 7


def test_retention_never_removes_the_newest_committed_run(store):
    add_run(store, 1, {("t", 0): (0, 10)})
    add_run(store, 2, {("t", 0): (10, 20)})
    add_run(store, 3, {("t", 0): (20, 30)}, "superseded")
    add_run(store, 4, {("t", 0): (20, 40)}, "superseded")
    add_run(store, 5, {("t", 0): (20, 50)}, "pending")
    assert store.apply_retention(1) == [1, 3, 4]
    assert numbers(store) == [2, 5]
    assert store.committed_ends() == {("t", 0): 20} and store.pending_run().number == 5


def test_retention_with_only_uncommitted_runs_keeps_the_newest(store):
    add_run(store, 1, {("t", 0): (0, 10)}, "superseded-pending")
    add_run(store, 2, {("t", 0): (0, 10)}, "pending")
    assert store.apply_retention(1) == [1] and numbers(store) == [2]


def test_retention_never_changes_where_the_next_run_starts(store):
    add_run(store, 1, {("a", 0): (0, 10), ("b", 0): (0, 7)})  # topic b was subscribed then
    add_run(store, 2, {("a", 0): (10, 20)})
    add_run(store, 3, {("a", 0): (20, 30)})
    ends = store.committed_ends()
    assert ends == {("a", 0): 30, ("b", 0): 7}
    store.apply_retention(1)
    assert store.committed_ends() == ends  # b-0 would be loaded again from its earliest offset


class Killed(BaseException):
    """Stands for a SIGKILL in the middle of a recursive delete."""


def test_retention_killed_in_the_middle_of_a_delete_leaves_a_readable_checkpoint(store, monkeypatch):
    for number in range(1, 4):
        add_run(store, number, {("t", 0): (number * 10, number * 10 + 10)})
        write_task_checkpoint(store.tasks_uri(number), TASKS[0])
    location = store.location
    delete = location.delete

    def killed_mid_delete(name):
        if name.startswith("runs/"):  # the recursive delete happened to remove plan.json first
            delete(f"{name}/plan.json")
            raise Killed()
        delete(name)

    monkeypatch.setattr(location, "delete", killed_mid_delete)
    with pytest.raises(Killed):
        store.apply_retention(1)
    monkeypatch.undo()
    reopened = CheckpointStore(store.uri)
    assert reopened.committed_ends() == {("t", 0): 40}
    assert reopened.next_run_number() == 4


def test_retention_records_below_which_it_removed_runs(store):
    """Protected runs keep old numbers, so removed runs need not be the oldest: what retention
    removed is recorded, for the load's check of output whose run the checkpoint no longer holds."""
    assert store.removed_below() == 0
    add_run(store, 1, {("a", 0): (0, 10), ("b", 0): (0, 7)})  # b's newest end: protected
    for number in range(2, 5):
        add_run(store, number, {("a", 0): (number * 10, number * 10 + 10)})
    assert store.apply_retention(1) == [2, 3] and store.removed_below() == 4
    assert store.apply_retention(5) == [] and store.removed_below() == 4  # never lowered
    store.location.write_bytes("retention.json", b'{"version": 1}')
    with pytest.raises(CheckpointError, match="retention.json is corrupt"):
        store.removed_below()


def test_a_damaged_run_is_set_aside_under_a_name_outside_the_layout(store):
    add_run(store, 1, {("t", 0): (0, 10)})
    add_run(store, 2, {("t", 0): (10, 20)})
    store.location.write_bytes(f"{store.run_name(2)}/commit.json", b"\x00")
    assert [len(e.damage) for e in store.survey()] == [0, 1]
    assert store.set_aside_damaged(2) == f"{store.uri}/runs/00000002.damaged"
    add_run(store, 2, {("t", 0): (10, 20)})
    store.location.write_bytes(f"{store.run_name(2)}/commit.json", b"\x00")
    assert store.set_aside_damaged(2) == f"{store.uri}/runs/00000002.damaged-2"
    assert store.set_aside_damaged(2) is None
    assert [r.number for r in store.runs()] == [1] and store.next_run_number() == 3  # not the set-aside number
