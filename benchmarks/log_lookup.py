"""Random offset lookups on a 1 GiB log: sparse index + header scan, against a dense in-memory index.

The log holds ~1.3 KiB batches (10 records of 100 bytes) with Kafka's default index interval
(4096 bytes). A lookup is ``PartitionLog.read(offset, 1)``: find the batch containing a random
offset (segment, sparse index, header scan) and read it. The reference does the same reads with
a perfect index: every batch's last offset in memory, a bisect, then one pread.

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


def build_log(directory: str, size_mib: int):
    log = PartitionLog.open(os.path.join(directory, "lookup-0"), LogConfig())
    template = batch.build([Record(i, 1_700_000_000_000 + i, b"key-%d" % i, os.urandom(100)) for i in range(10)])
    last_offsets, places = [], []
    while log.size_in_bytes < size_mib * MIB:
        segment = log.active_segment
        position = segment.size
        result = log.append(template)
        if log.active_segment is not segment:  # rolled: the batch went to the new segment
            segment, position = log.active_segment, 0
        last_offsets.append(result.last_offset)
        places.append((segment.file.fileno(), position, len(template)))
    return log, last_offsets, places


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--lookups", type=int, default=20_000)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir) as directory:
        started = time.perf_counter()
        log, last_offsets, places = build_log(directory, args.size_mib)
        build_seconds = time.perf_counter() - started
        rng = random.Random(1)
        targets = [rng.randrange(log.log_end_offset) for _ in range(args.lookups)]

        started = time.perf_counter()
        for offset in targets:
            found = log.read(offset, 1)
            found.read()
        ours = args.lookups / (time.perf_counter() - started)

        started = time.perf_counter()
        for offset in targets:
            fd, position, size = places[bisect.bisect_left(last_offsets, offset)]
            os.pread(fd, size, position)
        reference = args.lookups / (time.perf_counter() - started)
        log.close()
    result = {"lookups_per_s": ours, "dense_index_lookups_per_s": reference, "ratio": ours / reference,
              "batches": len(last_offsets), "segments": len(log.segments), "build_s": build_seconds}
    print(f"random offset lookups on a {args.size_mib} MiB log ({len(last_offsets)} batches, "
          f"built in {build_seconds:.0f}s), {args.lookups} lookups:")
    print(f"  sparse index + scan (ours)     {ours:9.0f} lookups/s")
    print(f"  dense in-memory index + pread  {reference:9.0f} lookups/s")
    print(f"  ratio                          {result['ratio']:9.2f}")
    return result


if __name__ == "__main__":
    main()
