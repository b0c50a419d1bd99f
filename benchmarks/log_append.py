"""Append throughput of 1 MiB batches (with all of a produce's checks) against a raw write of the same bytes.

Both sides write the same pre-built batches, in alternating rounds, to files in the same
directory, without fsync (Kafka's default flush policy). The log side also parses each batch
header, checks its CRC-32C, decompresses the batch and walks its records (Kafka's LogValidator
does both), assigns offsets and maintains the indexes. Uncompressed batches first, then lz4
batches of the same records (what a compressing producer sends).

    .venv/bin/python -m benchmarks.log_append [--total-mib 512] [--rounds 3] [--dir DIR]
"""

import argparse
import os
import shutil
import statistics
import tempfile
import time

from broker.log.config import LogConfig
from broker.log.partition_log import PartitionLog
from broker.records import batch
from broker.records.batch import Record
from broker.records.compression import Codec

MIB = 1024 * 1024


def build_batches(count: int, codec: Codec) -> list[bytes]:
    """Distinct batches of 1,000 records of 1 KiB (half random, half text: lz4 halves them)."""
    out = []
    for b in range(count):
        text = b"page=/products/%d&referrer=search " % b * 15
        records = [
            Record(i, 1_700_000_000_000 + i, f"k{b}-{i}".encode(), (os.urandom(500) + text)[:1000]) for i in range(1000)
        ]
        out.append(batch.build(records, compression=codec))
    return out


def raw_write(directory: str, batches: list[bytes], total: int) -> float:
    path = os.path.join(directory, "raw.bin")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    started = time.perf_counter()
    written = 0
    i = 0
    while written < total:
        data = batches[i % len(batches)]
        os.write(fd, data)
        written += len(data)
        i += 1
    elapsed = time.perf_counter() - started
    os.close(fd)
    os.unlink(path)
    return written / elapsed


def log_append(directory: str, batches: list[bytes], total: int) -> float:
    log_dir = os.path.join(directory, "bench-0")
    log = PartitionLog.open(log_dir, LogConfig())
    started = time.perf_counter()
    written = 0
    i = 0
    while written < total:
        data = batches[i % len(batches)]
        log.append(data)
        written += len(data)
        i += 1
    elapsed = time.perf_counter() - started
    log.close()
    shutil.rmtree(log_dir)
    return written / elapsed


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-mib", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where to write (default: a temporary directory)")
    args = parser.parse_args(argv)
    total = args.total_mib * MIB
    results = {}
    for codec in (Codec.NONE, Codec.LZ4):
        batches = build_batches(16, codec)
        raw, appended = [], []
        with tempfile.TemporaryDirectory(dir=args.dir) as directory:
            for _ in range(args.rounds):
                raw.append(raw_write(directory, batches, total))
                appended.append(log_append(directory, batches, total))
        result = {"raw_mb_s": statistics.median(raw) / 1e6, "log_mb_s": statistics.median(appended) / 1e6}
        result["ratio"] = result["log_mb_s"] / result["raw_mb_s"]
        print(
            f"append {codec.name.lower()} batches of 1,000 x 1 KiB records ({len(batches[0]) / MIB:.2f} MiB), "
            f"{args.total_mib} MiB x {args.rounds} rounds (median):"
        )
        print(f"  raw sequential write                     {result['raw_mb_s']:8.0f} MB/s")
        print(f"  log append (CRC, records, offsets, index) {result['log_mb_s']:7.0f} MB/s")
        print(f"  ratio log/raw                            {result['ratio']:8.2f}")
        results[codec.name.lower()] = result
    return results


if __name__ == "__main__":
    main()
