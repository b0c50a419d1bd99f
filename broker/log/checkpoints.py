"""Offset checkpoint files in Kafka's text format, replaced atomically.

Format (``CheckpointFile``)::

    0                      <- version
    2                      <- number of entries
    my-topic 0 1234        <- topic, partition, offset
    my-topic 1 99

Writes go to ``<name>.tmp``, are fsynced, renamed over the old file, and the directory is fsynced,
so a crash leaves either the old or the new file, never a mix. A write that fails (a full disk)
removes its temporary file; one left by a crash is removed at the next start.
"""

import contextlib
import logging
import os

log = logging.getLogger(__name__)

RECOVERY_POINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_FILE = "log-start-offset-checkpoint"
TEMP_SUFFIX = ".tmp"
_VERSION = 0


class MalformedCheckpointError(ValueError):
    """The checkpoint file does not follow the format."""


def fsync_directory(path: str) -> None:
    """Make renames and file creations in a directory durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: str, data: bytes, private: bool = False) -> None:
    """Replace ``path`` with ``data``: temporary file, fsync, rename, fsync the directory. A
    ``private`` file (secrets) is readable and writable by its owner only (0600)."""
    tmp = path + TEMP_SUFFIX
    try:
        with open(tmp, "wb") as f:
            if private:
                os.fchmod(f.fileno(), 0o600)  # before the first byte is written
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        _remove_if_present(tmp)
        raise
    fsync_directory(os.path.dirname(os.path.abspath(path)))


def remove_stale_temporaries(directory: str) -> list[str]:
    """Remove the ``*.tmp`` files a crash left in ``directory`` (never a committed file); return their names."""
    stale = sorted(name for name in os.listdir(directory)
                   if name.endswith(TEMP_SUFFIX) and os.path.isfile(os.path.join(directory, name)))
    for name in stale:
        _remove_if_present(os.path.join(directory, name))
    return stale


def _remove_if_present(path: str) -> None:
    with contextlib.suppress(OSError):  # never hides the error that made the caller clean up
        os.unlink(path)


def write(path: str, offsets: dict[tuple[str, int], int]) -> None:
    lines = [str(_VERSION), str(len(offsets))]
    lines += [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())]
    write_atomically(path, ("\n".join(lines) + "\n").encode())


def read(path: str) -> dict[tuple[str, int], int]:
    """The entries of a checkpoint file; empty if it does not exist. Raises MalformedCheckpointError."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return {}
    lines = text.splitlines()
    if len(lines) < 2 or lines[0].strip() != str(_VERSION):
        raise MalformedCheckpointError(f"{path}: expected version {_VERSION} and an entry count")
    try:
        count = int(lines[1])
    except ValueError:
        raise MalformedCheckpointError(f"{path}: entry count {lines[1]!r} is not a number") from None
    entries = lines[2:]
    if len(entries) != count:
        raise MalformedCheckpointError(f"{path}: {count} entries expected, {len(entries)} found")
    offsets = {}
    for line in entries:
        fields = line.split(" ")
        if len(fields) != 3:
            raise MalformedCheckpointError(f"{path}: malformed line {line!r}")
        try:
            offsets[(fields[0], int(fields[1]))] = int(fields[2])
        except ValueError:
            raise MalformedCheckpointError(f"{path}: malformed line {line!r}") from None
    return offsets


def read_or_empty(path: str) -> dict[tuple[str, int], int]:
    """Like ``read``, but a malformed file is logged and treated as empty (which is always safe:
    recovery then checks every segment, and the log start offset falls back to the first segment)."""
    try:
        return read(path)
    except MalformedCheckpointError as exc:
        log.warning("ignoring %s", exc)
        return {}
