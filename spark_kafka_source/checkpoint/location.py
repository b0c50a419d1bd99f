"""A directory of a checkpoint, with writes that are never seen half done: the ``Location``
interface, its implementation through ``pyarrow.fs`` (``ArrowLocation``), and ``open_location``,
which picks the implementation for a URI.

Two implementations, one interface: ``ArrowLocation`` (here) and ``HadoopLocation``
(``hadoop_location``: Hadoop's FileSystem in the Spark driver's JVM, so core-site.xml,
``spark.hadoop.*`` settings and Kerberos apply). The rule, by scheme: a plain path or ``file://``
is local files through pyarrow (no Spark needed: a run with nothing to read, ``--history`` and
``--repair`` never start Spark, and Spark tasks can write their own checkpoints); every other
scheme (``hdfs://``, ``viewfs://``, ``s3a://``, ``abfs://``, ``gs://`` ...) goes through Hadoop's
FileSystem of the running Spark driver, so any URI Spark writes Parquet to also holds the checkpoint.
A process with no Spark driver (Spark's Python workers: a task writing its checkpoint, the source's
planning reading ``startingOffsetsFromCheckpoint``) has only pyarrow's filesystems (``hdfs://``
where libhdfs is installed, ``s3://``, ``gs://``).
A plain relative path is taken relative to the working directory.

Whole-file writes go to a temporary name and are renamed into place where rename is atomic (local
files, HDFS). On object stores an object only ever appears whole, so files are written under their
final name; every name in the checkpoint layout is written once (a retried task rewrites its own
file with the same content).
"""

import json
import os
import time
import uuid
from typing import Protocol

import pyarrow.fs as pafs

