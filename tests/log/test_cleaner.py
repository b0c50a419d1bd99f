"""The log cleaner on one log, in process: Kafka's cleaner checklist (after LogCleanerTest)."""

import json
import os
import random
import struct
import threading

import pytest

from broker import cli
from broker.common.settings import ConfigError
from broker.log.checkpoints import read as read_checkpoint
from broker.log.cleaner import Cleaner, CleaningAborted
from broker.log.cleaner_manager import CHECKPOINT_FILE
from broker.log.config import LogConfig
from broker.log.errors import InvalidRecordError
from broker.log.log_cleaner import CleanerSettings, LogCleaner
from broker.log.manager import LogManager
from broker.log.partition_log import PartitionLog
from broker.log.scheduler import Scheduler
from broker.log.segment import LogSegment
from broker.records import batch, record_set
from broker.records.batch import Record
from broker.records.compression import Codec
from tests.clock import FakeClock
from tests.waiting import wait_for

from .cleaning import assert_compacted, clean_to_the_end, compacted_config, fill, now_ms
from .util import files_in, read_all


def open_log(directory, config=None, clock=None) -> PartitionLog:
    if clock is None:
        return PartitionLog.open(str(directory / "topic-0"), config or compacted_config())
    return PartitionLog.open(str(directory / "topic-0"), config or compacted_config(), clock=clock)


def test_keeps_the_latest_record_of_each_key_with_its_offset_timestamp_and_headers(tmp_path):
    log = open_log(tmp_path)
    appended = fill(log, 200, keys=10)
    active_before = (log.active_segment.base_offset, log.active_segment.size)
    size_before = log.size_in_bytes
    assert clean_to_the_end(log, tmp_path) >= 1
    held = assert_compacted(log, appended)
    assert (log.active_segment.base_offset, log.active_segment.size) == active_before  # untouched
    assert log.log_end_offset == 800 and log.log_start_offset == 0
    below_active = [r for r in held if r.offset < log.active_segment.base_offset]
    assert len({r.key for r in below_active}) == len(below_active) <= 10
    assert log.size_in_bytes < size_before / 5
    # the first dirty offset is checkpointed in Kafka's format
    assert read_checkpoint(str(tmp_path / CHECKPOINT_FILE)) == {("topic", 0): log.active_segment.base_offset}


def test_a_reopened_cleaned_log_reads_the_same_and_appends_go_on(tmp_path):
    log = open_log(tmp_path)
    appended = fill(log, 100, keys=7)
    clean_to_the_end(log, tmp_path)
    held = read_all(log)
    log.close()
    for clean_shutdown in (True, False):
        reopened = PartitionLog.open(str(tmp_path / "topic-0"), compacted_config(), had_clean_shutdown=clean_shutdown)
        assert read_all(reopened) == held
        reopened.close()
    reopened = open_log(tmp_path)
    appended += fill(reopened, 50, keys=7)
    clean_to_the_end(reopened, tmp_path)
    assert_compacted(reopened, appended)


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.LZ4, Codec.ZSTD, Codec.SNAPPY])
def test_compressed_batches_stay_compressed_with_their_codec(tmp_path, codec):
    log = open_log(tmp_path)
    appended = fill(log, 100, keys=5, codec=codec)
    clean_to_the_end(log, tmp_path)
    assert_compacted(log, appended)
    for segment in log.segments:
        with open(segment.log_path, "rb") as f:
            headers = [header for _, header in record_set.iter_entries(f.read())]
        for header in headers:
            assert header.compression == codec


