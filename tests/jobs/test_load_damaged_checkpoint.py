"""A load checkpoint that lost files, or an output that lost runs: the load stops with one line
naming what contradicts what and how to repair it, never reuses a run number that has a trace
(``run=N``, ``_staging/run=N``, ``_superseded/run=N``, ``runs/N``), and ``--repair`` rebuilds what
the output's own rows prove (topic, partition, offset) and refuses the rest.

Each test copies two runs of one topic (``loaded``: runs 1 and 2, then one more record produced),
damages the checkpoint or the output as a person or a restore from an older backup would, and
loads again.
"""

import json
import shutil
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.spark.feed import create_topic, messages, produce

from .loads import assert_exactly_once, load_args, ok, output_rows, run_dir, run_load, tree

pytestmark = pytest.mark.timeout(300)


class Loaded(NamedTuple):
    bootstrap: str
    topic: str
    output: Path
    recs: list  # runs 1 and 2 loaded all but the last

    def copy(self, destination: Path) -> Path:
        shutil.copytree(self.output, destination)
        return destination


@pytest.fixture(scope="module")
def loaded(jobs_broker, spark, tmp_path_factory) -> Loaded:
    """Runs 1 and 2 of a topic of 2 partitions, each after 3 records per partition, then one more
    record (partition 1, offset 6) for the next run."""
    bootstrap, topic = jobs_broker.bootstrap, "damaged"
    create_topic(bootstrap, topic, 2)
    base = tmp_path_factory.mktemp("damaged")
    recs = []
    for tag in ("a", "b"):
        recs += produce(bootstrap, topic, messages(6, partitions=(0, 1), tag=tag))
        ok(run_load(load_args(bootstrap, topic, base / "output"), base))
    recs += produce(bootstrap, topic, messages(1, partitions=(1,), tag="late"))
    return Loaded(bootstrap, topic, base / "output", recs)


def refused(result, *parts: str) -> str:
    assert result.code == 1, result
    line = result.one_error()
    for part in parts:
        assert part in line, line
    return line


@pytest.mark.parametrize("damage", ["plan.json removed", "runs/2 removed", "checkpoint removed"])
def test_a_checkpoint_that_lost_the_newest_run_stops_the_load_and_repair_rebuilds_it(loaded, tmp_path, damage):
    """The issue's reproduction: the next run got number 2 again, committed the stale run=2 without
    reading anything, and the new record ended in no output at all. With the whole checkpoint gone,
    the next run loaded everything again as run 1."""
    bootstrap, topic, recs = loaded.bootstrap, loaded.topic, loaded.recs
    output = loaded.copy(tmp_path / "output")
    if damage == "plan.json removed":
        (run_dir(output, 2) / "plan.json").unlink()
    elif damage == "runs/2 removed":
        shutil.rmtree(run_dir(output, 2))
    else:
        shutil.rmtree(output / "_checkpoint")
    args = load_args(bootstrap, topic, output)
    before = tree(output)

    first = 1 if damage == "checkpoint removed" else 2
    for extra in ([], ["--dry-run"]):
        line = refused(run_load(args + extra, tmp_path), f"{output.as_uri()}/run={first}", "--repair")
        assert f"run {first}" in line, line
    assert tree(output) == before, "a refused run changed the output or the checkpoint"

    repaired = run_load(["--output", str(output), "--repair"], tmp_path)
    assert repaired.code == 0, repaired
    assert "run 2: rebuilt from the rows of run=2" in repaired.stdout, repaired.stdout
    plan = json.loads((run_dir(output, 2) / "plan.json").read_text())
    assert {(p["topic"], p["partition"]): (p["start"], p["end"]) for p in plan["partitions"]} == {
        (topic, 0): (3, 6),
        (topic, 1): (3, 6),
    }
    assert plan["details"]["repaired"]["from"] == f"{output.as_uri()}/run=2"

    result = ok(run_load(args, tmp_path))
    assert result.stdout.startswith("run 3: 1 record, "), result.stdout
    rows = assert_exactly_once(output, recs)
    assert [r.run for r in rows if r.offset == 6] == [3]  # the new record, in partition 1


