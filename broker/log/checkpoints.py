"""Offset checkpoint files in Kafka's text format, replaced atomically.

Format (``CheckpointFile``)::

    0                      <- version
    2                      <- number of entries
    my-topic 0 1234        <- topic, partition, offset
    my-topic 1 99

A checkpoint is written with ``broker.common.files.write_atomically``, so a crash leaves either the
old or the new file, never a mix.
"""

import logging

from broker.common.files import write_atomically

log = logging.getLogger(__name__)

RECOVERY_POINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_FILE = "log-start-offset-checkpoint"
HIGH_WATERMARK_FILE = "replication-offset-checkpoint"  # written by the replica manager
_VERSION = 0


class MalformedCheckpointError(ValueError):
    """The checkpoint file does not follow the format."""


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
