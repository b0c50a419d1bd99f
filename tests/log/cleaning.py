"""Helpers of the cleaner tests: a compacted log filled with keyed records, cleaning it to the end,
and what a compacted log must hold (the latest record of each key, offsets unchanged)."""

import time

from broker.log.cleaner import Cleaner
from broker.log.config import LogConfig
from broker.log.log_cleaner import CleanerSettings, LogCleaner
from broker.log.partition_log import PartitionLog
from broker.records import batch
from broker.records.batch import Record
from broker.records.compression import Codec

from .util import read_all


def compacted_config(**overrides) -> LogConfig:
    settings = dict(
        cleanup_policy="compact",
        segment_bytes=4096,
        index_interval_bytes=256,
        min_cleanable_dirty_ratio=0.01,
        delete_retention_ms=10 * 365 * 86_400_000,
    )
    settings.update(overrides)
    return LogConfig(**settings)


def now_ms() -> int:
    return int(time.time() * 1000)


def fill(
    log: PartitionLog,
    batches: int,
    keys: int,
    per_batch: int = 4,
    codec: Codec = Codec.NONE,
    timestamp: int | None = None,
    tombstone_every: int = 0,
) -> list:
    """Append ``batches`` batches cycling over ``keys`` keys (value names the offset; every
    ``tombstone_every``-th record a tombstone), timestamped by default at the log's clock; return
    the records as stored."""
    appended = []
    timestamp = log.clock() if timestamp is None else timestamp
    for _ in range(batches):
        start = log.log_end_offset
        records = []
        for offset in range(start, start + per_batch):
            tombstone = tombstone_every and offset % tombstone_every == tombstone_every - 1
            records.append(
                Record(
                    offset,
                    timestamp + offset,
                    f"k{offset % keys}".encode(),
                    None if tombstone else f"v{offset}".encode(),
                    (("h", str(offset).encode()),),
                )
            )
        data = batch.build(records, base_offset=start, compression=codec)
        log.append(data)
        appended += records
    return appended


def clean_to_the_end(log: PartitionLog, directory, buffer_bytes: int = 1024 * 1024) -> int:
    """Run cleaning passes, by the log's clock, until nothing is left to clean; return the number of passes."""
    log_cleaner = LogCleaner(str(directory), lambda: [log], CleanerSettings(threads=1), log.clock)
    cleaner = Cleaner(buffer_bytes)
    passes = 0
    while log_cleaner.clean_filthiest(cleaner):
        passes += 1
        assert passes < 1000
    return passes


def latest_by_key(records: list, below: int | None = None) -> dict:
    """Each key's last record (among those below offset ``below``)."""
    latest = {}
    for record in records:
        if below is None or record.offset < below:
            latest[record.key] = record
    return latest


def assert_compacted(log: PartitionLog, appended: list, tombstones_kept: bool = True) -> list:
    """The log holds each key's latest record as appended (tombstones too, if kept), offsets in
    order and unique, nothing that was not appended; return what it holds."""
    held = read_all(log)
    offsets = [r.offset for r in held]
    assert offsets == sorted(set(offsets))
    by_offset = {r.offset: r for r in appended}
    assert all(by_offset[r.offset] == r for r in held)
    held_by_offset = {r.offset: r for r in held}
    for record in latest_by_key(appended).values():
        if record.value is not None or tombstones_kept or record.offset >= log.active_segment.base_offset:
            assert held_by_offset.get(record.offset) == record
        else:
            assert record.offset not in held_by_offset
    return held
