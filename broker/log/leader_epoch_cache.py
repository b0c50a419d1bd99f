"""The leader epochs of one partition and the offset each started at: Kafka's ``LeaderEpochFileCache``.

Each entry ``(epoch, start_offset)`` says that the batches from ``start_offset`` on were written
by the leader of ``epoch``, up to the start of the next entry. Both columns grow strictly from
one entry to the next. Followers ask a leader where their latest epoch ends (OffsetForLeaderEpoch)
and cut their log there, so a tail that the new leader never had is removed.

The entries live in the partition directory's ``leader-epoch-checkpoint`` file, in Kafka's
checkpoint format, rewritten atomically on every change::

    0                      <- version
    2                      <- number of entries
    0 0                    <- epoch, start offset
    3 1500

Entries are added as batches are appended (``assign``), dropped from the end when the log is
truncated (``truncate_from_end``), and from the start when its log start offset moves
(``truncate_from_start``). A file that does not follow the format is logged and the cache starts
empty (the owner rebuilds it from the batches' ``partitionLeaderEpoch``).
"""

import logging
import os
import threading
from typing import NamedTuple

from broker.common.files import write_atomically

log = logging.getLogger(__name__)

CHECKPOINT_FILE = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1
_VERSION = 0


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class Truncation(NamedTuple):
    """Where a follower cuts its log; unless ``done``, it asks its leader again about ``next_epoch``."""

    offset: int
    done: bool
    next_epoch: int = UNDEFINED_EPOCH


class MalformedEpochCheckpointError(ValueError):
    """The ``leader-epoch-checkpoint`` file does not follow the format."""