def test_tombstones_stay_for_delete_retention_then_go(tmp_path):
    log = open_log(tmp_path)
    appended = fill(log, 100, keys=6, tombstone_every=5)
    clean_to_the_end(log, tmp_path)
    held = assert_compacted(log, appended, tombstones_kept=True)
    assert any(r.value is None for r in held if r.offset < log.active_segment.base_offset)

    clock = FakeClock()
    old = open_log(tmp_path / "old", compacted_config(delete_retention_ms=60_000), clock)
    appended = fill(old, 100, keys=6, tombstone_every=5)
    clean_to_the_end(old, tmp_path / "old")
    assert any(r.value is None for r in read_all(old) if r.offset < old.active_segment.base_offset)
    clock.advance(3_600_000)  # an hour later, new records in a segment of their own make the log dirty again
    old.roll()
    appended += fill(old, 1, keys=6)
    old.roll()
    clean_to_the_end(old, tmp_path / "old")
    held = assert_compacted(old, appended, tombstones_kept=False)
    assert not any(r.value is None for r in held if r.offset < old.active_segment.base_offset)


def test_a_small_key_map_cleans_in_several_passes_to_the_same_result(tmp_path):
    big = open_log(tmp_path / "big")
    small = open_log(tmp_path / "small")
    start = now_ms()
    appended = fill(big, 300, keys=400, timestamp=start)
    fill(small, 300, keys=400, timestamp=start)
    assert clean_to_the_end(big, tmp_path / "big", buffer_bytes=10**8) == 1
    assert clean_to_the_end(small, tmp_path / "small", buffer_bytes=50_000) > 3  # ~280 keys a pass
    assert read_all(small) == read_all(big) == assert_compacted(big, appended)


def test_segments_emptied_by_cleaning_are_merged_away(tmp_path):
    log = open_log(tmp_path, compacted_config(segment_bytes=2048))
    fill(log, 300, keys=3)
    segments_before = len(log.segments)
    clean_to_the_end(log, tmp_path)
    fill(log, 5, keys=3)
    log.roll()
    clean_to_the_end(log, tmp_path)
    assert segments_before > 20 and len(log.segments) <= 3
    assert len(files_in(log.directory, ".log")) == len(log.segments)


def test_min_compaction_lag_leaves_recent_segments_dirty(tmp_path):
    clock = FakeClock()
    log = open_log(tmp_path, compacted_config(min_compaction_lag_ms=3_600_000), clock)
    appended = fill(log, 50, keys=3)
    clock.advance(7_200_000)
    log.roll()
    first_recent = log.log_end_offset
    appended += fill(log, 50, keys=3)
    clean_to_the_end(log, tmp_path)
    held = read_all(log)
    assert [r for r in held if r.offset >= first_recent] == [r for r in appended if r.offset >= first_recent]
    assert len([r for r in held if r.offset < first_recent]) < 10
    clock.advance(7_200_000)  # the recent records are now past the lag too
    log.roll()
    clean_to_the_end(log, tmp_path)
    assert_compacted(log, appended)
    assert len(read_all(log)) < 10


def test_a_read_in_progress_during_cleaning_keeps_its_bytes(tmp_path):
    log = open_log(tmp_path)
    appended = fill(log, 100, keys=4)
    held_slices = [log.read(offset, 10**6) for offset in (0, 100, 200)]
    expected = [s.read() for s in held_slices]
    clean_to_the_end(log, tmp_path)
    assert [s.read() for s in held_slices] == expected  # the old files stay open for their readers
    decoded = [r for data in expected for b in record_set.iter_batches(data) for r in b.records]
    assert all(r in appended for r in decoded)
    assert_compacted(log, appended)


def test_reads_from_any_offset_in_a_gap_start_at_the_next_kept_record(tmp_path):
    log = open_log(tmp_path)
    fill(log, 100, keys=4)
    clean_to_the_end(log, tmp_path)
    kept = [r.offset for r in read_all(log)]
    for offset in range(0, log.log_end_offset, 7):
        found = log.read(offset, 10**6)
        first = next(r.offset for b in record_set.iter_batches(found.read()) for r in b.records if r.offset >= offset)
        assert first == min(k for k in kept if k >= offset)


