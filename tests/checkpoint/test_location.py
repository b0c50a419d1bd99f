"""``checkpoint.location``: URIs, JSON files that are never seen half written, exclusive creation,
and the object-store path (no rename) on pyarrow's in-memory ``mock://`` filesystem. Tests taking
``open_dir`` run with both implementations (pyarrow, and Hadoop's FileSystem through Spark's JVM);
those about pyarrow's own filesystems, and the killed-writer and racing-process tests (their child
processes have no Spark), use pyarrow."""

import json
import os
import threading
import time

import pytest

from spark_kafka_source.checkpoint import (
    ArrowLocation,
    CheckpointError,
    CheckpointLock,
    CheckpointStore,
    Location,
    PartitionPlan,
    open_location,
    to_uri,
)
from spark_kafka_source.checkpoint import location as location_module
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(60)


def leftovers(directory) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".tmp"))


# -- URIs ---------------------------------------------------------------------------------------


def test_plain_paths_and_file_uris_name_the_same_directory(tmp_path):
    plain = ArrowLocation(str(tmp_path / "ck") + "/")
    uri = ArrowLocation(f"file://{tmp_path}/ck")
    assert plain.uri == uri.uri == f"file://{tmp_path}/ck"
    assert plain.path == uri.path == f"{tmp_path}/ck"
    assert plain.fs.type_name == "local" and plain.renames_atomically
    plain.write_json("a/b.json", {"x": 1})
    assert uri.read_json("a/b.json") == {"x": 1}
    assert json.loads((tmp_path / "ck" / "a" / "b.json").read_text()) == {"x": 1}


def test_a_relative_path_is_relative_to_the_working_directory(tmp_path, monkeypatch, open_dir):
    monkeypatch.chdir(tmp_path)
    relative = open_dir("loads/ck")
    assert relative.uri == f"file://{tmp_path}/loads/ck" and relative.path == f"{tmp_path}/loads/ck"
    relative.write_json("plan.json", {"run": 1})
    assert (tmp_path / "loads" / "ck" / "plan.json").exists()
    assert to_uri("./x/../y") == f"file://{tmp_path}/y"


def test_to_uri_keeps_uris_and_strips_a_trailing_slash():
    assert to_uri("hdfs://namenode:8020/loads/ck/") == "hdfs://namenode:8020/loads/ck"
    assert to_uri("s3://bucket/ck") == "s3://bucket/ck"
    assert to_uri("file:///") == "file:///"


def test_child_names_a_subdirectory(tmp_path, open_dir):
    child = open_dir(str(tmp_path)).child("runs", "00000001")
    assert child.path == f"{tmp_path}/runs/00000001" and child.uri == f"file://{tmp_path}/runs/00000001"


def test_an_unknown_scheme_is_a_checkpoint_error(open_dir):
    with pytest.raises(CheckpointError, match="cannot open nosuchscheme://x/y"):
        open_dir("nosuchscheme://x/y")


@pytest.mark.parametrize("name", ["hash#tag", "per%20cent", "with space", "ünïcode"])
def test_a_plain_path_with_special_characters_names_that_directory(tmp_path, name, open_dir):
    directory = tmp_path / name
    open_dir(str(directory)).write_json("f.json", {"ok": True})
    assert json.loads((directory / "f.json").read_text()) == {"ok": True}


# -- whole-file writes and reads ------------------------------------------------------------------


def test_write_json_read_json_round_trip(tmp_path, open_dir):
    location = open_dir(str(tmp_path))
    value = {"text": "ünïcödé ✓", "nested": {"list": [1, 2.5, None, True]}, "big": 2**62, "empty": {}}
    location.write_json("deep/er/file.json", value)
    assert location.read_json("deep/er/file.json") == value
    location.write_json("deep/er/file.json", {"replaced": 1})
    assert location.read_json("deep/er/file.json") == {"replaced": 1}
    assert location.names("deep/er") == ["file.json"]  # no temporary file left behind
    assert location.exists("deep/er/file.json") and location.exists("deep") and not location.exists("nothing")


def test_names_lists_sorted_entries_and_nothing_for_a_missing_directory(tmp_path, open_dir):
    location = open_dir(str(tmp_path))
    for name in ("b", "a", "c.json"):
        location.write_bytes(f"d/{name}", b"x")
    assert location.names("d") == ["a", "b", "c.json"]
    assert location.names("missing") == []
    assert open_dir(str(tmp_path / "not-yet")).names() == []


