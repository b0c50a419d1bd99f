"""A directory on a Hadoop-compatible filesystem, through ``pyarrow.fs``, with writes that are
never seen half done.

URIs: a plain path or ``file://`` (local files, the default), ``hdfs://`` (pyarrow's
HadoopFileSystem, where libhdfs is installed), and the object stores pyarrow supports (``s3://``,
``gs://``, ``abfs://`` ...). A plain relative path is taken relative to the working directory.

Whole-file writes go to a temporary name and are renamed into place where rename is atomic (local
files, HDFS). On object stores an object only ever appears whole, so files are written under their
final name; every name in the checkpoint layout is written once (a retried task rewrites its own
file with the same content).
"""

import json
import os
import time
import uuid

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


class Location:
    """A directory: ``fs`` and ``path`` from pyarrow, and file operations relative to it."""

    def __init__(self, uri: str) -> None:
        self.uri = to_uri(uri)
        if self.uri.startswith(LOCAL_PREFIX):  # a local path as is: no URI decoding of "#", "%", spaces
            self.fs, self.path = pafs.LocalFileSystem(), self.uri[len(LOCAL_PREFIX) :]
        else:
            try:
                self.fs, self.path = pafs.FileSystem.from_uri(self.uri)
            except (ValueError, OSError) as exc:  # pyarrow's ArrowInvalid is a ValueError
                raise CheckpointError(f"cannot open {self.uri}: {exc}") from None
        self.path = self.path.rstrip("/") or "/"
        self.renames_atomically = self.fs.type_name in RENAMING_FILESYSTEMS

    def child(self, *parts: str) -> "Location":
        return Location(self.uri.rstrip("/") + "/" + "/".join(parts))

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
        """The entries of a subdirectory (empty if it does not exist), sorted."""
        info = self.fs.get_file_info(pafs.FileSelector(self._full(name), allow_not_found=True))
        return sorted(i.base_name for i in info)

    def read_bytes(self, name: str) -> bytes:
        with self.fs.open_input_stream(self._full(name)) as stream:
            return stream.read()

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

    def write_bytes(self, name: str, data: bytes) -> None:
        """Write a whole file so that no reader ever sees it partly written."""
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
            with open(full, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        else:
            with self.fs.open_output_stream(full) as stream:
                stream.write(data)

    def create_exclusively(self, name: str, data: bytes) -> bool:
        """Create a file only if it does not exist; True if this call created it.

        Local files: a hard link of a complete temporary file (fails if the name exists). HDFS: a
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
        """Rename a file or directory (atomic on local files and HDFS)."""
        self.fs.move(self._full(source), self._with_parent(target))

    def delete(self, name: str) -> None:
        """Delete a file or a directory tree, if it exists."""
        info = self.fs.get_file_info(self._full(name))
        if info.type == pafs.FileType.Directory:
            self.fs.delete_dir(self._full(name))
        elif info.type != pafs.FileType.NotFound:
            self.fs.delete_file(self._full(name))