def test_a_compacted_log_refuses_records_without_a_key(tmp_path):
    log = open_log(tmp_path)
    keyless = batch.build([Record(0, now_ms(), b"k", b"v"), Record(1, now_ms(), None, b"v")])
    with pytest.raises(InvalidRecordError, match="without a key") as refused:
        log.append(keyless)
    assert refused.value.record_indexes == (1,) and log.log_end_offset == 0
    many = batch.build([Record(i, now_ms(), None if i % 2 else b"k", b"v") for i in range(10)])
    with pytest.raises(InvalidRecordError, match=r"\(records 1, 3, 5 and 2 more\)") as refused:
        log.append(many)  # every keyless record is named, as Kafka does, in a bounded message
    assert refused.value.record_indexes == (1, 3, 5, 7, 9) and log.log_end_offset == 0
    delete_log = PartitionLog.open(str(tmp_path / "plain-0"), LogConfig())
    delete_log.append(keyless)  # a delete-only topic takes them


def test_cleanup_policy_values():
    assert LogConfig.from_properties({"cleanup.policy": "delete, compact"}).cleanup_policy == "compact,delete"
    assert LogConfig.from_properties({"cleanup.policy": "compact"}).compacted
    assert not LogConfig.from_properties({"cleanup.policy": "compact"}).deletes
    with pytest.raises(ConfigError, match="cleanup.policy: 'shred' is not a list of delete and compact"):
        LogConfig.from_properties({"cleanup.policy": "shred"})


def test_compact_only_topics_are_not_shortened_by_retention(tmp_path):
    log = open_log(tmp_path, compacted_config(retention_ms=1, retention_bytes=100))
    fill(log, 50, keys=50, timestamp=now_ms() - 3_600_000)
    assert log.delete_retained_segments() == 0
    log.update_config(compacted_config(cleanup_policy="compact,delete", retention_ms=1))
    assert log.delete_retained_segments() > 0


def test_an_aborted_pass_leaves_the_log_as_it_was_and_no_file_behind(tmp_path):
    log = open_log(tmp_path)
    fill(log, 100, keys=4)
    before = read_all(log)
    cleaner = Cleaner(10**6, should_abort=lambda _: True)
    with pytest.raises(CleaningAborted):
        cleaner.clean(log, 0, log.active_segment.base_offset, now_ms())
    assert read_all(log) == before
    assert not [n for n in os.listdir(log.directory) if n.endswith((".cleaned", ".swap"))]


