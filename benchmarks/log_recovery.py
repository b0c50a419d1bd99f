"""Recovery after an unclean stop with 1 and N threads (``num.recovery.threads.per.data.dir``).

A log directory of ``--partitions`` partitions, ``--mib`` MiB of 1 KiB records in all, is written
and shut down cleanly once; before each measurement the clean-shutdown marker and the recovery
point checkpoint are removed, as a crash before the first checkpoint leaves them, so every log is
recovered from its first batch (every batch's size, CRC and offsets checked, the indexes rebuilt).
The measurement is the time for ``LogManager.open()``; the thread counts alternate, ``--rounds``
times, and the medians are printed. The files stay in the page cache between rounds (this is a
shared machine: dropping the cache is not ours to do), so this measures the CPU side of recovery.

    .venv/bin/python -m benchmarks.log_recovery [--partitions 1000] [--mib 256] [--threads 1 2 4 8] [--rounds 3]
"""

import argparse
import os
import statistics
import tempfile
import time

from broker.log.checkpoints import RECOVERY_POINT_FILE
from broker.log.config import LogConfig
from broker.log.manager import CLEAN_SHUTDOWN_FILE, LogManager
from broker.records import batch

MIB = 1024 * 1024
RECORD_VALUE = bytes(1024)
RECORDS_PER_BATCH = 16
CONFIG = LogConfig(segment_bytes=16 * MIB)


def write_logs(log_dir: str, partitions: int, total_bytes: int) -> None:
    per_partition = max(1, total_bytes // partitions // (RECORDS_PER_BATCH * len(RECORD_VALUE)))
    records = [batch.Record(i, 1_700_000_000_000 + i, None, RECORD_VALUE) for i in range(RECORDS_PER_BATCH)]
    one_batch = batch.build(records)
    with LogManager(log_dir, CONFIG) as manager:
        for partition in range(partitions):
            log = manager.get_or_create_log("recovery", partition)
            for _ in range(per_partition):
                log.append(one_batch)


def recover(log_dir: str, threads: int) -> float:
    """Seconds to open the directory as after a crash, every log recovered from its start."""
    for name in (CLEAN_SHUTDOWN_FILE, RECOVERY_POINT_FILE):
        os.unlink(os.path.join(log_dir, name))
    manager = LogManager(log_dir, CONFIG, recovery_threads=threads)
    started = time.perf_counter()
    manager.open()
    took = time.perf_counter() - started
    manager.shutdown()
    return took


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--mib", type=int, default=256, help="MiB of records in all (default 256)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        log_dir = os.path.join(directory, "log")
        write_logs(log_dir, args.partitions, args.mib * MIB)
        times: dict[int, list[float]] = {threads: [] for threads in args.threads}
        for _ in range(args.rounds):
            for threads in args.threads:
                times[threads].append(recover(log_dir, threads))
    one = statistics.median(times[args.threads[0]])
    print(f"{args.partitions} partitions, {args.mib} MiB, medians of {args.rounds} rounds, {os.cpu_count()} cores:")
    for threads, seconds in times.items():
        median = statistics.median(seconds)
        print(
            f"{threads:3d} recovery thread(s): {median:6.2f} s ({args.mib / median:6.1f} MiB/s), "
            f"x{one / median:4.2f} against {args.threads[0]}"
        )


if __name__ == "__main__":
    main()