def test_move_and_delete(tmp_path, open_dir):
    location = open_dir(str(tmp_path))
    location.write_bytes("dir/a/f", b"1")
    location.write_bytes("dir/b", b"2")
    location.move("dir/b", "elsewhere/deeper/b")
    assert location.read_bytes("elsewhere/deeper/b") == b"2" and not location.exists("dir/b")
    location.delete("dir")  # a tree
    location.delete("elsewhere/deeper/b")  # a file
    location.delete("never-there")  # nothing: no error
    assert not location.exists("dir") and location.names("elsewhere/deeper") == []


def test_a_missing_file_is_a_checkpoint_error_naming_it(tmp_path, open_dir):
    with pytest.raises(CheckpointError, match=f"file://{tmp_path}/runs/plan.json is missing"):
        open_dir(str(tmp_path)).read_json("runs/plan.json")


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"", "is corrupt or truncated (0 bytes"),
        (b'{"version": 1, "partitions": [{"topic": "t", "par', "is corrupt or truncated (49 bytes"),
        (b"\x00\x00\x00\x00", "is corrupt or truncated (4 bytes"),
        (b"\xff\xfe{}", "is corrupt or truncated"),
        (b"not json at all", "is corrupt or truncated"),
        (b"[1, 2]", "is corrupt: a JSON object was expected"),
        (b'"text"', "is corrupt: a JSON object was expected"),
        (b"null", "is corrupt: a JSON object was expected"),
        (b"17", "is corrupt: a JSON object was expected"),
    ],
    ids=["empty", "truncated", "zeros", "not-utf8", "text", "list", "string", "null", "number"],
)
def test_corrupt_truncated_or_non_object_json_is_a_checkpoint_error_naming_the_file(
    tmp_path, content, problem, open_dir
):
    (tmp_path / "c.json").write_bytes(content)
    with pytest.raises(CheckpointError) as raised:
        open_dir(str(tmp_path)).read_json("c.json")
    assert str(raised.value).startswith(f"file://{tmp_path}/c.json ") and problem in str(raised.value)


def test_an_unreadable_file_is_a_checkpoint_error_naming_it(tmp_path, open_dir):
    (tmp_path / "dir.json").mkdir()  # a directory where a file is expected
    with pytest.raises(CheckpointError, match=f"{tmp_path}/dir.json"):
        open_dir(str(tmp_path)).read_json("dir.json")


WRITER = """
    import sys
    from spark_kafka_source.checkpoint import ArrowLocation
    location = ArrowLocation(sys.argv[1])
    payloads = [(b'{"n": %d, "pad": "' % n) + bytes([97 + n]) * (4 << 20) + b'"}' for n in range(4)]
    location.write_bytes("big.json", payloads[0])
    open(sys.argv[2], "w").close()  # ready: the file exists complete
    n = 1
    while True:
        location.write_bytes("big.json", payloads[n % 4])
        n += 1
"""


def test_a_writer_killed_mid_write_leaves_the_old_or_the_new_complete_file(tmp_path, children):
    """A real process rewrites a 4 MiB JSON file in a loop and is SIGKILLed at varying moments;
    the final name always holds one complete version, and the temporary files a kill leaves
    behind are never under the final name. Rounds repeat until one kill hit the middle of a
    write (a temporary file was left), so the test proves that case."""
    directory = tmp_path / "ck"
    killed_mid_write = 0
    for round_number in range(12):
        ready = tmp_path / f"ready-{round_number}"
        writer = children.start(WRITER, directory, ready)
        wait_for(
            lambda ready=ready, writer=writer: ready.exists() or writer.poll() is not None,
            timeout=30,
            what="the writer to start",
        )
        assert writer.poll() is None, children.output(writer)
        time.sleep(0.05 + 0.037 * round_number)
        children.kill(writer)
        value = ArrowLocation(str(directory)).read_json("big.json")
        assert value["n"] in range(4) and value["pad"] == chr(97 + value["n"]) * (4 << 20)
        killed_mid_write += bool(leftovers(directory))
        for name in leftovers(directory):
            (directory / name).unlink()
        if killed_mid_write >= 2:
            break
    assert killed_mid_write, "no kill landed in the middle of a write"


