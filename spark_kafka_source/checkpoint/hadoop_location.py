"""A checkpoint directory through Hadoop's FileSystem in the Spark driver's JVM (py4j): the same
FileSystem, configuration (core-site.xml, ``spark.hadoop.*``) and Kerberos login the SparkSession
writes Parquet with, so ``hdfs://``, ``viewfs://``, ``s3a://``, ``abfs://`` and ``gs://`` need
nothing else installed. Driver only: Spark's Python workers have no JVM to call.

Atomic commits, per scheme (Hadoop's filesystem contract):

* ``file``, ``hdfs``, ``viewfs`` (within one mount point): rename is atomic. Whole files are written
  to a temporary name and renamed over the target (``FileContext.rename`` with ``OVERWRITE``, one
  atomic operation in HDFS's NameNode); exclusive creation renames a complete temporary file without
  ``OVERWRITE``, which HDFS refuses atomically when the target exists. Hadoop's local filesystem
  does both in two steps (it deletes, or checks, then renames), so where a path resolves to local
  files (``file``, a ``viewfs`` link to ``file``) the driver uses the operating system's rename
  over the target and hard link to an absent name instead, each atomic, as for pyarrow's local files,
  and writes the files itself, as pyarrow does: without Hadoop's ``.crc`` checksum files beside them.
* every other scheme (``s3a``, ``abfs``, ``gs`` ...): files are written under their final name
  (an object appears whole when its stream closes); exclusive creation is
  ``create(path, overwrite=false)``, then a wait and a read back (the last writer wins and every
  other writer sees it lost), as on pyarrow's object stores.
"""

import os
import time
import uuid
from typing import Any, NamedTuple

from .location import SETTLE_SECONDS, CheckpointError, Location, to_uri, write_local_file

RENAMING_SCHEMES = ("file", "hdfs", "viewfs")


class Hadoop(NamedTuple):
    """The driver's JVM (py4j), its gateway and the Hadoop configuration of its SparkContext."""

    jvm: Any
    gateway: Any
    configuration: Any


def hadoop_of(spark: Any) -> Hadoop:
    """The Hadoop of a SparkSession (or SparkContext): ``spark._jsc.hadoopConfiguration()``."""
    context = getattr(spark, "sparkContext", spark)
    return Hadoop(context._jvm, context._gateway, context._jsc.hadoopConfiguration())