def read_checkpoint(path: str) -> list[EpochEntry]:
    """The entries of a ``leader-epoch-checkpoint`` file; empty if it does not exist.
    Raises MalformedEpochCheckpointError."""
    try:
        with open(path, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
    except FileNotFoundError:
        return []
    if len(lines) < 2 or lines[0].strip() != str(_VERSION):
        raise MalformedEpochCheckpointError(f"{path}: expected version {_VERSION} and an entry count")
    try:
        count = int(lines[1])
    except ValueError:
        raise MalformedEpochCheckpointError(f"{path}: entry count {lines[1]!r} is not a number") from None
    if len(lines) - 2 != count:
        raise MalformedEpochCheckpointError(f"{path}: {count} entries expected, {len(lines) - 2} found")
    entries: list[EpochEntry] = []
    for line in lines[2:]:
        fields = line.split()
        try:
            entry = EpochEntry(int(fields[0]), int(fields[1]))
        except (IndexError, ValueError):
            raise MalformedEpochCheckpointError(f"{path}: malformed line {line!r}") from None
        if len(fields) != 2 or entry.epoch < 0 or entry.start_offset < 0:
            raise MalformedEpochCheckpointError(f"{path}: malformed line {line!r}")
        if entries and (entry.epoch <= entries[-1].epoch or entry.start_offset <= entries[-1].start_offset):
            raise MalformedEpochCheckpointError(f"{path}: entry {line!r} does not follow the one before it")
        entries.append(entry)
    return entries


def _write_checkpoint(path: str, entries: list[EpochEntry]) -> None:
    lines = [str(_VERSION), str(len(entries)), *(f"{e.epoch} {e.start_offset}" for e in entries)]
    write_atomically(path, ("\n".join(lines) + "\n").encode())


class LeaderEpochFileCache:
    """The epoch entries of the partition whose directory is ``directory``, kept in its checkpoint file."""

    def __init__(self, directory: str):
        self.path = os.path.join(directory, CHECKPOINT_FILE)
        self._lock = threading.Lock()
        self.was_missing = not os.path.exists(self.path)
        self._unwritten = False  # the entries differ from the file (its last write failed)
        try:
            self._entries = read_checkpoint(self.path)
        except MalformedEpochCheckpointError as exc:
            log.warning("ignoring %s; the epochs are rebuilt from the log", exc)
            self._entries = []
            self.was_missing = True

    @property
    def entries(self) -> list[EpochEntry]:
        """A copy of the entries, oldest first."""
        with self._lock:
            return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        """The newest epoch, or UNDEFINED_EPOCH (-1) when there is none."""
        entries = self._entries
        return entries[-1].epoch if entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (nothing to do if it is already the latest
        epoch and starts no later). Entries of this or a later epoch, or starting at or after
        ``start_offset``, are dropped first, so both columns keep growing. A negative epoch (a batch
        from before leader epochs) is ignored; a negative offset is a ValueError."""
        if epoch < 0:
            return
        if start_offset < 0:
            raise ValueError(f"epoch {epoch} cannot start at a negative offset ({start_offset})")
        with self._lock:
            latest = self._entries[-1] if self._entries else None
            if latest is not None and latest.epoch == epoch and latest.start_offset <= start_offset:
                if self._unwritten:  # the write of this very entry failed: a retried append retries it
                    self._replace(self._entries)
                return
            kept = [e for e in self._entries if e.epoch < epoch and e.start_offset < start_offset]
            if len(self._entries) - len(kept) > 1 or (latest is not None and latest.epoch > epoch):
                dropped = self._entries[len(kept) :]
                log.warning("%s: epoch %d at offset %d replaces %s", self.path, epoch, start_offset, dropped)
            self._replace(kept + [EpochEntry(epoch, start_offset)])

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(epoch, end offset)``: the largest epoch <= ``requested_epoch`` and the offset where the
        epoch after it starts (Kafka's semantics):

        * the latest epoch ends at ``log_end_offset``;
        * an epoch older than every entry ends where the first entry starts (its data is gone);
        * an undefined (-1) or newer epoch than any known: ``(-1, -1)``.
        """
        with self._lock:
            entries = self._entries
            if requested_epoch == UNDEFINED_EPOCH or not entries:
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            if requested_epoch == entries[-1].epoch:
                return requested_epoch, log_end_offset
            higher = next((i for i, e in enumerate(entries) if e.epoch > requested_epoch), None)
            if higher is None:
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            if higher == 0:
                return requested_epoch, entries[0].start_offset
            return entries[higher - 1].epoch, entries[higher].start_offset

    def truncation_for(
        self, leader_epoch: int, leader_end_offset: int, log_end_offset: int, high_watermark: int
    ) -> "Truncation":
        """Where a follower with these entries cuts its log, given its leader's OffsetForLeaderEpoch
        answer ``(leader_epoch, leader_end_offset)`` for the follower's latest epoch (Kafka's rule,
        KIP-101 and KIP-279):

        * the leader knows no such epoch (end offset -1): at the high watermark, the old rule;
        * a leader before v1 (epoch -1, end offset known): at its end offset;
        * the follower has the leader's epoch: where the earlier of the two ends it;
        * the follower's largest epoch below the leader's differs (an epoch the leader never had):
          where the follower's own epoch ends, and ask again for that epoch (``done`` False);
        * the follower has no epoch at or below the leader's: at the leader's end offset.

        Never past ``log_end_offset``."""
        if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
            return Truncation(min(high_watermark, log_end_offset), True)
        if leader_epoch == UNDEFINED_EPOCH:
            return Truncation(min(leader_end_offset, log_end_offset), True)
        epoch, end_offset = self.end_offset_for(leader_epoch, log_end_offset)
        if epoch == UNDEFINED_EPOCH:
            return Truncation(min(leader_end_offset, log_end_offset), True)
        if epoch != leader_epoch:
            return Truncation(min(end_offset, log_end_offset), False, epoch)
        return Truncation(min(leader_end_offset, end_offset, log_end_offset), True)

    def epoch_for(self, offset: int) -> int:
        """The epoch of the batch holding ``offset`` (UNDEFINED_EPOCH before the first entry)."""
        with self._lock:
            found = UNDEFINED_EPOCH
            for entry in self._entries:
                if entry.start_offset > offset:
                    break
                found = entry.epoch
            return found

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop the entries starting at or after ``end_offset`` (the log was cut there)."""
        with self._lock:
            kept = [e for e in self._entries if e.start_offset < end_offset]
            if end_offset >= 0 and len(kept) != len(self._entries):
                self._replace(kept)

    def truncate_from_start(self, start_offset: int) -> None:
        """The log now starts at ``start_offset``: drop the entries wholly before it, and make the
        first one left start there."""
        with self._lock:
            before = [e for e in self._entries if e.start_offset <= start_offset]
            if not before or before[-1].start_offset == start_offset and len(before) == 1:
                return
            after = self._entries[len(before) :]
            self._replace([EpochEntry(before[-1].epoch, start_offset), *after])

    def clear(self) -> None:
        """Drop every entry (the log was emptied and restarts at a new offset)."""
        with self._lock:
            if self._entries or not os.path.exists(self.path):
                self._replace([])

    def _replace(self, entries: list[EpochEntry]) -> None:
        """Take ``entries``, then write the file (called with the lock held). When the write fails
        (OSError, a full disk) the entries are kept: the next change writes them all."""
        self._entries = entries
        self._unwritten = True
        _write_checkpoint(self.path, entries)
        self._unwritten = False
        self.was_missing = False

    def __repr__(self) -> str:
        return f"LeaderEpochFileCache({self._entries})"
