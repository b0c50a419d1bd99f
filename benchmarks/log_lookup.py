"""Random offset lookups and memory on a large log: sparse index + header scan, against a dense in-memory index.

The log holds ~1.3 KiB batches (10 records of 100 bytes) with Kafka's default index interval
(4096 bytes) and segment size (1 GiB). It is built, closed, and opened again as a broker start
does; then a lookup is ``PartitionLog.read(offset, 1)``: find the batch containing a random
offset (segment, sparse index, header scan) and read it. The reference does the same reads with
a perfect index: every batch's last offset in memory, a bisect, then one pread. Memory is the
process's anonymous resident memory (what the page cache cannot take back) held by the opened
log, and after the lookups.

    .venv/bin/python -m benchmarks.log_lookup [--size-mib 1024] [--lookups 20000] [--dir DIR]
"""

import argparse
import bisect
import os
import random
import tempfile
import time

from broker.log.config import LogConfig
from broker.log.partition_log import PartitionLog
from broker.records import batch
from broker.records.batch import Record

MIB = 1024 * 1024
BATCHES_PER_APPEND = 64  # one append of many batches builds the log faster; the indexes are the same


def anonymous_resident_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def build_log(directory: str, size_mib: int) -> tuple[str, list[int], list[tuple[int, int, int]]]:
    """Fill a log; return its directory, and ``(segment base offset, position, size)`` by last offset."""
    log = PartitionLog.open(os.path.join(directory, "lookup-0"), LogConfig())
    template = batch.build([Record(i, 1_700_000_000_000 + i, b"key-%d" % i, os.urandom(100)) for i in range(10)])
    records = template * BATCHES_PER_APPEND
    last_offsets, places = [], []
    while log.size_in_bytes < size_mib * MIB:
        segment = log.active_segment
        position = segment.size
        result = log.append(records)
        if log.active_segment is not segment:  # rolled: the batches went to the new segment
            segment, position = log.active_segment, 0
        for i in range(BATCHES_PER_APPEND):
            last_offsets.append(result.first_offset + 10 * i + 9)
            places.append((segment.base_offset, position + i * len(template), len(template)))
    log.close()
    return log.directory, last_offsets, places


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--lookups", type=int, default=20_000)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        started = time.perf_counter()
        log_dir, last_offsets, places = build_log(directory, args.size_mib)
        build_seconds = time.perf_counter() - started
        rng = random.Random(1)
        targets = [rng.randrange(last_offsets[-1] + 1) for _ in range(args.lookups)]

        memory_before = anonymous_resident_mib()
        started = time.perf_counter()
        log = PartitionLog.open(log_dir, LogConfig(), recovery_point=last_offsets[-1] + 1, had_clean_shutdown=True)
        open_seconds = time.perf_counter() - started
        memory_opened = anonymous_resident_mib() - memory_before

        started = time.perf_counter()
        for offset in targets:
            found = log.read(offset, 1)
            if found is None:
                raise RuntimeError(f"offset {offset} is not in the log")
            found.read()
        ours = args.lookups / (time.perf_counter() - started)
        memory_after_lookups = anonymous_resident_mib() - memory_before

        files = {segment.base_offset: segment.file for segment in log.segments}
        started = time.perf_counter()
        for offset in targets:
            base_offset, position, size = places[bisect.bisect_left(last_offsets, offset)]
            os.pread(files[base_offset].fileno(), size, position)
        reference = args.lookups / (time.perf_counter() - started)
        segments = len(log.segments)
        log.close()
    result = {
        "lookups_per_s": ours,
        "dense_index_lookups_per_s": reference,
        "ratio": ours / reference,
        "batches": len(last_offsets),
        "segments": segments,
        "build_s": build_seconds,
        "open_s": open_seconds,
        "memory_opened_mib": memory_opened,
        "memory_after_lookups_mib": memory_after_lookups,
    }
    print(
        f"random offset lookups on a {args.size_mib} MiB log ({len(last_offsets)} batches, {segments} segment(s), "
        f"built in {build_seconds:.0f}s, opened in {open_seconds:.2f}s), {args.lookups} lookups:"
    )
    print(f"  sparse index + scan (ours)     {ours:9.0f} lookups/s")
    print(f"  dense in-memory index + pread  {reference:9.0f} lookups/s")
    print(f"  ratio                          {result['ratio']:9.2f}")
    print(
        f"  anonymous memory held by the opened log: {memory_opened:.1f} MiB, "
        f"after the lookups: {memory_after_lookups:.1f} MiB"
    )
    return result


if __name__ == "__main__":
    main()