def test_the_commands_suggested_name_a_checkpoint_of_its_own(loaded, tmp_path):
    output = loaded.copy(tmp_path / "output")
    checkpoint = tmp_path / "elsewhere"
    shutil.move(output / "_checkpoint", checkpoint)
    (checkpoint / "runs" / run_dir(output, 2).name / "plan.json").unlink()
    args = load_args(loaded.bootstrap, loaded.topic, output, "--checkpoint", str(checkpoint))
    command = f"kafkalog load --output {output.as_uri()} --checkpoint {checkpoint.as_uri()}"
    refused(run_load(args, tmp_path), f"repair: {command} --repair ")
    ok(run_load(["--output", str(output), "--checkpoint", str(checkpoint), "--repair"], tmp_path))
    shutil.rmtree(output / "run=1")
    refused(run_load(args, tmp_path), f"load its offsets again: {command} --topics ... --rewind-to-run 1")


def test_a_committed_run_whose_output_is_gone_stops_the_load_until_rewound(loaded, tmp_path):
    bootstrap, topic, recs = loaded.bootstrap, loaded.topic, loaded.recs
    output = loaded.copy(tmp_path / "output")
    shutil.rmtree(output / "run=1")
    args = load_args(bootstrap, topic, output)

    refused(
        run_load(args, tmp_path),
        "run 1 is committed",
        f"{output.as_uri()}/run=1 is missing",
        f"kafkalog load --output {output.as_uri()} --topics ... --rewind-to-run 1",
    )
    still = run_load(["--output", str(output), "--repair"], tmp_path)
    assert still.code == 1 and "cannot be rebuilt" in still.one_error(), still

    ok(run_load(args + ["--rewind-to-run", "1"], tmp_path))
    assert_exactly_once(output, recs)


def test_traces_of_runs_the_checkpoint_never_saw_stop_the_load(loaded, tmp_path):
    """A checkpoint restored from a backup older than the output: runs 2 (superseded, output aside)
    and 3 are in the output only; a staged run 4 too."""
    bootstrap, topic, recs = loaded.bootstrap, loaded.topic, loaded.recs
    output = loaded.copy(tmp_path / "output")
    backup = tmp_path / "backup"
    shutil.copytree(output / "_checkpoint", backup)
    ok(run_load(load_args(bootstrap, topic, output, "--rewind-to-run", "2"), tmp_path))  # run 3
    shutil.copytree(output / "run=3", output / "_staging" / "run=4")
    shutil.rmtree(output / "_checkpoint")
    shutil.copytree(backup, output / "_checkpoint")
    shutil.rmtree(run_dir(output, 2))  # the backup predates run 2 too
    args = load_args(bootstrap, topic, output)

    refused(run_load(args, tmp_path), "the checkpoint has no run 2", "--repair")
    shown = run_load(["--output", str(output), "--history"], tmp_path)
    assert shown.code == 0, shown
    assert "the checkpoint has no run 3" in shown.stdout and "--repair" in shown.stdout, shown.stdout

    repaired = run_load(["--output", str(output), "--repair"], tmp_path)
    assert repaired.code == 0, repaired
    for line in (
        "run 2: rebuilt from the rows of _superseded/run=2 (superseded)",
        "run 3: rebuilt from the rows of run=3",
        "run 4: removed _staging/run=4 (never published, its offsets load again)",
    ):
        assert line in repaired.stdout, repaired.stdout
    result = ok(run_load(args, tmp_path))
    assert result.stdout.startswith("run 4: 0 records, "), result.stdout  # run 3 loaded the newest record
    assert_exactly_once(output, recs)