def test_dump_log_reads_cleaned_segments_with_their_gaps(tmp_path, capsys):
    log = open_log(tmp_path)
    appended = fill(log, 100, keys=4, codec=Codec.LZ4)
    clean_to_the_end(log, tmp_path)
    held = read_all(log)
    log.close()
    assert cli.main(["dump-log", "--json", "--records", log.directory]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    batches = [line for line in lines if "baseOffset" in line]
    assert (
        [r["offset"] for b in batches for r in b["records"]] == [r.offset for r in held] != [r.offset for r in appended]
    )
    assert all(b["crcValid"] and b["count"] <= b["lastOffset"] - b["baseOffset"] + 1 for b in batches)
    assert lines[-1]["summary"]["invalid"] == []


def test_the_log_managers_cleaner_threads_clean_every_compacted_log_and_stop_for_a_deleted_one(tmp_path):
    config = compacted_config()
    manager = LogManager(
        str(tmp_path),
        config,
        topic_config=lambda topic: config if topic != "plain" else LogConfig(),
        cleaner_settings=CleanerSettings(threads=2, backoff_ms=10),
    ).open()
    try:
        logs = {name: manager.get_or_create_log(name, 0) for name in ("a", "b", "plain", "doomed")}
        appended = {name: fill(log, 100, keys=5) for name, log in logs.items() if name != "plain"}
        plain_before = read_all(logs["plain"]) + fill(logs["plain"], 100, keys=5)
        checkpoint = str(tmp_path / CHECKPOINT_FILE)

        def cleaned(name):
            return os.path.exists(checkpoint) and read_checkpoint(checkpoint).get((name, 0), 0) > 0

        wait_for(lambda: cleaned("a") and cleaned("b"), 30, what="the cleaner threads cleaning a-0 and b-0")
        for name in ("a", "b"):
            assert_compacted(logs[name], appended[name])
        assert read_all(logs["plain"]) == plain_before  # cleanup.policy=delete: never cleaned
        manager.delete_log("doomed", 0)  # waits for a pass in progress to stop, forgets its checkpoint
        assert ("doomed", 0) not in read_checkpoint(checkpoint)
    finally:
        manager.shutdown()


def test_control_batches_are_kept_whole_and_transactional_batches_keep_their_producer_fields(tmp_path):
    """A partition as Kafka's transactions leave it (a log copied from Kafka: this broker takes no
    control batches from clients): markers stay, data batches are cleaned like any other."""
    directory = tmp_path / "txn-0"
    directory.mkdir()
    segment = LogSegment.create(str(directory), 0, index_interval_bytes=1, max_index_bytes=10_000)
    now = now_ms()
    entries = []
    for round_ in range(3):
        base = round_ * 3
        entries.append(
            batch.build(
                [Record(base + i, now, b"k%d" % i, b"r%d" % round_) for i in range(2)],
                base_offset=base,
                producer_id=9,
                producer_epoch=1,
                base_sequence=base,
                is_transactional=True,
            )
        )
        key, value = batch.control_record(batch.ControlType.COMMIT)
        entries.append(
            batch.build(
                [Record(base + 2, now, key, value)],
                base_offset=base + 2,
                producer_id=9,
                producer_epoch=1,
                is_transactional=True,
                is_control=True,
            )
        )
    for entry in entries:
        segment.append([(batch.parse_header(entry), [entry])])
    segment.close()
    log = PartitionLog.open(str(directory), compacted_config(), recovery_point=0)
    log.roll()
    clean_to_the_end(log, tmp_path)
    with open(log.segments[0].log_path, "rb") as f:
        stored = [(batch.parse_header(entry), entry) for entry in _entries(f.read())]
    controls = [h for h, _ in stored if h.is_control]
    assert [h.base_offset for h in controls] == [2, 5, 8]  # every marker kept
    data = [(h, batch.decode(e).records) for h, e in stored if not h.is_control]
    assert [[r.offset for r in records] for _, records in data] == [[6, 7]]  # the last values of k0, k1
    assert all(h.is_transactional and (h.producer_id, h.producer_epoch, h.base_sequence) == (9, 1, 6) for h, _ in data)


def _entries(data: bytes) -> list:
    return [data[position : position + header.size] for position, header in record_set.iter_entries(data)]


def test_a_corrupt_batch_leaves_the_log_uncleaned_and_alone_until_a_restart(tmp_path, caplog):
    log = open_log(tmp_path)
    fill(log, 100, keys=4)
    first = log.segments[0]
    with open(first.log_path, "r+b") as f:  # a record length running past its batch, CRC made to match
        data = bytearray(f.read(first.size))
        header = batch.parse_header(data)
        data[batch.HEADER_SIZE] = 0x7E
        struct.pack_into(">I", data, batch.MAGIC_OFFSET + 1, batch.compute_crc(data[: header.size]))
        f.seek(0)
        f.write(data)
    before = [_file_bytes(segment.log_path) for segment in log.segments]
    assert clean_to_the_end(log, tmp_path) == 0  # the pass fails
    assert "is not cleaned again until the broker restarts" in caplog.text
    assert [_file_bytes(segment.log_path) for segment in log.segments] == before
    log_cleaner = LogCleaner(str(tmp_path), lambda: [log])
    log_cleaner.manager.mark_uncleanable(log)
    assert log_cleaner.manager.grab_filthiest(now_ms()) is None


def _file_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def test_reads_and_appends_go_on_while_the_log_is_cleaned(tmp_path):
    """A reader from random offsets and a writer run on their own threads through every pass:
    each read gets whole valid batches of records that were appended, and the appends all land."""
    scheduler = Scheduler()  # replaced segments are deleted after file.delete.delay.ms, as in the broker
    log = PartitionLog.open(str(tmp_path / "topic-0"), compacted_config(file_delete_delay_ms=2000), scheduler=scheduler)
    appended = fill(log, 200, keys=8)
    stop = threading.Event()
    problems, reads = [], [0]
    by_offset = {r.offset: r for r in appended}
    appended_lock = threading.Lock()

    def read_forever():
        rng = random.Random(0)
        while not stop.is_set():
            offset = rng.randrange(0, log.log_end_offset)
            try:
                data = log.read(offset, 8192).read()
            except Exception as exc:  # noqa: BLE001 - any failure of a read is what this test looks for
                problems.append(exc)
                return
            with appended_lock:
                known = dict(by_offset)
            for decoded in record_set.iter_batches(data):
                problems.extend(r for r in decoded.records if known.get(r.offset, r) != r)
            reads[0] += 1

    def append_for_a_while():
        for _ in range(300):
            new = fill(log, 1, keys=8)
            with appended_lock:
                appended.extend(new)
                by_offset.update((r.offset, r) for r in new)

    threads = [threading.Thread(target=read_forever), threading.Thread(target=append_for_a_while)]
    for thread in threads:
        thread.start()
    log_cleaner, cleaner = LogCleaner(str(tmp_path), lambda: [log]), Cleaner(10**6)
    try:
        passes = sum(log_cleaner.clean_filthiest(cleaner) for _ in range(10))
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
        scheduler.shutdown()
    assert not problems and reads[0] > 0 and passes > 0
    clean_to_the_end(log, tmp_path)
    assert_compacted(log, appended)


def test_log_cleaner_enable_false_starts_no_cleaner_thread(tmp_path):
    manager = LogManager(str(tmp_path), compacted_config(), cleaner_settings=CleanerSettings(enable=False)).open()
    try:
        assert not [t for t in threading.enumerate() if t.name.startswith("log-cleaner-")]
    finally:
        manager.shutdown()


@pytest.mark.parametrize("age_ms, cleaned", [(7_200_000, True), (0, False)])
def test_max_compaction_lag_cleans_a_log_below_the_dirty_ratio(tmp_path, age_ms, cleaned):
    clock = FakeClock()
    log = open_log(tmp_path, compacted_config(min_cleanable_dirty_ratio=1.0, max_compaction_lag_ms=3_600_000), clock)
    fill(log, 100, keys=50)
    log.roll()
    assert clean_to_the_end(log, tmp_path) == 1  # all dirty: ratio 1.0
    fill(log, 20, keys=50)
    log.roll()
    clock.advance(age_ms)
    found = LogCleaner(str(tmp_path), lambda: [log], clock=clock).manager.grab_filthiest(clock())
    assert (found is not None) == cleaned


def test_a_truncation_moves_the_cleaners_checkpoint_down_to_the_active_segment(tmp_path):
    manager = LogManager(str(tmp_path), compacted_config(), cleaner_settings=CleanerSettings(backoff_ms=10)).open()
    try:
        log = manager.get_or_create_log("t", 0)
        fill(log, 200, keys=5)
        checkpoint = str(tmp_path / CHECKPOINT_FILE)
        wait_for(
            lambda: os.path.exists(checkpoint) and read_checkpoint(checkpoint).get(("t", 0), 0) > 0,
            30,
            what="the cleaner cleaning t-0",
        )
        first_dirty = read_checkpoint(checkpoint)[("t", 0)]
        log.truncate_to(first_dirty - 1)
        assert read_checkpoint(checkpoint)[("t", 0)] == log.active_segment.base_offset < first_dirty
    finally:
        manager.shutdown()
