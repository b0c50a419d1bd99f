"""Cleaning throughput of a compacted log against reading the same bytes, side by side.

One log of ``--total-mib`` MiB (1 MiB segments; batches of 100 records with 100-byte values,
keys drawn from N distinct keys) is built once per codec and key count, then copied for each
round. Three passes over the same segments, in alternating rounds:

* raw read: ``pread`` of every segment file (the disk and page-cache ceiling);
* Arrow decode: every segment decoded to Arrow by the Spark source's C decoder
  (``arrow_records.decode``: CRCs checked, every record decoded), the fastest reader here;
* Python decode: every batch read and every record decoded (``record_set.decode_entry``, what a
  Python consumer of the log does);
* clean: one cleaning pass (``cleaner.Cleaner``): the key map built over the whole log, every
  segment rewritten aside with the latest record of each key, fsynced and swapped in.

MB/s are of the log's bytes before cleaning.

    .venv/bin/python -m benchmarks.log_cleaning [--total-mib 32] [--keys 1000,100000] [--rounds 3]
"""

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable

from broker.log.cleaner import Cleaner
from broker.log.config import LogConfig
from broker.log.file_records import iter_entries
from broker.log.partition_log import PartitionLog
from broker.records import batch, record_set
from broker.records.batch import Record
from broker.records.compression import Codec
from spark_kafka_source.arrow_records import decode as arrow_decode

MIB = 1024 * 1024
CONFIG = LogConfig(cleanup_policy="compact", segment_bytes=MIB, delete_retention_ms=10 * 365 * 86_400_000)


def build_log(directory: str, total: int, keys: int, codec: Codec) -> int:
    """A log of about ``total`` bytes; returns its size."""
    rng = random.Random(keys)
    log = PartitionLog.open(directory, CONFIG)
    now = int(time.time() * 1000)
    while log.size_in_bytes < total:
        start = log.log_end_offset
        records = [
            Record(start + i, now, b"key-%d" % rng.randrange(keys), os.urandom(50).hex().encode()) for i in range(100)
        ]
        log.append(batch.build(records, base_offset=start, compression=codec))
    log.roll()
    size = log.size_in_bytes
    log.close()
    return size


def raw_read(directory: str) -> None:
    for name in sorted(os.listdir(directory)):
        if name.endswith(".log"):
            with open(os.path.join(directory, name), "rb") as f:
                while f.read(MIB):
                    pass


def decode_to_arrow(directory: str) -> None:
    for name in sorted(os.listdir(directory)):
        if name.endswith(".log"):
            with open(os.path.join(directory, name), "rb") as f:
                arrow_decode(f.read(), "bench", 0, 0, 2**62, include_headers=True)


def decode(directory: str) -> None:
    for name in sorted(os.listdir(directory)):
        if name.endswith(".log"):
            fd = os.open(os.path.join(directory, name), os.O_RDONLY)
            try:
                for _, _, entry in iter_entries(fd, 0, os.fstat(fd).st_size):
                    record_set.decode_entry(entry)
            finally:
                os.close(fd)


def clean(directory: str) -> None:
    log = PartitionLog.open(directory, CONFIG, had_clean_shutdown=True)
    Cleaner(128 * MIB).clean(log, 0, log.active_segment.base_offset, int(time.time() * 1000))
    log.close()


def timed(step: Callable[[str], object], directory: str) -> float:
    started = time.perf_counter()
    step(directory)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-mib", type=int, default=32)
    parser.add_argument("--keys", default="1000,100000", help="distinct keys, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where to write (default: a temporary directory)")
    args = parser.parse_args(argv)
    results = {}
    for codec in (Codec.NONE, Codec.LZ4):
        for keys in map(int, args.keys.split(",")):
            with tempfile.TemporaryDirectory(dir=args.dir) as workspace:
                original = os.path.join(workspace, "original", "bench-0")
                size = build_log(original, args.total_mib * MIB, keys, codec)
                times: dict[str, list[float]] = {"raw read": [], "arrow decode": [], "decode": [], "clean": []}
                for round_ in range(args.rounds):
                    copy = os.path.join(workspace, f"round{round_}", "bench-0")
                    shutil.copytree(original, copy)
                    times["raw read"].append(timed(raw_read, copy))
                    times["arrow decode"].append(timed(decode_to_arrow, copy))
                    times["decode"].append(timed(decode, copy))
                    times["clean"].append(timed(clean, copy))
                    shutil.rmtree(os.path.dirname(copy))
            speeds = {name: size / statistics.median(seconds) / 1e6 for name, seconds in times.items()}
            name = f"{codec.name.lower()} {keys} keys"
            results[name] = speeds | {
                "clean/decode": speeds["clean"] / speeds["decode"],
                "clean/arrow": speeds["clean"] / speeds["arrow decode"],
            }
            print(
                f"{name}: {size / MIB:.0f} MiB, {args.rounds} rounds (median MB/s): raw read "
                f"{speeds['raw read']:.0f}, Arrow decode {speeds['arrow decode']:.1f}, Python decode "
                f"{speeds['decode']:.1f}, clean {speeds['clean']:.1f}; clean/Arrow "
                f"{results[name]['clean/arrow']:.2f}, clean/Python {results[name]['clean/decode']:.2f}"
            )
    return results


if __name__ == "__main__":
    main()
