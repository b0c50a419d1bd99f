"""``make demo`` (interim, until the full demo load exists): write a real log and dump it.

It writes page-view-like records through the log manager into ``demo-output/log`` (several
partitions, every compression codec, small segments so the log rolls), shuts the manager down
cleanly, reopens it to show the offsets survived, and prints the first segment with dump-log.
"""

import json
import os
import random
import shutil
import sys
import time

from broker import cli
from broker.log.config import LogConfig
from broker.log.manager import LogManager
from broker.records import batch
from broker.records.batch import Record
from broker.records.compression import Codec

OUTPUT = os.path.join(os.getcwd(), "demo-output")
PAGES = ["/", "/search", "/cart", "/checkout", "/help", "/product/42", "/product/7"]
PARTITIONS = 3
BATCHES = 60
RECORDS_PER_BATCH = 50


def page_view_batch(rng: random.Random, codec: Codec, now_ms: int) -> bytes:
    records = []
    for i in range(RECORDS_PER_BATCH):
        user = f"user-{rng.randrange(1000)}"
        value = {"user": user, "page": rng.choice(PAGES), "referrer": rng.choice(PAGES + [None]),
                 "agent": "Mozilla/5.0", "ts": now_ms + i}
        records.append(Record(i, now_ms + i, user.encode(), json.dumps(value).encode()))
    return batch.build(records, compression=codec)


def main() -> int:
    log_dir = os.path.join(OUTPUT, "log")
    shutil.rmtree(OUTPUT, ignore_errors=True)
    rng = random.Random(7)
    config = LogConfig(segment_bytes=16 * 1024, index_interval_bytes=1024)
    started = time.perf_counter()
    with LogManager(log_dir, config) as manager:
        for n in range(BATCHES):
            log = manager.get_or_create_log("page-views", n % PARTITIONS)
            log.append(page_view_batch(rng, Codec(n % len(Codec)), int(time.time() * 1000)))
    with LogManager(log_dir, config) as manager:
        print(f"wrote {BATCHES * RECORDS_PER_BATCH} records in {time.perf_counter() - started:.2f}s "
              f"to {log_dir} (clean shutdown, reopened without recovery: {manager.had_clean_shutdown})")
        for log in sorted(manager.all_logs(), key=lambda lg: lg.partition):
            print(f"  {log.name}: offsets [{log.log_start_offset}, {log.log_end_offset}), "
                  f"{len(log.segments)} segment(s), {log.size_in_bytes} bytes")
    print(f"\n$ kafkalog dump-log {os.path.join(log_dir, 'page-views-0')}")
    return cli.main(["dump-log", os.path.join(log_dir, "page-views-0")])


if __name__ == "__main__":
    sys.exit(main())