def running_hadoop() -> Hadoop | None:
    """The Hadoop of the Spark driver running in this process; None if there is none (a process
    without Spark, or one of Spark's Python workers)."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    return None if context is None else hadoop_of(context)


def _java_error(exc: Exception) -> OSError:
    """A Java exception as the matching Python OSError, its message on one line."""
    java = getattr(exc, "java_exception", None)
    name = java.getClass().getName() if java is not None else type(exc).__name__
    message = (java.getMessage() if java is not None else None) or str(exc).splitlines()[0]
    text = f"{name.rsplit('.', 1)[-1]}: {message}"
    if name.endswith("FileNotFoundException"):
        return FileNotFoundError(text)
    if name.endswith("FileAlreadyExistsException"):
        return FileExistsError(text)
    return OSError(text)


class HadoopLocation(Location):
    """A directory on a Hadoop FileSystem; ``fs`` is the JVM's ``org.apache.hadoop.fs.FileSystem``."""

    def __init__(self, uri: str, hadoop: Hadoop) -> None:
        from py4j.protocol import Py4JError

        self.uri = to_uri(uri)
        self.hadoop = hadoop
        self._fs_package = hadoop.jvm.org.apache.hadoop.fs
        try:
            root = self._fs_package.Path(self.uri)
            self.fs = root.getFileSystem(hadoop.configuration)
            if self._fs_package.ChecksumFileSystem._java_lang_class.isInstance(self.fs):
                self.fs = self.fs.getRawFileSystem()  # plain files, as pyarrow writes them: no .crc beside them
        except Py4JError as exc:
            raise CheckpointError(f"cannot open {self.uri}: {_java_error(exc)}") from None
        self.path = root.toUri().getPath().rstrip("/") or "/"
        self.scheme = self.fs.getUri().getScheme()
        self.renames_atomically = self.scheme in RENAMING_SCHEMES

    def child(self, *parts: str) -> "HadoopLocation":
        return HadoopLocation(self.uri.rstrip("/") + "/" + "/".join(parts), self.hadoop)

    def _path(self, name: str) -> Any:
        return self._fs_package.Path(f"{self.uri.rstrip('/')}/{name}" if name else self.uri)

    def _call(self, operation, *args):
        from py4j.protocol import Py4JJavaError

        try:
            return operation(*args)
        except Py4JJavaError as exc:
            raise _java_error(exc) from None

    def _with_parent(self, name: str) -> Any:
        path = self._path(name)
        self._call(self.fs.mkdirs, path.getParent())
        return path

    def exists(self, name: str = "") -> bool:
        return bool(self._call(self.fs.exists, self._path(name)))

    def names(self, name: str = "") -> list[str]:
        try:
            statuses = self._call(self.fs.listStatus, self._path(name))
        except FileNotFoundError:
            return []
        return sorted(str(status.getPath().getName()) for status in statuses)

    def modified(self, name: str) -> float | None:
        try:
            return self._call(self.fs.getFileStatus, self._path(name)).getModificationTime() / 1000.0
        except FileNotFoundError:
            return None

    def read_bytes(self, name: str) -> bytes:
        stream = self._call(self.fs.open, self._path(name))
        try:
            return bytes(self._call(self.hadoop.jvm.org.apache.commons.io.IOUtils.toByteArray, stream))
        finally:
            stream.close()

    def _write(self, path: Any, data: bytes, overwrite: bool = True) -> None:
        """Write a whole file (FileExistsError if it exists and not ``overwrite``) and sync it."""
        directory = self._local(path.getParent())
        if directory is not None:  # written by this process, synced, with no .crc beside it
            write_local_file(f"{directory}/{path.getName()}", data, overwrite)
            return
        stream = self._call(self.fs.create, path, overwrite)
        try:
            self._call(stream.write, bytearray(data))
            self._call(stream.hsync)  # durable where the filesystem syncs (HDFS)
        finally:
            self._call(stream.close)

    def _local(self, path: Any) -> str | None:
        """The local file a path resolves to (``file``, or a ``viewfs`` link to it), else None."""
        resolved = self._call(self.fs.resolvePath, path).toUri()
        return str(resolved.getPath()) if resolved.getScheme() == "file" else None

    def _rename(self, source: Any, target: Any, overwrite: bool) -> None:
        """Rename a file atomically: FileExistsError for an existing target unless ``overwrite``."""
        local, directory = self._local(source), self._local(target.getParent())
        if local is not None and directory is not None:
            local_target = f"{directory}/{target.getName()}"
            if overwrite:
                os.replace(local, local_target)
            else:
                os.link(local, local_target)  # the temporary file is deleted by the caller
            return
        options = self._fs_package.Options.Rename
        chosen = self.hadoop.gateway.new_array(options, 1)
        chosen[0] = options.OVERWRITE if overwrite else options.NONE
        context = self._fs_package.FileContext.getFileContext(source.toUri(), self.hadoop.configuration)
        self._call(context.rename, source, target, chosen)

    def write_bytes(self, name: str, data: bytes) -> None:
        path = self._with_parent(name)
        if not self.renames_atomically:
            self._write(path, data)
            return
        temporary = self._fs_package.Path(f"{path.toString()}.{uuid.uuid4().hex}.tmp")
        try:
            self._write(temporary, data)
            self._rename(temporary, path, overwrite=True)
        finally:
            self._call(self.fs.delete, temporary, False)

    def create_exclusively(self, name: str, data: bytes) -> bool:
        path = self._with_parent(name)
        if self.exists(name):
            return False
        if not self.renames_atomically:
            try:
                self._write(path, data, overwrite=False)
            except FileExistsError:
                return False
            time.sleep(SETTLE_SECONDS)
            try:
                return self.read_bytes(name) == data
            except FileNotFoundError:
                return False
        temporary = self._fs_package.Path(f"{path.toString()}.{uuid.uuid4().hex}.tmp")
        try:
            self._write(temporary, data)
            self._rename(temporary, path, overwrite=False)
            return True
        except FileExistsError:
            return False
        finally:
            self._call(self.fs.delete, temporary, False)

    def move(self, source: str, target: str) -> None:
        source_path, target_path = self._path(source), self._with_parent(target)
        if not self._call(self.fs.exists, source_path):
            raise FileNotFoundError(f"{self.uri}/{source} does not exist")
        if not self._call(self.fs.rename, source_path, target_path):
            raise OSError(f"{self.fs.getClass().getSimpleName()} refused to rename {source} to {target}")

    def delete(self, name: str) -> None:
        self._call(self.fs.delete, self._path(name), True)
