"""Loads whose checkpoint and output are on a Hadoop filesystem pyarrow cannot open: a ``viewfs://``
mount table over local directories, set on the test session's Hadoop configuration (so the path
is Hadoop's, through the Spark driver's JVM, not pyarrow's). A whole run, a rerun that resumes, a
killed load whose lock is taken over, and ``--check-output`` on file://, viewfs:// and a scheme
with no FileSystem."""

import json
import uuid
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from jobs.check_output import SCRATCH_PREFIX
from tests.spark.feed import create_topic, messages, produce

from .loads import LoadProcess, assert_exactly_once, assert_report, load_args, ok, report_json, run_load

pytestmark = pytest.mark.timeout(400)


class Mount:
    """``viewfs://<name>/mnt`` linked to the local directory ``local``."""

    def __init__(self, name: str, local: Path) -> None:
        self.key = f"fs.viewfs.mounttable.{name}.link./mnt"
        self.value = f"file://{local}"
        self.uri = f"viewfs://{name}/mnt"
        self.local = local

    def conf(self) -> list[str]:
        """The mount as ``--conf`` arguments, for a load in its own process."""
        return ["--conf", f"spark.hadoop.{self.key}={self.value}"]


@pytest.fixture
def viewfs(spark, tmp_path):
    """A mount table of its own (Hadoop caches a FileSystem per authority), removed afterwards."""
    mount = Mount(f"t{uuid.uuid4().hex[:10]}", tmp_path / "mounted")
    mount.local.mkdir()
    configuration = spark.sparkContext._jsc.hadoopConfiguration()
    configuration.set(mount.key, mount.value)
    yield mount
    configuration.unset(mount.key)


def test_pyarrow_cannot_open_the_mount():
    with pytest.raises((ValueError, OSError)):
        pafs.FileSystem.from_uri("viewfs://nobody/mnt")


def ranges_of(recs, before: dict) -> dict:
    after = dict(before)
    for rec in recs:
        after[(rec.topic, rec.partition)] = max(after.get((rec.topic, rec.partition), 0), rec.offset + 1)
    return {tp: (before.get(tp, 0), end) for tp, end in after.items()}


def test_a_load_on_viewfs_commits_and_a_rerun_resumes(jobs_broker, spark, viewfs, tmp_path):
    bootstrap, topic = jobs_broker.bootstrap, "on-viewfs"
    create_topic(bootstrap, topic, 2)
    local_output = viewfs.local / "output"
    args = load_args(bootstrap, topic, f"{viewfs.uri}/output")
    first = produce(bootstrap, topic, messages(14, partitions=(0, 1), tag="a"))
    ok(run_load(args, tmp_path))
    assert_exactly_once(local_output, first)
    ranges = ranges_of(first, {})
    assert_report(report_json(local_output, 1), first, ranges)
    checkpoint = local_output / "_checkpoint"
    assert not (checkpoint / "lock.json").exists() and (checkpoint / "runs/00000001/commit.json").exists()
    assert not (checkpoint / "runs/00000001/tasks").exists()  # tasks cannot reach viewfs: counted from the output
    assert not list(local_output.rglob("*.tmp")) and not list(checkpoint.rglob(".*.crc"))

    second = produce(bootstrap, topic, messages(9, partitions=(0, 1), tag="b"))
    again = ok(run_load(args, tmp_path))
    assert_exactly_once(local_output, first + second)
    plan = json.loads((checkpoint / "runs/00000002/plan.json").read_text())
    assert {(p["topic"], p["partition"]): (p["start"], p["end"]) for p in plan["partitions"]} == ranges_of(
        second, {tp: end for tp, (_, end) in ranges.items()}
    )
    assert_report(report_json(local_output, 2), second, ranges_of(second, {tp: end for tp, (_, end) in ranges.items()}))
    history = ok(run_load(["--output", f"{viewfs.uri}/output", "--history"], tmp_path))
    assert [line.split()[-1] for line in history.stdout.splitlines()[2:]] == ["committed", "committed"], history
    assert "run 2" in again.stdout


def test_a_checkpoint_on_viewfs_that_lost_a_run_is_repaired_from_the_rows(jobs_broker, spark, viewfs, tmp_path):
    """--repair counts the output's rows with Spark where pyarrow cannot read them."""
    bootstrap, topic = jobs_broker.bootstrap, "repaired-on-viewfs"
    create_topic(bootstrap, topic, 2)
    local_output = viewfs.local / "output"
    args = load_args(bootstrap, topic, f"{viewfs.uri}/output")
    recs = produce(bootstrap, topic, messages(8, partitions=(0, 1), tag="r"))
    ok(run_load(args, tmp_path))
    (local_output / "_checkpoint/runs/00000001/plan.json").unlink()
    refused = run_load(args, tmp_path)
    assert refused.code == 1 and "--repair" in refused.one_error(), refused

    repaired = ok(run_load(["--output", f"{viewfs.uri}/output", "--repair"], tmp_path))
    assert "run 1: rebuilt from the rows of run=1" in repaired.stdout, repaired.stdout
    plan = json.loads((local_output / "_checkpoint/runs/00000001/plan.json").read_text())
    assert {(p["topic"], p["partition"]): (p["start"], p["end"]) for p in plan["partitions"]} == ranges_of(recs, {})
    more = produce(bootstrap, topic, messages(3, partitions=(1,), tag="s"))
    ok(run_load(args, tmp_path))
    assert_exactly_once(local_output, recs + more)