def test_repair_refuses_what_the_rows_cannot_prove_and_rebuilds_what_they_do(loaded, tmp_path):
    """Run 2's checkpoint is gone. With a file of its output copied, its rows hold offsets twice:
    refused. With the file holding its partition 0 deleted instead, run 2 is rebuilt with partition
    1 only, and the next run loads partition 0 again from where run 1 ended."""
    bootstrap, topic, recs = loaded.bootstrap, loaded.topic, loaded.recs
    output = loaded.copy(tmp_path / "output")
    shutil.rmtree(run_dir(output, 2))
    partition0 = sorted({r.file for r in output_rows(output) if r.run == 2 and r.partition == 0})
    copy = Path(partition0[0]).with_name("part-copied.snappy.parquet")
    shutil.copyfile(partition0[0], copy)
    before = tree(output)

    refused(
        run_load(["--output", str(output), "--repair"], tmp_path),
        "run 2 cannot be rebuilt",
        f"{topic}-0 holds 6 rows of offsets 3 to 5 (3 distinct), not each offset once",
    )
    assert tree(output) == before

    copy.unlink()
    for name in partition0:
        Path(name).unlink()
    repaired = run_load(["--output", str(output), "--repair"], tmp_path)
    assert (
        repaired.code == 0 and "run 2: rebuilt from the rows of run=2: 3 records in 1 partition" in repaired.stdout
    ), repaired
    result = ok(run_load(load_args(bootstrap, topic, output), tmp_path))
    assert result.stdout.startswith("run 3: 4 records, "), result.stdout
    assert_exactly_once(output, recs)


def test_a_corrupt_commit_is_shown_by_history_and_repaired(loaded, tmp_path):
    bootstrap, topic, recs = loaded.bootstrap, loaded.topic, loaded.recs
    output = loaded.copy(tmp_path / "output")
    commit = run_dir(output, 1) / "commit.json"
    commit.write_bytes(b"\x00\xffnot json")

    shown = run_load(["--output", str(output), "--history"], tmp_path)
    assert shown.code == 0, shown
    rows = {line.split()[0]: line for line in shown.stdout.splitlines()[2:4]}
    assert "damaged" in rows["1"] and rows["2"].split()[-1] == "committed", shown.stdout
    assert f"{commit.as_uri()} is corrupt or truncated" in shown.stdout and "--repair" in shown.stdout

    args = load_args(bootstrap, topic, output)
    refused(run_load(args, tmp_path), commit.as_uri(), "--repair")
    repaired = run_load(["--output", str(output), "--repair"], tmp_path)
    assert repaired.code == 0 and "run 1: rebuilt from the rows of run=1" in repaired.stdout, repaired
    assert list(run_dir(output, 1).parent.glob("00000001.damaged*")), "the damaged files are kept aside"
    ok(run_load(args, tmp_path))
    assert_exactly_once(output, recs)


def test_a_published_pending_run_with_a_corrupt_task_file_is_repaired_not_stuck(loaded, tmp_path):
    """Killed between publishing and committing, run 2 is only reported and committed next; its
    report is built from its tasks' files, so a corrupt one failed every run after it."""
    bootstrap, topic, recs = loaded.bootstrap, loaded.topic, loaded.recs
    output = loaded.copy(tmp_path / "output")
    for name in ("commit.json", "report.json"):  # as a kill after publishing leaves it
        (run_dir(output, 2) / name).unlink()
    task = sorted((run_dir(output, 2) / "tasks").glob("*.json"))[0]
    task.write_bytes(b"{")
    args = load_args(bootstrap, topic, output)

    refused(run_load(args, tmp_path), "run 2 is damaged", task.as_uri(), "--repair")
    repaired = run_load(["--output", str(output), "--repair"], tmp_path)
    assert repaired.code == 0 and "run 2: rebuilt from the rows of run=2: 6 records" in repaired.stdout, repaired
    result = ok(run_load(args, tmp_path))
    assert result.stdout.startswith("run 3: 1 record, "), result.stdout
    assert_exactly_once(output, recs)