RENAMING_FILESYSTEMS = ("local", "hdfs")
LOCAL_PREFIX = "file://"
SETTLE_SECONDS = 1.0  # object stores: how long to wait before reading back a conditional write


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used as it is; the message names the file and what is wrong."""


def to_uri(path_or_uri: str) -> str:
    """A URI for a user's path: plain paths become absolute ``file://`` URIs (also for Spark, whose
    default filesystem may be HDFS). The path is not percent-encoded: Hadoop's Path encodes it
    itself, and ``Location`` opens local paths without URI parsing."""
    text = str(path_or_uri)
    if "://" in text:
        return text.rstrip("/") if not text.endswith(":///") else text
    return LOCAL_PREFIX + os.path.abspath(text)


def write_local_file(path: str, data: bytes, overwrite: bool = True) -> None:
    """Write a local file and sync it to disk; FileExistsError if it exists and not ``overwrite``."""
    with open(path, "wb" if overwrite else "xb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def is_local(path_or_uri: str) -> bool:
    """Whether a path or URI names local files (opened with pyarrow, see the module's rule)."""
    return to_uri(path_or_uri).startswith(LOCAL_PREFIX)


def open_location(path_or_uri: str) -> "Location":
    """The directory a user's path or URI names: through pyarrow for local files; for every other
    scheme through the Hadoop FileSystem of the Spark driver running in this process, or, in a
    process without one (a Spark task's or planner's Python worker), through pyarrow again."""
    if is_local(path_or_uri):
        return ArrowLocation(path_or_uri)
    from .hadoop_location import HadoopLocation, running_hadoop

    hadoop = running_hadoop()
    if hadoop is not None:
        return HadoopLocation(path_or_uri, hadoop)
    try:
        return ArrowLocation(path_or_uri)
    except CheckpointError as exc:
        raise CheckpointError(
            f"{exc} (no Spark driver runs in this process to reach it through Hadoop's FileSystem)"
        ) from None


class Location(Protocol):
    """A directory and file operations relative to it (names are relative paths, "" the directory).

    ``renames_atomically``: whole files are written to a temporary name and renamed into place, and
    exclusive creation is a rename that refuses an existing target; otherwise files are written
    under their final name and exclusive creation is create-if-absent, then read back."""

    uri: str
    path: str  # the directory's path within its filesystem
    renames_atomically: bool

    def child(self, *parts: str) -> "Location": ...

    def exists(self, name: str = "") -> bool: ...

    def names(self, name: str = "") -> list[str]:
        """The entries of a subdirectory (empty if it does not exist), sorted."""
        ...

    def modified(self, name: str) -> float | None:
        """A file's modification time (seconds since the epoch), None if it does not exist."""
        ...

    def read_bytes(self, name: str) -> bytes:
        """A whole file; FileNotFoundError if it does not exist."""
        ...

    def write_bytes(self, name: str, data: bytes) -> None:
        """Write a whole file so that no reader ever sees it partly written."""
        ...

    def create_exclusively(self, name: str, data: bytes) -> bool:
        """Create a file only if it does not exist; True if this call created it."""
        ...

    def move(self, source: str, target: str) -> None:
        """Rename a file or directory to an absent name (the target's parent is created)."""
        ...

    def delete(self, name: str) -> None:
        """Delete a file or a directory tree, if it exists."""
        ...

    def read_json(self, name: str) -> dict:
        """A JSON object; a missing, unreadable or malformed file is a CheckpointError naming it."""
        where = f"{self.uri}/{name}"
        try:
            data = self.read_bytes(name)
        except FileNotFoundError:
            raise CheckpointError(f"{where} is missing") from None
        except OSError as exc:
            raise CheckpointError(f"cannot read {where}: {exc}") from None
        try:
            value = json.loads(data)
        except ValueError as exc:
            raise CheckpointError(f"{where} is corrupt or truncated ({len(data)} bytes: {exc})") from None
        if not isinstance(value, dict):
            raise CheckpointError(f"{where} is corrupt: a JSON object was expected")
        return value

    def write_json(self, name: str, value: dict) -> None:
        self.write_bytes(name, (json.dumps(value, indent=1, sort_keys=True) + "\n").encode())


class ArrowLocation(Location):
    """A directory through pyarrow: ``fs`` and ``path``, and file operations relative to it."""

    def __init__(self, uri: str) -> None:
        self.uri = to_uri(uri)
        if self.uri.startswith(LOCAL_PREFIX):  # a local path as is: no URI decoding of "#", "%", spaces
            self.fs, self.path = pafs.LocalFileSystem(), self.uri[len(LOCAL_PREFIX) :]
        else:
            try:
                self.fs, self.path = pafs.FileSystem.from_uri(self.uri)
            except (ValueError, OSError) as exc:  # pyarrow's ArrowInvalid is a ValueError
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise CheckpointError(f"cannot open {self.uri}: {first}") from None  # libhdfs: one line a path tried
        self.path = self.path.rstrip("/") or "/"
        self.renames_atomically = self.fs.type_name in RENAMING_FILESYSTEMS

    def child(self, *parts: str) -> "ArrowLocation":
        return ArrowLocation(self.uri.rstrip("/") + "/" + "/".join(parts))

    def _full(self, name: str) -> str:
        return f"{self.path}/{name}" if name else self.path

    def _with_parent(self, name: str) -> str:
        """The full path of ``name``, its parent directory created if missing."""
        full = self._full(name)
        self.fs.create_dir(full.rsplit("/", 1)[0], recursive=True)
        return full

    def exists(self, name: str = "") -> bool:
        return self.fs.get_file_info(self._full(name)).type != pafs.FileType.NotFound

    def names(self, name: str = "") -> list[str]:
        info = self.fs.get_file_info(pafs.FileSelector(self._full(name), allow_not_found=True))
        return sorted(i.base_name for i in info)

    def modified(self, name: str) -> float | None:
        info = self.fs.get_file_info(self._full(name))
        return info.mtime.timestamp() if info.mtime else None

    def read_bytes(self, name: str) -> bytes:
        with self.fs.open_input_stream(self._full(name)) as stream:
            return stream.read()

    def write_bytes(self, name: str, data: bytes) -> None:
        full = self._with_parent(name)
        if not self.renames_atomically:
            with self.fs.open_output_stream(full) as stream:
                stream.write(data)
            return
        temporary = f"{full}.{uuid.uuid4().hex}.tmp"
        try:
            self._write_synced(temporary, data)
            self.fs.move(temporary, full)
        finally:
            self._discard(temporary)

    def _write_synced(self, full: str, data: bytes) -> None:
        if self.fs.type_name == "local":
            write_local_file(full, data)
        else:
            with self.fs.open_output_stream(full) as stream:
                stream.write(data)

    def create_exclusively(self, name: str, data: bytes) -> bool:
        """Local files: a hard link of a complete temporary file (fails if the name exists). HDFS: a
        rename (refused by HDFS when the target exists). Object stores: write if absent, wait, and
        read back; the last writer wins and every other writer sees it lost.
        """
        full = self._with_parent(name)
        if self.exists(name):
            return False
        if not self.renames_atomically:
            self.write_bytes(name, data)
            time.sleep(SETTLE_SECONDS)
            try:
                return self.read_bytes(name) == data
            except FileNotFoundError:
                return False
        temporary = f"{full}.{uuid.uuid4().hex}.tmp"
        self._write_synced(temporary, data)
        try:
            if self.fs.type_name == "local":
                os.link(temporary, full)
                return True
            self.fs.move(temporary, full)
            return self.read_bytes(name) == data
        except (FileExistsError, OSError):
            return False
        finally:
            self._discard(temporary)

    def _discard(self, full: str) -> None:
        if self.fs.get_file_info(full).type != pafs.FileType.NotFound:
            self.fs.delete_file(full)

    def move(self, source: str, target: str) -> None:
        self.fs.move(self._full(source), self._with_parent(target))

    def delete(self, name: str) -> None:
        info = self.fs.get_file_info(self._full(name))
        if info.type == pafs.FileType.Directory:
            self.fs.delete_dir(self._full(name))
        elif info.type != pafs.FileType.NotFound:
            self.fs.delete_file(self._full(name))