@pytest.mark.slow
def test_a_killed_load_on_viewfs_leaves_no_stuck_lock(jobs_broker, spark, viewfs, tmp_path):
    """A load in its own process (its own Spark driver, the mount given with --conf) is SIGKILLed
    after planning; the next load takes its lock over and executes the plan again."""
    bootstrap, topic = jobs_broker.bootstrap, "killed-on-viewfs"
    create_topic(bootstrap, topic, 2)
    local_output = viewfs.local / "output"
    args = load_args(bootstrap, topic, f"{viewfs.uri}/output")
    recs = produce(bootstrap, topic, messages(10, partitions=(0, 1), tag="k"))
    killed = LoadProcess(args + viewfs.conf(), tmp_path, pause_at="planned")
    try:
        killed.wait_for_stdout("paused at planned")
    finally:
        killed.kill()
    lock = json.loads((local_output / "_checkpoint/lock.json").read_text())
    assert lock["pid"] == killed.process.pid

    rerun = ok(run_load(args, tmp_path))
    assert "run 1 was planned but not committed: executing its plan again" in rerun.stdout, rerun
    assert "took over the stale lock" in rerun.stderr, rerun.stderr[-2000:]
    assert not (local_output / "_checkpoint/lock.json").exists()
    assert_exactly_once(local_output, recs)


def check(uri: str, tmp_path) -> tuple[int, str, str]:
    result = run_load(["--output", uri, "--check-output"], tmp_path)
    return result.code, result.stdout, result.stderr


@pytest.mark.parametrize("place", ["file", "viewfs"])
def test_check_output_tries_every_operation_and_leaves_nothing(spark, viewfs, tmp_path, place):
    uri, local = (f"file://{tmp_path}/out", tmp_path / "out") if place == "file" else (viewfs.uri, viewfs.local)
    code, stdout, _ = check(uri, tmp_path)
    assert code == 0, stdout
    lines = stdout.splitlines()
    expected = "pyarrow (local files)" if place == "file" else "Hadoop's org.apache.hadoop.fs.viewfs.ViewFileSystem"
    assert lines[0].startswith(f"{uri} through {expected}"), lines[0]
    operations = {line.split("  ")[1].strip(): line for line in lines[1:-1]}
    assert set(operations) == {
        "create",
        "mkdir",
        "read back",
        "replace",
        "create if absent",
        "modification time",
        "rename",
        "list",
        "delete",
        "atomic rename",
    }, lines
    assert all(" ok " in line for line in operations.values()), lines
    assert "yes: files are written to a temporary name" in operations["atomic rename"]
    assert lines[-1] == "the load can keep its output and checkpoint here"
    assert not [p for p in local.rglob("*") if p.name.startswith(SCRATCH_PREFIX)]


def test_check_output_reports_the_operation_a_filesystem_refuses(spark, viewfs, tmp_path):
    """viewfs outside its mount links: the mount table has no directory there, so creating fails,
    and what depends on it is not tried."""
    outside = viewfs.uri.rsplit("/", 1)[0] + "/not-mounted"
    code, stdout, _ = check(outside, tmp_path)
    assert code == 1, stdout
    lines = stdout.splitlines()
    assert lines[1].split()[:2] == ["create", "FAILED"] and "does not exist: /not-mounted" in lines[1], lines
    assert all("FAILED  not tried" in line for line in lines[2:-2]), lines
    assert lines[-1] == "the load cannot keep its files here: create failed"


def test_check_output_with_a_rewind_is_a_usage_error(spark, tmp_path):
    result = run_load(["--output", str(tmp_path), "--check-output", "--rewind-to-run", "1"], tmp_path)
    assert result.code == 2, result
    assert result.one_error() == (
        "kafkalog load: --check-output cannot be combined with a rewind: it checks the filesystem and stops "
        "(--dry-run shows what the rewind would do)"
    )


def test_check_output_on_a_scheme_without_a_filesystem_is_one_line(spark, tmp_path):
    result = run_load(["--output", "nosuchfs://somewhere/out", "--check-output"], tmp_path)
    assert result.code == 1, result
    assert result.one_error() == (
        "kafkalog load: cannot open nosuchfs://somewhere/out: UnsupportedFileSystemException: "
        'No FileSystem for scheme "nosuchfs"'
    )
