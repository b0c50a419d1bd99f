"""Opening a partition directory: clean-up, loading segments, and recovery after an unclean stop.

The steps follow Kafka's ``LogLoader``:

1. Delete temporary, ``.cleaned`` and ``.deleted`` files, and index files whose ``.log`` is gone.
   Finish a cleaner's swap that a crash interrupted: a ``.log.swap`` file is a cleaned segment
   that was complete on disk before any segment it replaces was touched, so the segments whose
   base offsets fall in its range are deleted and it takes their place (its indexes rebuilt).
2. Open the segments in offset order. A segment whose indexes are missing, fail their sanity
   check, or do not match its ``.log`` is recovered (rebuilt from the ``.log``).
3. After an unclean stop, recover every segment from the one holding the recovery point on:
   check each entry's size and CRC, truncate at the first invalid one, and delete all later
   segments once a segment had to be truncated.
4. If the data ends below the checkpointed log start offset (files removed by hand), start an
   empty log there. If no segment is left, create an empty one at the log start offset.
"""

import logging
import os
from typing import NamedTuple

from broker.common.clock import Clock
from broker.common.files import TEMP_SUFFIX, fsync_directory

from .config import LogConfig
from .errors import CorruptIndexError, InvalidEntryError
from .segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    filename_prefix,
)
from .transaction_index import TXN_INDEX_SUFFIX

log = logging.getLogger(__name__)

_DISPOSABLE_SUFFIXES = (
    TEMP_SUFFIX,
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX + SWAP_SUFFIX,
    TIME_INDEX_SUFFIX + SWAP_SUFFIX,
)


class LoadedLog(NamedTuple):
    segments: list[LogSegment]
    log_start_offset: int
    recovery_point: int
    had_clean_shutdown: bool


def load(
    directory: str,
    config: LogConfig,
    recovery_point: int,
    log_start_offset: int,
    had_clean_shutdown: bool,
    clock: Clock,
) -> LoadedLog:
    """``clock`` stamps the segments opened (their ``created_ms``)."""
    _clean_directory(directory)
    _finish_swaps(directory, config, clock)
    bases = _clean_directory(directory)
    segments = [_new_segment(directory, base, config, clock) for base in bases]
    first_unflushed = _index_of_segment_holding(bases, recovery_point)
    for i, segment in enumerate(segments):
        needs_recovery = not had_clean_shutdown and i >= first_unflushed
        if not needs_recovery:
            try:
                segment.load()
            except (CorruptIndexError, InvalidEntryError) as exc:
                log.warning("%s: rebuilding the indexes of segment %d (%s)", directory, segment.base_offset, exc)
                needs_recovery = True
        if needs_recovery and segment.recover() > 0:
            later = segments[i + 1 :]
            log.warning(
                "%s: corruption found in segment %d; truncated it at byte %d and deleted %d later segment(s)",
                directory,
                segment.base_offset,
                segment.size,
                len(later),
            )
            for dropped in later:
                dropped.delete()
            del segments[i + 1 :]
            break

    log_end_offset = segments[-1].next_offset if segments else log_start_offset
    if segments and log_end_offset < log_start_offset:
        log.warning(
            "%s: the log ends at %d, below its log start offset %d; starting it empty",
            directory,
            log_end_offset,
            log_start_offset,
        )
        for segment in segments:
            segment.delete()
        segments = []
    if not segments:
        segments = [
            LogSegment.create(
                directory, log_start_offset, config.index_interval_bytes, config.segment_index_bytes, clock=clock
            )
        ]
    log_start_offset = max(log_start_offset, segments[0].base_offset)
    log_end_offset = segments[-1].next_offset
    recovery_point = log_end_offset if had_clean_shutdown else min(recovery_point, log_end_offset)
    return LoadedLog(segments, log_start_offset, recovery_point, had_clean_shutdown)


def _new_segment(directory: str, base: int, config: LogConfig, clock: Clock) -> LogSegment:
    return LogSegment(directory, base, config.index_interval_bytes, config.segment_index_bytes, clock=clock)


def _clean_directory(directory: str) -> list[int]:
    """Remove leftovers; return the base offsets of the ``.log`` files, ascending."""
    names = os.listdir(directory)
    for name in names:
        if name.endswith(_DISPOSABLE_SUFFIXES):
            os.unlink(os.path.join(directory, name))
    bases = sorted(int(name[: -len(LOG_SUFFIX)]) for name in names if _is_segment_file(name, LOG_SUFFIX))
    present = set(bases)
    for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
        for name in names:
            if _is_segment_file(name, suffix) and int(name[: -len(suffix)]) not in present:
                log.info("%s: deleting orphan index %s", directory, name)
                os.unlink(os.path.join(directory, name))
    return bases


def _finish_swaps(directory: str, config: LogConfig, clock: Clock) -> None:
    """Put every ``.log.swap`` segment in place of the segments it was cleaned from."""
    swaps = sorted(
        int(name[: -len(LOG_SUFFIX + SWAP_SUFFIX)])
        for name in os.listdir(directory)
        if _is_segment_file(name, LOG_SUFFIX + SWAP_SUFFIX)
    )
    for base in swaps:
        swap = LogSegment(directory, base, config.index_interval_bytes, config.segment_index_bytes, SWAP_SUFFIX, clock)
        try:
            swap.recover()
            replaced = [other for other in _segment_bases(directory) if base < other < swap.next_offset]
            for other in replaced:
                for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                    _unlink_if_present(os.path.join(directory, filename_prefix(other) + suffix))
            swap.close()
            swap.change_suffix("")  # replaces the segment at the same base offset, if any
        finally:
            swap.discard()
        fsync_directory(directory)
        log.warning(
            "%s: finished the swap of cleaned segment %d interrupted by a crash (it replaces %d other segment(s))",
            directory,
            base,
            len(replaced),
        )


def _segment_bases(directory: str) -> list[int]:
    return sorted(int(name[: -len(LOG_SUFFIX)]) for name in os.listdir(directory) if _is_segment_file(name, LOG_SUFFIX))


def _unlink_if_present(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _is_segment_file(name: str, suffix: str) -> bool:
    stem = name[: -len(suffix)]
    return name.endswith(suffix) and len(stem) == 20 and stem.isdigit()


def _index_of_segment_holding(bases: list[int], offset: int) -> int:
    """Index of the last segment whose base offset is <= ``offset`` (0 if none)."""
    index = 0
    for i, base in enumerate(bases):
        if base <= offset:
            index = i
    return index
