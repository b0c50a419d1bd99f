"""``kafkalog load --check-output``: try, on a load's output (and checkpoint) URI, every filesystem
operation the load needs, through the implementation the load would use (``checkpoint.location``),
and report what the filesystem offers.

The operations run in a scratch directory ``_kafkalog-check-<random>`` under the URI, deleted at the
end; nothing else there is touched. The load cannot run there when a required operation fails;
atomic rename is not required (without it, files are written under their final names and exclusive
creation is create-if-absent, see ``checkpoint.hadoop_location``), so it is reported, not judged.
"""

import uuid
from collections.abc import Callable
from typing import NamedTuple

from spark_kafka_source.checkpoint import Location, open_location
from spark_kafka_source.checkpoint.hadoop_location import HadoopLocation

SCRATCH_PREFIX = "_kafkalog-check-"


class Outcome(NamedTuple):
    operation: str
    ok: bool
    detail: str


def describe_implementation(location: Location) -> str:
    """Which code reaches the location: pyarrow, or which Hadoop FileSystem class."""
    if isinstance(location, HadoopLocation):
        return f"Hadoop's {location.fs.getClass().getName()} in the Spark driver"
    return "pyarrow (local files)"


def _steps(scratch: Location) -> list[tuple[str, Callable[[], str]]]:
    """(operation, a check returning what it found or raising what failed), in the order they run."""
    first, second = b'{"check": 1}\n', b'{"check": 2}\n'

    def expect(condition: bool, problem: str) -> None:
        if not condition:
            raise AssertionError(problem)

    def create() -> str:
        scratch.write_bytes("dir/file.json", first)
        expect(scratch.exists("dir/file.json"), "the file written does not exist")
        return "a whole file written" + (" (temporary name, then renamed)" if scratch.renames_atomically else "")

    def mkdir() -> str:
        expect("file.json" in scratch.names("dir"), "the directory made for the file does not list it")
        return "parent directories made on write"

    def read_back() -> str:
        expect(scratch.read_bytes("dir/file.json") == first, "the bytes read differ from the bytes written")
        return "the bytes written"

    def replace() -> str:
        scratch.write_bytes("dir/file.json", second)
        expect(scratch.read_bytes("dir/file.json") == second, "the old content is still read")
        return "an existing file rewritten whole"

    def create_if_absent() -> str:
        expect(scratch.create_exclusively("dir/exclusive.json", first), "creating an absent file failed")
        expect(not scratch.create_exclusively("dir/exclusive.json", second), "an existing file was created again")
        expect(scratch.read_bytes("dir/exclusive.json") == first, "the existing file was overwritten")
        return "created once, refused when present"

    def modified() -> str:
        expect(scratch.modified("dir/file.json") is not None, "no modification time")
        return "modification times (judging a stale lock)"

    def rename() -> str:
        scratch.move("dir", "moved")
        expect(scratch.exists("moved/file.json") and not scratch.exists("dir"), "the directory did not move whole")
        scratch.move("moved/file.json", "moved/renamed.json")
        expect(scratch.exists("moved/renamed.json"), "the file did not move")
        return "a directory and a file renamed to absent names"

    def listing() -> str:
        names = scratch.names("moved")
        expect(names == ["exclusive.json", "renamed.json"], f"listed {names}")
        return "directory entries"

    def delete() -> str:
        scratch.delete("moved")
        expect(not scratch.exists("moved"), "the directory still exists")
        return "a directory tree deleted"

    return [
        ("create", create),
        ("mkdir", mkdir),
        ("read back", read_back),
        ("replace", replace),
        ("create if absent", create_if_absent),
        ("modification time", modified),
        ("rename", rename),
        ("list", listing),
        ("delete", delete),
    ]


def check(uri: str) -> tuple[Location, list[Outcome]]:
    """Run the operations under ``uri``; the location checked and one outcome per operation (an
    operation after a failed one is not tried). A URI no filesystem opens is a CheckpointError."""
    location = open_location(uri)
    scratch = location.child(SCRATCH_PREFIX + uuid.uuid4().hex[:12])
    outcomes: list[Outcome] = []
    try:
        for operation, step in _steps(scratch):
            if outcomes and not outcomes[-1].ok:
                outcomes.append(Outcome(operation, False, "not tried"))
                continue
            try:
                outcomes.append(Outcome(operation, True, step()))
            except (OSError, AssertionError, RuntimeError) as exc:
                outcomes.append(Outcome(operation, False, str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
    finally:
        try:
            location.delete(scratch.uri.rsplit("/", 1)[1])
        except OSError:
            pass  # reported by the delete step already
    atomic = (
        "yes: files are written to a temporary name and renamed into place"
        if scratch.renames_atomically
        else "no: files are written under their final names, create-if-absent is checked by reading back"
    )
    outcomes.append(Outcome("atomic rename", True, atomic))
    return location, outcomes


def format_text(location: Location, outcomes: list[Outcome]) -> str:
    width = max(len(o.operation) for o in outcomes)
    lines = [f"{location.uri} through {describe_implementation(location)}:"]
    lines += [f"  {o.operation:<{width}}  {'ok    ' if o.ok else 'FAILED'}  {o.detail}" for o in outcomes]
    failed = next((o.operation for o in outcomes if not o.ok), None)
    lines.append(
        f"the load cannot keep its files here: {failed} failed"
        if failed
        else "the load can keep its output and checkpoint here"
    )
    return "\n".join(lines)