def test_a_failed_write_leaves_the_previous_file_and_no_temporary_file(tmp_path, monkeypatch):
    location = ArrowLocation(str(tmp_path))
    location.write_json("f.json", {"old": True})

    original = location._write_synced

    def half_written(full, data):
        original(full, data[: len(data) // 2])
        raise OSError("No space left on device")

    monkeypatch.setattr(location, "_write_synced", half_written)
    with pytest.raises(OSError, match="No space left"):
        location.write_json("f.json", {"new": True, "pad": "x" * 1000})
    assert location.read_json("f.json") == {"old": True}
    assert location.names() == ["f.json"]


# -- exclusive creation ---------------------------------------------------------------------------


def test_create_exclusively_creates_once_and_never_replaces(tmp_path, open_dir):
    location = open_dir(str(tmp_path))
    assert location.create_exclusively("sub/lock.json", b"first") is True
    assert location.create_exclusively("sub/lock.json", b"second") is False
    assert location.read_bytes("sub/lock.json") == b"first"
    assert location.names("sub") == ["lock.json"]


def race_to_create(location: Location, name: str, contenders: int, start: threading.Barrier | None = None) -> None:
    """Threads call create_exclusively on one name at once: exactly one wins, and its content stays."""
    results = {}

    def contend(index):
        if start:
            start.wait(10)
        results[index] = location.create_exclusively(name, b"contender %d" % index)

    threads = [threading.Thread(target=contend, args=(i,)) for i in range(contenders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    winners = [i for i, won in results.items() if won]
    assert len(results) == contenders and len(winners) == 1, results
    assert location.read_bytes(name) == b"contender %d" % winners[0]


def test_create_exclusively_among_racing_threads_exactly_one_wins(tmp_path, open_dir):
    location = open_dir(str(tmp_path))
    for round_number in range(5):
        name = f"race-{round_number}.json"
        race_to_create(location, name, 16, start=threading.Barrier(16))
    assert leftovers(tmp_path) == []


CONTENDER = """
    import os, sys, time
    from spark_kafka_source.checkpoint import ArrowLocation
    location = ArrowLocation(sys.argv[1])
    go, result = sys.argv[2], sys.argv[3]
    open(result + ".ready", "w").close()
    deadline = time.monotonic() + 30
    while not os.path.exists(go) and time.monotonic() < deadline:
        pass
    won = [location.create_exclusively(f"race-{i}.json", str(os.getpid()).encode()) for i in range(20)]
    with open(result + ".tmp", "w") as f:
        f.write(" ".join("1" if w else "0" for w in won))
    os.rename(result + ".tmp", result)
"""


def test_create_exclusively_among_racing_processes_exactly_one_wins(tmp_path, children):
    directory = tmp_path / "ck"
    go = tmp_path / "go"
    results = [tmp_path / f"result-{i}" for i in range(6)]
    processes = [children.start(CONTENDER, directory, go, result) for result in results]
    wait_for(
        lambda: (
            all(r.with_name(r.name + ".ready").exists() for r in results)
            or any(p.poll() not in (None, 0) for p in processes)
        ),
        timeout=30,
        what="the contenders to start",
    )
    go.touch()
    wait_for(
        lambda: all(r.exists() for r in results) or any(p.poll() not in (None, 0) for p in processes),
        timeout=30,
        what="the contenders to finish",
    )
    assert all(r.exists() for r in results), [children.output(p) for p in processes]
    won = [[flag == "1" for flag in r.read_text().split()] for r in results]
    for name_index in range(20):
        winners = [i for i in range(6) if won[i][name_index]]
        assert len(winners) == 1, (name_index, winners)
        assert (
            ArrowLocation(str(directory)).read_bytes(f"race-{name_index}.json")
            == str(processes[winners[0]].pid).encode()
        )
    assert leftovers(directory) == []


# -- object stores: no rename (pyarrow's in-memory mock:// filesystem) -----------------------------


@pytest.fixture
def no_settle(monkeypatch):
    monkeypatch.setattr(location_module, "SETTLE_SECONDS", 0.0)


def test_mock_uri_is_an_object_store_location():
    location = ArrowLocation("mock:///bucket/ck/")
    assert location.fs.type_name == "mock" and not location.renames_atomically
    assert location.uri == "mock:///bucket/ck"


class RecordingFileSystem:
    """A pyarrow filesystem seen through a proxy that records the files opened for writing and moved."""

    def __init__(self, fs):
        self.fs = fs
        self.calls = []

    def __getattr__(self, name):
        return getattr(self.fs, name)

    def open_output_stream(self, path, *args, **kwargs):
        self.calls.append(("write", path))
        return self.fs.open_output_stream(path, *args, **kwargs)

    def move(self, source, target):
        self.calls.append(("move", source, target))
        return self.fs.move(source, target)


def test_object_store_writes_go_straight_to_the_final_name():
    location = ArrowLocation("mock:///bucket/ck")
    location.fs = RecordingFileSystem(location.fs)
    location.write_json("runs/00000001/plan.json", {"version": 1, "x": [1, 2]})
    assert location.fs.calls == [("write", f"{location.path}/runs/00000001/plan.json")]  # no temporary, no rename
    assert location.read_json("runs/00000001/plan.json") == {"version": 1, "x": [1, 2]}
    assert location.names("runs/00000001") == ["plan.json"]


def test_object_store_create_exclusively(no_settle):
    location = ArrowLocation("mock:///bucket/ck")
    assert location.create_exclusively("lock.json", b"a") is True
    assert location.create_exclusively("lock.json", b"b") is False
    assert location.read_bytes("lock.json") == b"a"


def test_object_store_create_exclusively_the_last_writer_wins_and_the_others_see_they_lost(monkeypatch):
    """Every contender passes the existence check, writes, waits and reads back: exactly one sees
    its own content."""
    monkeypatch.setattr(location_module, "SETTLE_SECONDS", 0.5)
    location = ArrowLocation("mock:///bucket/ck")
    checked = threading.Barrier(8)
    original_exists = location.exists

    def exists_then_wait(name=""):
        found = original_exists(name)
        checked.wait(10)  # every contender has checked before anyone writes
        return found

    location.exists = exists_then_wait
    race_to_create(location, "lock.json", 8)


def test_a_store_and_a_lock_on_an_object_store(no_settle):
    store = CheckpointStore(ArrowLocation("mock:///bucket/ck"))
    store.write_plan(1, [PartitionPlan("t", 0, 0, 5, 0, "h:1")], {"output": "x"})
    store.commit(1, {})
    store.write_plan(2, [PartitionPlan("t", 0, 5, 9, 0, "h:1")], {})
    assert [r.number for r in store.runs()] == [1, 2] and store.pending_run().number == 2
    assert store.committed_ends() == {("t", 0): 5} and store.next_run_number() == 3
    with CheckpointLock(store.location) as lock:
        assert store.location.exists("lock.json")
        lock.check()
    assert not store.location.exists("lock.json")
    assert store.apply_retention(1) == []  # run 1 is the newest committed run
    store.commit(2, {})
    assert store.apply_retention(1) == [1] and [r.number for r in store.runs()] == [2]
    assert store.committed_ends() == {("t", 0): 9}


# -- which implementation a URI gets ----------------------------------------------------------------


def test_local_paths_get_pyarrow_and_other_schemes_hadoop(tmp_path, spark):
    from spark_kafka_source.checkpoint.hadoop_location import HadoopLocation

    assert isinstance(open_location(str(tmp_path)), ArrowLocation)
    assert isinstance(open_location(f"file://{tmp_path}"), ArrowLocation)
    with pytest.raises(CheckpointError, match='No FileSystem for scheme "nosuchscheme"'):
        open_location("nosuchscheme://x/y")
    spark.sparkContext._jsc.hadoopConfiguration().set("fs.viewfs.mounttable.which.link./ck", f"file://{tmp_path}")
    try:
        location = open_location("viewfs://which/ck")
        assert isinstance(location, HadoopLocation) and location.renames_atomically
        location.write_json("a.json", {"via": "viewfs"})
        assert json.loads((tmp_path / "a.json").read_text()) == {"via": "viewfs"}
    finally:
        spark.sparkContext._jsc.hadoopConfiguration().unset("fs.viewfs.mounttable.which.link./ck")


NO_SPARK = """
    from spark_kafka_source.checkpoint import ArrowLocation, CheckpointError, open_location
    assert isinstance(open_location("mock:///bucket/ck"), ArrowLocation)
    try:
        open_location("viewfs://cluster/ck")
    except CheckpointError as exc:
        print(exc)
"""


def test_without_a_spark_driver_other_schemes_go_to_pyarrow_and_its_error_says_why(children):
    """As in a Spark task's Python worker: no JVM to reach Hadoop's FileSystem through."""
    process = children.start(NO_SPARK)
    assert process.wait(60) == 0, children.output(process)
    line = children.output(process).strip()
    assert "\n" not in line, line
    assert line.startswith("cannot open viewfs://cluster/ck: ") and line.endswith(
        "(no Spark driver runs in this process to reach it through Hadoop's FileSystem)"
    ), line
